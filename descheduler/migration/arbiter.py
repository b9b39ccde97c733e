"""Arbitration: which waiting jobs may start now (migration.md §5). Pure: facts in, verdicts out.

Every count comes from the jobs the caller listed from the API (plus the ones admitted earlier in
the same pass), never from memory, so a restarted controller reaches the same verdicts. The rules
themselves are `descheduler.migration.limits` (the planner's budget applies the same ones); this
module only orders the waiting jobs, counts, and turns each job's first refusal into a `Verdict`.
The facts come from `descheduler.migration.admission`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from descheduler.migration import limits
from descheduler.migration.limits import JobFacts, WorkloadFacts
from descheduler.policy import MigrationArgs
from descheduler.refusal import Refusal

__all__ = ["ADMITTED", "Verdict", "admission_order", "arbitrate"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """Admit, or not: a refused job carries its `refusal`, and waits (`retry_after` seconds when
    known) unless the refusal is `permanent`."""

    job: str
    refusal: Refusal | None = None
    permanent: bool = False

    @property
    def admit(self) -> bool:
        return self.refusal is None

    @property
    def reason(self) -> str:
        return self.refusal.code if self.refusal is not None else ADMITTED

    @property
    def message(self) -> str:
        return str(self.refusal) if self.refusal is not None else ""

    @property
    def retry_after(self) -> float | None:
        return None if self.refusal is None or self.permanent else limits.retry_after(self.refusal)


ADMITTED = "Admitted"


@dataclass(slots=True)
class _Counts:
    jobs: list[JobFacts]
    total: int = 0
    by_node: Counter[str] = field(default_factory=Counter)
    by_namespace: Counter[str] = field(default_factory=Counter)
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
        self.migrating.add(job.pod)

    def admit(self, job: JobFacts) -> None:
        self.jobs.append(job)
        self._count(job)


def admission_order(pending: Iterable[JobFacts]) -> list[JobFacts]:
    """Least important pod first, then the oldest job, then by name (a total order)."""
    return sorted(pending, key=lambda j: (j.rank, j.created, j.name))


# QuotaReclaim gives back what a quota lent and applies only the evictor's hard rules
# (quotareclaim.md §3): the evictor's minReplicas, a switchable rule, does not hold its jobs back.
_WITHOUT_MIN_REPLICAS = frozenset({"QuotaReclaim"})
# Nor do a workload's migration limits (cooldown, objectLimiters.workload, maxMigratingPerWorkload,
# maxUnavailablePerWorkload): they pace load moves, whose pods come back elsewhere at once, while a
# reclaim's victims give room back on purpose (their replacements may stay Pending under the
# lender's quota) and are paced by QuotaReclaim's own limits; the victims' PDBs still hold.
_WITHOUT_WORKLOAD_LIMITS = frozenset({"QuotaReclaim"})


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
        workload = workloads.get(job.workload)
        never = _permanent(job, workload, args, min_replicas)
        wait = None if never is not None else _temporary(job, workload, counts, args, now)
        if never is not None:
            verdict = Verdict(job.name, never, permanent=True)
        elif wait is not None:
            verdict = Verdict(job.name, wait)
        else:
            counts.admit(replace(job, phase="Running", started=now))
            verdict = Verdict(job.name)
        verdicts.append(verdict)
    return verdicts


def _permanent(job: JobFacts, workload: WorkloadFacts | None, args: MigrationArgs, min_replicas: int) -> Refusal | None:
    """A limit no amount of waiting can satisfy."""
    if never := limits.never_moves(args):
        return never
    if workload is None:
        return None
    # A make-before-break move is how the policy moves a workload smaller than minReplicas.
    keeps = job.strategy not in _WITHOUT_MIN_REPLICAS and job.mode != "MakeBeforeBreak"
    if keeps and (refusal := limits.min_replicas(workload, min_replicas)):
        return refusal
    if job.strategy in _WITHOUT_WORKLOAD_LIMITS:
        return None
    return limits.workload_never(workload, args)


def _temporary(
    job: JobFacts, workload: WorkloadFacts | None, counts: _Counts, args: MigrationArgs, now: datetime
) -> Refusal | None:
    """A limit that is in the way now but may not be later."""
    refusal = (
        limits.pod_already_moving(job.pod, counts.migrating)
        or limits.max_migrating_globally(counts.total, args)
        or limits.max_migrating_per_node(job.source_node, counts.by_node[job.source_node], args)
        or limits.max_migrating_per_namespace(job.namespace, counts.by_namespace[job.namespace], args)
    )
    if refusal is not None or workload is None or job.strategy in _WITHOUT_WORKLOAD_LIMITS:
        return refusal
    return limits.workload_limits(workload, job.pod, limits.moves_of(workload.uid, counts.jobs, job.cycle), args, now)
