"""Who belongs to which group, what each group uses and what the cluster has free (quotareclaim.md §1)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from descheduler.model import Pod
from descheduler.podrows import QUOTA_LABEL, PodRows
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
    by_namespace: dict[str, str | None] = field(default_factory=dict)  # namespace -> its only quota
    unknown_labels: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, tree: QuotaTree, quota_label: str) -> Membership:
        in_namespace: dict[str, list[str]] = {}
        for name, group in tree.groups.items():
            in_namespace.setdefault(group.quota.namespace, []).append(name)
        by_namespace = {ns: names[0] if len(names) == 1 else None for ns, names in in_namespace.items()}
        return cls(tree=tree, quota_label=quota_label, by_namespace=by_namespace)

    def group_of(self, pod: Pod) -> str | None:
        return self.group_of_pair(pod.labels.get(self.quota_label), pod.namespace)

    def group_of_pair(self, label: str | None, namespace: str) -> str | None:
        """The group of a pod with this quota label value (None: no label) in this namespace."""
        if label:
            if label in self.tree.groups:
                return label
            self.unknown_labels.add(label)
            return None
        return self.by_namespace.get(namespace)

    def warnings(self) -> list[str]:
        return [
            f"QuotaReclaim: pods name quota {name!r} ({self.quota_label}), which does not exist; they are unmanaged"
            for name in sorted(self.unknown_labels)
        ]


@dataclass(slots=True)
class Census:
    """What one pass over the pods finds: each group's bound, live pods, its pending pods and their sums."""

    holding: Mapping[str, list[Pod]]  # group -> pods that hold capacity, in snapshot order
    pending: dict[str, list[Pod]]  # group -> pending pods, in snapshot order
    requested: dict[str, dict[str, int]]  # group -> Σ requests of its own holding pods (not its subtree)
    _holders: dict[str, tuple[str, Pod]] | None = field(default=None, repr=False)  # key -> (group, pod)

    @classmethod
    def take(cls, pods: tuple[Pod, ...], membership: Membership, rows: PodRows | None = None) -> Census:
        """Group every managed pod; the cycle's only pass over all pods when no group acts. With the
        cache's rows for these pods (`rows`), from their arrays instead (`_from_rows`)."""
        if (
            rows is not None
            and rows.pods is pods
            and rows.quota_pair is not None
            and membership.quota_label == QUOTA_LABEL
        ):
            return cls._from_rows(rows, membership)
        # One plain loop, inlining group_of, holds_capacity and is_pending: it runs once per pod
        # (150,000 at the benchmark's scale), so every attribute access and call counts.
        label_key = membership.quota_label
        known = membership.tree.groups
        by_namespace = membership.by_namespace
        unknown = membership.unknown_labels
        holding: dict[str, list[Pod]] = {}
        pending: dict[str, list[Pod]] = {}
        requested: dict[str, dict[str, int]] = {}
        for pod in pods:
            label = pod.labels.get(label_key)
            if label:
                if label not in known:
                    unknown.add(label)
                    continue
                group = label
            else:
                found = by_namespace.get(pod.namespace)
                if found is None:
                    continue
                group = found
            if pod.deleting or pod.phase in _TERMINAL:
                continue
            if not pod.node_name:
                pending.setdefault(group, []).append(pod)
                continue
            members = holding.get(group)
            if members is None:
                holding[group] = members = []
                requested[group] = {}
            members.append(pod)
            sums = requested[group]
            for r, v in pod.requests.as_dict().items():
                sums[r] = sums.get(r, 0) + v
        return cls(holding=holding, pending=pending, requested=requested)

    def holder(self, key: str) -> tuple[str, Pod] | None:
        """(group, pod) for the pod `key` when it holds capacity in a group, else None."""
        if isinstance(self.holding, _RowHolding):
            return self.holding.holder(key)
        if self._holders is None:
            self._holders = {pod.key: (group, pod) for group, pods in self.holding.items() for pod in pods}
        return self._holders.get(key)

    @classmethod
    def _from_rows(cls, rows: PodRows, membership: Membership) -> Census:
        """`take` from the cache's rows: each distinct (quota label, namespace) pair the Snapshot's
        pods have is resolved once, the groups' sums are array sums, and pods are looked up (by
        key, in the Snapshot's order) only for the pending ones and the groups that are asked for."""
        assert rows.quota_pair is not None and rows.present is not None
        assert rows.unfinished is not None and rows.unbound is not None
        pairs = rows.quota_pairs
        names: list[str] = []
        group_index: dict[str, int] = {}
        # Per pair id its group's index, -1 for none; the last entry answers a free row's -1.
        pair_group = np.full(len(pairs) + 1, -1, dtype=np.int64)
        for pair in np.unique(rows.quota_pair[rows.present]).tolist():
            group = membership.group_of_pair(*pairs[pair])
            if group is not None:
                pair_group[pair] = group_index.setdefault(group, len(names))
                if len(names) < len(group_index):
                    names.append(group)
        gid = pair_group[rows.quota_pair]
        managed = rows.unfinished & ~rows.deleting & (gid >= 0)
        holding = np.where(managed & (rows.node >= 0), gid, -1)
        located = _Located(rows.pods)
        pending: dict[str, list[Pod]] = {}
        for pod, g in sorted(
            ((located.pod(rows.keys[i]), int(gid[i])) for i in np.flatnonzero(managed & rows.unbound).tolist()),
            key=lambda found: located.position(found[0].key),
        ):
            pending.setdefault(names[g], []).append(pod)
        requested: dict[str, dict[str, int]] = {}
        held = holding >= 0
        if held.any():  # each group's rows together, then one sum per run of rows (int64: exact)
            order = np.argsort(holding[held], kind="stable")
            groups = holding[held][order]
            starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
            sums = np.add.reduceat(rows.requests[held][order], starts, axis=0).tolist()
            for g, summed in zip(groups[starts].tolist(), sums, strict=True):
                requested[names[g]] = {r: v for r, v in zip(rows.resources, summed, strict=True) if v}
        return cls(holding=_RowHolding(rows, holding, names, located), pending=pending, requested=requested)


class _Located:
    """A Snapshot's pods (sorted by namespace, then name) found by key, by bisection."""

    __slots__ = ("_pods",)

    def __init__(self, pods: tuple[Pod, ...]) -> None:
        self._pods = pods

    def position(self, key: str) -> int:
        namespace, _, name = key.partition("/")
        return bisect_left(self._pods, (namespace, name), key=_snapshot_order)

    def pod(self, key: str) -> Pod:
        return self._pods[self.position(key)]


class _RowHolding(Mapping[str, list[Pod]]):
    """`Census.holding` from rows: group -> its holding pods in Snapshot order, each group's list
    made the first time it is asked for (only groups that act are)."""

    __slots__ = ("_group_id", "_ids", "_lists", "_located", "_names", "_rows")

    def __init__(self, rows: PodRows, ids: npt.NDArray[np.int64], names: list[str], located: _Located) -> None:
        self._rows = rows
        self._ids = ids  # per row: its pod's group index when it holds capacity, else -1
        present = set(np.unique(ids[ids >= 0]).tolist())
        self._group_id = {name: g for g, name in enumerate(names) if g in present}
        self._names = names
        self._located = located
        self._lists: dict[str, list[Pod]] = {}

    def __getitem__(self, group: str) -> list[Pod]:
        found = self._lists.get(group)
        if found is None:
            keys = self._rows.keys
            rows = np.flatnonzero(self._ids == self._group_id[group]).tolist()  # KeyError as a dict's
            pods = [self._located.pod(keys[row]) for row in rows]
            found = self._lists[group] = sorted(pods, key=_snapshot_order)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._group_id)

    def holder(self, key: str) -> tuple[str, Pod] | None:
        row = self._rows.index.get(key)
        if row is None or self._ids[row] < 0:
            return None
        return self._names[int(self._ids[row])], self._located.pod(key)

    def __len__(self) -> int:
        return len(self._group_id)


def _snapshot_order(pod: Pod) -> tuple[str, str]:
    return pod.namespace, pod.name


_TERMINAL = frozenset(("Succeeded", "Failed"))


def node_free(snapshot: Snapshot, usable: Iterable[str]) -> Resources:
    """Σ over usable nodes of allocatable − requests of the pods holding capacity there (never below 0 per node)."""
    nodes = frozenset(usable)
    requested: dict[str, dict[str, int]] = {}
    for pod in snapshot.pods:
        if pod.node_name in nodes and holds_capacity(pod):
            sums = requested.setdefault(pod.node_name, {})
            for r, v in pod.requests.as_dict().items():
                sums[r] = sums.get(r, 0) + v
    free: dict[str, int] = {}
    for name in nodes:
        on_node = requested.get(name, {})
        for r, v in snapshot.node_by_name[name].allocatable.items():
            free[r] = free.get(r, 0) + max(0, v - on_node.get(r, 0))
    return Resources(free)


@dataclass(slots=True)
class Ledger:
    """Mutable per-round accounting: used per group (a parent sums its subtree) and cluster free.

    Cluster free needs a pass over every pod and matters only when a pending pod is served, so
    it is computed (by `free_source`) the first time it is asked for.
    """

    tree: QuotaTree
    used: dict[str, Resources]
    free_source: Callable[[], Resources]
    gate: bool
    _cluster_free: Resources | None = None

    @classmethod
    def build(
        cls,
        tree: QuotaTree,
        requested: Mapping[str, Mapping[str, int]],
        free_source: Callable[[], Resources],
        gate: bool,
    ) -> Ledger:
        """`requested`: group -> Σ requests of its own pods that hold capacity."""
        used: dict[str, Resources] = {name: EMPTY for name in tree.groups}
        ledger = cls(tree=tree, used=used, free_source=free_source, gate=gate)
        for group, sums in requested.items():
            ledger.add(group, sums)
        return ledger

    @property
    def cluster_free(self) -> Resources:
        if self._cluster_free is None:
            self._cluster_free = self.free_source()
        return self._cluster_free

    @cluster_free.setter
    def cluster_free(self, value: Resources) -> None:
        self._cluster_free = value

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


@dataclass(frozen=True, slots=True)
class InFlight:
    """Victims of earlier rounds whose eviction job is still active and whose pod still holds its
    room: that room is already being freed, so a round counts it as free and plans only the rest."""

    victims: tuple[str, ...] = ()  # pod keys
    room: Resources = EMPTY


def release_in_flight(census: Census, ledger: Ledger, evicting: Iterable[str]) -> InFlight:
    """Count the pods `evicting` (keys of pods an active QuotaReclaim job moves) as gone: their
    groups use less and the cluster has more free. Terminating pods are counted so already."""
    keys = frozenset(evicting)
    if not keys:
        return InFlight()
    victims: list[str] = []
    room = EMPTY
    for key in sorted(keys):
        found = census.holder(key)
        if found is not None:
            group, pod = found
            ledger.release(group, pod.requests)
            victims.append(key)
            room = room + pod.requests
    return InFlight(victims=tuple(victims), room=room)
