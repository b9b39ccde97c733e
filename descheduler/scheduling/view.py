"""A cheap overlay of the node table that lets a planner assume moves (scheduling-core.md §6); the
load a move carries is counted by `table.shift_load`, as the table counts moves in flight."""

from __future__ import annotations

from descheduler.model import Pod
from descheduler.scheduling.table import IntArray, NodeTable, shift_load


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

    def subset(self, rows: IntArray) -> ClusterView:
        """The view of `table.subset(rows)`: row i is this view's row rows[i]."""
        other = ClusterView.__new__(ClusterView)
        other.table = self.table.subset(rows)
        for name in ("requested", "usage", "prod_usage", "estimated", "prod_estimated", "aggregated"):
            setattr(other, name, getattr(self, name)[rows])
        other.location = self.location
        return other

    def node_of(self, pod: Pod) -> str:
        return self.location.get(pod.key, pod.node_name)

    def move(self, pod: Pod, target: str) -> None:
        """Assume `pod` leaves its node for `target`: requests and load follow it."""
        table = self.table
        load = table.load_of(pod)
        shift_load(self, table.index[self.node_of(pod)], load, -1)
        shift_load(self, table.index[target], load, 1)
        self.location[pod.key] = target

    def place(self, pod: Pod, node: str) -> None:
        """Assume a pod that runs nowhere yet now runs on `node`: its requests and estimate count there."""
        shift_load(self, self.table.index[node], self.table.load_of(pod), 1)
        self.location[pod.key] = node

    def remove(self, pod: Pod) -> None:
        """Assume `pod` is gone (evicted with no destination, e.g. quota reclaim)."""
        shift_load(self, self.table.index[self.node_of(pod)], self.table.load_of(pod), -1)
        self.location[pod.key] = ""
