"""Kubernetes I/O: the rate-limited client, the list-watch cache, and snapshot files of a live cluster.

Public surface:

- `connect(kubeconfig, context, *, qps, burst, timeout) -> KubeClient` — kubeconfig (and context),
  or the in-cluster service account when neither is given. `KubeClient.api_client` is a
  `kubernetes.client.ApiClient` for the generated APIs (`CoreV1Api(kube.api_client)` …): every
  call through it, and through `KubeClient.request/get_json/stream`, waits for the client-side
  QPS/burst limiter, honours 429 Retry-After, retries 5xx and connection errors with backoff
  (writes only when safe) and counts `descheduler_api_requests_total{verb,code}`.
- `ClusterCache(client, kinds=CLUSTER_KINDS)` — one reflector thread per resource (paginated
  list, watch with bookmarks, re-list on 410, reconnect with backoff); `start()`, `stop()`,
  `synced`, `wait_synced(timeout)`, `not_ready()`, `get/records/items/count(kind)`,
  `pods_on(node)`, `add_listener(fn, kinds)`, and `snapshot(now, load_reading) -> Snapshot`.
- Resource names (`NODES`, `PODS`, … `NODE_METRICS`), `CLUSTER_KINDS`.
- `descheduler.kube.live`: `read_snapshot(client, policy, now)` (cache sync, one load reading, one
  Snapshot: `plan --kubeconfig`) and `save_snapshot(client, policy, path, now)` (`snapshot save`).
  Not imported here: it needs `descheduler.loadsource`, which builds on this package.
"""

from typing import TYPE_CHECKING

from descheduler.kube.client import KubeApiError, KubeClient, RetryPolicy, connect
from descheduler.kube.kinds import (
    CLUSTER_KINDS,
    CSI_NODES,
    DAEMONSETS,
    DEPLOYMENTS,
    KINDS,
    MIGRATION_JOBS,
    NAMESPACES,
    NODE_METRICS,
    NODES,
    PDBS,
    PODS,
    PVCS,
    PVS,
    QUOTAS_SIGS,
    QUOTAS_X,
    REPLICASETS,
    RESERVATIONS,
    RESOURCE_CLAIMS,
    STATEFULSETS,
    STORAGE_CLASSES,
    ResourceKind,
)
from descheduler.kube.ratelimit import Cancelled, TokenBucket

if TYPE_CHECKING:
    from descheduler.kube.cache import CacheEvent, ClusterCache, KindStatus, Listener

_CACHE_NAMES = frozenset({"CacheEvent", "ClusterCache", "KindStatus", "Listener"})


def __getattr__(name: str) -> object:
    """The cache's names, imported on first use: it brings NumPy, which `snapshot save` does not need."""
    if name in _CACHE_NAMES:
        from descheduler.kube import cache

        return getattr(cache, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CLUSTER_KINDS",
    "CSI_NODES",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "KINDS",
    "MIGRATION_JOBS",
    "NAMESPACES",
    "NODES",
    "NODE_METRICS",
    "PDBS",
    "PODS",
    "PVCS",
    "PVS",
    "QUOTAS_SIGS",
    "QUOTAS_X",
    "REPLICASETS",
    "RESERVATIONS",
    "RESOURCE_CLAIMS",
    "STATEFULSETS",
    "STORAGE_CLASSES",
    "CacheEvent",
    "Cancelled",
    "ClusterCache",
    "KindStatus",
    "KubeApiError",
    "KubeClient",
    "Listener",
    "ResourceKind",
    "RetryPolicy",
    "TokenBucket",
    "connect",
]
