"""QuotaReclaim: give quota groups back what they lent (design: quotareclaim.md).

Pure: the snapshot (with its `now`) and arguments in, evictions and reasons out. The pieces live
in `strategies.quota`: the tree and its validation, accounting, victim units (gangs), over-max
revocation, guarantee reclaim, and pacing state.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from descheduler.policy import QuotaReclaimArgs
from descheduler.strategy import PlanContext, StrategyResult
from strategies.quota.accounting import Census, Ledger, Membership, node_free, release_in_flight
from strategies.quota.overmax import revoke_over_max
from strategies.quota.pacing import Pacing
from strategies.quota.reclaim import reclaim_guarantees
from strategies.quota.round import Round
from strategies.quota.tree import build_tree
from strategies.quota.units import VictimUnits

STRATEGY = "QuotaReclaim"


class QuotaReclaim:
    name: ClassVar[str] = "QuotaReclaim"
    args_model: ClassVar[type[BaseModel]] = QuotaReclaimArgs

    def plan(self, ctx: PlanContext, args: QuotaReclaimArgs) -> StrategyResult:
        snapshot = ctx.snapshot
        tree = build_tree(snapshot.quotas, args.parent_label)
        if not tree.groups:
            return StrategyResult()
        membership = Membership.build(tree, args.quota_label)
        # The one pass over every pod: per-group sums decide which groups act (over max, or a
        # pending pod under its min); victim units and cluster free are built only when needed.
        census = Census.take(snapshot.pods, membership, snapshot.pod_rows)
        considered = {name for name, ok in zip(ctx.table.names, ctx.considered, strict=True) if ok}
        usable = frozenset(n.name for n in snapshot.nodes if n.ready and not n.unschedulable and n.name in considered)
        ledger = Ledger.build(tree, census.requested, lambda: node_free(snapshot, usable), args.aggregate_min_gate)
        units = VictimUnits(snapshot.pods, census.holding, census.requested, membership.group_of)
        # A round waits for its victims to leave at most two migration TTLs: one for the job, one
        # for the pod's termination; past that it is no longer judged and a new round may start.
        pacing = Pacing.load(ctx.state, snapshot.now, args, judgement_wait=2 * ctx.policy.migration.ttl)
        pacing.check_progress(snapshot, ledger, tree, ctx.moving)
        pacing.forget_settled(frozenset(census.pending))
        evicting = (f"{j.pod.namespace}/{j.pod.name}" for j in snapshot.jobs if j.active and j.strategy == STRATEGY)
        in_flight = release_in_flight(census, ledger, evicting)
        rnd = Round(
            ctx=ctx,
            args=args,
            tree=tree,
            ledger=ledger,
            pacing=pacing,
            units=units,
            pending=census.pending,
            usable_nodes=usable,
            in_flight=in_flight,
        )
        rnd.result.warnings.extend(tree.warnings)
        rnd.result.warnings.extend(membership.warnings())
        previous: Any = ctx.state.get("overMaxSince", {})
        episodes = revoke_over_max(rnd, previous)
        reclaim_guarantees(rnd)
        rnd.finish()
        rnd.result.warnings.extend(pacing.warnings)
        rnd.result.reclaim_stalls.extend(pacing.stalls)
        state = pacing.state()
        if episodes:
            state["overMaxSince"] = episodes
        rnd.result.state = state
        return rnd.result
