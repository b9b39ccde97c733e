"""Koordinator NodeMetric (slo.koordinator.sh/v1alpha1): instant node usage, system usage,
aggregated percentiles, the update time and the report interval, and the pods' usage.

Read from the list-watch cache when it watches NodeMetrics (the controller), else listed on
each read (`plan`, `snapshot save`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from descheduler.errors import ClusterUnreachableError
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.kube.kinds import KINDS, NODE_METRICS, NodeMetricRecord
from descheduler.kube.listing import list_records, list_texts, records_of
from descheduler.loadsource.reading import LoadReading, LoadSourceError
from descheduler.model import NodeUsage, PodUsage

if TYPE_CHECKING:
    from descheduler.kube.cache import ClusterCache  # NumPy with it, which `snapshot save` does not need

SOURCE = "NodeMetric"
_KIND = KINDS[NODE_METRICS]
_NOT_SERVED = (
    f"{_KIND.api_version} NodeMetric is not served by this cluster (404 on {_KIND.path}): "
    "install Koordinator (koord-manager and koordlet), or set loadSource.type to metricsServer or prometheus"
)


class NodeMetricReader:
    """Reads Koordinator NodeMetric objects, from `cache` when it holds them."""

    source = SOURCE

    def __init__(self, client: KubeClient, cache: ClusterCache | None = None) -> None:
        self.client = client
        self.cache = cache if cache is not None and cache.has(NODE_METRICS) else None

    def read(self, now: datetime, *, keep_objects: bool = False, usage: bool = True) -> LoadReading:
        objects: list[msgspec.Raw] = []
        if self.cache is not None and not keep_objects:
            records, problems = self._from_cache(self.cache)
        else:
            records, problems, objects = self._list(keep_objects)
        node_usage: dict[str, NodeUsage] = {}
        pod_usage: dict[str, PodUsage] = {}
        for node, pods in records.values():
            if node is not None:
                node_usage[node.node] = node
            for pod in pods:
                seen = pod_usage.get(pod.key)
                # A pod that moved can be in two nodes' reports for a while: the newer one is right.
                if seen is None or pod.timestamp > seen.timestamp:
                    pod_usage[pod.key] = pod
        left_out = sorted(problems.items())
        return LoadReading(
            source=SOURCE,
            read_at=now,
            node_usage=node_usage,
            pod_usage=pod_usage,
            warnings=tuple(f"NodeMetric {key}: cannot be read, ignored: {why}" for key, why in left_out),
            objects=tuple(objects),
        )

    def _from_cache(self, cache: ClusterCache) -> tuple[dict[str, NodeMetricRecord], dict[str, str]]:
        status = cache.status()[NODE_METRICS]
        if status.absent:
            raise LoadSourceError(_NOT_SERVED)
        if not status.synced:
            why = f": {status.error}" if status.error else ""
            raise LoadSourceError(f"NodeMetric objects are not listed yet{why}")
        return cache.node_metrics(), cache.problems_of(NODE_METRICS)

    def _list(self, keep_objects: bool) -> tuple[dict[str, NodeMetricRecord], dict[str, str], list[msgspec.Raw]]:
        objects: list[msgspec.Raw] = []
        try:
            if keep_objects:
                objects, _ = list_texts(self.client, _KIND.path, api_version=_KIND.api_version, kind=_KIND.kind)
                listed = records_of(_KIND, objects)
            else:
                listed = list_records(self.client, _KIND)
        except KubeApiError as error:
            if error.status == 404:
                raise LoadSourceError(_NOT_SERVED) from None
            raise LoadSourceError(f"{SOURCE}: {error}") from None
        except ClusterUnreachableError as error:
            raise LoadSourceError(f"{SOURCE}: {error}") from None
        except ValueError as error:
            raise LoadSourceError(f"{SOURCE}: the NodeMetric list is malformed: {error}") from None
        return listed.records, listed.problems, objects

    def close(self) -> None:
        """Nothing to release: the client and the cache belong to the caller."""
