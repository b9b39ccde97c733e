"""SimulatedCluster: a fake API server plus the components a real cluster runs, on simulated time."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from descheduler.fakecluster.apiserver import FakeApiServer, Store
from descheduler.fakecluster.apiserver.clock import rfc3339
from descheduler.fakecluster.apiserver.server import SYSTEM_NAMESPACES
from descheduler.fakecluster.apiserver.watch import Watcher
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.disruption import DisruptionController
from descheduler.fakecluster.events import EventPlayer
from descheduler.fakecluster.exporter import KubeletExporter
from descheduler.fakecluster.kubelet import Kubelet
from descheduler.fakecluster.metrics import Feed, MetricsPublisher
from descheduler.fakecluster.nodes import registered_node
from descheduler.fakecluster.pods import reported_pod
from descheduler.fakecluster.scenario import LoadedScenario, MetricsServerFeed, NodeMetricFeed
from descheduler.fakecluster.scheduler import Scheduler
from descheduler.fakecluster.workloads import (
    DeploymentController,
    GarbageCollector,
    PodGarbageCollector,
    ReplicaSetController,
    StatefulSetController,
)
from descheduler.migration.objects import SCHEDULER_LEASE_NAMESPACE

log = logging.getLogger(__name__)


class Component(Protocol):
    def step(self, now: float) -> Any: ...


class SimulatedCluster:
    """From a scenario: the API server with the scenario's objects, and the controllers, scheduler,
    kubelet and metrics publisher stepping on a `SimClock`. `advance` moves time in ticks."""

    def __init__(
        self,
        loaded: LoadedScenario,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        start: float | None = None,
        exporter_port: int | None = None,
    ) -> None:
        """`exporter_port`: also serve node-exporter and cAdvisor metrics for a real Prometheus
        (`KubeletExporter`) on this port of `host` (0: any free port); None: no exporter."""
        scenario = loaded.scenario
        self.scenario = scenario
        # The clock starts at `start`, and the usage models see that instant. Without `start` the
        # clock starts now (for a cluster run in real time), and the usage models see the scenario's
        # own start, so the same scenario loads the same way at any hour.
        self.began = start if start is not None else time.time()
        self.clock = SimClock(self.began)
        self.tick = scenario.timing.tick_seconds
        self.store = Store(clock=self.clock, pod_termination_delay=None)
        # The cluster as it is with deploy/ installed: the descheduler's namespace, where the simulated
        # scheduler renews the scheduler Lease.
        namespaces = (*SYSTEM_NAMESPACES, SCHEDULER_LEASE_NAMESPACE)
        self.store.load({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces)
        # Scenario times keep their offsets from the scenario's origin, which becomes the clock's start.
        objects = _known(self.store, loaded.objects_at(self.began), loaded.source)
        self.store.load(_as_reported(obj, self.began) for obj in objects)
        self.server = FakeApiServer(host=host, port=port, store=self.store)
        timing = scenario.timing
        self.events = EventPlayer(self.store, scenario.events, self.began)
        self.deployments = DeploymentController(self.store)
        self.replicasets = ReplicaSetController(self.store, random.Random(scenario.seed))
        self.statefulsets = StatefulSetController(self.store)
        self.garbage_collector = GarbageCollector(self.store)
        self.pod_gc = PodGarbageCollector(self.store)
        self.scheduler = Scheduler(self.store)
        self.kubelet = Kubelet(
            self.store,
            scenario.usage,
            start_delay=timing.start_delay_seconds,
            ready_delay=timing.ready_delay_seconds,
            seed=scenario.seed,
            began=self.began,
            usage_began=scenario.start if start is None else None,
            hold_seconds=timing.usage_hold_seconds,
        )
        self.disruption = DisruptionController(self.store)
        self.metrics = MetricsPublisher(
            self.store,
            lambda: self.kubelet.usage,
            overhead=scenario.usage.overhead_units(),
            report_interval=timing.report_interval_seconds,
            metrics_server=_feed(timing.metrics_server),
            node_metric=_feed(timing.node_metric),
            began=self.began,
        )
        self.exporter = (
            None
            if exporter_port is None
            else KubeletExporter(
                self.store,
                lambda: self.kubelet.usage,
                overhead=scenario.usage.overhead_units(),
                instant=self.instant,
                host=host,
                port=exporter_port,
            )
        )
        # Order within a tick: what the user does, then controllers, scheduler, kubelet, status and metrics.
        self.components: list[Component] = [
            self.events,
            self.deployments,
            self.replicasets,
            self.statefulsets,
            self.garbage_collector,
            self.pod_gc,
            self.scheduler,
            self.kubelet,
            self.disruption,
            self.metrics,
            *([self.exporter] if self.exporter is not None else []),
        ]
        self._lock = threading.Lock()
        self._realtime: tuple[float, float, float] | None = None  # (simulated start, monotonic start, speed)

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> SimulatedCluster:
        self.server.start()
        if self.exporter is not None:
            self.exporter.start()
        self.step()
        return self

    def stop(self) -> None:
        if self.exporter is not None:
            self.exporter.stop()
        self.server.stop()

    def __enter__(self) -> SimulatedCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return self.server.url

    def write_kubeconfig(self, path: str | Path) -> Path:
        return self.server.write_kubeconfig(path)

    def api_client(self) -> Any:
        return self.server.api_client()

    # ---------------------------------------------------------------- time

    @property
    def now(self) -> float:
        return self.clock()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.began

    def instant(self) -> float:
        """The simulated instant now: the clock, plus, while running in real time, the wall time
        since its last tick (times the speed, at most one tick), so that what is read between ticks
        (the exporter's counters) moves continuously, as in a real cluster."""
        now = self.clock()
        realtime = self._realtime
        if realtime is None:
            return now
        start, began, speed = realtime
        return min(now + self.tick, max(now, start + (time.monotonic() - began) * speed))

    def step(self) -> None:
        """Run every component once at the current instant."""
        with self._lock:
            now = self.clock()
            for component in self.components:
                try:
                    component.step(now)
                except Exception:  # one component's bug must not stop the others (as in a real cluster)
                    log.exception("simulated %s failed", type(component).__name__)

    def advance(self, seconds: float) -> None:
        """Move simulated time forward by `seconds`, one tick at a time, stepping after each tick."""
        remaining = seconds
        while remaining > 1e-9:
            delta = min(self.tick, remaining)
            self.clock.advance(delta)
            remaining -= delta
            self.step()

    @contextmanager
    def running_in_real_time(self, speed: float = 1.0) -> Iterator[SimulatedCluster]:
        """The cluster advancing in real time (`run_realtime`) on a background thread while the
        block runs; stopped at its end."""
        stop = threading.Event()
        ticker = threading.Thread(target=self.run_realtime, args=(stop, speed), name="sim-realtime", daemon=True)
        ticker.start()
        try:
            yield self
        finally:
            stop.set()
            ticker.join(5)

    def run_realtime(self, stop: threading.Event, speed: float = 1.0) -> None:
        """Advance one tick per tick/speed wall seconds until `stop` is set (for `sim serve`). Between
        ticks the workload controllers and the scheduler answer pod changes at once, as a real
        cluster's do: an evicted pod's replacement is created and bound within milliseconds."""
        pods = self.store.resolve("pods")
        watcher, _ = self.store.watch(pods, since=self.store.resource_version)
        self.react()  # changes made before the watch opened
        reacting = threading.Thread(target=self._react_to_pods, args=(watcher, stop), name="sim-react", daemon=True)
        reacting.start()
        interval = self.tick / speed
        deadline = time.monotonic()
        self._realtime = (self.clock(), deadline, speed)
        try:
            while not stop.is_set():
                deadline += interval
                if stop.wait(max(0.0, deadline - time.monotonic())):
                    break
                self.advance(self.tick)
        finally:
            self._realtime = None
            reacting.join(5)

    def react(self) -> None:
        """What the workload controllers and the scheduler do about pod changes, at the current instant."""
        with self._lock:
            now = self.clock()
            for component in (self.replicasets, self.statefulsets, self.scheduler):
                try:
                    component.step(now)
                except Exception:
                    log.exception("simulated %s failed", type(component).__name__)

    def _react_to_pods(self, watcher: Watcher, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                if watcher.next(0.2) is None:
                    continue
                while watcher.next(0.0) is not None:  # one reaction to a burst of changes
                    pass
                self.react()
        finally:
            self.store.stop_watch(watcher)


def _feed(config: MetricsServerFeed | NodeMetricFeed | None) -> Feed | None:
    """The publisher's feed for a scenario's `timing.metricsServer` or `timing.nodeMetric`."""
    return None if config is None else Feed(config.interval_seconds, config.window, config.enabled)


def _as_reported(obj: dict[str, Any], now: float) -> dict[str, Any]:
    """A scenario's node or pod with the status its kubelet would have reported before `now`
    (system info, condition times, container statuses), so kubectl shows what a real cluster shows;
    other objects as they are. Done once here, so the kubelet's step has nothing more to do."""
    if obj.get("apiVersion") != "v1":
        return obj
    if obj.get("kind") == "Node":
        return registered_node(obj, now)
    if obj.get("kind") == "Pod":
        return reported_pod(obj, rfc3339(now))
    return obj


def _known(store: Store, objects: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Objects of kinds the server serves; others are dropped with one warning per kind."""
    out, warned = [], set()
    for obj in objects:
        kind = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if store.table.by_kind(*kind) is None:
            if kind not in warned:
                log.warning("%s: kind %s %s is not served by the simulated cluster; ignored", source, *kind)
                warned.add(kind)
            continue
        out.append(obj)
    return out
