"""A cheap overlay of the node table that lets a planner assume moves (scheduling-core.md §6)."""

from __future__ import annotations

import numpy as np

from descheduler.model import Pod
from descheduler.scheduling.table import IntArray, NodeTable


class ClusterView:
    """The table plus the moves a planner has assumed. `fork` copies only the mutable arrays."""

    __slots__ = (
        "aggregated",
        "estimated",
        "location",
        "prod_estimated",
        "prod_usage",
        "requested",
        "table",
        "usage",
    )

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.requested: IntArray = table.requested.copy(order="K")
        self.usage: IntArray = table.usage.copy(order="K")
        self.prod_usage: IntArray = table.prod_usage.copy(order="K")
        self.estimated: IntArray = table.estimated.copy(order="K")
        self.prod_estimated: IntArray = table.prod_estimated.copy(order="K")
        self.aggregated: IntArray = table.aggregated.copy(order="K")
        self.location: dict[str, str] = {}  # pod key -> node it was assumed onto

    def fork(self) -> ClusterView:
        other = ClusterView.__new__(ClusterView)
        other.table = self.table
        for name in ("requested", "usage", "prod_usage", "estimated", "prod_estimated", "aggregated"):
            setattr(other, name, getattr(self, name).copy(order="K"))
        other.location = dict(self.location)
        return other

    def node_of(self, pod: Pod) -> str:
        return self.location.get(pod.key, pod.node_name)

    def move(self, pod: Pod, target: str) -> None:
        """Assume `pod` leaves its node for `target`: requests and load follow it."""
        table = self.table
        source_row = table.index[self.node_of(pod)]
        target_row = table.index[target]
        load = table.load_of(pod)
        incoming = np.maximum(load.usage, load.estimate)
        self.requested[source_row] -= load.requests
        self.requested[target_row] += load.requests
        self.usage[source_row] -= load.usage
        self.usage[target_row] += load.usage
        self.estimated[source_row] -= load.usage
        self.estimated[target_row] += incoming
        self.aggregated[source_row] -= load.usage
        self.aggregated[target_row] += incoming
        if load.prod:
            self.prod_usage[source_row] -= load.usage
            self.prod_usage[target_row] += load.usage
            self.prod_estimated[source_row] -= load.usage
            self.prod_estimated[target_row] += incoming
        self.location[pod.key] = target

    def place(self, pod: Pod, node: str) -> None:
        """Assume a pod that runs nowhere yet now runs on `node`: its requests and estimate count there."""
        table = self.table
        row = table.index[node]
        load = table.load_of(pod)
        incoming = np.maximum(load.usage, load.estimate)
        self.requested[row] += load.requests
        self.usage[row] += load.usage
        self.estimated[row] += incoming
        self.aggregated[row] += incoming
        if load.prod:
            self.prod_usage[row] += load.usage
            self.prod_estimated[row] += incoming
        self.location[pod.key] = node

    def remove(self, pod: Pod) -> None:
        """Assume `pod` is gone (evicted with no destination, e.g. quota reclaim)."""
        table = self.table
        row = table.index[self.node_of(pod)]
        load = table.load_of(pod)
        self.requested[row] -= load.requests
        self.usage[row] -= load.usage
        self.estimated[row] -= load.usage
        self.aggregated[row] -= load.usage
        if load.prod:
            self.prod_usage[row] -= load.usage
            self.prod_estimated[row] -= load.usage
        self.location[pod.key] = ""
