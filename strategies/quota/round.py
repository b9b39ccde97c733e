"""One QuotaReclaim round: the shared accounting, eligibility of victims, and committing them.

Every "no" of the strategy is a `Refusal`: the codes of the rules that hold for a whole round are
defined here (`static_refusal`), those of the pacing, reclaim and over-max rules in their modules.
A gang's refusal is one member's, said of it with `Refusal.within(pod key)`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from descheduler.budget import EvictionBudget
from descheduler.eligibility import hard_refusal
from descheduler.model import LABEL_QUOTA_PREEMPTIBLE, Pod
from descheduler.plan import Migration, PodKey, QuotaRef, Skip
from descheduler.policy import QuotaReclaimArgs
from descheduler.refusal import Refusal, define
from descheduler.resources import Resources
from descheduler.strategy import PlanContext, StrategyResult
from strategies.quota.accounting import InFlight, Ledger
from strategies.quota.pacing import Pacing
from strategies.quota.tree import QuotaTree
from strategies.quota.units import Unit, VictimUnits

STRATEGY = "QuotaReclaim"

GANG_SPANS_GROUPS = define(
    "GangSpansGroups",
    "gang spans quota groups ({groups}); it moves whole or not at all",
    brief="gang spans quota groups",
)
QUOTA_SKIPPED = define("QuotaSkipped", "quota {subject} is skipped: {why}", brief="quota {subject} is skipped")
NOT_PREEMPTIBLE = define("NotPreemptible", LABEL_QUOTA_PREEMPTIBLE + "=false")
# A victim already planned this round (for another waiting pod) is not planned twice.
PLANNED_THIS_ROUND = define("PlannedThisRound", "already being moved")
NODE_UNUSABLE = define(
    "NodeUnusable",
    "on node {subject}, which is cordoned, not ready or outside the nodeSelector",
    brief="on a node that is cordoned, not ready or outside the nodeSelector",
)
MAX_EVICTIONS_PER_ROUND = define("MaxEvictionsPerRound", "maxEvictionsPerRound {limit} reached")
MAX_EVICTIONS_PER_LENDER = define(
    "MaxEvictionsPerLender",
    lambda r: (
        f"maxEvictionsPerLender {r.facts['limit']}: {r.subject} cannot give {r.facts['pods']} more pod(s) this round"
        if "pods" in r.facts
        else f"maxEvictionsPerLender {r.facts['limit']} reached for {r.subject}"
    ),
    brief="maxEvictionsPerLender reached",
)
DRY_RUN = define("DryRun", "dryRun: would evict: {reason}", brief="dryRun: would evict")


def budget_refusal(budget: EvictionBudget, unit: Unit) -> Refusal | None:
    """Why the cycle limits or a PDB refuse this unit (all its pods at once), or None.

    A workload's migration limits (cooldown, objectLimiters.workload, maxMigratingPerWorkload,
    maxUnavailablePerWorkload) do not apply to a quota victim: they pace load moves, and the
    arbiter does not apply them to QuotaReclaim's jobs either (descheduler.migration.arbiter).
    """
    trial = budget.fork()
    for pod in unit.pods:
        refusal = trial.refusal(pod, pod.node_name, workload_limits=False)
        if refusal is not None:
            return _of_member(unit, pod, refusal)
        trial.take(pod, pod.node_name)
    return None


def max_evictions_per_lender(lender: str, limit: int, pods: int | None = None) -> Refusal:
    """The lender gave `limit` pods this round (or cannot give `pods` more)."""
    facts: dict[str, int] = {"limit": limit} if pods is None else {"limit": limit, "pods": pods}
    return Refusal(code=MAX_EVICTIONS_PER_LENDER, subject=lender, facts=facts)


def max_evictions_per_round(limit: int) -> Refusal:
    return Refusal(code=MAX_EVICTIONS_PER_ROUND, facts={"limit": limit})


def _of_member(unit: Unit, pod: Pod, refusal: Refusal) -> Refusal:
    """A refusal of one pod, said of that pod when it is a member of a gang."""
    return refusal if len(unit.pods) == 1 else refusal.within(pod.key)


def take(budget: EvictionBudget, unit: Unit) -> None:
    for pod in unit.pods:
        budget.take(pod, pod.node_name)


@dataclass(slots=True)
class Round:
    ctx: PlanContext
    args: QuotaReclaimArgs
    tree: QuotaTree
    ledger: Ledger
    pacing: Pacing
    units: VictimUnits  # lender group -> its units, least important first (built when asked for)
    pending: dict[str, list[Pod]]  # group -> its pending pods
    usable_nodes: frozenset[str]
    in_flight: InFlight = field(default_factory=InFlight)  # earlier victims still being evicted
    result: StrategyResult = field(default_factory=StrategyResult)
    budget: EvictionBudget | None = None
    evicted: int = 0
    per_lender: Counter[str] = field(default_factory=Counter)
    victims: set[str] = field(default_factory=set)  # pod keys planned this round
    skips: dict[str, Skip] = field(default_factory=dict)
    stopped: Refusal | None = None  # why no more victims are planned this round
    # Each group's use as the round found it (victims in flight already released): what reasons
    # describe, while the ledger moves on with every victim and waiting pod the round plans.
    start_used: dict[str, Resources] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = self.ctx.budget.fork()
        self.start_used = dict(self.ledger.used)

    @property
    def round_budget(self) -> EvictionBudget:
        assert self.budget is not None
        return self.budget

    def static_refusal(self, unit: Unit, need_usable_node: bool) -> Refusal | None:
        """Rules that do not change within a round: evictor hard rules, opt-outs, moves in flight."""
        if len(unit.groups) > 1 or not unit.groups[0]:
            names = ", ".join(g or "unmanaged" for g in unit.groups)
            return Refusal(code=GANG_SPANS_GROUPS, facts={"groups": names})
        if not self.tree.trusted(unit.group):
            return self.quota_skipped(unit.group)
        for pod in unit.pods:
            refusal = self._pod_refusal(pod, need_usable_node)
            if refusal is not None:
                return _of_member(unit, pod, refusal)
        return None

    def quota_skipped(self, group: str) -> Refusal:
        """The tree does not trust this group: no victims from it, no reclaim for it."""
        return Refusal(
            code=QUOTA_SKIPPED, subject=group, facts={"why": self.tree.untrusted.get(group, "unknown quota")}
        )

    def _pod_refusal(self, pod: Pod, need_usable_node: bool) -> Refusal | None:
        hard = hard_refusal(pod)
        if hard is not None:
            return hard
        if pod.labels.get(LABEL_QUOTA_PREEMPTIBLE, "").strip().lower() == "false":
            return Refusal(code=NOT_PREEMPTIBLE)
        if moving := self.ctx.moving_refusal(pod):
            return moving
        if pod.key in self.victims:
            return Refusal(code=PLANNED_THIS_ROUND)
        if pod.node_name not in self.usable_nodes and need_usable_node:
            return Refusal(code=NODE_UNUSABLE, subject=pod.node_name)
        return None

    def skip(self, unit: Unit, refusal: Refusal) -> None:
        for pod in unit.pods:
            self.skips.setdefault(
                pod.key, Skip(pod=PodKey.of(pod), refusal=refusal, strategy=STRATEGY, node=pod.node_name)
            )

    def skip_pending(self, pod: Pod, refusal: Refusal) -> None:
        """A pending pod this round does not reclaim for."""
        self.skips.setdefault(pod.key, Skip(pod=PodKey.of(pod), refusal=refusal, strategy=STRATEGY))

    def commit(self, units: Iterable[Unit], reason: str, serves: PodKey | None) -> list[str]:
        """Plan the eviction of these units (or, under dryRun, report them); update the accounting."""
        keys: list[str] = []
        for unit in units:
            take(self.round_budget, unit)
            self.ledger.release(unit.group, unit.requests)
            self.per_lender[unit.group] += len(unit.pods)
            self.evicted += len(unit.pods)
            gang = f"; moves with its gang ({len(unit.pods)} pods)" if unit.gang is not None else ""
            for pod in unit.pods:
                keys.append(pod.key)
                self.victims.add(pod.key)
                if self.args.dry_run:
                    self.skips[pod.key] = Skip(
                        pod=PodKey.of(pod),
                        refusal=Refusal(code=DRY_RUN, facts={"reason": reason + gang}),
                        strategy=STRATEGY,
                        node=pod.node_name,
                    )
                    continue
                self.ctx.budget.take(pod, pod.node_name)
                self.ctx.view.remove(pod)
                quota = self.tree.groups[unit.group].quota
                self.result.migrations.append(
                    Migration(
                        pod=PodKey.of(pod),
                        strategy=STRATEGY,
                        source_node=pod.node_name,
                        target_node=None,
                        mode="EvictDirectly",
                        reason=reason + gang,
                        usage=pod.requests,
                        uid=pod.uid,
                        serves=serves,
                        quota=QuotaRef(quota.api_group, quota.namespace, quota.name),
                    )
                )
        return keys

    def finish(self) -> None:
        planned = {f"{m.pod.namespace}/{m.pod.name}" for m in self.result.migrations}
        self.result.skipped.extend(s for key, s in sorted(self.skips.items()) if key not in planned)
