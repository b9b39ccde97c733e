"""metrics.k8s.io (metrics-server): NodeMetrics and PodMetrics, listed on every read.

The aggregated metrics API cannot be watched, so each read lists both collections (one request
each: metrics-server answers a list whole). Timestamps are the ones metrics-server reports.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import msgspec

from descheduler import decode
from descheduler.errors import ClusterUnreachableError
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.kube.kinds import ResourceKind
from descheduler.kube.listing import Listed, list_records, list_texts, records_of
from descheduler.loadsource.reading import LoadReading, LoadSourceError
from descheduler.model import NodeUsage, PodUsage
from descheduler.quantity import QuantityError, to_units

SOURCE = "metrics.k8s.io"
NODE_METRICS = ResourceKind(
    "nodes.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False,
    decode.RawNodeMetrics, decode.node_usage_from_metrics,
)  # fmt: skip
POD_METRICS = ResourceKind(
    "pods.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "pods", "PodMetrics", True,
    decode.RawPodMetrics, decode.pod_usage_from_metrics,
)  # fmt: skip


class MetricsServerReader:
    """Reads node and pod usage from the cluster's metrics.k8s.io API."""

    source = SOURCE

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def read(self, now: datetime, *, keep_objects: bool = False, usage: bool = True) -> LoadReading:
        nodes, node_warnings, node_objects = self._list(NODE_METRICS, keep_objects)
        # Pods' usage left out when not asked for (150,000 records built only to be thrown away);
        # their objects are still checked, so the warnings are the same.
        pods, pod_warnings, pod_objects = self._list(POD_METRICS, keep_objects, records=usage)
        node_usage: dict[str, NodeUsage] = {u.node: u for u in nodes.values()}
        pod_usage: dict[str, PodUsage] = {u.key: u for u in pods.values()}
        return LoadReading(
            source=SOURCE,
            read_at=now,
            node_usage=node_usage,
            pod_usage=pod_usage,
            warnings=tuple(node_warnings + pod_warnings),
            objects=tuple(node_objects + pod_objects),
        )

    def _list(
        self, kind: ResourceKind, keep_objects: bool, *, records: bool = True
    ) -> tuple[dict[str, Any], list[str], list[msgspec.Raw]]:
        """(records by key, warnings for objects left out, the objects' JSON texts if asked for);
        `records=False` (PodMetrics' objects kept): only the warnings."""
        objects: list[msgspec.Raw] = []
        try:
            if keep_objects:
                objects, _ = list_texts(
                    self.client, kind.path, api_version=kind.api_version, kind=kind.kind, page_size=0
                )
                listed = records_of(kind, objects) if records else _refused(objects)
            else:
                listed = list_records(self.client, kind, page_size=0)
        except KubeApiError as error:
            raise LoadSourceError(_explain(kind, error)) from None
        except ClusterUnreachableError as error:
            raise LoadSourceError(f"{SOURCE}: {error}") from None
        except ValueError as error:  # not JSON, or not a list
            raise LoadSourceError(f"{SOURCE}: the {kind.kind} list is malformed: {error}") from None
        problems = sorted(listed.problems.items())
        warnings = [f"{kind.kind} {key}: cannot be read, ignored: {why}" for key, why in problems]
        return listed.records, warnings, objects

    def close(self) -> None:
        """Nothing to release: the Kubernetes client belongs to the caller."""


# Digits and a suffix, as metrics-server writes usage ("123456789n", "20480Ki"): such a text always
# parses to a quantity ≥ 0, so it is taken without parsing (each pod's values are its own, so the
# parser's memo would not hit).
_PLAIN_QUANTITY = re.compile(r"[0-9]{1,18}(?:n|u|m|k|M|G|Ki|Mi|Gi|Ti)?")


def _refused(objects: list[msgspec.Raw]) -> Listed:
    """The PodMetrics `records_of` would refuse, with its reasons, and no records: a PodMetrics that
    decodes and whose usage quantities parse is one `pod_usage_from_metrics` takes, so only the others
    go through `records_of` (a third of the time)."""
    listed = Listed()
    plain = _PLAIN_QUANTITY.fullmatch
    for text in objects:
        try:
            raw = POD_METRICS.item_decoder.decode(text)
            for container in raw.containers or ():
                for name, value in (container.usage or {}).items():
                    if not (isinstance(value, str) and plain(value)):
                        to_units(name, value)
        except (msgspec.ValidationError, QuantityError):
            listed.problems.update(records_of(POD_METRICS, [text]).problems)
    return listed


def _explain(kind: ResourceKind, error: KubeApiError) -> str:
    if error.status == 404:
        return (
            f"{SOURCE} is not served by this cluster (404 on {kind.path}): install metrics-server, "
            "or set loadSource.type to nodeMetric or prometheus"
        )
    if error.status == 503:
        return f"{SOURCE} is unavailable (503 on {kind.path}): metrics-server is not ready: {error.message}"
    if error.status in (401, 403):
        return f"{SOURCE}: not allowed to list {kind.kind} ({error.status}): grant get/list on {kind.path}"
    return f"{SOURCE}: {error}"
