"""Fixtures for the CLI tests."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pytest


@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    """No kubeconfig anywhere ($KUBECONFIG unset, an empty home), not in a cluster, a wide terminal."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env.update(HOME=str(home), COLUMNS="200")
    return env


@pytest.fixture
def main_in_process(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """`descheduler ARGS` in this process: (exit code, stdout, stderr). Anything main() lets escape
    but SystemExit is what a user would see as a traceback, so it fails the test; so does a run
    longer than `timeout` seconds (a command that went on to serve)."""
    from descheduler.cli import main

    def run(*args: str, timeout: int = 60) -> tuple[int, str, str]:
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level

        def too_long(signum: int, frame: FrameType | None) -> None:
            raise TimeoutError(f"descheduler {' '.join(args)} still running after {timeout}s")

        previous = signal.signal(signal.SIGALRM, too_long)
        signal.alarm(timeout)
        try:
            main(args)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        else:
            raise AssertionError("main() returned instead of exiting")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
            root.handlers, root.level = handlers, level  # `run` and `extender` configure logging
        out, err = capsys.readouterr()
        return code, out, err

    return run
