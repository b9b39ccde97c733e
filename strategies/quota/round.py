"""One QuotaReclaim round: the shared accounting, eligibility of victims, and committing them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from descheduler.budget import EvictionBudget
from descheduler.eligibility import hard_refusal
from descheduler.model import LABEL_QUOTA_PREEMPTIBLE
from descheduler.plan import Migration, PodKey, QuotaRef, Skip
from descheduler.policy import QuotaReclaimArgs
from descheduler.strategy import PlanContext, StrategyResult
from strategies.quota.accounting import Ledger
from strategies.quota.pacing import Pacing
from strategies.quota.tree import QuotaTree
from strategies.quota.units import Unit

STRATEGY = "QuotaReclaim"


def fork_budget(budget: EvictionBudget) -> EvictionBudget:
    """A copy to try victims on without touching the original: all of its counts and limits,
    the migration limits ahead included (`EvictionBudget.fork`)."""
    return budget.fork()


def budget_refusal(budget: EvictionBudget, unit: Unit) -> str | None:
    """Why the cycle limits or a PDB refuse this unit (all its pods at once), or None."""
    trial = fork_budget(budget)
    for pod in unit.pods:
        refusal = trial.refusal(pod, pod.node_name)
        if refusal is not None:
            return refusal if len(unit.pods) == 1 else f"{pod.key}: {refusal}"
        trial.take(pod, pod.node_name)
    return None


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
    units: dict[str, list[Unit]]  # lender group -> its units, least important first
    pod_groups: dict[str, str]  # pod key -> quota group
    usable_nodes: frozenset[str]
    result: StrategyResult = field(default_factory=StrategyResult)
    budget: EvictionBudget | None = None
    evicted: int = 0
    per_lender: Counter[str] = field(default_factory=Counter)
    victims: set[str] = field(default_factory=set)  # pod keys planned this round
    skips: dict[str, Skip] = field(default_factory=dict)
    stopped: str | None = None

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = fork_budget(self.ctx.budget)

    @property
    def round_budget(self) -> EvictionBudget:
        assert self.budget is not None
        return self.budget

    def static_refusal(self, unit: Unit, need_usable_node: bool) -> str | None:
        """Rules that do not change within a round: evictor hard rules, opt-outs, moves in flight."""
        if len(unit.groups) > 1 or not unit.groups[0]:
            names = ", ".join(g or "unmanaged" for g in unit.groups)
            return f"gang spans quota groups ({names}); it moves whole or not at all"
        if not self.tree.trusted(unit.group):
            return f"quota {unit.group} is skipped: {self.tree.untrusted.get(unit.group, 'unknown quota')}"
        for pod in unit.pods:
            prefix = f"{pod.key}: " if len(unit.pods) > 1 else ""
            hard = hard_refusal(pod)
            if hard is not None:
                return prefix + hard
            if pod.labels.get(LABEL_QUOTA_PREEMPTIBLE, "").strip().lower() == "false":
                return prefix + f"{LABEL_QUOTA_PREEMPTIBLE}=false"
            if pod.key in self.ctx.moving or pod.key in self.victims:
                return prefix + "already being moved"
            if pod.node_name not in self.usable_nodes and need_usable_node:
                return prefix + f"on node {pod.node_name}, which is cordoned, not ready or outside the nodeSelector"
        return None

    def skip(self, unit: Unit, reason: str) -> None:
        for pod in unit.pods:
            self.skips.setdefault(
                pod.key, Skip(pod=PodKey.of(pod), reason=reason, strategy=STRATEGY, node=pod.node_name)
            )

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
                        reason=f"dryRun: would evict: {reason}{gang}",
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
