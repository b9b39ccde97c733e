"""A kubelet stand-in exporter: node-exporter and cAdvisor series derived from the simulated usage,
in the Prometheus text format over HTTP on loopback, so a real Prometheus can scrape the simulated
cluster and the Prometheus load source can be tested through real PromQL.

One path per node and kind, as kube-prometheus scrapes one node-exporter and one kubelet per node:

    /metrics/node/<node>        node_cpu_seconds_total{cpu,mode}, node_memory_MemTotal_bytes,
                                node_memory_MemAvailable_bytes
    /metrics/cadvisor/<node>    container_cpu_usage_seconds_total, container_memory_working_set_bytes
                                {namespace,pod,container,id,image,name}: one series per container,
                                the pause container (container="POD"), the pod's cgroup
                                (container="") and the node's root cgroup (id="/", no pod labels)

`scrape_configs` writes the matching Prometheus jobs, labelling each target `instance: <node>`.

CPU counters are usage integrated over simulated time: a step holds the usage the kubelet reported
until the next step, and a scrape between steps reads the counters at `instant()` (the cluster's
simulated instant, between ticks when it runs in real time), so they grow continuously, as the
kernel's do. Busy cores per node are Σ pods + the node's overhead, what MetricsPublisher's
NodeMetrics report, capped at the node's cores. A container's counter starts at 0 and belongs to its
pod's uid: a recreated pod (same name) is a new series, so every series is monotonic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.kubelet import PodUsage
from descheduler.quantity import to_units

Usage = Callable[[], Mapping[str, PodUsage]]
Fault = Literal["invalid", "unavailable"]

NODE_PATH = "/metrics/node/"
CADVISOR_PATH = "/metrics/cadvisor/"
CPU_MODES = ("idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user")
BUSY_MODES = {"user": 0.7, "system": 0.3}  # how busy time splits between modes (any split sums the same)
BOOT_UPTIME = 3600.0  # node counters start as if the node booted an hour earlier, idle since
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
PAUSE_CPU_CORES = 0.0001  # a real pause container uses next to nothing, but not nothing
PAUSE_MEMORY = 512 * 1024
CADVISOR_LABELS = ("container", "id", "image", "name", "namespace", "pod")
# What node-exporter and the kubelet send (prometheus_client's latest says version=1.0.0, which 2.x does not know).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
INVALID_EXPOSITION = b"# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu=0} one\n"


@dataclass(slots=True)
class _Node:
    cores: float
    memory_total: int
    busy_rate: float = 0.0  # cores busy since the last step
    busy: float = 0.0  # busy cpu-seconds, all cpus
    idle: float = 0.0  # idle cpu-seconds, all cpus
    memory_used: int = 0


@dataclass(slots=True)
class _Container:
    node: str
    labels: tuple[str, ...]  # values of CADVISOR_LABELS
    pod_uid: str
    rate: float = 0.0  # cores since the last step
    seconds: float = 0.0
    memory: int = 0


@dataclass(slots=True)
class KubeletExporter:
    """Serves each node's node-exporter and cAdvisor metrics; `step` integrates the kubelet's usage."""

    store: Store
    usage: Usage
    overhead: Mapping[str, int] = field(default_factory=lambda: {"cpu": 200, "memory": 512 * 2**20})
    instant: Callable[[], float] | None = None  # the simulated instant a scrape reads; default: the last step
    host: str = "127.0.0.1"
    port: int = 0
    faults: dict[str, Fault] = field(default_factory=dict)  # node → how its two paths fail
    _nodes: dict[str, _Node] = field(default_factory=dict)
    _containers: dict[tuple[str, str], _Container] = field(default_factory=dict)  # (pod uid, container)
    _at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # ---------------------------------------------------------------- simulation

    def step(self, now: float) -> None:
        with self._lock:
            elapsed = 0.0 if self._at is None else max(0.0, now - self._at)
            self._integrate(elapsed)
            self._at = now
            self._observe()

    def _integrate(self, seconds: float) -> None:
        for node in self._nodes.values():
            node.busy += node.busy_rate * seconds
            node.idle += (node.cores - node.busy_rate) * seconds
        for container in self._containers.values():
            container.seconds += container.rate * seconds

    def _observe(self) -> None:
        """Take the current nodes, pods and usage as the rates until the next step."""
        usage = dict(self.usage())
        nodes: dict[str, _Node] = {}
        for obj in self.store.list("nodes"):
            name = obj["metadata"]["name"]
            status = obj.get("status") or {}
            capacity = status.get("capacity") or status.get("allocatable") or {}
            cores = to_units("cpu", capacity.get("cpu", "1")) / 1000
            memory = to_units("memory", capacity.get("memory", "0"))
            nodes[name] = self._nodes.get(name) or _Node(cores=cores, memory_total=memory, idle=BOOT_UPTIME * cores)
        busy = {name: self.overhead.get("cpu", 0) for name in nodes}
        used = {name: self.overhead.get("memory", 0) for name in nodes}
        containers: dict[tuple[str, str], _Container] = {}
        for pod in self.store.list("pods"):
            meta = pod["metadata"]
            reported = usage.get(f"{meta.get('namespace', '')}/{meta['name']}")
            if reported is None or reported.node not in nodes:
                continue
            busy[reported.node] += reported.cpu
            used[reported.node] += reported.memory
            for key, share in _split(pod, reported, str(meta.get("uid"))):
                containers[key] = self._containers.get(key) or share
                containers[key].rate, containers[key].memory = share.rate, share.memory
        for name, node in nodes.items():
            node.busy_rate = min(node.cores, busy[name] / 1000)
            node.memory_used = min(node.memory_total, used[name])
        self._nodes, self._containers = nodes, containers

    # ---------------------------------------------------------------- exposition

    def node_metrics(self, node: str) -> list[Metric]:
        """What node-exporter on `node` reports now; empty when there is no such node."""
        with self._lock:
            state = self._nodes.get(node)
            if state is None:
                return []
            ahead = self._ahead()
            busy = state.busy + state.busy_rate * ahead
            idle = state.idle + (state.cores - state.busy_rate) * ahead
            cpus = max(1, round(state.cores))
            cpu = CounterMetricFamily(
                "node_cpu_seconds_total", "Seconds the CPUs spent in each mode.", labels=("cpu", "mode")
            )
            for index in range(cpus):
                for mode in CPU_MODES:
                    seconds = idle if mode == "idle" else busy * BUSY_MODES.get(mode, 0.0)
                    cpu.add_metric((str(index), mode), seconds / cpus)
            total = GaugeMetricFamily("node_memory_MemTotal_bytes", "Memory information field MemTotal_bytes.")
            total.add_metric((), state.memory_total)
            available = GaugeMetricFamily(
                "node_memory_MemAvailable_bytes", "Memory information field MemAvailable_bytes."
            )
            available.add_metric((), state.memory_total - state.memory_used)
            return [cpu, total, available]

    def cadvisor_metrics(self, node: str) -> list[Metric]:
        """What the kubelet's cAdvisor endpoint on `node` reports now; empty when there is no such node."""
        with self._lock:
            state = self._nodes.get(node)
            if state is None:
                return []
            ahead = self._ahead()
            cpu = CounterMetricFamily(
                "container_cpu_usage_seconds_total",
                "Cumulative cpu time consumed in seconds.",
                labels=CADVISOR_LABELS,
            )
            memory = GaugeMetricFamily(
                "container_memory_working_set_bytes", "Current working set in bytes.", labels=CADVISOR_LABELS
            )
            pods: dict[str, tuple[tuple[str, ...], float, int]] = {}
            for container in self._containers.values():
                if container.node != node:
                    continue
                seconds = container.seconds + container.rate * ahead
                cpu.add_metric(container.labels, seconds)
                memory.add_metric(container.labels, container.memory)
                _, namespace, pod = container.labels[1], container.labels[4], container.labels[5]
                cgroup = ("", f"/kubepods/burstable/pod{container.pod_uid}", "", "", namespace, pod)
                _, total_seconds, total_memory = pods.get(container.pod_uid, (cgroup, 0.0, 0))
                pods[container.pod_uid] = (cgroup, total_seconds + seconds, total_memory + container.memory)
            for labels, seconds, used in pods.values():  # the pod's own cgroup: Σ its containers
                cpu.add_metric(labels, seconds)
                memory.add_metric(labels, used)
            root = ("", "/", "", "", "", "")  # the node's root cgroup, no pod labels
            cpu.add_metric(root, state.busy + state.busy_rate * ahead)
            memory.add_metric(root, state.memory_used)
            return [cpu, memory]

    def _ahead(self) -> float:
        """Simulated seconds since the last step that a scrape now reads the counters at."""
        if self.instant is None or self._at is None:
            return 0.0
        return max(0.0, self.instant() - self._at)

    def exposition(self, path: str) -> tuple[int, bytes]:
        """(HTTP status, body) for a GET of `path`."""
        for prefix, metrics in ((NODE_PATH, self.node_metrics), (CADVISOR_PATH, self.cadvisor_metrics)):
            if path.startswith(prefix):
                node = path[len(prefix) :]
                fault = self.faults.get(node)
                if fault == "invalid":
                    return 200, INVALID_EXPOSITION
                if fault == "unavailable":
                    return 503, b"exporter unavailable\n"
                families = metrics(node)
                if not families:
                    return 404, f"no node {node!r}\n".encode()
                return 200, generate_latest(_Families(families))
        return 404, b"paths: /metrics/node/<node>, /metrics/cadvisor/<node>\n"

    # ---------------------------------------------------------------- serving

    def start(self) -> KubeletExporter:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer((self.host, self.port), _handler(self))
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.02,), name=f"kubelet-exporter:{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    @property
    def address(self) -> str:
        """host:port, what a scrape target names."""
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def nodes(self) -> list[str]:
        with self._lock:
            return sorted(self._nodes)


class _Families:
    """A collector holding metric families already built (generate_latest takes any collector)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self._families


def _split(pod: Mapping[str, Any], usage: PodUsage, uid: str) -> Iterator[tuple[tuple[str, str], _Container]]:
    """The pod's usage per container (by request, the rest to the first), plus its pause container."""
    meta = pod["metadata"]
    spec = pod.get("spec") or {}
    specs = [c for c in spec.get("containers") or [] if c.get("name")] or [{"name": "main"}]
    namespace, name = str(meta.get("namespace", "")), str(meta["name"])

    def requested(container: Mapping[str, Any], resource: str) -> int:
        value = ((container.get("resources") or {}).get("requests") or {}).get(resource)
        return 0 if value is None else to_units(resource, value)

    cpu_weights = [requested(c, "cpu") for c in specs]
    memory_weights = [requested(c, "memory") for c in specs]
    cpu_shares = _shares(usage.cpu, cpu_weights)
    memory_shares = _shares(usage.memory, memory_weights)
    for container, cpu, memory in zip(specs, cpu_shares, memory_shares, strict=True):
        cname = str(container["name"])
        labels = (
            cname,
            f"/kubepods/burstable/pod{uid}/{cname}",
            str(container.get("image", "")),
            f"k8s_{cname}_{name}_{namespace}_{uid}_0",
            namespace,
            name,
        )
        yield (uid, cname), _Container(usage.node, labels, uid, rate=cpu / 1000, memory=memory)
    pause = ("POD", f"/kubepods/burstable/pod{uid}/pause", PAUSE_IMAGE, f"k8s_POD_{name}_{namespace}_{uid}_0")
    yield (
        (uid, "POD"),
        _Container(usage.node, (*pause, namespace, name), uid, rate=PAUSE_CPU_CORES, memory=PAUSE_MEMORY),
    )


def _shares(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights` (evenly when they are all 0); the rest goes to the first."""
    if not any(weights):
        weights = [1] * len(weights)
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    shares[0] += total - sum(shares)
    return shares


def _handler(exporter: KubeletExporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            status, body = exporter.exposition(self.path.split("?")[0])
            try:
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the scraper gave up

    return Handler


def scrape_configs(address: str, nodes: Iterable[str], *, scheme: str = "http") -> list[dict[str, Any]]:
    """Prometheus scrape_configs for an exporter at `address` (host:port) serving `nodes`.

    As kube-prometheus labels them: job node-exporter and job kubelet (metrics_path
    /metrics/cadvisor), each target's `instance` and `node` the node name, so the default queries
    (sum by instance, sum by namespace, pod) read the simulated cluster as they read a real one.
    """
    names = sorted(nodes)
    return [
        {
            "job_name": "node-exporter",
            "scheme": scheme,
            "static_configs": [
                {"targets": [address], "labels": {"instance": n, "node": n, "__metrics_path__": f"{NODE_PATH}{n}"}}
                for n in names
            ],
        },
        {
            "job_name": "kubelet",
            "scheme": scheme,
            "static_configs": [
                {
                    "targets": [address],
                    "labels": {
                        "instance": n,
                        "node": n,
                        "metrics_path": "/metrics/cadvisor",
                        "__metrics_path__": f"{CADVISOR_PATH}{n}",
                    },
                }
                for n in names
            ],
        },
    ]
