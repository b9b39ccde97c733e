"""Running the CLI as a user does: a subprocess with an environment of our choosing."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "config" / "policy.yaml"
DEMO_SNAPSHOT = ROOT / "descheduler" / "demo" / "snapshot.yaml"
# What a user pastes by mistake: text that is valid YAML but a plain string, not a document.
RANDOM_TEXT = "q8Zt0Lx3pV9m/kR2+wYb4HnE7cJ1sDfGa6TuQiO5rXlWzNyBvKe=\n"


def cli(*args: str, env: Mapping[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "descheduler", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=dict(env) if env is not None else None,
        cwd=ROOT,
    )


def assert_one_clear_error(result: subprocess.CompletedProcess[str], code: int, *expected: str) -> None:
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == code, output
    for text in expected:
        assert text in result.stderr, result.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def commands() -> list[tuple[str, ...]]:
    """Every command and subcommand of the CLI, as the words that name it, discovered from the app."""
    import typer.main

    from descheduler.cli import app

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            yield path
            return
        yield path  # a group has its own help
        for name, sub in sorted(subcommands.items()):
            yield from walk(sub, (*path, name))

    return list(walk(typer.main.get_command(app), ()))


def _command(path: tuple[str, ...]) -> Any:
    import typer.main

    from descheduler.cli import app

    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def command_params(path: tuple[str, ...]) -> list[Any]:
    """The parameters (Typer's click options and arguments) of one command."""
    return list(_command(path).params)


def is_group(path: tuple[str, ...]) -> bool:
    return getattr(_command(path), "commands", None) is not None
