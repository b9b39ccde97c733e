"""Time as the server sees it: an injectable clock (the simulator runs on simulated time), and RFC 3339
as metav1.Time and MicroTime write it.

The product's own RFC 3339 code (descheduler.timestamps) is not used here on purpose: the fake server
stands for Kubernetes, and a test world that shared the product's code would agree with it by
construction. The rest of the fake cluster (kubelet, scenarios, disruption controller) uses these.
"""

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


def parse_instant(text: str) -> float:
    """RFC 3339 (as metav1.Time and MicroTime write it) to seconds since the epoch."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def instant_of(value: object) -> float | None:
    """The instant an RFC 3339 string names; None for anything else (absent, not a string, not a time)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_instant(value)
    except ValueError:
        return None


def wall_clock() -> float:
    return time.time()
