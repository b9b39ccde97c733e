"""Quota admission on the scheduling side: may a pod of an ElasticQuota group start at all?

The rules are Capacity Scheduling's (kubernetes-sigs/scheduler-plugins, pkg/capacityscheduling,
`PreFilter`), counted with QuotaReclaim's own tree and accounting (strategies/quota), so the
scheduler side and the descheduler agree on who uses what:

- **max**: a pod is refused when its group, or any group above it, would use more than its max of a
  resource the pod requests (`usedOverMaxWith`).
- **borrowing**: a pod that would take its group over its min borrows; it is refused when the groups'
  total min cannot cover it (`aggregatedUsedOverMinWith`). Where Capacity Scheduling sums what every
  group uses, each other group here counts at least as much of its min as its waiting (Pending) pods
  ask for: a lender's unused min is lendable only while none of its pods waits for it. This is what
  makes reclaim end: the room QuotaReclaim frees goes to the group below its min, and a borrower's
  replacement is refused it. Capacity Scheduling instead refuses the waiting pod as well and frees
  room by preemption (`PostFilter`), which a kube-scheduler extender cannot do.
- A pod within its group's min is never refused for quota (whether it fits a node is the filters'
  business), and neither is a pod of no group or of a group the tree does not trust.

In a tree a borrowing group first borrows from its siblings' unclaimed min inside its parent's min;
what the parent cannot cover, the parent borrows in turn at its own level, up to the top level, whose
pool is the top-level groups' total min. Only resources some group at a level names in its min are
held to that level's pool; a resource named in no min is not under quota.

Used is Σ requests of a group's bound, unfinished, non-terminating pods (a terminating pod's room is
already being freed: quotareclaim.md §1); a group's figures include its subtree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from descheduler.model import Pod
from descheduler.podrows import QUOTA_LABEL
from descheduler.refusal import Fact, Refusal, define
from descheduler.resources import EMPTY, Resources
from descheduler.snapshot import Snapshot
from strategies.quota.accounting import Census, Membership
from strategies.quota.tree import QuotaTree, build_tree

DEFAULT_QUOTA_LABEL = QUOTA_LABEL
DEFAULT_PARENT_LABEL = "quota.scheduling.koordinator.sh/parent"

QUOTA_OVER_MAX = define(
    "QuotaOverMax",
    "quota {subject} would be over its max: {resource} {used:units} used + {requested:units} requested "
    "> max {max:units}",
)
QUOTA_CANNOT_BORROW = define(
    "QuotaCannotBorrow",
    "quota {subject} would borrow {resource} beyond its min {min:units} ({used:units} used + {requested:units} "
    "requested), and the quotas' min cannot cover it: {claimed:units} used or claimed by waiting pods + "
    "{requested:units} > {pool:units}",
)


@dataclass(slots=True)
class QuotaBook:
    """Each group's used and waiting requests (its subtree's), kept current as pods bind and go."""

    tree: QuotaTree
    membership: Membership
    used: dict[str, Resources]
    waiting: dict[str, Resources]
    holding: dict[str, str]  # pod UID (else key) -> group, of the pods counted in `used`
    pending: dict[str, str]  # likewise, of the pods counted in `waiting`

    @classmethod
    def of(
        cls, snapshot: Snapshot, quota_label: str = DEFAULT_QUOTA_LABEL, parent_label: str = DEFAULT_PARENT_LABEL
    ) -> QuotaBook | None:
        """The book of the snapshot's quotas and pods; None when it has no ElasticQuota."""
        if not snapshot.quotas:
            return None
        tree = build_tree(snapshot.quotas, parent_label)
        membership = Membership.build(tree, quota_label)
        census = Census.take(snapshot.pods, membership, snapshot.pod_rows)
        book = cls(tree, membership, dict.fromkeys(tree.groups, EMPTY), dict.fromkeys(tree.groups, EMPTY), {}, {})
        # The census has each group's sums already: one addition per group and ancestor, not per pod.
        for group, sums in census.requested.items():
            book._add(book.used, group, Resources(sums))
        for group, pods in census.pending.items():
            book._add(book.waiting, group, _total(p.requests for p in pods))
        book.holding = {p.uid or p.key: g for g, pods in census.holding.items() for p in pods}
        book.pending = {p.uid or p.key: g for g, pods in census.pending.items() for p in pods}
        return book

    def _add(self, sums: dict[str, Resources], group: str, change: Resources) -> None:
        for name in [group, *self.tree.ancestors(group)]:
            sums[name] = sums[name] + change

    def _count(self, sums: dict[str, Resources], keys: dict[str, str], pod: Pod, group: str, sign: int) -> None:
        key = pod.uid or pod.key
        if sign > 0:
            keys[key] = group
        else:
            del keys[key]
        self._add(sums, group, pod.requests if sign > 0 else EMPTY - pod.requests)

    def bound(self, pod: Pod) -> None:
        """A pod was bound: it uses its group's quota from now on, and no longer waits."""
        key = pod.uid or pod.key
        waiting = self.pending.get(key)
        if waiting is not None:
            self._count(self.waiting, self.pending, pod, waiting, -1)
        group = self.membership.group_of(pod)
        if group is not None and key not in self.holding:
            self._count(self.used, self.holding, pod, group, 1)

    def gone(self, pod: Pod) -> None:
        """A pod is terminating or deleted: its group's use of it ends (and it waits no more)."""
        key = pod.uid or pod.key
        for sums, keys in ((self.used, self.holding), (self.waiting, self.pending)):
            group = keys.get(key)
            if group is not None:
                self._count(sums, keys, pod, group, -1)

    def admit(self, pod: Pod) -> Refusal | None:
        """None when the pod's quota lets it start; else why not (the same on every node)."""
        group = self.membership.group_of(pod)
        if group is None or not self.tree.trusted(group):
            return None
        requested = {r: v for r, v in pod.requests.items() if v > 0}
        if not requested:
            return None
        own = self.holding.get(pod.uid or pod.key) == group  # asked about again once bound: counted already
        for name in [group, *self.tree.ancestors(group)]:
            used = self.used[name]
            for resource, amount in sorted(requested.items()):
                limit = self.tree.groups[name].max_of(resource)
                extra = 0 if own else amount
                if limit is not None and used[resource] + extra > limit:
                    facts: dict[str, Fact] = {
                        "resource": resource,
                        "used": used[resource],
                        "requested": amount,
                        "max": limit,
                    }
                    return Refusal(code=QUOTA_OVER_MAX, subject=name, facts=facts)
        return None if own else self._borrowing(group, requested)

    def _borrowing(self, group: str, requested: Mapping[str, int]) -> Refusal | None:
        """The borrowing rule (module docstring), from the pod's group up to the top level."""
        need = {r: self.used[group][r] + v for r, v in requested.items()}
        name: str | None = group
        while name is not None:
            minimum = self.tree.groups[name].min
            parent = self.tree.groups[name].parent
            level = list(self.tree.children.get(parent, ())) if parent is not None else self._roots()
            named = {r for s in level for r in self.tree.groups[s].min}
            borrows = [r for r in sorted(need) if r in named and need[r] > minimum[r]]
            if not borrows:
                return None
            others = [s for s in level if s != name]
            pool = (
                self.tree.groups[parent].min if parent is not None else _total(self.tree.groups[s].min for s in level)
            )
            claimed = _total(self._claim(s) for s in others)
            direct = EMPTY if parent is None else self.used[parent] - _total(self.used[s] for s in level)
            need = {r: need[r] + claimed[r] + max(direct[r], 0) for r in need}
            if parent is None:
                for resource in borrows:
                    if need[resource] > pool[resource]:
                        facts: dict[str, Fact] = {
                            "resource": resource,
                            "min": minimum[resource],
                            "used": self.used[group][resource],
                            "requested": requested[resource],
                            "claimed": need[resource] - requested[resource],
                            "pool": pool[resource],
                        }
                        return Refusal(code=QUOTA_CANNOT_BORROW, subject=group, facts=facts)
                return None
            name = parent
        return None

    def _roots(self) -> list[str]:
        return sorted(name for name, g in self.tree.groups.items() if g.parent is None)

    def _claim(self, name: str) -> Resources:
        """What a group holds of its level's pool: what it uses, or, where its pods wait, as much of its
        min as they ask for."""
        used, waiting, minimum = self.used[name], self.waiting[name], self.tree.groups[name].min
        keys = set(used.keys()) | set(minimum.keys())
        return Resources({r: max(used[r], min(minimum[r], used[r] + waiting[r])) for r in keys})


def _total(vectors: Iterable[Resources]) -> Resources:
    out: dict[str, int] = {}
    for vector in vectors:
        for r, v in vector.items():
            out[r] = out.get(r, 0) + v
    return Resources(out)
