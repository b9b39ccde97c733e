"""Requests first: a thread rebuilding the state steps aside while requests are being answered.

CPython hands the GIL back and forth between a rebuilding thread and a request every switch
interval, so a request that needs 1 ms of CPU took 5-20 ms while a rebuild ran beside it (p50
17 ms, p99 175 ms at 5,000 nodes / 150,000 pods). Here the rebuilding thread runs with a profile
hook (`sys.setprofile`, its own thread only) that is called at every function call and return; while
a request is in flight the hook waits, GIL released, until none is, so a request shares the
interpreter only with the rebuild's current C call (at most a few ms: bulk passes over pods are
sliced, `descheduler.podrows.SLICE`).

While no request is in flight but one ended within the last `RECENT` (the scheduler is sending them),
the hook hands the core over every `YIELD_EVERY` (sched_yield, the GIL released): a request thread woken
on the same core then runs within that time instead of at the end of the rebuild's time slice (a few
ms), and only then asks for the GIL. With no request for longer, it does not, since sched_yield gives the
core to any other process that wants it: on a core shared with one busy process, a rebuild handing over
4,000 times a second got 12% of the core instead of half (1.3 s of CPU in 10.2-10.8 s against 2.3-2.6
s without the hand-overs, measured with a stand-in rebuild of small Python calls).

The rebuild is never starved: it steps aside only while it has had at least `min_share` of the time
since it started as CPU time of its own (requests back to back with no gap would otherwise stop it
for good), and only after its first `grace` of CPU time: a rebuild that short (a small cluster) stalls
a request no longer than a request of its own size would, and finishes at once.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import Any

MIN_SHARE = 0.4  # of the time since it started, the share a rebuild keeps however busy the requests
GRACE = 0.05  # CPU seconds a rebuild runs before it starts stepping aside: a short one just finishes
MAX_WAIT = 0.05  # seconds between checks of that share while waiting
CHECK_EVERY = 0.0002  # seconds between two looks at the share while running
YIELD_EVERY = 0.00025  # seconds of rebuild between two hand-overs of the core while no request is in flight
RECENT = 1.0  # seconds after a request ended during which the next may come at any moment: the hand-overs' span
# Calls the rebuild makes between two looks at the clock for that. Few: a rebuild makes ~0.5 M calls a
# CPU second, but in its C-level passes over pods only a few per slice of thousands (ms each); 256 let
# whole such passes (~0.1 s) run without a hand-over, while 8 cost it ~0.5% in clock reads.
YIELD_CALLS = 8


class RequestsFirst:
    """Counts requests in flight (`serving`); `yielding` makes the current thread step aside for them."""

    def __init__(self, min_share: float = MIN_SHARE, grace: float = GRACE, recent: float = RECENT) -> None:
        self.min_share = min_share
        self.grace = grace
        self.recent = recent
        self._last_left = -math.inf  # when the last request ended (perf_counter)
        self._lock = threading.Lock()
        self._in_flight = 0
        self._yielding = 0  # threads inside `yielding`: only then is `_quiet` kept up to date
        self._quiet = threading.Event()  # set while no request is in flight (kept while `_yielding`)
        self._quiet.set()
        self._serving = _Serving(self)
        self._started = 0.0
        self._cpu_start = 0.0
        self._next_check = 0.0
        self._countdown = YIELD_CALLS
        self._next_yield = 0.0
        self.waits = 0  # how often a rebuild stepped aside (for tests and benchmarks)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def enter(self) -> None:
        """A request starts."""
        with self._lock:
            self._in_flight += 1
            if self._yielding:
                self._quiet.clear()

    def leave(self) -> None:
        """A request ended."""
        with self._lock:
            self._in_flight -= 1
            self._last_left = time.perf_counter()
            if self._yielding and not self._in_flight:
                self._quiet.set()

    def serving(self) -> AbstractContextManager[None]:
        """`with serving():` around a request (a plain object: a generator-based one cost ~4 us a request)."""
        return self._serving

    @contextmanager
    def yielding(self) -> Iterator[None]:
        """While inside, the calling thread waits for requests in flight at each Python or C call it makes."""
        with self._lock:
            self._yielding += 1
            if self._in_flight:
                self._quiet.clear()
        previous = sys.getprofile()
        self._started, self._cpu_start = time.perf_counter(), time.thread_time()
        sys.setprofile(self._hook)
        try:
            yield
        finally:
            sys.setprofile(previous)
            with self._lock:
                self._yielding -= 1

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self._in_flight:
            self._countdown -= 1
            if self._countdown > 0:
                return
            self._countdown = YIELD_CALLS
            now = time.perf_counter()
            if now >= self._next_yield and now - self._last_left < self.recent:
                self._next_yield = now + YIELD_EVERY
                _hand_over()
            return
        # The share is checked every CHECK_EVERY at most: reading the thread's CPU clock is a system
        # call, and this runs at every call the rebuild makes.
        now = time.perf_counter()
        if now < self._next_check:
            return
        self._next_check = now + CHECK_EVERY
        while self._in_flight:
            # May wait while the CPU time the rebuild had is at least `min_share` of the time since it
            # started (CPU, not time not waited: while it runs it still shares the GIL with requests).
            now = time.perf_counter()
            ran = time.thread_time() - self._cpu_start
            behind = self.min_share * (now - self._started) - ran
            if behind > 0 or ran < self.grace:
                return
            self.waits += 1
            self._quiet.wait(min(-behind / self.min_share if self.min_share else MAX_WAIT, MAX_WAIT))


def _hand_over() -> None:
    """Let another thread of this core run, the GIL released meanwhile."""
    if hasattr(os, "sched_yield"):
        os.sched_yield()
    else:
        time.sleep(0)


class _Serving(AbstractContextManager[None]):
    """`RequestsFirst.serving`'s context: enter and leave."""

    def __init__(self, gate: RequestsFirst) -> None:
        self._gate = gate

    def __enter__(self) -> None:
        self._gate.enter()

    def __exit__(self, *exc: object) -> None:
        self._gate.leave()
