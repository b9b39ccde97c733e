"""The migration limits (migration.md §5), each defined once: pure functions over job facts.

Each function states one rule and returns a `Refusal` (its code and words defined here) or None.
Two callers apply them to the same facts (`JobFacts`, `WorkloadFacts`, built by
`descheduler.migration.admission`):

- the arbiter (`descheduler.migration.arbiter.arbitrate`) admits waiting jobs: the permanent forms
  (`never_moves`, `min_replicas`, `workload_never`) fail a job, the others make it wait;
- the planner's budget (`descheduler.budget.EvictionBudget`) looks ahead: it counts the moves it
  has planned as jobs the arbiter admitted now, and asks `workload_limits` whether one more move of
  a workload would be admitted too, so a plan holds no move that would only wait until its TTL.

So a limit reads the same in the plan's skip and in the job's status (the controller appends
"; not before <time>" from `retry_after`). A workload's limits are checked in one order,
`workload_limits`: cooldown, token bucket, jobs in flight, unavailable pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass
from datetime import datetime, timedelta

from descheduler.eligibility import MIN_REPLICAS
from descheduler.migration.objects import JobPhase
from descheduler.policy import MigrationArgs
from descheduler.refusal import Refusal, define
from descheduler.tokenbucket import replay_wait


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What the limits need to know about one job."""

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
    strategy: str = ""  # the strategy that planned the move ("" for a job made by hand)
    mode: str = ""  # the job's spec.mode ("" when not known)
    # MakeBeforeBreak: the replacement's controller (the rollout's new ReplicaSet). Its moves count
    # for that workload too, so the cooldown and the limits hold its pod back as they would the old.
    successor: str = ""

    @property
    def in_flight(self) -> bool:
        return self.phase == "Running"


@dataclass(frozen=True, slots=True)
class WorkloadFacts:
    uid: str
    label: str  # "ReplicaSet shop/web-7d9f5", for messages
    replicas: int
    ready: frozenset[str] = frozenset()  # keys of its pods that are Ready and not being deleted


POD_ALREADY_MOVING = define("PodAlreadyMoving", "another job is moving pod {subject}")


def _in_flight_words(option: str, where: str) -> Callable[[Refusal], str]:
    """Words of maxMigratingGlobally/PerNode/PerNamespace (`option`): 0 can never be met, else the
    jobs in flight `where` (a template over the subject)."""

    def words(refusal: Refusal) -> str:
        limit = refusal.facts["limit"]
        if limit == 0:
            return f"{option} is 0: no pod may ever move"
        return f"{refusal.facts['in_flight']} jobs in flight{where.format(subject=refusal.subject)} ({option} {limit})"

    return words


MAX_MIGRATING_GLOBALLY = define("MaxMigratingGlobally", _in_flight_words("maxMigratingGlobally", ""))
MAX_MIGRATING_PER_NODE = define("MaxMigratingPerNode", _in_flight_words("maxMigratingPerNode", " from node {subject}"))
MAX_MIGRATING_PER_NAMESPACE = define(
    "MaxMigratingPerNamespace", _in_flight_words("maxMigratingPerNamespace", " in namespace {subject}")
)
# The per-workload limits have two forms: resolved to 0 for the workload's size (no counts), and
# the counts in the way now.
MAX_MIGRATING_PER_WORKLOAD = define(
    "MaxMigratingPerWorkload",
    lambda r: (
        f"{r.subject} with {r.facts['replicas']} replicas allows {r.facts['limit']} pods migrating at once"
        if "before" not in r.facts
        else f"{r.subject} allows {r.facts['limit']} pod(s) migrating at once "
        f"({r.facts['in_flight']} in flight, {r.facts['before']} of them from earlier cycles)"
    ),
)
MAX_UNAVAILABLE_PER_WORKLOAD = define(
    "MaxUnavailablePerWorkload",
    lambda r: (
        f"{r.subject} with {r.facts['replicas']} replicas allows {r.facts['limit']} unavailable pods"
        if "after" not in r.facts
        else f"{r.facts['unavailable']} of {r.facts['replicas']} pods of {r.subject} unavailable or migrating "
        f"(limit {r.facts['limit']}); moving this one would make {r.facts['after']}"
    ),
)
WORKLOAD_RATE_LIMITED = define(
    "WorkloadRateLimited",
    "{subject} may start {burst} move(s) per {duration:s} (migration objectLimiters.workload)",
)
WORKLOAD_COOLDOWN = define(
    "WorkloadCooldown", "{subject} had a pod moved {ago:s} ago (migration cooldown {cooldown:s})"
)


def retry_after(refusal: Refusal) -> float | None:
    """Seconds until a waiting limit may let the job go, when the rule knows it."""
    wait = refusal.facts.get("retry_after")
    return float(wait) if isinstance(wait, int | float) else None


# --- limits over all jobs --------------------------------------------------------------------


def pod_already_moving(pod: str, migrating: Set[str]) -> Refusal | None:
    """One job at a time moves a pod."""
    return Refusal(code=POD_ALREADY_MOVING, subject=pod) if pod in migrating else None


def never_moves(args: MigrationArgs) -> Refusal | None:
    """maxMigratingGlobally, PerNode or PerNamespace set to 0: no job may ever start."""
    for code, limit in (
        (MAX_MIGRATING_GLOBALLY, args.max_migrating_globally),
        (MAX_MIGRATING_PER_NODE, args.max_migrating_per_node),
        (MAX_MIGRATING_PER_NAMESPACE, args.max_migrating_per_namespace),
    ):
        if limit == 0:
            return Refusal(code=code, facts={"limit": 0})
    return None


def max_migrating_globally(in_flight: int, args: MigrationArgs) -> Refusal | None:
    limit = args.max_migrating_globally
    if limit is None or in_flight < limit:
        return None
    return Refusal(code=MAX_MIGRATING_GLOBALLY, facts={"limit": limit, "in_flight": in_flight})


def max_migrating_per_node(node: str, in_flight: int, args: MigrationArgs) -> Refusal | None:
    limit = args.max_migrating_per_node
    if limit is None or in_flight < limit:
        return None
    return Refusal(code=MAX_MIGRATING_PER_NODE, subject=node, facts={"limit": limit, "in_flight": in_flight})


def max_migrating_per_namespace(namespace: str, in_flight: int, args: MigrationArgs) -> Refusal | None:
    limit = args.max_migrating_per_namespace
    if limit is None or in_flight < limit:
        return None
    return Refusal(code=MAX_MIGRATING_PER_NAMESPACE, subject=namespace, facts={"limit": limit, "in_flight": in_flight})


# --- limits of one workload --------------------------------------------------------------------


def min_replicas(workload: WorkloadFacts, minimum: int) -> Refusal | None:
    """The evictor's minReplicas (its rule and words are `descheduler.eligibility`'s): a smaller
    workload is never moved."""
    if workload.replicas >= minimum:
        return None
    return Refusal(code=MIN_REPLICAS, facts={"replicas": workload.replicas, "min_replicas": minimum})


def workload_never(workload: WorkloadFacts, args: MigrationArgs) -> Refusal | None:
    """A per-workload limit that resolves to 0 for this size: no pod of it may ever move."""
    for code, limit in (
        (MAX_MIGRATING_PER_WORKLOAD, args.max_migrating_for(workload.replicas)),
        (MAX_UNAVAILABLE_PER_WORKLOAD, args.max_unavailable_for(workload.replicas)),
    ):
        if limit <= 0:
            return Refusal(code=code, subject=workload.label, facts={"replicas": workload.replicas, "limit": limit})
    return None


@dataclass(frozen=True, slots=True)
class WorkloadMoves:
    """A workload's moves as the limits count them, read from jobs by `moves_of`."""

    in_flight: int  # its jobs in flight
    before: int  # of those, the ones an earlier cycle planned
    starts: tuple[datetime, ...]  # when its jobs started (the token bucket's spends)
    evicted: tuple[datetime, ...]  # when an earlier cycle's job evicted one of its pods
    migrating: frozenset[str]  # pods (namespace/name) any job in flight is moving


def moves_of(uid: str, jobs: Iterable[JobFacts], cycle: str) -> WorkloadMoves:
    """Count workload `uid`'s moves in `jobs`, for a job planned by `cycle`. A job in flight is one
    Running (an admitted job counts as Running since its admission)."""
    in_flight = before = 0
    starts: list[datetime] = []
    evicted: list[datetime] = []
    migrating: set[str] = set()
    for job in jobs:
        if job.in_flight:
            migrating.add(job.pod)
        if uid not in (job.workload, job.successor):
            continue
        if job.in_flight:
            in_flight += 1
            before += job.cycle != cycle
        if job.started is not None:
            starts.append(job.started)
        if job.evicted is not None and job.cycle != cycle:
            evicted.append(job.evicted)
    return WorkloadMoves(in_flight, before, tuple(starts), tuple(evicted), frozenset(migrating))


def workload_cooldown(
    workload: WorkloadFacts, moves: WorkloadMoves, cooldown: timedelta, now: datetime
) -> Refusal | None:
    """A workload moved by an earlier cycle is not moved again within the cooldown (moves the same
    cycle planned together were weighed together, so they do not hold each other back)."""
    if cooldown <= timedelta(0):
        return None
    recent = [at for at in moves.evicted if now - at < cooldown]
    if not recent:
        return None
    last = max(recent)
    return Refusal(
        code=WORKLOAD_COOLDOWN,
        subject=workload.label,
        facts={
            "ago": (now - last).total_seconds(),
            "cooldown": cooldown.total_seconds(),
            "retry_after": (last + cooldown - now).total_seconds(),
        },
    )


def workload_rate(workload: WorkloadFacts, moves: WorkloadMoves, args: MigrationArgs, now: datetime) -> Refusal | None:
    """objectLimiters.workload: a token bucket per workload, replayed from its jobs' start times."""
    bucket = args.object_limiters.workload
    wait = replay_wait(moves.starts, now, bucket.max_migrating / bucket.duration.total_seconds(), bucket.max_migrating)
    if wait <= 0:
        return None
    return Refusal(
        code=WORKLOAD_RATE_LIMITED,
        subject=workload.label,
        facts={"burst": bucket.max_migrating, "duration": bucket.duration.total_seconds(), "retry_after": wait},
    )


def max_migrating_per_workload(workload: WorkloadFacts, moves: WorkloadMoves, args: MigrationArgs) -> Refusal | None:
    limit = args.max_migrating_for(workload.replicas)
    if moves.in_flight < limit:
        return None
    return Refusal(
        code=MAX_MIGRATING_PER_WORKLOAD,
        subject=workload.label,
        facts={"limit": limit, "replicas": workload.replicas, "in_flight": moves.in_flight, "before": moves.before},
    )


def max_unavailable_per_workload(
    workload: WorkloadFacts, pod: str, moves: WorkloadMoves, args: MigrationArgs
) -> Refusal | None:
    """Pods not Ready or being moved, counting this one if it is Ready now (moving a pod that is not
    Ready makes nothing less available)."""
    unavailable = max(0, workload.replicas - len(workload.ready - moves.migrating))
    after = unavailable + (1 if pod in workload.ready else 0)
    limit = args.max_unavailable_for(workload.replicas)
    if after <= limit:
        return None
    return Refusal(
        code=MAX_UNAVAILABLE_PER_WORKLOAD,
        subject=workload.label,
        facts={"unavailable": unavailable, "replicas": workload.replicas, "limit": limit, "after": after},
    )


def workload_limits(
    workload: WorkloadFacts, pod: str, moves: WorkloadMoves, args: MigrationArgs, now: datetime
) -> Refusal | None:
    """Whether one more move of `pod` of this workload may start now; the first limit in the way."""
    return (
        workload_cooldown(workload, moves, args.cooldown, now)
        or workload_rate(workload, moves, args, now)
        or max_migrating_per_workload(workload, moves, args)
        or max_unavailable_per_workload(workload, pod, moves, args)
    )


def cooling_sources(jobs: Iterable[JobFacts], cooldown: timedelta, now: datetime) -> set[str]:
    """Nodes a pod was evicted from within the cooldown: they are not targets for now."""
    if cooldown <= timedelta(0):
        return set()
    return {j.source_node for j in jobs if j.evicted is not None and j.source_node and now - j.evicted < cooldown}
