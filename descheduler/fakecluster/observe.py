"""A Snapshot of the simulated cluster read straight from the store: what a synced cache would hold.

For tests and the simulator, where the controller needs a `snapshot()` callable and the real
list-watch cache is not the thing under test.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from descheduler.fakecluster.apiserver import Store
from descheduler.snapshot import Snapshot, load_snapshot_objects

SNAPSHOT_RESOURCES = (
    "namespaces",
    "nodes",
    "pods",
    "deployments.apps",
    "replicasets.apps",
    "statefulsets.apps",
    "daemonsets.apps",
    "poddisruptionbudgets.policy",
    "reservations.descheduler.dev",
    "podmigrationjobs.descheduler.dev",
)


def cluster_objects(store: Store) -> list[dict[str, Any]]:
    """Every object a Snapshot reads; load from NodeMetric when published, else from metrics.k8s.io."""
    objects: list[dict[str, Any]] = []
    for resource in SNAPSHOT_RESOURCES:
        objects += store.list(resource)
    if store.count("nodemetrics.slo.koordinator.sh"):
        objects += store.list("nodemetrics.slo.koordinator.sh")
    else:
        objects += store.list("nodes.metrics.k8s.io") + store.list("pods.metrics.k8s.io")
    return objects


def cluster_snapshot(store: Store, now: float | datetime | None = None) -> Snapshot:
    """The store's objects as a Snapshot at `now` (default: the store's clock)."""
    if now is None:
        now = store.clock()
    instant = now if isinstance(now, datetime) else datetime.fromtimestamp(now, tz=UTC)
    return load_snapshot_objects(cluster_objects(store), instant, source="<simulated cluster>")
