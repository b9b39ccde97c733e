"""Metrics publishers: metrics.k8s.io NodeMetrics/PodMetrics and Koordinator NodeMetric, from kubelet usage."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.apiserver.clock import rfc3339
from descheduler.fakecluster.kubelet import PodUsage

Source = Callable[[], Mapping[str, PodUsage]]


def cpu_text(millicores: int) -> str:
    return f"{millicores * 1_000_000}n"  # metrics-server reports nanocores


def memory_text(units: int) -> str:
    return f"{units // 1024}Ki" if units % 1024 == 0 else str(units)


def _upsert(store: Store, obj: dict[str, Any]) -> None:
    store.put(obj)


@dataclass(slots=True)
class MetricsPublisher:
    """Every `report_interval` seconds: PodMetrics per running pod, NodeMetrics per node (Σ pods +
    overhead), and a NodeMetric per node; stale PodMetrics are removed."""

    store: Store
    usage: Source
    overhead: Mapping[str, int] = field(default_factory=lambda: {"cpu": 200, "memory": 512 * 2**20})
    report_interval: int = 60
    metrics_server: bool = True
    koordinator: bool = True
    last_report: float | None = None

    def step(self, now: float) -> None:
        if self.last_report is not None and now < self.last_report + self.report_interval:
            return
        self.publish(now)

    def publish(self, now: float) -> None:
        self.last_report = now
        stamp = rfc3339(now)
        window = f"{self.report_interval}s"
        pods = dict(self.usage())
        by_node: dict[str, list[PodUsage]] = {}
        for usage in pods.values():
            by_node.setdefault(usage.node, []).append(usage)
        if self.metrics_server:
            for usage in pods.values():
                _upsert(
                    self.store,
                    {
                        "apiVersion": "metrics.k8s.io/v1beta1",
                        "kind": "PodMetrics",
                        "metadata": {"name": usage.name, "namespace": usage.namespace},
                        "timestamp": stamp,
                        "window": window,
                        "containers": [
                            {"name": "main", "usage": {"cpu": cpu_text(usage.cpu), "memory": memory_text(usage.memory)}}
                        ],
                    },
                )
            rt = self.store.resolve("pods.metrics.k8s.io")
            for entry in self.store.list_page(rt).items:  # names only: no object decoded
                if entry.key not in pods:
                    namespace, name = entry.key.split("/", 1)
                    self.store.delete(rt, name, namespace)
        for node in self.store.list("nodes", shared=True):
            name = node["metadata"]["name"]
            members = by_node.get(name, [])
            cpu = sum(u.cpu for u in members) + self.overhead.get("cpu", 0)
            memory = sum(u.memory for u in members) + self.overhead.get("memory", 0)
            if self.metrics_server:
                _upsert(
                    self.store,
                    {
                        "apiVersion": "metrics.k8s.io/v1beta1",
                        "kind": "NodeMetrics",
                        "metadata": {"name": name, "labels": dict(node["metadata"].get("labels") or {})},
                        "timestamp": stamp,
                        "window": window,
                        "usage": {"cpu": cpu_text(cpu), "memory": memory_text(memory)},
                    },
                )
            if self.koordinator:
                _upsert(self.store, self._node_metric(name, stamp, cpu, memory, members))

    def _node_metric(self, node: str, stamp: str, cpu: int, memory: int, pods: list[PodUsage]) -> dict[str, Any]:
        return {
            "apiVersion": "slo.koordinator.sh/v1alpha1",
            "kind": "NodeMetric",
            "metadata": {"name": node},
            "spec": {
                "metricCollectPolicy": {"reportIntervalSeconds": self.report_interval, "aggregateDurationSeconds": 300}
            },
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
