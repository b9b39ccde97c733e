"""A client-side token bucket: at most `burst` requests at once, `qps` per second sustained.

The same rule as client-go's flowcontrol rate limiter. Waiting reserves a token first and sleeps
outside the lock, so concurrent callers are served in arrival order without a thread per waiter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Cancelled(Exception):
    """A wait was cut short because the caller is stopping."""


class TokenBucket:
    """Thread-safe token bucket; `qps <= 0` means unlimited."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if burst < 1 and qps > 0:
            raise ValueError(f"burst must be at least 1 when qps is set, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = clock()

    def reserve(self) -> float:
        """Take one token, possibly borrowed from the future; returns the seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self, cancel: threading.Event | None = None) -> float:
        """Block until a request may be sent; returns the seconds waited. Raises Cancelled if `cancel` is set."""
        wait = self.reserve()
        if wait > 0:
            if cancel is None:
                time.sleep(wait)
            elif cancel.wait(wait):
                raise Cancelled("stopped while waiting for the client-side rate limiter")
        return wait
