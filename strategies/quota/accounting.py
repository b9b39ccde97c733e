"""Who belongs to which group, what each group uses and what the cluster has free (quotareclaim.md §1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from descheduler.model import Pod
from descheduler.resources import EMPTY, Resources
from descheduler.snapshot import Snapshot
from strategies.quota.tree import QuotaTree


def holds_capacity(pod: Pod) -> bool:
    """Bound, not finished and not terminating: its requests count as used.

    Terminating pods count as capacity already being freed.
    """
    return bool(pod.node_name) and not pod.terminal and not pod.deleting


def is_pending(pod: Pod) -> bool:
    return not pod.node_name and not pod.terminal and not pod.deleting


@dataclass(slots=True)
class Membership:
    """Pod → group by the quota label, else the only quota in the pod's namespace."""

    tree: QuotaTree
    quota_label: str
    by_namespace: dict[str, list[str]] = field(default_factory=dict)
    unknown_labels: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, tree: QuotaTree, quota_label: str) -> Membership:
        by_namespace: dict[str, list[str]] = {}
        for name, group in tree.groups.items():
            by_namespace.setdefault(group.quota.namespace, []).append(name)
        return cls(tree=tree, quota_label=quota_label, by_namespace=by_namespace)

    def group_of(self, pod: Pod) -> str | None:
        label = pod.labels.get(self.quota_label)
        if label:
            if label in self.tree.groups:
                return label
            self.unknown_labels.add(label)
            return None
        in_namespace = self.by_namespace.get(pod.namespace, [])
        return in_namespace[0] if len(in_namespace) == 1 else None

    def warnings(self) -> list[str]:
        return [
            f"QuotaReclaim: pods name quota {name!r} ({self.quota_label}), which does not exist; they are unmanaged"
            for name in sorted(self.unknown_labels)
        ]


@dataclass(slots=True)
class Ledger:
    """Mutable per-round accounting: used per group (a parent sums its subtree) and cluster free."""

    tree: QuotaTree
    used: dict[str, Resources]
    cluster_free: Resources
    gate: bool

    @classmethod
    def build(
        cls, snapshot: Snapshot, tree: QuotaTree, groups: Mapping[str, str], usable: Iterable[str], gate: bool
    ) -> Ledger:
        """`groups`: pod key → group; `usable`: nodes whose free capacity a pending pod can use."""
        used: dict[str, Resources] = {name: EMPTY for name in tree.groups}
        ledger = cls(tree=tree, used=used, cluster_free=EMPTY, gate=gate)
        # One pass over the pods, summing in plain dicts (a Resources per pod costs ~4 µs: 0.6 s at 150,000).
        by_group: dict[str, dict[str, int]] = {}
        by_node: dict[str, dict[str, int]] = {}
        for pod in snapshot.pods:
            if not holds_capacity(pod):
                continue
            group = groups.get(pod.key)
            requests = pod.requests.as_dict()
            node_sums = by_node.setdefault(pod.node_name, {})
            for r, v in requests.items():
                node_sums[r] = node_sums.get(r, 0) + v
            if group is not None:
                group_sums = by_group.setdefault(group, {})
                for r, v in requests.items():
                    group_sums[r] = group_sums.get(r, 0) + v
        for group, sums in by_group.items():
            ledger.add(group, sums)
        free: dict[str, int] = {}
        for name in usable:
            node = snapshot.node_by_name[name]
            requested = by_node.get(name, {})
            for r, v in node.allocatable.items():
                free[r] = free.get(r, 0) + max(0, v - requested.get(r, 0))
        ledger.cluster_free = Resources(free)
        return ledger

    def add(self, group: str, requests: Mapping[str, int]) -> None:
        """Count `requests` (negative to release) in the group and every ancestor."""
        for name in [group, *self.tree.ancestors(group)]:
            self.used[name] = self.used[name] + requests

    def free(self) -> Resources:
        """Cluster free, capped by Σ top-level min − Σ top-level used when aggregateMinGate is on."""
        if not self.gate:
            return self.cluster_free
        roots = [g for g in self.tree.groups.values() if g.parent is None and self.tree.trusted(g.name)]
        gated = {r for g in roots for r in g.min}
        out = dict(self.cluster_free.items())
        for r in gated:
            headroom = sum(g.min[r] for g in roots) - sum(self.used[g.name][r] for g in roots)
            out[r] = max(0, min(out.get(r, 0), headroom))
        return Resources(out)

    def release(self, group: str, requests: Mapping[str, int]) -> None:
        """A victim leaves: the group uses less and the cluster has more free."""
        self.add(group, EMPTY - requests)
        self.cluster_free = self.cluster_free + requests

    def admit(self, group: str, requests: Mapping[str, int]) -> None:
        """A pending pod takes its place: the group uses more and the cluster has less free."""
        self.add(group, requests)
        self.cluster_free = (self.cluster_free - requests).floor()

    def borrowing(self, group: str, resources: Iterable[str]) -> list[str]:
        """The resources (of those given) where the group uses more than its min."""
        minimum = self.tree.groups[group].min
        used = self.used[group]
        return [r for r in resources if used[r] > minimum[r]]

    def snapshot_used(self) -> dict[str, Resources]:
        return dict(self.used)
