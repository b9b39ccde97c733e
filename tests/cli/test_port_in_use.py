"""A port already taken is one message naming it, exit 1, before anything is served or connected to."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from cli_support import DEMO_SNAPSHOT, POLICY, assert_one_clear_error, cli


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other process listens on, on every address."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("command", "host"),
    [
        (["sim", "serve"], "127.0.0.1"),
        (["extender", "--snapshot", str(DEMO_SNAPSHOT)], "127.0.0.1"),
        # No cluster configuration in this environment: the port is checked before connecting.
        (["run", "--policy", str(POLICY)], "0.0.0.0"),
    ],
    ids=["sim-serve", "extender", "run"],
)
def test_a_port_in_use_is_named(taken_port: int, user_env: dict[str, str], command: list[str], host: str) -> None:
    result = cli(*command, "--port", str(taken_port), env=user_env)
    assert_one_clear_error(result, 1, f"--port: port {taken_port} on {host} is already in use")
    assert result.stderr.count("\n") == 1, result.stderr
