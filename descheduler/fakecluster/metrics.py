"""Metrics publishers: metrics.k8s.io NodeMetrics/PodMetrics and Koordinator NodeMetric, from kubelet usage.

Without a `Feed`, a kind is published as this simulator always did: at a step at least `report_interval`
after the last report, stamped with that step, with the kubelet's usage at that step. With a Feed it
follows its real pipeline:

- metrics-server (kubernetes-sigs/metrics-server) scrapes each kubelet every `--metric-resolution`
  (60s in cmd/metrics-server/app/options/options.go; its Helm chart and manifests ship 15s). CPU is the
  rate between the two latest scrapes (pkg/storage/types.go: `cpuUsage := (last.CumulativeCpuUsed -
  prev.CumulativeCpuUsed) / window.Seconds()`), the mean over the last interval, which `window` states;
  memory is the working set at the last scrape.
- koordlet (koordinator-sh/koordinator, pkg/koordlet/statesinformer/impl/states_nodemetric.go) reports
  a NodeMetric every `reportIntervalSeconds` (60) whose nodeUsage and podUsage are, for cpu and memory
  alike, the AVERAGE over the last `aggregateDurationSeconds` (300): `startTime :=
  endTime.Add(-AggregateDurationSeconds)`, `queryNodeMetric(startTime, endTime, AggregationTypeAVG)`.

A feed publishes at began + k·interval. The cluster steps only at some instants, so a step publishes
the latest such instant p that was not published yet (older ones would be overwritten anyway), stamped
p, each value the time-weighted mean over [p − window, p] of the kubelet's usage, which holds from the
step that computed it until the next step.

metrics.k8s.io is an aggregated API: metrics-server answers it from the scrapes it holds in memory, and
nothing of it is in etcd. So the store serves it from the last publication (`Store.serve`), with no
write per pod and no resourceVersion of its own; NodeMetric is a custom resource, written to the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.apiserver.clock import rfc3339
from descheduler.fakecluster.apiserver.entry import Entry, make_entry
from descheduler.fakecluster.apiserver.resources import ResourceType
from descheduler.fakecluster.kubelet import PodUsage

# The kubelet's usage now (pod key -> usage). A feed keeps the mappings of recent steps, so the source
# must give a new mapping when usage changes rather than change the one it gave (the kubelet does).
Source = Callable[[], Mapping[str, PodUsage]]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_NODE, _CPU, _MEMORY = attrgetter("node"), attrgetter("cpu"), attrgetter("memory")
EPSILON = 1e-6  # seconds: a step this close to a publication instant is at that instant (float clocks)


def cpu_text(millicores: int) -> str:
    return f"{millicores * 1_000_000}n"  # metrics-server reports nanocores


def memory_text(units: int) -> str:
    return f"{units // 1024}Ki" if units % 1024 == 0 else str(units)


def _by_key(rt: ResourceType, objects: list[dict[str, Any]], rv: int) -> dict[str, Entry]:
    """Entries of `objects` by key, in key order (how the store lists)."""
    entries = (make_entry(rt, obj, rv, share=True) for obj in objects)
    return dict(sorted(((entry.key, entry) for entry in entries), key=lambda item: item[0]))


@dataclass(slots=True)
class _Served:
    """The metrics-server publication served: its reading, timestamp and window, the nodes there were,
    the store's resourceVersion then, and the objects made from them on the first read."""

    reading: Reading
    stamp: str
    window: str
    nodes: list[dict[str, Any]]
    rv: int
    entries: tuple[dict[str, Entry], dict[str, Entry]] | None = None


@dataclass(frozen=True, slots=True)
class Feed:
    """One pipeline's cadence: published at began + k·interval, each value the time-weighted mean of
    the kubelet's usage over the `window` seconds before (0: the value at that instant)."""

    interval: int
    window: int = 0
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class Reading:
    """What one publication reports: the pods running at `at` with their usage, and each node's Σ of
    its pods' usage over the same span (without the node's overhead)."""

    at: float
    pods: Mapping[str, PodUsage]
    nodes: Mapping[str, tuple[int, int]]  # node -> (cpu millicores, memory bytes)


@dataclass(slots=True)
class _Columns:
    """One step's usage as arrays, in the order of its mapping: pod and node numbers, cpu and memory."""

    pods: IntArray
    nodes: IntArray
    values: tuple[FloatArray, FloatArray]  # cpu, memory


@dataclass(slots=True)
class _Segment:
    start: float
    usage: Mapping[str, PodUsage]
    columns: _Columns | None = None  # built when a publication first needs them


@dataclass(slots=True)
class UsageHistory:
    """The kubelet's usage at recent steps, each holding from its step until the next: enough to
    average over a window. Arrays are built only for what a publication reads, once per step."""

    segments: list[_Segment] = field(default_factory=list)
    _pods: dict[str, int] = field(default_factory=dict)
    _nodes: dict[str, int] = field(default_factory=dict)
    # The last usage mapping given columns, and them: a kubelet whose pods did not change hands over
    # the same mapping step after step, and its steps share one set of arrays.
    _last: tuple[Mapping[str, PodUsage], _Columns] | None = None

    def record(self, now: float, usage: Mapping[str, PodUsage]) -> None:
        if self.segments and now <= self.segments[-1].start + EPSILON:
            self.segments.pop()  # a second step at the same instant: its usage holds from there
        self.segments.append(_Segment(now, usage))

    def forget_before(self, instant: float) -> None:
        """Drop what no window starting at `instant` or later overlaps (the step covering it stays)."""
        keep = 0
        for i, segment in enumerate(self.segments):
            if segment.start > instant + EPSILON:
                break
            keep = i
        del self.segments[:keep]

    def reading(self, at: float, cpu_window: float, memory_window: float) -> Reading | None:
        """The pods running at `at`, each with its mean over the time it ran in the window (its value
        at `at` when none), and each node's Σ of its pods' usage averaged over the window's covered
        time; None before the first step."""
        current = next((s for s in reversed(self.segments) if s.start <= at + EPSILON), None)
        if current is None:
            return None
        if len(self._pods) > 4 * len(current.usage) + 4096:  # pods come and go for days: renumber
            self._pods.clear()
            self._nodes.clear()
            self._last = None
            for segment in self.segments:
                segment.columns = None
        now = self._columns(current)
        cpu, node_cpu = self._means(at, cpu_window, now, 0)
        memory, node_memory = self._means(at, memory_window, now, 1)
        pods = {
            key: PodUsage(u.namespace, u.name, u.node, c, m)
            for (key, u), c, m in zip(current.usage.items(), _rounded(cpu), _rounded(memory), strict=True)
        }
        cpu_by_node, memory_by_node = _rounded(node_cpu), _rounded(node_memory)
        nodes = {name: (cpu_by_node[i], memory_by_node[i]) for name, i in self._nodes.items()}
        return Reading(at, pods, nodes)

    def _means(self, at: float, window: float, now: _Columns, column: int) -> tuple[FloatArray, FloatArray]:
        """`now`'s pods' means of `column` over [at − window, at] and the nodes' (by node number)."""
        parts = self._overlaps(at, window)
        if not parts:  # window 0, or nothing recorded before `at`: the value at `at`
            values = now.values[column]
            return values, _sums(now.nodes, values, len(self._nodes))
        pods = np.concatenate([c.pods for c, _ in parts])
        nodes = np.concatenate([c.nodes for c, _ in parts])
        weights = np.concatenate([np.full(len(c.pods), overlap) for c, overlap in parts])
        weighted = np.concatenate([c.values[column] for c, _ in parts]) * weights
        present = _sums(pods, weights, len(self._pods))[now.pods]
        total = _sums(pods, weighted, len(self._pods))[now.pods]
        by_pod = np.where(present > 0, total / np.where(present > 0, present, 1.0), now.values[column])
        covered = sum(overlap for _, overlap in parts)
        return by_pod, _sums(nodes, weighted, len(self._nodes)) / covered

    def _overlaps(self, at: float, window: float) -> list[tuple[_Columns, float]]:
        """Each step's columns with the time its usage held within [at − window, at]."""
        out = []
        segments = self.segments
        for i, segment in enumerate(segments):
            if segment.start > at + EPSILON:
                break
            end = segments[i + 1].start if i + 1 < len(segments) else math.inf
            overlap = min(end, at) - max(segment.start, at - window)
            if overlap > EPSILON:
                out.append((self._columns(segment), overlap))
        return out

    def _columns(self, segment: _Segment) -> _Columns:
        if segment.columns is None and self._last is not None and self._last[0] is segment.usage:
            segment.columns = self._last[1]
        if segment.columns is None:
            usage, pods, nodes = segment.usage, self._pods, self._nodes
            values = list(usage.values())
            on = list(map(_NODE, values))
            for key in usage.keys() - pods.keys():
                pods[key] = len(pods)
            for name in set(on) - nodes.keys():
                nodes[name] = len(nodes)
            n = len(values)
            segment.columns = _Columns(
                pods=np.fromiter(map(pods.__getitem__, usage), np.int64, n),
                nodes=np.fromiter(map(nodes.__getitem__, on), np.int64, n),
                values=(
                    np.fromiter(map(_CPU, values), np.float64, n),
                    np.fromiter(map(_MEMORY, values), np.float64, n),
                ),
            )
            self._last = (usage, segment.columns)
        return segment.columns


def _sums(index: IntArray, weights: FloatArray, size: int) -> FloatArray:
    """Σ of `weights` by `index` (0 for an index that has none)."""
    return np.asarray(np.bincount(index, weights=weights, minlength=size), dtype=np.float64)


def _rounded(values: FloatArray) -> list[int]:
    return list(map(int, np.rint(values).astype(np.int64).tolist()))


@dataclass(slots=True)
class MetricsPublisher:
    """PodMetrics per running pod and NodeMetrics per node (Σ pods + overhead), served from the last
    publication as metrics-server serves them from memory, and a NodeMetric per node, stored. Each kind
    follows its `Feed`, or without one is published as before: at a step at least `report_interval`
    after the last report, with that step's usage."""

    store: Store
    usage: Source
    overhead: Mapping[str, int] = field(default_factory=lambda: {"cpu": 200, "memory": 512 * 2**20})
    report_interval: int = 60
    metrics_server: Feed | None = None
    node_metric: Feed | None = None
    began: float | None = None  # feeds publish at its interval's multiples from here; None: the first step
    last_report: float | None = None
    history: UsageHistory = field(default_factory=UsageHistory)
    _published: dict[str, float] = field(default_factory=dict)  # feed -> the last instant it published
    _served: _Served | None = None  # what metrics.k8s.io answers from

    def step(self, now: float) -> None:
        if self.began is None:
            self.began = now
        feeds = self._feeds()
        if feeds:
            self.history.record(now, self.usage())
        stepped = self.metrics_server is None or self.node_metric is None
        if stepped and (self.last_report is None or now >= self.last_report + self.report_interval):
            self.publish(now)
        for name, feed in feeds.items():
            at = self._due(name, feed, now)
            if at is None:
                continue
            server = name == "metrics-server"  # its window is cpu's: memory is the working set at the scrape
            reading = self.history.reading(at, feed.window, 0 if server else feed.window)
            if reading is None:
                continue
            self._published[name] = at
            if server:
                self._write(reading, server_window=feed.window)
            else:
                self._write(reading, node_metric=(feed.interval, feed.window))
        if feeds:
            self.history.forget_before(min(self._next(name, feed) - feed.window for name, feed in feeds.items()))

    def publish(self, now: float) -> None:
        """Publish the kinds without a feed now, with the usage now."""
        self.last_report = now
        pods = dict(self.usage())
        nodes: dict[str, tuple[int, int]] = {}
        for u in pods.values():
            cpu, memory = nodes.get(u.node, (0, 0))
            nodes[u.node] = (cpu + u.cpu, memory + u.memory)
        self._write(
            Reading(now, pods, nodes),
            server_window=self.report_interval if self.metrics_server is None else None,
            node_metric=(self.report_interval, 300) if self.node_metric is None else None,
        )

    def _feeds(self) -> dict[str, Feed]:
        named = {"metrics-server": self.metrics_server, "NodeMetric": self.node_metric}
        return {name: feed for name, feed in named.items() if feed is not None and feed.enabled}

    def _next(self, name: str, feed: Feed) -> float:
        """The earliest instant the feed may publish next."""
        last = self._published.get(name)
        assert self.began is not None
        return self.began if last is None else last + feed.interval

    def _due(self, name: str, feed: Feed, now: float) -> float | None:
        """The latest of the feed's instants at or before `now` not published yet; None if none."""
        assert self.began is not None
        at = self.began + math.floor((now - self.began + EPSILON) / feed.interval) * feed.interval
        return at if at >= self._next(name, feed) - EPSILON else None

    def _write(
        self, reading: Reading, *, server_window: int | None = None, node_metric: tuple[int, int] | None = None
    ) -> None:
        """metrics.k8s.io objects when `server_window` is given; NodeMetric when `node_metric`
        (report interval, aggregate duration) is."""
        stamp = rfc3339(reading.at)
        nodes = self.store.list("nodes", shared=True)
        if server_window is not None:
            self._serve(_Served(reading, stamp, f"{server_window}s", nodes, self.store.resource_version))
        if node_metric is None:
            return
        by_node: dict[str, list[PodUsage]] = {}
        for usage in reading.pods.values():
            by_node.setdefault(usage.node, []).append(usage)
        interval, duration = node_metric
        for node in nodes:
            name = node["metadata"]["name"]
            cpu, memory = self._node_usage(reading, name)
            self.store.put(self._node_metric(name, stamp, cpu, memory, by_node.get(name, []), interval, duration))

    def _node_usage(self, reading: Reading, node: str) -> tuple[int, int]:
        """A node's cpu millicores and memory bytes in `reading`: its pods' Σ plus the node's overhead."""
        cpu, memory = reading.nodes.get(node, (0, 0))
        return cpu + self.overhead.get("cpu", 0), memory + self.overhead.get("memory", 0)

    def _serve(self, served: _Served) -> None:
        """metrics.k8s.io answers from this publication from now on. Like metrics-server, which keeps
        its scrapes in memory, nothing is stored: the objects are made when a get or list first asks."""
        first = self._served is None
        self._served = served
        if first:
            self.store.serve("nodes.metrics.k8s.io", lambda: self._entries(0))
            self.store.serve("pods.metrics.k8s.io", lambda: self._entries(1))

    def _entries(self, kind: int) -> Mapping[str, Entry]:
        """The served publication's NodeMetrics (kind 0) or PodMetrics (1) by key, in key order."""
        served = self._served
        assert served is not None
        if served.entries is None:
            served.entries = (self._node_entries(served), self._pod_entries(served))
        return served.entries[kind]

    def _node_entries(self, served: _Served) -> dict[str, Entry]:
        rt = self.store.resolve("nodes.metrics.k8s.io")
        objects = []
        for node in served.nodes:
            cpu, memory = self._node_usage(served.reading, node["metadata"]["name"])
            meta = {"name": node["metadata"]["name"], "labels": dict(node["metadata"].get("labels") or {})}
            objects.append(
                {
                    "apiVersion": "metrics.k8s.io/v1beta1",
                    "kind": "NodeMetrics",
                    "metadata": meta | {"creationTimestamp": served.stamp},
                    "timestamp": served.stamp,
                    "window": served.window,
                    "usage": {"cpu": cpu_text(cpu), "memory": memory_text(memory)},
                }
            )
        return _by_key(rt, objects, served.rv)

    def _pod_entries(self, served: _Served) -> dict[str, Entry]:
        rt = self.store.resolve("pods.metrics.k8s.io")
        objects = [
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "PodMetrics",
                "metadata": {"name": u.name, "namespace": u.namespace, "creationTimestamp": served.stamp},
                "timestamp": served.stamp,
                "window": served.window,
                "containers": [{"name": "main", "usage": {"cpu": cpu_text(u.cpu), "memory": memory_text(u.memory)}}],
            }
            for u in served.reading.pods.values()
        ]
        return _by_key(rt, objects, served.rv)

    def _node_metric(
        self, node: str, stamp: str, cpu: int, memory: int, pods: list[PodUsage], interval: int, window: int
    ) -> dict[str, Any]:
        return {
            "apiVersion": "slo.koordinator.sh/v1alpha1",
            "kind": "NodeMetric",
            "metadata": {"name": node},
            "spec": {"metricCollectPolicy": {"reportIntervalSeconds": interval, "aggregateDurationSeconds": window}},
            "status": {
                "updateTime": stamp,
                "nodeMetric": {
                    "nodeUsage": {"resources": {"cpu": f"{cpu}m", "memory": memory_text(memory)}},
                    "systemUsage": {
                        "resources": {
                            "cpu": f"{self.overhead.get('cpu', 0)}m",
                            "memory": memory_text(self.overhead.get("memory", 0)),
                        }
                    },
                },
                "podsMetric": [
                    {
                        "namespace": u.namespace,
                        "name": u.name,
                        "podUsage": {"resources": {"cpu": f"{u.cpu}m", "memory": memory_text(u.memory)}},
                    }
                    for u in sorted(pods, key=lambda u: (u.namespace, u.name))
                ],
            },
        }
