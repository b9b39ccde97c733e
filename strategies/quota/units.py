"""Victim units: a pod alone, or a whole gang (PodGroup or Job) that moves together or not at all."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from descheduler.model import Pod
from descheduler.resources import Resources, total
from strategies.quota.accounting import holds_capacity

GANG_LABELS = ("pod-group.scheduling.sigs.k8s.io", "scheduling.x-k8s.io/pod-group")
GANG_ANNOTATION = "gang.scheduling.koordinator.sh/name"
_OLDEST = datetime.min


@dataclass(frozen=True, slots=True)
class Gang:
    """Pods that move together: a PodGroup's, or a Job's."""

    namespace: str
    kind: str  # "podgroup" | "job"
    name: str  # the PodGroup's name, or the Job's UID (its name when it has none)


def gang_of(pod: Pod) -> Gang | None:
    """The pod's gang, or None for a pod that moves alone."""
    for label in GANG_LABELS:
        if pod.labels.get(label):
            return Gang(pod.namespace, "podgroup", pod.labels[label])
    if pod.annotations.get(GANG_ANNOTATION):
        return Gang(pod.namespace, "podgroup", pod.annotations[GANG_ANNOTATION])
    if pod.owner is not None and pod.owner.controller and pod.owner.kind == "Job":
        return Gang(pod.namespace, "job", pod.owner.uid or pod.owner.name)
    return None


@dataclass(frozen=True, slots=True)
class Unit:
    """What one eviction decision moves: every bound pod of a gang, or a single pod."""

    key: str
    pods: tuple[Pod, ...]
    groups: tuple[str, ...]  # the quota groups of its pods (one, unless a gang spans groups)
    requests: Resources
    priority: int  # the highest of its pods: a gang is as important as its most important pod
    created: datetime | None  # the newest of its pods
    gang: Gang | None

    @property
    def group(self) -> str:
        return self.groups[0]

    def victim_order(self) -> tuple[int, float, str]:
        """Least important first: lowest priority, newest, then name."""
        created = self.created.timestamp() if self.created is not None else 0.0
        return (self.priority, -created, self.key)

    def requests_any(self, resources: Iterable[str]) -> bool:
        return any(self.requests[r] > 0 for r in resources)


class VictimUnits:
    """Each lender group's victim units, least important first, built the first time the group is asked for.

    A group's units are its own pods that hold capacity, alone or with their whole gang; a gang's
    other members (same namespace, any group or none) are found by one pass over the snapshot's
    pods per batch of namespaces, only when a gang is met.
    """

    __slots__ = ("_all_pods", "_gangs", "_group_of", "_holding", "_indexed", "_requested", "_units")

    def __init__(
        self,
        all_pods: Sequence[Pod],
        holding: Mapping[str, list[Pod]],
        requested: Mapping[str, Mapping[str, int]],
        group_of: Callable[[Pod], str | None],
    ) -> None:
        """`holding`: group -> its pods that hold capacity; `requested`: group -> their summed requests."""
        self._all_pods = all_pods
        self._holding = holding
        self._requested = requested
        self._group_of = group_of
        self._units: dict[str, list[Unit]] = {}
        self._gangs: dict[Gang, list[Pod]] = {}  # gang -> its members that hold capacity
        self._indexed: set[str] = set()  # namespaces whose gangs are in _gangs

    def groups(self) -> list[str]:
        """The groups that have victim units (every group with a pod holding capacity), by name."""
        return sorted(self._holding)

    def of(self, group: str) -> list[Unit]:
        """The group's units, least important first (Unit.victim_order)."""
        units = self._units.get(group)
        if units is None:
            units = self._units[group] = sorted(self._build(group), key=Unit.victim_order)
        return units

    def any_requests(self, group: str, resources: Iterable[str], start: int = 0) -> bool:
        """Whether a unit of the group, from position `start` on, requests any of the resources."""
        wanted = list(resources)
        if start == 0 and group not in self._units:
            # Without building: a pod of the group that requests r is in a unit that requests r
            # (requests are never negative; a gang's are its members' sum).
            sums = self._requested.get(group, {})
            if any(sums.get(r, 0) > 0 for r in wanted):
                return True
        return any(u.requests_any(wanted) for u in self.of(group)[start:])

    def _build(self, group: str) -> list[Unit]:
        pods = self._holding.get(group, [])
        gangs = [(pod, gang_of(pod)) for pod in pods]
        self._index_gangs({gang.namespace for _, gang in gangs if gang is not None})
        units: list[Unit] = []
        seen: set[Gang] = set()
        for pod, gang in gangs:
            if gang is None:
                units.append(_unit(pod.key, [pod], self._group_of, None))
            elif gang not in seen:
                seen.add(gang)
                members = self._gangs[gang]
                units.append(_unit(members[0].key, members, self._group_of, gang))
        return units

    def _index_gangs(self, namespaces: set[str]) -> None:
        """Every gang of these namespaces, with its members that hold capacity (sorted by key)."""
        todo = namespaces - self._indexed
        if not todo:
            return
        found: dict[Gang, list[Pod]] = {}
        for pod in self._all_pods:
            if pod.namespace in todo and holds_capacity(pod):
                gang = gang_of(pod)
                if gang is not None:
                    found.setdefault(gang, []).append(pod)
        for members in found.values():
            members.sort(key=lambda p: p.key)
        self._gangs.update(found)
        self._indexed |= todo


def _unit(key: str, pods: list[Pod], group_of: Callable[[Pod], str | None], gang: Gang | None) -> Unit:
    if len(pods) == 1:  # the common case, without the sums
        pod = pods[0]
        return Unit(key, (pod,), (group_of(pod) or "",), pod.requests, pod.priority or 0, pod.created, gang)
    created = [p.created for p in pods if p.created is not None]
    return Unit(
        key=key,
        pods=tuple(pods),
        groups=tuple(sorted({group_of(p) or "" for p in pods})),
        requests=total(p.requests for p in pods),
        priority=max(p.priority or 0 for p in pods),
        created=max(created) if created else None,
        gang=gang,
    )
