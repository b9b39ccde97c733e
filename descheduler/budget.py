"""Per-cycle move limits, PDB budgets and the migration limits ahead, shared by all strategies of
one cycle.

`EvictionBudget` counts the moves a cycle plans against the policy's `limits` (maxEvictionsPer…)
and each PDB's disruptionsAllowed. Given the policy's `migration` args, it also looks ahead at the
limits the migration controller's arbiter applies to a workload's jobs (the cooldown, the workload
token bucket, maxMigratingPerWorkload, maxUnavailablePerWorkload): it reads the snapshot's jobs as
the arbiter will (`descheduler.migration.admission`), counts each planned move as a job admitted
now, and asks the same rules (`descheduler.migration.limits`) whether one more would be admitted.
So a plan holds no move that would only wait for a limit until its TTL runs out, and the skip
reads as the job's status would.

Every refusal is a `Refusal`; a strategy tries moves on a `fork()` without touching the budget.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

from descheduler.migration import limits as migration_limits
from descheduler.migration.admission import snapshot_job_facts, workload_of
from descheduler.migration.limits import JobFacts, WorkloadFacts, cooling_sources
from descheduler.model import Pod
from descheduler.policy import Limits, MigrationArgs
from descheduler.policy.fields import scaled
from descheduler.refusal import Refusal, define
from descheduler.snapshot import Snapshot

MAX_EVICTIONS_PER_CYCLE = define("MaxEvictionsPerCycle", "limit maxEvictionsPerCycle {limit} reached")
MAX_EVICTIONS_PER_HOUR = define(
    "MaxEvictionsPerHour",
    "limit maxEvictionsPerHour {limit} reached ({evicted} evicted in the last hour)",
    brief="limit maxEvictionsPerHour reached",
)
MAX_EVICTIONS_PER_NODE = define(
    "MaxEvictionsPerNode",
    "limit maxEvictionsPerNode {limit} reached on {subject}",
    brief="limit maxEvictionsPerNode reached",
)
MAX_EVICTIONS_PER_NAMESPACE = define(
    "MaxEvictionsPerNamespace",
    "limit maxEvictionsPerNamespace {limit} reached in {subject}",
    brief="limit maxEvictionsPerNamespace reached",
)
MULTIPLE_PDBS = define(
    "MultiplePodDisruptionBudgets",
    "more than one PodDisruptionBudget selects the pod ({names}); eviction would be refused",
    brief="more than one PodDisruptionBudget selects the pod",
)
PDB_NOT_OBSERVED = define(
    "PodDisruptionBudgetNotObserved",
    "PodDisruptionBudget {subject} status is not yet observed by its controller",
    brief="PodDisruptionBudget status is not yet observed",
)
PDB_EXHAUSTED = define(
    "PodDisruptionBudget",
    "PodDisruptionBudget {subject} allows no more disruptions ({allowed} allowed)",
    brief="PodDisruptionBudget allows no more disruptions",
)

# The cycle of the moves this budget plans: every job the snapshot holds is of an earlier one.
_THIS_CYCLE = "(planned)"
HOUR = timedelta(hours=1)


class _Workloads:
    """Workload facts, read when a move of the workload is first weighed (most never are): the
    snapshot's pods by owner (as the cluster cache kept them, else grouped in one pass), then each
    workload's facts come from its own pods."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._pods: Mapping[str, Sequence[Pod]] | None = None
        self._facts: dict[str, WorkloadFacts | None] = {}

    def get(self, uid: str) -> WorkloadFacts | None:
        if uid not in self._facts:
            if self._pods is None:
                self._pods = _pods_by_owner(self.snapshot)
            self._facts[uid] = workload_of(self.snapshot, uid, self._pods.get(uid, ()))
        return self._facts[uid]


def _pods_by_owner(snapshot: Snapshot) -> Mapping[str, Sequence[Pod]]:
    """Every pod of the snapshot per controller uid, in the snapshot's order."""
    kept = snapshot.owner_pods
    if kept is not None and kept.fits(snapshot.pods):
        return kept.by_owner
    grouped: dict[str, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.owner is not None:
            grouped.setdefault(pod.owner.uid, []).append(pod)
    return grouped


class EvictionBudget:
    """Counts planned moves against `limits`, each PDB's disruptionsAllowed and, with `migration`,
    a workload's migration limits."""

    def __init__(
        self, limits: Limits, snapshot: Snapshot, migration: MigrationArgs | None = None, *, nodes: int | None = None
    ) -> None:
        """With `migration`, a workload's moves also count against the arbitration limits the
        migration controller will apply (in-flight jobs, unavailable pods, the workload token
        bucket, the cooldown), so the plan holds no move that would only wait for a limit until
        its TTL runs out. `nodes`: how many nodes the cycle considers (default: the snapshot's),
        which a percent maxEvictionsPerCycle is a share of."""
        self.limits = limits
        considered = len(snapshot.nodes) if nodes is None else nodes
        replacements = _replacements(snapshot)
        facts = [snapshot_job_facts(job, replacements) for job in snapshot.jobs]
        # The cycle's cap: maxEvictionsPerCycle, or what maxEvictionsPerHour leaves if that is less, with
        # the refusal that names it ("maxEvictionsPerCycle 10", "… 5% of 300 nodes = 15").
        self.per_cycle = limits.per_cycle_for(considered)
        self._cap = Refusal(
            code=MAX_EVICTIONS_PER_CYCLE, facts={"limit": _cap_text(limits.max_evictions_per_cycle, considered)}
        )
        hourly = limits.per_hour_for(considered)
        if hourly is not None:
            since = snapshot.now - HOUR
            evicted = sum(1 for job in facts if job.evicted is not None and job.evicted > since)
            left = max(0, hourly - evicted)
            if self.per_cycle is None or left < self.per_cycle:
                self.per_cycle = left
                limit = _cap_text(limits.max_evictions_per_hour, considered)
                self._cap = Refusal(code=MAX_EVICTIONS_PER_HOUR, facts={"limit": limit, "evicted": evicted})
        self.snapshot = snapshot
        self.migration = migration
        self.total = 0
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_pdb: Counter[str] = Counter()
        # Each workload's jobs as the arbiter will count them when this plan's moves come up: the
        # jobs waiting now are admitted first (started now, if they have not started).
        self._jobs: dict[str, list[JobFacts]] = {}
        for job in facts:
            if job.workload:
                if job.phase in ("Pending", "Running"):
                    job = replace(job, phase="Running", started=job.started or snapshot.now)
                self._jobs.setdefault(job.workload, []).append(job)
                if job.successor:
                    self._jobs.setdefault(job.successor, []).append(job)
        self._planned: dict[str, list[JobFacts]] = {}  # by workload: moves planned, as admitted jobs
        self._workloads = _Workloads(snapshot)  # shared with forks: the facts do not change in a cycle
        self._answers: dict[tuple[str, bool], Refusal | None] = {}  # workload_refusal's, until take()
        self.cooling_nodes = frozenset(
            cooling_sources(facts, migration.cooldown, snapshot.now) if migration is not None else ()
        )

    def fork(self) -> EvictionBudget:
        """A copy to try moves on without touching this budget: every count (moves planned per
        node, namespace, PDB and workload), the same limits, migration args and jobs."""
        forked = copy.copy(self)
        forked.per_node = Counter(self.per_node)
        forked.per_namespace = Counter(self.per_namespace)
        forked.per_pdb = Counter(self.per_pdb)
        forked._planned = {uid: list(moves) for uid, moves in self._planned.items()}
        forked._answers = dict(self._answers)
        return forked

    @property
    def cycle_exhausted(self) -> bool:
        return self.per_cycle is not None and self.total >= self.per_cycle

    @property
    def cap_refusal(self) -> Refusal:
        """The refusal once the cycle's cap is reached: maxEvictionsPerCycle, or maxEvictionsPerHour where
        the hour's budget leaves less."""
        return self._cap

    def node_refusal(self, node: str) -> Refusal | None:
        """Why no pod at all may leave this node any more this cycle, or None."""
        limits = self.limits
        if self.cycle_exhausted:
            return self._cap
        if limits.max_evictions_per_node is not None and self.per_node[node] >= limits.max_evictions_per_node:
            return Refusal(code=MAX_EVICTIONS_PER_NODE, subject=node, facts={"limit": limits.max_evictions_per_node})
        return None

    def refusal(self, pod: Pod, node: str, *, workload_limits: bool = True, surge: bool = False) -> Refusal | None:
        """Why one more move of this pod would break a limit or a PDB, or None. `workload_limits`
        False: the migration limits of the pod's workload do not apply (QuotaReclaim's victims:
        the arbiter does not hold their jobs back by them either). `surge`: the pod goes only once
        its replacement is Ready (MakeBeforeBreak), so its budgets count one more healthy pod."""
        node_refusal = self.node_refusal(node)
        if node_refusal is not None:
            return node_refusal
        per_ns = self.limits.max_evictions_per_namespace
        if per_ns is not None and self.per_namespace[pod.namespace] >= per_ns:
            return Refusal(code=MAX_EVICTIONS_PER_NAMESPACE, subject=pod.namespace, facts={"limit": per_ns})
        return (self.workload_refusal(pod) if workload_limits else None) or self.pdb_refusal(pod, surge=surge)

    def workload_refusal(self, pod: Pod) -> Refusal | None:
        """Why the migration controller would hold one more move of this pod's workload back now
        (after the moves already planned), or None."""
        owner = pod.owner
        if self.migration is None or owner is None or not owner.uid:
            return None
        workload = self._workloads.get(owner.uid)
        if workload is None:
            return None
        # The answer depends on the pod only through whether it is Ready (maxUnavailablePerWorkload).
        key = (owner.uid, pod.key in workload.ready)
        if key not in self._answers:
            jobs = [*self._jobs.get(owner.uid, ()), *self._planned.get(owner.uid, ())]
            moves = migration_limits.moves_of(owner.uid, jobs, _THIS_CYCLE)
            self._answers[key] = migration_limits.workload_never(
                workload, self.migration
            ) or migration_limits.workload_limits(workload, pod.key, moves, self.migration, self.snapshot.now)
        return self._answers[key]

    def pdb_refusal(self, pod: Pod, *, surge: bool = False) -> Refusal | None:
        pdbs = self.snapshot.pdbs_for(pod)
        if len(pdbs) > 1:
            return Refusal(code=MULTIPLE_PDBS, facts={"names": ", ".join(sorted(p.name for p in pdbs))})
        if not pdbs:
            return None
        pdb = pdbs[0]
        if pdb.observed_generation < pdb.generation:
            return Refusal(code=PDB_NOT_OBSERVED, subject=pdb.name)
        allowed = pdb.current_healthy + 1 - pdb.desired_healthy if surge else pdb.disruptions_allowed
        left = allowed - self.per_pdb[f"{pdb.namespace}/{pdb.name}"]
        if left <= 0:
            return Refusal(code=PDB_EXHAUSTED, subject=pdb.name, facts={"allowed": pdb.disruptions_allowed})
        return None

    def take(self, pod: Pod, node: str) -> None:
        self.total += 1
        if pod.owner is not None and pod.owner.uid:
            move = JobFacts(
                name="",
                namespace=pod.namespace,
                pod=pod.key,
                phase="Running",
                created=self.snapshot.now,
                source_node=node,
                workload=pod.owner.uid,
                cycle=_THIS_CYCLE,
                started=self.snapshot.now,
            )
            self._planned.setdefault(pod.owner.uid, []).append(move)
            self._answers.pop((pod.owner.uid, True), None)
            self._answers.pop((pod.owner.uid, False), None)
        self.per_node[node] += 1
        self.per_namespace[pod.namespace] += 1
        for pdb in self.snapshot.pdbs_for(pod):
            self.per_pdb[f"{pdb.namespace}/{pdb.name}"] += 1


def _cap_text(cap: int | str | None, considered: int) -> str:
    """How a refusal names a cap: "10", or "5% of 300 nodes = 15"."""
    if isinstance(cap, str):
        return f"{cap} of {considered} nodes = {scaled(cap, considered)}"
    return str(cap)


def _replacements(snapshot: Snapshot) -> dict[str, Pod]:
    """The pods that replace the snapshot's MakeBeforeBreak jobs' pods, by "namespace/name" (one pass
    over the pods, and only when such a job has one)."""
    wanted = {
        f"{j.replacement.namespace}/{j.replacement.name}"
        for j in snapshot.jobs
        if j.replacement and j.mode == "MakeBeforeBreak"
    }
    return {p.key: p for p in snapshot.pods if p.key in wanted} if wanted else {}
