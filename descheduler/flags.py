"""Command-line flags more than one command takes (--port, --log-level): one declaration and one check each."""

from __future__ import annotations

from typing import Annotated

import typer

from descheduler.errors import InputError

__all__ = ["LogLevelOption", "check_log_level", "check_port"]

LogLevelOption = Annotated[str, typer.Option("--log-level", help="debug, info, warning or error")]
"""--log-level of the long-running commands (run, extender); check it with `check_log_level`."""


def check_log_level(value: str) -> None:
    """--log-level names one of the four levels the commands log at."""
    if value.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise InputError(f"{value!r} is not one of debug, info, warning, error", field="--log-level")


def check_port(port: int) -> None:
    """--port is a TCP port number (0 asks the system for a free one)."""
    if not 0 <= port <= 65535:
        raise InputError(f"must be a port number (0–65535), got {port}", field="--port")
