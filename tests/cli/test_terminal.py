"""The CLI on a terminal: -h is --help, flags show no value placeholder, plan's table fits $COLUMNS."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from cli_support import commands

Main = Callable[..., tuple[int, str, str]]
ALL = commands()


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) or "descheduler" for p in ALL])
def test_dash_h_is_help(main_in_process: Main, path: tuple[str, ...]) -> None:
    code, long_help, _ = main_in_process(*path, "--help")
    assert code == 0
    assert "Usage: descheduler" in long_help
    assert main_in_process(*path, "-h") == (0, long_help, "")


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) or "descheduler" for p in ALL])
def test_help_shows_no_value_placeholder_after_a_flag(main_in_process: Main, path: tuple[str, ...]) -> None:
    _, text, _ = main_in_process(*path, "--help")
    assert "<bool>" not in text
    assert "-h, --help  " in text


def test_flags_render_bare_in_help(main_in_process: Main) -> None:
    _, text, _ = main_in_process("run", "--help")
    lines = [line.strip() for line in text.splitlines()]
    assert any(re.fullmatch(r"--dry-run {2,}plan, log and count; move nothing", line) for line in lines), text
    assert any(re.match(r"--leader-elect / --no-leader-elect( |$)", line) for line in lines), text


def test_plan_table_fits_80_columns(main_in_process: Main, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = main_in_process("plan", "--demo")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    # What is left out is said, and what matters most stays: which pod moves where, and why.
    assert "Moves (left out to fit 80 columns: strategy, mode, usage)" in out
    assert "shop/web-2" in out and "node-d" in out and "high 70%" in out


def test_plan_table_at_200_columns_shows_every_column(main_in_process: Main, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = main_in_process("plan", "--demo")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 200
    assert "left out" not in out
    for column in ("pool", "class", "cpu used (low/high)", "memory used (low/high)", "strategy", "mode", "usage"):
        assert column in out
