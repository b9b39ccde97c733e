"""Run the real controller parts against a simulated cluster on simulated time.

The planning loop, the executor, the migration controller, the list-watch cache and the load
reader are the ones `descheduler run` uses, talking to the simulated API server over HTTP with
the official client. Only the driver differs: instead of APScheduler and wall time, simulated time
advances tick by tick, a cycle runs every `interval` of it, and the migration controller every
`migration_period`; before each of them the cache is given the moment it needs to catch up with
what the simulated components just wrote (as a real controller's watch would, a little later).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from descheduler import metrics
from descheduler.controller.cycle import PlanningLoop
from descheduler.controller.source import ClusterSource
from descheduler.events import EventRecorder
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import LoadedScenario
from descheduler.kube import CLUSTER_KINDS, MIGRATION_JOBS, ClusterCache, KubeClient, connect
from descheduler.kube.kinds import QUOTAS
from descheduler.loadsource import cache_kinds
from descheduler.migration.api import MigrationApi
from descheduler.migration.controller import MigrationController
from descheduler.migration.executor import Executor
from descheduler.migration.objects import TERMINAL_PHASES
from descheduler.migration.presence import SchedulerPresence, plan_routes
from descheduler.policy import Policy
from descheduler.simulate.record import SimulationRecord, orphan_reservations, phase

log = structlog.get_logger(__name__)

SETTLE_TIMEOUT = 30.0  # only waits as long as the watch needs; generous for a loaded machine


@dataclass(slots=True)
class SimulationOptions:
    cycles: int = 10
    warmup_seconds: float = 90.0  # pods start, metrics are published before the first cycle
    migration_period: float = 5.0
    # While a job is in flight, the migration controller (and the cluster) step this often instead:
    # in a cluster the controller steps every 2 s, so a move takes seconds, not many coarse periods.
    busy_period: float | None = None
    drain_seconds: float = 300.0  # after the last cycle: let jobs in flight finish (bounded)
    # Idle steps fall on multiples of migration_period from the start, whenever cycles come: usage
    # series that step on that grid are then read the moment they change.
    align_idle_steps: bool = False
    # Quiet cycles are not run: after a cycle that planned nothing and left the strategies' state as it
    # found it, with no job in flight, the next cycles read the same cluster until something can change
    # on its own, at the multiples of `wake_periods` from the start (the usage series' grid, the metrics'
    # publication); those cycles are counted with the last cycle's result and the cluster is not stepped
    # for them. Only for planners whose whole memory is that state (a cycle at 10 s costs as much as one
    # at 10 min, and a simulated day has 8,640 of them).
    skip_quiet_cycles: bool = False
    wake_periods: tuple[float, ...] = ()


def settle(cache: ClusterCache, cluster: SimulatedCluster, timeout: float = SETTLE_TIMEOUT) -> bool:
    """Wait until the cache has applied every change the simulated cluster has made so far."""
    targets = {kind.name: cluster.store.last_change(kind.name) for kind in cache.kinds}
    deadline = time.monotonic() + timeout
    while True:
        applied = cache.applied_versions()
        if all(applied.get(kind, 0) >= rv for kind, rv in targets.items()):
            return True
        if time.monotonic() > deadline:
            late = sorted(kind for kind, rv in targets.items() if applied.get(kind, 0) < rv)
            log.warning("the cache did not catch up with the simulated cluster", kinds=late)
            return False
        time.sleep(0.002)


class Simulation:
    """One run: a simulated cluster, the controller parts on it, and the record of what happened."""

    def __init__(
        self,
        scenario: LoadedScenario,
        policy: Policy,
        options: SimulationOptions | None = None,
        *,
        start: float | None = None,
    ) -> None:
        """`start`: simulated time at the beginning (default: the scenario's, else now)."""
        self.options = options or SimulationOptions()
        self.policy = policy
        self.cluster = SimulatedCluster(scenario, start=start if start is not None else scenario.scenario.start)
        self._tmp = tempfile.TemporaryDirectory(prefix="descheduler-simulate-")
        self.kube: KubeClient | None = None
        self.cache: ClusterCache | None = None
        self.record = SimulationRecord(policy, began=self.cluster.now)
        self._origin = self.cluster.now
        self._written: tuple[int, ...] | None = None  # pods' and quotas' latest writes at the last sample

    def clock(self) -> datetime:
        return datetime.fromtimestamp(self.cluster.now, UTC)

    def run(self, progress: Callable[[int, int], None] | None = None) -> SimulationRecord:
        options, policy = self.options, self.policy
        cluster = self.cluster.start()
        try:
            kubeconfig = cluster.write_kubeconfig(Path(self._tmp.name) / "kubeconfig")
            self.kube = kube = connect(kubeconfig, None, qps=10_000, burst=10_000)
            self.cache = cache = ClusterCache(kube, kinds=(*CLUSTER_KINDS, *cache_kinds(policy.load_source)))
            cache.start()
            if not cache.wait_synced(30):
                raise RuntimeError(f"the cache did not sync with the simulated cluster: {cache.not_ready()}")
            source = ClusterSource(kube, cache)
            current = lambda: policy  # noqa: E731
            events = EventRecorder(kube.api_client, clock=self.clock)
            # The simulated scheduler renews the scheduler Lease, as the extender does in a cluster.
            presence = SchedulerPresence(MigrationApi(kube.api_client), cluster.scheduler.lease_namespace)
            loop = PlanningLoop(
                source, Executor(kube.api_client, current), current, self.clock, routes=plan_routes(presence, current)
            )
            migration = MigrationController(
                kube.api_client,
                current,
                source.snapshot_now(self.clock, current),
                self.clock,
                events,
                presence=presence,
            )
            evictions_before = metrics.sample("descheduler_evictions_total", {"result": "success"})
            self.record.began = cluster.now
            self._sample()
            self._advance(options.warmup_seconds, None)
            interval = policy.interval.total_seconds()
            quiet = False
            for index in range(options.cycles):
                if quiet and loop.last is not None:
                    self.record.on_cycle(cluster.now, loop.last)  # what the cycle would plan: the same
                else:
                    settle(cache, cluster)
                    before = loop.state
                    result = loop.run_cycle()
                    self.record.on_cycle(cluster.now, result)
                    quiet = (
                        options.skip_quiet_cycles
                        and result.plan is not None
                        and not result.plan.migrations
                        and loop.state == before
                    )
                if progress is not None:
                    progress(index + 1, options.cycles)
                if quiet and not self._active_jobs() and not self._wakes(cluster.now, cluster.now + interval):
                    cluster.clock.advance(interval)  # nothing steps: no component has anything to do
                else:
                    quiet = False  # the cluster steps: the next cycle reads it
                    self._advance(interval, migration)
            self._drain(migration)
            self.record.evictions = round(
                metrics.sample("descheduler_evictions_total", {"result": "success"}) - evictions_before
            )
            self.record.orphan_reservations = orphan_reservations(self.cluster.store)
            source.close()
            return self.record
        finally:
            self.close()

    def _advance(self, seconds: float, migration: MigrationController | None) -> None:
        """Advance simulated time; run the migration controller every `migration_period`."""
        cluster = self.cluster
        end = cluster.now + seconds
        while cluster.now < end - 1e-9:
            period = self.options.migration_period
            if self.options.busy_period is not None and migration is not None and self._active_jobs():
                period = self.options.busy_period
            elif self.options.align_idle_steps:
                phase = (cluster.now - self._origin) % period
                period -= phase if period - phase > 1e-6 else 0.0
            cluster.advance(min(period, end - cluster.now))
            if migration is not None and self.cache is not None:
                settle(self.cache, cluster)
                migration.reconcile_once()
                self._observe()
            self._sample()

    def _wakes(self, start: float, end: float) -> bool:
        """Whether a multiple of a wake period (from the start) falls in (start, end]."""
        a, b = start - self._origin, end - self._origin
        return any(math.floor(b / p + 1e-9) > math.floor(a / p + 1e-9) for p in self.options.wake_periods)

    def _observe(self) -> None:
        store = self.cluster.store
        self.record.on_step(store.list(MIGRATION_JOBS, shared=True), store.list("pods", shared=True))

    def _drain(self, migration: MigrationController) -> None:
        """Let the jobs in flight end (bounded), so the report counts outcomes, not snapshots."""
        waited = 0.0
        while waited < self.options.drain_seconds and self._active_jobs():
            self._advance(self.options.migration_period, migration)
            waited += self.options.migration_period

    def _sample(self) -> None:
        """Quotas' used and pods' waits, when a pod or a quota was written since the last sample."""
        store = self.cluster.store
        written = store.written("pods", *QUOTAS)
        if written == self._written:
            self.record.sampled = self.cluster.now - self.record.began
            return
        self._written = written
        quotas = [q for resource in QUOTAS for q in store.list(resource, shared=True)]
        self.record.on_pods(self.cluster.now, store.list("pods", shared=True), quotas)

    def _active_jobs(self) -> bool:
        return any(phase(job) not in TERMINAL_PHASES for job in self.cluster.store.list(MIGRATION_JOBS, shared=True))

    def close(self) -> None:
        if self.cache is not None:
            self.cache.stop()
        if self.kube is not None:
            self.kube.close()
        self.cluster.stop()
        self._tmp.cleanup()
