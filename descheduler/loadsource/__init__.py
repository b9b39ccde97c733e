"""Load readers: node and pod usage from the policy's load source, behind one interface.

    reader = reader_for(policy.load_source, client, cache)   # cache: optional, see NodeMetricReader
    reading = reader.read(now)          # LoadReading; raises LoadSourceError when it cannot read
    snapshot = cache.snapshot(now, reading)

- `metricsServer`: metrics.k8s.io NodeMetrics and PodMetrics (listed on each read);
- `nodeMetric`: Koordinator NodeMetric objects (from the cache when it watches them, else listed);
- `prometheus`: the HTTP query API with the policy's PromQL.

A reader never fills gaps: a node or pod it has no usable data for is absent from the reading
(malformed objects and series are named in `warnings`), and a source that cannot be read at all
raises LoadSourceError (a ClusterUnreachableError: `plan` exits 2, a cycle is skipped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from descheduler.kube.client import KubeClient
from descheduler.loadsource.metricsserver import MetricsServerReader
from descheduler.loadsource.nodemetric import NodeMetricReader
from descheduler.loadsource.prometheus import PrometheusReader
from descheduler.loadsource.reading import LoadReader, LoadReading, LoadSourceError
from descheduler.policy import LoadSource, MetricsServerSource, NodeMetricSource, PrometheusSource

if TYPE_CHECKING:
    from descheduler.kube.cache import ClusterCache  # NumPy with it, which `snapshot save` does not need


def reader_for(source: LoadSource, client: KubeClient, cache: ClusterCache | None = None) -> LoadReader:
    """The reader for a policy's `loadSource`."""
    if isinstance(source, MetricsServerSource):
        return MetricsServerReader(client)
    if isinstance(source, NodeMetricSource):
        return NodeMetricReader(client, cache)
    if isinstance(source, PrometheusSource):
        return PrometheusReader(source)
    raise TypeError(f"unknown load source {type(source).__name__}")


def cache_kinds(source: LoadSource) -> tuple[str, ...]:
    """Resources the cache should watch for this load source, besides the cluster's own."""
    from descheduler.kube.kinds import NODE_METRICS

    return (NODE_METRICS,) if isinstance(source, NodeMetricSource) else ()


__all__ = [
    "LoadReader",
    "LoadReading",
    "LoadSourceError",
    "MetricsServerReader",
    "NodeMetricReader",
    "PrometheusReader",
    "cache_kinds",
    "reader_for",
]
