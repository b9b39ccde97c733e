"""The controller process: leader election around the planning loop and the migration controller.

Every replica keeps its cache warm and serves /healthz, /readyz and /metrics; only the leader
runs cycles (APScheduler, one at a time, missed runs coalesced) and the migration controller.
Losing the lease stops the work at once and ends the process with exit code 1, so Kubernetes
restarts it as a fresh candidate. SIGTERM stops scheduling cycles, lets the running cycle and
migration step finish (bounded), releases the lease and exits 0.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Protocol

import structlog
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from descheduler.controller.cycle import PlanningLoop
from descheduler.controller.health import HealthServer
from descheduler.controller.leader import LeaderElector
from descheduler.controller.reload import PolicyFile

log = structlog.get_logger(__name__)

POLICY_CHECK_SECONDS = 10.0
SHUTDOWN_GRACE_SECONDS = 30.0


class Reconciler(Protocol):
    """The migration controller: drives jobs until `stop` is set."""

    def run(self, stop: threading.Event, period: float) -> None: ...


@dataclass(slots=True)
class Options:
    health_host: str = "0.0.0.0"  # probes and scrapes come from outside the pod
    health_port: int = 8080
    migration_period: float = 2.0


class ControllerProcess:
    def __init__(
        self,
        policy_file: PolicyFile,
        loop: PlanningLoop,
        migration: Reconciler | None,
        elector: Callable[[Callable[[], None], Callable[[], None]], LeaderElector] | None,
        options: Options,
        work_stop: threading.Event | None = None,
    ) -> None:
        """`work_stop` is set while the leader's work stops (shared with what must stop with it, such
        as the executor; a new event when not given)."""
        self.policy_file = policy_file
        self.loop = loop
        self.migration = migration
        self.options = options
        self.stop = threading.Event()  # the process is shutting down
        self._work_stop = work_stop or threading.Event()  # the leader's work is stopping
        self._cycle_lock = threading.Lock()
        self._scheduler: BackgroundScheduler | None = None
        self._migration_thread: threading.Thread | None = None
        self._leading = threading.Event()
        self._last_cycle_start = 0.0
        self.elector = elector(self._start_work, self._stop_work) if elector else None
        self.health = HealthServer(options.health_host, options.health_port, live=self._live, ready=self._ready)

    # ---------------------------------------------------------------- probes

    def _live(self) -> str | None:
        if self._leading.is_set() and self._scheduler is not None and not self._scheduler.running:
            return "the cycle scheduler stopped"
        return None

    def _ready(self) -> str | None:
        problem = self.loop.not_ready()
        if problem:
            return problem
        if self._leading.is_set():
            interval = self.policy_file.policy.interval.total_seconds()
            started = self._last_cycle_start
            if started and time.monotonic() - started > 3 * interval + SHUTDOWN_GRACE_SECONDS:
                return f"no cycle started for {time.monotonic() - started:.0f}s (interval {interval:.0f}s)"
        return None

    # ---------------------------------------------------------------- the leader's work

    def _cycle(self) -> None:
        with self._cycle_lock:
            if self._work_stop.is_set():
                return
            self._last_cycle_start = time.monotonic()
            self._check_policy()  # a change made since the last check is in force for this cycle
            self.loop.run_cycle()

    def _check_policy(self) -> None:
        new = self.policy_file.check()
        scheduler = self._scheduler
        if new is None or scheduler is None:
            return
        job = scheduler.get_job("cycle")
        seconds = new.interval.total_seconds()
        if job is not None and job.trigger.interval.total_seconds() != seconds:
            scheduler.reschedule_job("cycle", trigger=IntervalTrigger(seconds=seconds))
            log.info("cycle interval changed", interval=seconds)

    def _start_work(self) -> None:
        self._work_stop.clear()
        self._leading.set()
        scheduler = BackgroundScheduler(job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None})
        interval = self.policy_file.policy.interval.total_seconds()
        # The first cycle runs at once: a new leader should not idle for an interval.
        scheduler.add_job(self._cycle, IntervalTrigger(seconds=interval), id="cycle", next_run_time=datetime.now(UTC))
        scheduler.add_job(self._check_policy, IntervalTrigger(seconds=min(POLICY_CHECK_SECONDS, interval)), id="policy")
        scheduler.start()
        self._scheduler = scheduler
        if self.migration is not None:
            thread = threading.Thread(
                target=self.migration.run,
                args=(self._work_stop, self.options.migration_period),
                name="migration-controller",
                daemon=True,
            )
            thread.start()
            self._migration_thread = thread
        log.info("started work", interval=interval)

    def _stop_work(self) -> None:
        """Stop cycles and the migration controller; wait (bounded) for the step in progress."""
        self._work_stop.set()
        self._leading.clear()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        if self._cycle_lock.acquire(timeout=SHUTDOWN_GRACE_SECONDS):
            self._cycle_lock.release()
        else:
            log.warning("a cycle was still running at shutdown")
        if self._migration_thread is not None:
            self._migration_thread.join(max(0.0, deadline - time.monotonic()))
        log.info("stopped work")

    # ---------------------------------------------------------------- main

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT (exit 0) or until the lease is lost (exit 1)."""
        self.health.start()
        in_main = threading.current_thread() is threading.main_thread()  # only it may handle signals
        previous = (
            {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)} if in_main else {}
        )
        try:
            if self.elector is None:
                self._start_work()
                self.stop.wait()
                self._stop_work()
                return 0
            self.elector.run(self.stop)
            if self.stop.is_set():
                return 0
            log.error("leadership lost: exiting so that a fresh process can compete again")
            return 1
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.health.stop()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("shutting down", signal=signal.Signals(signum).name)
        self.stop.set()
