"""Waiting in tests: poll a condition until it holds, or fail saying what was awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    check: Callable[[], Any],
    timeout: float,
    what: str = "condition",
    *,
    interval: float = 0.05,
    state: Callable[[], Any] | None = None,
) -> float:
    """Poll `check` every `interval` seconds until it is true; the seconds that took. After
    `timeout` seconds, an AssertionError naming `what` (and `state()`, when given)."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            detail = f": {state()}" if state is not None else ""
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}{detail}")
        time.sleep(interval)
    return time.monotonic() - began
