"""Every command and subcommand, with every kind of bad argument a user can type: one message and a
non-zero exit, never a traceback, and never a server or loop started on a bad argument.

Commands and their parameters are discovered from the Typer app, so a new command is covered at
once; a new required parameter needs a valid value in VALID, a new output path a line in OUTPUTS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import POLICY, RANDOM_TEXT, command_params, commands, is_group

Main = Callable[..., tuple[int, str, str]]

# Required parameters get a valid value, so the bad argument is what the command meets.
VALID = {"policy": str(POLICY), "file": str(POLICY), "path": "SCRATCH/out.yaml"}
# Paths the command writes: a directory where a file goes (or a file where a directory goes), and a
# path below a regular file, are what is wrong with them; a path that does not exist yet is fine.
OUTPUTS = {"path": "file", "kubeconfig_out": "file", "report": "directory"}
# Strings with a format of their own.
BAD_STRINGS = {
    "now": ["yesterday"],
    "start": ["2026-13-45"],
    "log_level": ["loud"],
    "log_format": ["xml"],
    "host": ["no-such-host.invalid"],
    "context": ["no-such-context"],
}


def bad_values(param: Any) -> list[str]:
    descriptor = param.type_descriptor
    if getattr(param, "is_flag", False):
        return []
    if descriptor.is_path:
        if param.name in OUTPUTS:
            return ["SCRATCH/text" if OUTPUTS[param.name] == "directory" else "SCRATCH", "SCRATCH/text/below"]
        return ["SCRATCH/missing.yaml", "SCRATCH", "SCRATCH/text"]
    if descriptor.is_choice:
        return ["xml"]
    if descriptor.annotation in (int, float):
        values = ["abc", "-1"]
        if param.min is not None and param.min > 0:
            values.append("0")
        return values
    return BAD_STRINGS.get(param.name, [])


def command_line(params: list[Any], bad: Any = None, value: str = "") -> list[str]:
    """Valid values for the required parameters, and `value` for the parameter `bad`."""
    args: list[str] = []
    for param in params:
        if param is bad:
            given = value
        elif param.required:
            given = VALID[param.name]
        else:
            continue
        args += [given] if param.param_type_name == "argument" else [param.opts[0], given]
    return args


def cases() -> list[tuple[tuple[str, ...], list[str]]]:
    out: list[tuple[tuple[str, ...], list[str]]] = []
    for path in commands():
        if is_group(path) and path:
            continue  # its subcommands are walked
        params = command_params(path)
        out.append((path, [*command_line(params), "--no-such-option"]))
        out += [(path, command_line(params, param, value)) for param in params for value in bad_values(param)]
    return out


CASES = cases()


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No kubeconfig anywhere, not in a cluster; a random-text file at SCRATCH/text."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "text").write_text(RANDOM_TEXT)
    return tmp_path


def test_every_command_is_walked() -> None:
    walked = {path for path, _ in CASES}
    assert {("plan",), ("run",), ("extender",), ("simulate",), ("sim", "serve"), ("snapshot", "save")} <= walked
    assert {("policy", "validate"), ("policy", "schema"), ("version",)} <= walked


@pytest.mark.parametrize(("path", "args"), CASES, ids=[" ".join((*p, *a)) for p, a in CASES])
def test_a_bad_argument_is_one_message_never_a_traceback(
    main_in_process: Main, scratch: Path, path: tuple[str, ...], args: list[str]
) -> None:
    argv = [*path, *(a.replace("SCRATCH", str(scratch)) for a in args)]
    code, out, err = main_in_process(*argv, timeout=60)
    assert code != 0, (argv, out, err)
    assert "Traceback" not in out + err, err
    assert err.strip(), "the user is told what is wrong"
