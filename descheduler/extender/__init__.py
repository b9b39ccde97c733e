"""The kube-scheduler HTTP extender: filter and prioritize with the load-aware scheduling core.

    extender = Extender(SnapshotFileSource("cluster.yaml"), policy.scheduling)
    extender.refresh(force=True)
    with ExtenderServer(extender, "127.0.0.1", 0) as server:
        ...  # kube-scheduler POSTs ExtenderArgs to server.url + "/filter" and "/prioritize"

`descheduler extender --policy FILE` runs it against the cluster (the list-watch cache and the
policy's load source). Wire shapes in `protocol`, decisions in `decisions` (kept per pod shape in
`shapes`), state and the assumed pods in `state`, node names read and answers written by compiled
loops in `kernels` (through `names`), sources in `sources`.
"""

from descheduler.extender.protocol import (
    MAX_EXTENDER_PRIORITY,
    ExtenderArgs,
    ExtenderFilterResult,
    HostPriority,
    NodeList,
    RequestError,
)
from descheduler.extender.server import DEFAULT_PORT, ExtenderServer
from descheduler.extender.service import Extender, RefreshTiming
from descheduler.extender.sources import CacheSource, ClusterSource, SnapshotFileSource

__all__ = [
    "DEFAULT_PORT",
    "MAX_EXTENDER_PRIORITY",
    "CacheSource",
    "ClusterSource",
    "Extender",
    "ExtenderArgs",
    "ExtenderFilterResult",
    "ExtenderServer",
    "HostPriority",
    "NodeList",
    "RefreshTiming",
    "RequestError",
    "SnapshotFileSource",
]
