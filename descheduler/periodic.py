"""A background loop: call one function every `period` seconds on a daemon thread until stopped.

One failed call is logged and the loop goes on (a heartbeat or a refresh must not die of one bad
attempt). Used by the extender's Lease renewal and its snapshot refresher.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["Periodic"]


class Periodic:
    """`step()` every `period` seconds on thread `name` between `start()` and `stop()`.

    An exception from `step` is logged on `log` as `failure` (with its traceback); the next call
    comes a period later as usual. `start` on a running loop and `stop` on a stopped one do nothing.
    """

    def __init__(
        self, step: Callable[[], object], period: float, *, name: str, failure: str, log: logging.Logger
    ) -> None:
        self.step = step
        self.period = period
        self.name = name
        self._failure = failure
        self._log = log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the loop to end and wait up to `timeout` seconds for a call in progress to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception:  # keep the loop going whatever one call did
                self._log.exception(self._failure)
            self._stop.wait(self.period)
