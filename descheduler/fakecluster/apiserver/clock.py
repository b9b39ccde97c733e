"""Time as the server sees it: an injectable clock (the simulator runs on simulated time)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]
"""Returns the current instant as seconds since the epoch."""


def rfc3339(instant: float) -> str:
    """Format as metav1.Time does: whole seconds, UTC, `Z` suffix."""
    return datetime.fromtimestamp(int(instant), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(instant: float) -> str:
    """Format as metav1.MicroTime does (lease renewTime, events.k8s.io eventTime)."""
    return datetime.fromtimestamp(instant, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def wall_clock() -> float:
    return time.time()
