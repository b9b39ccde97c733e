"""Simulated time: a clock the components read and the driver advances."""

from __future__ import annotations

import threading
from datetime import UTC, datetime


class SimClock:
    """Seconds since the epoch, moved only by `advance`; callable, so it can be the API server's clock."""

    def __init__(self, start: float) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    @property
    def now(self) -> float:
        return self()

    def advance(self, seconds: float) -> float:
        """Move time forward (never back); returns the new instant."""
        if seconds < 0:
            raise ValueError(f"cannot advance a clock by {seconds} s")
        with self._lock:
            self._now += seconds
            return self._now

    def datetime(self) -> datetime:
        return datetime.fromtimestamp(self(), tz=UTC)
