"""Arbitration: which waiting jobs may start now (migration.md §5). Pure: facts in, verdicts out.

Every count comes from the jobs the caller listed from the API (plus the ones admitted earlier in
the same pass), never from memory, so a restarted controller reaches the same verdicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from descheduler.migration.objects import JobPhase
from descheduler.policy import MigrationArgs
from descheduler.tokenbucket import replay_wait


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What arbitration needs to know about one job."""

    name: str
    namespace: str
    pod: str  # namespace/name
    phase: JobPhase
    created: datetime
    source_node: str = ""
    workload: str = ""  # the controller's UID; "" for a pod without one
    cycle: str = ""
    started: datetime | None = None
    evicted: datetime | None = None
    rank: tuple[int, ...] = ()  # importance of the pod: lower moves first

    @property
    def in_flight(self) -> bool:
        return self.phase == "Running"


@dataclass(frozen=True, slots=True)
class WorkloadFacts:
    uid: str
    label: str  # "ReplicaSet shop/web-7d9f5", for messages
    replicas: int
    ready: frozenset[str] = frozenset()  # keys of its pods that are Ready and not being deleted


@dataclass(frozen=True, slots=True)
class Verdict:
    """Admit, wait (temporary: `retry_after` seconds when known) or never (`permanent`)."""

    job: str
    admit: bool
    reason: str = ""
    message: str = ""
    permanent: bool = False
    retry_after: float | None = None


ADMITTED = "Admitted"


@dataclass(slots=True)
class _Counts:
    jobs: list[JobFacts]
    total: int = 0
    by_node: Counter[str] = field(default_factory=Counter)
    by_namespace: Counter[str] = field(default_factory=Counter)
    by_workload: Counter[str] = field(default_factory=Counter)
    migrating: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, jobs: Iterable[JobFacts]) -> _Counts:
        counts = cls(list(jobs))
        for job in counts.jobs:
            if job.in_flight:
                counts._count(job)
        return counts

    def _count(self, job: JobFacts) -> None:
        self.total += 1
        self.by_node[job.source_node] += 1
        self.by_namespace[job.namespace] += 1
        if job.workload:
            self.by_workload[job.workload] += 1
        self.migrating.add(job.pod)

    def admit(self, job: JobFacts) -> None:
        self.jobs.append(job)
        self._count(job)


def admission_order(pending: Iterable[JobFacts]) -> list[JobFacts]:
    """Least important pod first, then the oldest job, then by name (a total order)."""
    return sorted(pending, key=lambda j: (j.rank, j.created, j.name))


def arbitrate(
    pending: Sequence[JobFacts],
    live: Sequence[JobFacts],
    workloads: Mapping[str, WorkloadFacts],
    args: MigrationArgs,
    now: datetime,
    min_replicas: int = 1,
) -> list[Verdict]:
    """A verdict for every pending job, in admission order; admitted jobs count against later ones.
    `min_replicas` is the evictor's: a smaller workload is never moved."""
    counts = _Counts.of(j for j in live if j.name not in {p.name for p in pending})
    verdicts = []
    for job in admission_order(pending):
        verdict = _permanent(job, workloads.get(job.workload), args, min_replicas) or _temporary(
            job, workloads.get(job.workload), counts, args, now
        )
        if verdict is None:
            counts.admit(replace(job, phase="Running", started=now))
            verdict = Verdict(job.name, True, ADMITTED)
        verdicts.append(verdict)
    return verdicts


def _never(job: JobFacts, reason: str, message: str) -> Verdict:
    return Verdict(job.name, False, reason, message, permanent=True)


def _permanent(job: JobFacts, workload: WorkloadFacts | None, args: MigrationArgs, min_replicas: int) -> Verdict | None:
    """A limit no amount of waiting can satisfy."""
    for reason, value in (
        ("MaxMigratingGlobally", args.max_migrating_globally),
        ("MaxMigratingPerNode", args.max_migrating_per_node),
        ("MaxMigratingPerNamespace", args.max_migrating_per_namespace),
    ):
        if value == 0:
            return _never(job, reason, f"{reason[0].lower()}{reason[1:]} is 0: no pod may ever move")
    if workload is not None:
        if workload.replicas < min_replicas:
            return _never(
                job,
                "MinReplicas",
                f"{workload.label} has {workload.replicas} replica(s) < minReplicas {min_replicas}",
            )
        for reason, limit, what in (
            ("MaxMigratingPerWorkload", args.max_migrating_for(workload.replicas), "pods migrating at once"),
            ("MaxUnavailablePerWorkload", args.max_unavailable_for(workload.replicas), "unavailable pods"),
        ):
            if limit <= 0:
                return _never(job, reason, f"{workload.label} with {workload.replicas} replicas allows {limit} {what}")
    return None


def _wait(job: JobFacts, reason: str, message: str, retry_after: float | None = None) -> Verdict:
    return Verdict(job.name, False, reason, message, retry_after=retry_after)


def _temporary(
    job: JobFacts,
    workload: WorkloadFacts | None,
    counts: _Counts,
    args: MigrationArgs,
    now: datetime,
) -> Verdict | None:
    """A limit that is in the way now but may not be later."""
    if job.pod in counts.migrating:
        return _wait(job, "PodAlreadyMoving", f"another job is moving pod {job.pod}")
    if args.max_migrating_globally is not None and counts.total >= args.max_migrating_globally:
        return _wait(
            job,
            "MaxMigratingGlobally",
            f"{counts.total} jobs in flight (maxMigratingGlobally {args.max_migrating_globally})",
        )
    if args.max_migrating_per_node is not None and counts.by_node[job.source_node] >= args.max_migrating_per_node:
        return _wait(
            job,
            "MaxMigratingPerNode",
            f"{counts.by_node[job.source_node]} jobs in flight from node {job.source_node} "
            f"(maxMigratingPerNode {args.max_migrating_per_node})",
        )
    in_namespace = counts.by_namespace[job.namespace]
    if args.max_migrating_per_namespace is not None and in_namespace >= args.max_migrating_per_namespace:
        return _wait(
            job,
            "MaxMigratingPerNamespace",
            f"{in_namespace} jobs in flight in namespace {job.namespace} "
            f"(maxMigratingPerNamespace {args.max_migrating_per_namespace})",
        )
    if workload is None:
        return None
    limit = args.max_migrating_for(workload.replicas)
    if counts.by_workload[workload.uid] >= limit:
        return _wait(
            job,
            "MaxMigratingPerWorkload",
            f"{counts.by_workload[workload.uid]} pods of {workload.label} migrating (limit {limit} "
            f"for {workload.replicas} replicas)",
        )
    available = len(workload.ready - counts.migrating)
    unavailable = max(0, workload.replicas - available)
    after = unavailable + (1 if job.pod in workload.ready else 0)
    allowed = args.max_unavailable_for(workload.replicas)
    if after > allowed:
        return _wait(
            job,
            "MaxUnavailablePerWorkload",
            f"{unavailable} of {workload.replicas} pods of {workload.label} unavailable or migrating "
            f"(limit {allowed}); moving this one would make {after}",
        )
    bucket = args.object_limiters.workload
    starts = [j.started for j in counts.jobs if j.workload == workload.uid and j.started is not None]
    rate = bucket.max_migrating / bucket.duration.total_seconds()
    wait = replay_wait(starts, now, rate, bucket.max_migrating)
    if wait > 0:
        return _wait(
            job,
            "WorkloadRateLimited",
            f"{workload.label} may start {bucket.max_migrating} move(s) per {_seconds(bucket.duration)}; "
            f"next in {wait:.0f}s",
            wait,
        )
    cooldown = _workload_cooldown(job, workload, counts.jobs, args.cooldown, now)
    if cooldown is not None:
        return cooldown
    return None


def _workload_cooldown(
    job: JobFacts, workload: WorkloadFacts, jobs: Iterable[JobFacts], cooldown: timedelta, now: datetime
) -> Verdict | None:
    """A workload moved by an earlier cycle is not moved again within the cooldown (moves the same
    cycle planned together were weighed together, so they do not hold each other back)."""
    if cooldown <= timedelta(0):
        return None
    recent = [
        j.evicted
        for j in jobs
        if j.workload == workload.uid and j.evicted is not None and j.cycle != job.cycle and now - j.evicted < cooldown
    ]
    if not recent:
        return None
    until = max(recent) + cooldown
    wait = (until - now).total_seconds()
    return _wait(
        job,
        "WorkloadCooldown",
        f"{workload.label} had a pod moved {_seconds(now - max(recent))} ago (cooldown {_seconds(cooldown)})",
        wait,
    )


def _seconds(value: timedelta) -> str:
    return f"{value.total_seconds():.0f}s"


def cooling_sources(jobs: Iterable[JobFacts], cooldown: timedelta, now: datetime) -> set[str]:
    """Nodes a pod was evicted from within the cooldown: they are not targets for now."""
    if cooldown <= timedelta(0):
        return set()
    return {j.source_node for j in jobs if j.evicted is not None and j.source_node and now - j.evicted < cooldown}
