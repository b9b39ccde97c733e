"""Token buckets: a mutable one for call rates, and a replay over recorded instants for limits that
must be counted from the API objects (a restarted controller sees the same history)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(slots=True)
class TokenBucket:
    """`burst` tokens, refilled at `rate` per second; `take` at a given instant (seconds)."""

    rate: float
    burst: int
    tokens: float = field(init=False)
    updated: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst ≥ 1; got rate {self.rate}, burst {self.burst}")
        self.tokens = float(self.burst)

    def _refill(self, now: float) -> None:
        if self.updated is not None and now > self.updated:
            self.tokens = min(float(self.burst), self.tokens + (now - self.updated) * self.rate)
        if self.updated is None or now > self.updated:
            self.updated = now

    def available(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= 1.0

    def take(self, now: float) -> bool:
        """Spend one token if there is one."""
        self._refill(now)
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def wait_time(self, now: float) -> float:
        """Seconds until a token is available."""
        self._refill(now)
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate


def replay_tokens(spent: Iterable[datetime], now: datetime, rate: float, burst: int) -> float:
    """Tokens left at `now` in a bucket that started full and paid one token at each instant of `spent`.

    Instants are what the API recorded (job start times), so the answer does not depend on which
    controller instance admitted what. More spends than tokens drive the count below zero: the
    bucket then stays empty until the debt is paid, which is the conservative reading.
    """
    tokens = float(burst)
    last: datetime | None = None
    for instant in sorted(spent):
        if instant > now:
            continue
        if last is not None:
            tokens = min(float(burst), tokens + (instant - last).total_seconds() * rate)
        tokens -= 1.0
        last = instant
    if last is not None:
        tokens = min(float(burst), tokens + (now - last).total_seconds() * rate)
    return tokens


# A replayed bucket this close to a whole token has one: its refills are sums of floats.
_WHOLE = 1.0 - 1e-9


def replay_wait(spent: Iterable[datetime], now: datetime, rate: float, burst: int) -> float:
    """Seconds from `now` until the replayed bucket has a whole token (0 when it has one now)."""
    tokens = replay_tokens(spent, now, rate, burst)
    return 0.0 if tokens >= _WHOLE else (1.0 - tokens) / rate
