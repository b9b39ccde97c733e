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
