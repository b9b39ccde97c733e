"""Victim units: a pod alone, or a whole gang (PodGroup or Job) that moves together or not at all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from descheduler.model import Pod
from descheduler.resources import Resources, total

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


def build_units(pods: Iterable[Pod], groups: Mapping[str, str]) -> list[Unit]:
    """Group managed, bound, live pods into units; `groups` maps pod key → quota group."""
    gangs: dict[Gang, list[Pod]] = {}
    singles: list[Pod] = []
    for pod in pods:
        gang = gang_of(pod)
        if gang is None:
            singles.append(pod)
        else:
            gangs.setdefault(gang, []).append(pod)
    units = [_unit(pod.key, [pod], groups, None) for pod in singles if pod.key in groups]
    for gang, members in gangs.items():
        if any(p.key in groups for p in members):
            members.sort(key=lambda p: p.key)
            units.append(_unit(members[0].key, members, groups, gang))
    return sorted(units, key=lambda u: u.key)


def _unit(key: str, pods: list[Pod], groups: Mapping[str, str], gang: Gang | None) -> Unit:
    if len(pods) == 1:  # the common case, without the sums (one per pod: ~1 s at 150,000 pods)
        pod = pods[0]
        return Unit(key, (pod,), (groups.get(pod.key, ""),), pod.requests, pod.priority or 0, pod.created, gang)
    created = [p.created for p in pods if p.created is not None]
    return Unit(
        key=key,
        pods=tuple(pods),
        groups=tuple(sorted({groups.get(p.key, "") for p in pods})),
        requests=total(p.requests for p in pods),
        priority=max(p.priority or 0 for p in pods),
        created=max(created) if created else None,
        gang=gang,
    )
