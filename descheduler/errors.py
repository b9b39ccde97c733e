"""Errors that reach people: they name the file, the object, the field and what is allowed."""

from __future__ import annotations


class InputError(Exception):
    """Bad input (snapshot, scenario, flag): one clear message, never a traceback."""

    def __init__(self, message: str, *, source: str = "", where: str = "", field: str = "") -> None:
        self.message = message
        self.source = source
        self.where = where
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        prefix = ": ".join(part for part in (self.source, self.where, self.field) if part)
        return f"{prefix}: {self.message}" if prefix else self.message


class ClusterUnreachableError(Exception):
    """The cluster (or the load source) could not be read; nothing may be decided on it."""


class NoClusterConfigError(InputError):
    """No kubeconfig given, none found on the default chain, and not running in a cluster."""


def listen_error(host: str, port: int, error: OSError | OverflowError) -> InputError:
    """What a failed bind means to the person who chose --host and --port."""
    import errno
    import socket

    if isinstance(error, OverflowError):
        return InputError(f"{port} is not a port number (0–65535)", field="--port")
    if isinstance(error, socket.gaierror):
        return InputError(f"cannot listen on {host!r}: no such host", field="--host")
    if error.errno == errno.EADDRINUSE:
        return InputError(f"port {port} on {host} is already in use", field="--port")
    if error.errno == errno.EACCES:
        return InputError(
            f"port {port} on {host}: permission denied (ports below 1024 need privileges)", field="--port"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return InputError(f"cannot listen on {host}: not an address of this machine", field="--host")
    return InputError(f"cannot listen on {host} port {port}: {error.strerror or error}", field="--port")
