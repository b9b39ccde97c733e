"""Guarantee reclaim: give a group below its min back what it lent (quotareclaim.md §2–3).

Each rule that keeps a pending pod from being served, a lender from giving or a victim from going
is a refusal code defined here (or in the round, pacing and budget modules); the unreclaimable
summary groups the refusals by their code's kind (`_KINDS`), never by their words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from descheduler.budget import (
    MAX_EVICTIONS_PER_CYCLE,
    MAX_EVICTIONS_PER_HOUR,
    MAX_EVICTIONS_PER_NAMESPACE,
    MAX_EVICTIONS_PER_NODE,
    MULTIPLE_PDBS,
    PDB_EXHAUSTED,
    PDB_NOT_OBSERVED,
)
from descheduler.migration.limits import (
    MAX_MIGRATING_PER_WORKLOAD,
    MAX_UNAVAILABLE_PER_WORKLOAD,
    WORKLOAD_COOLDOWN,
    WORKLOAD_RATE_LIMITED,
)
from descheduler.model import Pod
from descheduler.plan import PodKey
from descheduler.quantity import format_units
from descheduler.refusal import Fact, Refusal, define
from descheduler.resources import EMPTY, Resources, total
from strategies.quota.pacing import LENDER_COOLDOWN, PREVIOUS_ROUND_UNJUDGED, RECLAIM_BACKOFF
from strategies.quota.round import (
    MAX_EVICTIONS_PER_LENDER,
    Round,
    budget_refusal,
    max_evictions_per_lender,
    max_evictions_per_round,
    take,
)
from strategies.quota.tree import describe, usage_words
from strategies.quota.units import Unit

_LATEST = datetime.max


def _pending_order(pod: Pod) -> tuple[int, float, str]:
    """Priority desc, creation asc, name."""
    created = pod.created.timestamp() if pod.created is not None else _LATEST.timestamp()
    return (-(pod.priority or 0), created, pod.key)


# A pending pod this strategy does not reclaim for.
NOT_LEAF_QUOTA = define(
    "NotLeafQuota",
    "quota {subject} is not a leaf of the quota tree: only leaf groups are served",
    brief="quota is not a leaf of the quota tree",
)
PREEMPTION_NEVER = define("PreemptionPolicyNever", "preemptionPolicy Never: it does not trigger reclaim")
NO_CREATION_TIME = define("NoCreationTime", "no creation time: cannot tell how long it has been pending")
PENDING_GRACE = define(
    "PendingGrace", "pending {age}s < pendingGraceSeconds {grace}", brief="pending < pendingGraceSeconds"
)
WOULD_BORROW = define(
    "WouldBorrow",
    "would make quota {subject} borrow ({detail}): no reclaim above min",
    brief="would make quota {subject} borrow",
)
FITS_IN_FREE_CAPACITY = define(
    "FitsInFreeCapacity", "fits in free capacity: pending for another reason (affinity, taints, fragmentation)"
)
ROOM_BEING_FREED = define(
    "RoomBeingFreed",
    "fits in the room earlier victims still being evicted free ({victims}): nothing more is evicted for it",
    brief="fits in the room earlier victims still being evicted free",
)
# A lender that may not give (the tree's rules).
LENDER_NOT_BORROWING = define(
    "LenderNotBorrowing",
    "quota {subject}{where} is not borrowing {resources} ({usage} used/min)",
    brief="quota {subject} is not borrowing",
)
BRANCH_AT_MIN = define(
    "BranchAtMin",
    "quota {subject} (above {group}) cannot receive more ({usage} used/min): its own branch must give back first",
    brief="quota {subject} cannot receive more",
)
# A victim that may not go.
LOWER_PRIORITY = define(
    "ReclaimPolicyLowerPriority",
    "reclaimPolicy LowerPriority: priority {priority} is not below waiting pod {waiting}'s {waiting_priority}",
    brief="reclaimPolicy LowerPriority",
)
LENDER_FLOOR_STRICT = define(
    "LenderFloorStrict", "lenderFloor Strict: {subject} would drop below its min ({usage})", brief="lenderFloor Strict"
)
LENDER_FLOOR_NET_GAIN = define(
    "LenderFloorNetGain",
    "lenderFloor NetGain: the shortfall it creates is not smaller than the one it fixes ({detail})",
    brief="lenderFloor NetGain",
)


@dataclass(slots=True)
class Starving:
    group: str
    deficit: float
    accepted: list[Pod] = field(default_factory=list)


def find_starving(rnd: Round, pending: Mapping[str, list[Pod]]) -> list[Starving]:
    """Leaf groups with pending pods that fit under their min (first fit), largest relative deficit first."""
    args, tree, ledger, now = rnd.args, rnd.tree, rnd.ledger, rnd.ctx.snapshot.now
    found: list[Starving] = []
    for group in sorted(pending):
        pods = sorted(pending[group], key=_pending_order)
        if not tree.trusted(group):
            skipped = rnd.quota_skipped(group)
            for pod in pods:
                rnd.result.unreclaimable.append(f"{pod.key} (quota {group}): not served: {skipped}")
            continue
        if not tree.is_leaf(group):
            for pod in pods:
                rnd.skip_pending(pod, Refusal(code=NOT_LEAF_QUOTA, subject=group))
            continue
        quota = tree.groups[group]
        used = ledger.used[group]
        accepted_sum: Resources = EMPTY
        starving = Starving(group=group, deficit=_deficit(used, quota.min))
        for pod in pods:
            if pod.preemption_policy == "Never":
                rnd.skip_pending(pod, Refusal(code=PREEMPTION_NEVER))
                continue
            if not pod.requests:
                continue
            age = (now - pod.created).total_seconds() if pod.created is not None else None
            if age is None and args.pending_grace_seconds > 0:
                rnd.skip_pending(pod, Refusal(code=NO_CREATION_TIME))
                continue
            if age is not None and age < args.pending_grace_seconds:
                grace = args.pending_grace_seconds
                rnd.skip_pending(pod, Refusal(code=PENDING_GRACE, facts={"age": int(age), "grace": grace}))
                continue
            over = [r for r in sorted(pod.requests) if used[r] + accepted_sum[r] + pod.requests[r] > quota.min[r]]
            if over:
                detail = ", ".join(
                    f"{r} {format_units(r, used[r] + accepted_sum[r])} + {format_units(r, pod.requests[r])} "
                    f"> min {format_units(r, quota.min[r])}"
                    for r in over
                )
                rnd.skip_pending(pod, Refusal(code=WOULD_BORROW, subject=group, facts={"detail": detail}))
                continue
            accepted_sum = accepted_sum + pod.requests
            starving.accepted.append(pod)
        if starving.accepted:
            found.append(starving)
    return sorted(found, key=lambda s: (-s.deficit, s.group))


def _deficit(used: Resources, minimum: Resources) -> float:
    ratios = [(minimum[r] - used[r]) / minimum[r] for r in minimum if minimum[r] > 0]
    return max(ratios, default=0.0)


@dataclass(slots=True)
class Attempt:
    """Victim search for one pending pod q of starving group S."""

    rnd: Round
    group: str
    pod: Pod
    need: dict[str, int]
    used: dict[str, Resources]  # tentative used per group
    picks: list[Unit] = field(default_factory=list)
    group_refusals: dict[str, Refusal] = field(default_factory=dict)  # lender -> why it may not give
    unit_refusals: dict[str, Refusal] = field(default_factory=dict)  # unit key -> why it may not go

    @property
    def contested(self) -> list[str]:
        return sorted(self.need)

    def remaining(self) -> dict[str, int]:
        freed = total(u.requests for u in self.picks)
        return {r: n - freed[r] for r, n in self.need.items() if n - freed[r] > 0}

    def lender_refusal(self, lender: str, open_resources: list[str]) -> Refusal | None:
        rnd, tree = self.rnd, self.rnd.tree
        refusal = rnd.pacing.lender_refusal(lender) or rnd.pacing.pair_refusal(self.group, lender)
        if refusal is not None:
            return refusal
        cap = rnd.args.max_evictions_per_lender
        if cap is not None and rnd.per_lender[lender] + self._tentative_count(lender) >= cap:
            return max_evictions_per_lender(lender, cap)
        top = tree.lca(self.group, lender)
        for g in tree.below(lender, top):
            quota = tree.groups[g]
            if not any(self.used[g][r] > quota.min[r] for r in open_resources):
                where = "" if g == lender else f" (above {lender})"
                usage = usage_words(self.used[g], quota.min, open_resources)
                facts = {"where": where, "resources": ", ".join(open_resources), "usage": usage}
                return Refusal(code=LENDER_NOT_BORROWING, subject=g, facts=facts)
        for g in tree.below(self.group, top)[1:]:
            quota = tree.groups[g]
            over = [r for r in sorted(self.pod.requests) if self.used[g][r] + self.pod.requests[r] > quota.min[r]]
            if over:
                usage = usage_words(self.used[g], quota.min, over)
                return Refusal(code=BRANCH_AT_MIN, subject=g, facts={"group": self.group, "usage": usage})
        return None

    def _tentative_count(self, lender: str) -> int:
        return sum(len(u.pods) for u in self.picks if u.group == lender)

    def unit_refusal(self, unit: Unit, open_resources: list[str]) -> Refusal | None:
        rnd, tree, args = self.rnd, self.rnd.tree, self.rnd.args
        static = rnd.static_refusal(unit, need_usable_node=True)
        if static is not None:
            return static
        cap = args.max_evictions_per_lender
        if cap is not None and rnd.per_lender[unit.group] + self._tentative_count(unit.group) + len(unit.pods) > cap:
            return max_evictions_per_lender(unit.group, cap, pods=len(unit.pods))
        if args.reclaim_policy == "LowerPriority" and unit.priority >= (self.pod.priority or 0):
            facts: dict[str, Fact] = {
                "priority": unit.priority,
                "waiting": self.pod.key,
                "waiting_priority": self.pod.priority or 0,
            }
            return Refusal(code=LOWER_PRIORITY, facts=facts)
        trial = rnd.round_budget.fork()
        for pick in self.picks:
            take(trial, pick)
        refusal = budget_refusal(trial, unit)
        if refusal is not None:
            return refusal
        top = tree.lca(self.group, unit.group)
        path = tree.below(unit.group, top)
        contested = self.contested
        if args.lender_floor == "Strict":
            for g in path:
                quota = tree.groups[g]
                low = [
                    r for r in contested if unit.requests[r] > 0 and self.used[g][r] - unit.requests[r] < quota.min[r]
                ]
                if low:
                    after = self.used[g] - unit.requests
                    usage = usage_words(after, quota.min, low)
                    return Refusal(code=LENDER_FLOOR_STRICT, subject=g, facts={"usage": usage})
        elif args.lender_floor == "NetGain":
            created = self._shortfall_created(unit)
            worse = [r for r in contested if created[r] >= self.pod.requests[r]]
            if worse:
                detail = ", ".join(
                    f"{r} {format_units(r, created[r])} ≥ {format_units(r, self.pod.requests[r])}" for r in worse
                )
                return Refusal(code=LENDER_FLOOR_NET_GAIN, facts={"detail": detail})
        return None

    def _shortfall_created(self, unit: Unit) -> Resources:
        """Σ over lender leaves of how far below min they end, beyond where they started, with this unit."""
        tree, start = self.rnd.tree, self.rnd.ledger.used
        removed: dict[str, Resources] = {}
        for u in [*self.picks, unit]:
            removed[u.group] = removed.get(u.group, EMPTY) + u.requests
        out: dict[str, int] = {}
        for g, gone in removed.items():
            quota = tree.groups[g]
            for r in self.contested:
                before = max(0, quota.min[r] - start[g][r])
                after = max(0, quota.min[r] - (start[g][r] - gone[r]))
                out[r] = out.get(r, 0) + max(0, after - before)
        return Resources(out)

    def order_key(self, lender: str, open_resources: list[str]) -> tuple[int, float, str]:
        tree = self.rnd.tree
        top = tree.lca(self.group, lender)
        depth = -1 if top is None else tree.depth(top)
        rank = depth if self.rnd.args.hierarchy_order == "TopDown" else -depth
        quota = tree.groups[lender]
        # Overage relative to the lender's guarantee (its weight); a lender with no min on r is
        # weighed per unit, which puts pure borrowers first.
        overage = max(
            ((self.used[lender][r] - quota.min[r]) / max(quota.min[r], 1) for r in open_resources), default=0.0
        )
        return (rank, -overage, lender)

    def pick(self, unit: Unit) -> None:
        self.picks.append(unit)
        for g in [unit.group, *self.rnd.tree.ancestors(unit.group)]:
            self.used[g] = self.used[g] - unit.requests

    def search(self) -> bool:
        rnd = self.rnd
        lenders = [g for g in rnd.units.groups() if g != self.group and rnd.tree.trusted(g) and rnd.tree.is_leaf(g)]
        cursors = dict.fromkeys(lenders, 0)
        while True:
            left = self.remaining()
            if not left:
                return True
            open_resources = sorted(left)
            options = []
            for lender in lenders:
                # A lender's units are built only when this cannot be told from its pods' sums.
                if not rnd.units.any_requests(lender, open_resources, start=cursors[lender]):
                    continue
                refusal = self.lender_refusal(lender, open_resources)
                if refusal is not None:
                    self.group_refusals[lender] = refusal
                    continue
                self.group_refusals.pop(lender, None)
                options.append((self.order_key(lender, open_resources), lender))
            chosen = None
            for _, lender in sorted(options):
                units = rnd.units.of(lender)
                while cursors[lender] < len(units):
                    unit = units[cursors[lender]]
                    cursors[lender] += 1
                    if not unit.requests_any(open_resources):
                        continue
                    refusal = self.unit_refusal(unit, open_resources)
                    if refusal is None:
                        chosen = unit
                        break
                    self.unit_refusals[unit.key] = refusal
                    rnd.skip(unit, refusal)
                if chosen is not None:
                    break
            if chosen is None:
                return False
            self.pick(chosen)

    def fill_back(self) -> None:
        """Drop picks that turn out unnecessary, walking back from the last one."""
        for unit in list(reversed(self.picks)):
            rest = [u for u in self.picks if u is not unit]
            freed = total(u.requests for u in rest)
            if all(freed[r] >= n for r, n in self.need.items()):
                self.picks = rest


def serve(rnd: Round, group: str, pod: Pod) -> None:
    """Find, check and commit the victims that let `pod` run under its group's min."""
    ledger = rnd.ledger
    free = ledger.free()
    need = {r: v - free[r] for r, v in pod.requests.items() if v > free[r]}
    if not need:
        # Room exists, or is being freed by earlier victims: hold it for the pod. Without in-flight
        # victims it waits for another reason (affinity, fragmentation).
        ledger.admit(group, pod.requests)
        room = rnd.in_flight.room
        if any(v > free[r] - room[r] for r, v in pod.requests.items()):
            keys = rnd.in_flight.victims
            named = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
            rnd.skip_pending(pod, Refusal(code=ROOM_BEING_FREED, facts={"victims": named}))
        else:
            rnd.skip_pending(pod, Refusal(code=FITS_IN_FREE_CAPACITY))
        return
    quota = rnd.tree.groups[group]
    attempt = Attempt(rnd=rnd, group=group, pod=pod, need=need, used=dict(ledger.used))
    contested = attempt.contested
    wanted = f"needs {describe(need)} beyond free capacity"
    if not attempt.search():
        rnd.result.unreclaimable.append(_unreclaimable(attempt, wanted))
        return
    attempt.fill_back()
    count = sum(len(u.pods) for u in attempt.picks)
    cap = rnd.args.max_evictions_per_round
    if rnd.evicted + count > cap:
        rnd.stopped = max_evictions_per_round(cap)
        rnd.result.unreclaimable.append(
            f"{pod.key} (quota {group}): deferred: its {count} victim(s) would exceed maxEvictionsPerRound {cap} "
            f"({rnd.evicted} already planned); a victim set is never committed in part"
        )
        return
    used_before = ledger.used[group]
    reasons = []
    # The cluster as the round found it, so every job of one round says the same of it; what this
    # round already planned for the group, when anything, follows in brackets.
    found = rnd.start_used
    planned = "" if used_before == found[group] else f" ({usage_words(used_before, quota.min, contested)} with "
    planned += "this round's earlier waiting pods)" if planned else ""
    for unit in attempt.picks:
        lender = rnd.tree.groups[unit.group]
        reasons.append(
            (
                unit,
                f"quota {group} below min {usage_words(found[group], quota.min, contested)}{planned}, waiting pod "
                f"{pod.key}; lender {unit.group} uses {usage_words(found[unit.group], lender.min, contested)} "
                "(used/min)",
            )
        )
    victims: list[str] = []
    for unit, reason in reasons:
        victims += rnd.commit([unit], reason, PodKey.of(pod))
    ledger.admit(group, pod.requests)
    if not rnd.args.dry_run:
        rnd.pacing.record(group, pod.key, victims, sorted({u.group for u in attempt.picks}), used_before)


def _unreclaimable(attempt: Attempt, wanted: str) -> str:
    freed = total(u.requests for u in attempt.picks)
    covered = describe(freed, attempt.contested)
    kinds: dict[str, list[str]] = {kind: [] for kind in _KIND_ORDER}
    for key, why in sorted(attempt.unit_refusals.items()):
        kinds[_KINDS.get(why.code, "policy")].append(f"{key}: {why}")
    for lender, why in sorted(attempt.group_refusals.items()):
        kinds[_KINDS.get(why.code, "limits")].append(f"{lender}: {why}")
    blocked = "; ".join(f"{kind} — {' | '.join(items[:3])}" for kind, items in kinds.items() if items)
    if not blocked:
        blocked = "no other group borrows the contested resources"
    return (
        f"{attempt.pod.key} (quota {attempt.group}) {wanted}; eligible victims would free only {covered}; "
        f"nothing evicted for it. Why: {blocked}"
    )


# How the unreclaimable summary groups refusals, in its order. A victim's refusal of no other kind
# is "policy" (eligibility, opt-outs, reclaimPolicy); a lender's is "limits".
_KIND_ORDER = ("lender granularity", "PDB", "limits", "policy", "tree")
_KINDS: Mapping[str, str] = {
    LENDER_FLOOR_STRICT: "lender granularity",
    LENDER_FLOOR_NET_GAIN: "lender granularity",
    **dict.fromkeys((MULTIPLE_PDBS, PDB_NOT_OBSERVED, PDB_EXHAUSTED), "PDB"),
    **dict.fromkeys(
        (
            MAX_EVICTIONS_PER_CYCLE,
            MAX_EVICTIONS_PER_HOUR,
            MAX_EVICTIONS_PER_NODE,
            MAX_EVICTIONS_PER_NAMESPACE,
            WORKLOAD_COOLDOWN,
            WORKLOAD_RATE_LIMITED,
            MAX_MIGRATING_PER_WORKLOAD,
            MAX_UNAVAILABLE_PER_WORKLOAD,
            MAX_EVICTIONS_PER_LENDER,
            LENDER_COOLDOWN,
            RECLAIM_BACKOFF,
            PREVIOUS_ROUND_UNJUDGED,
        ),
        "limits",
    ),
    LENDER_NOT_BORROWING: "tree",
    BRANCH_AT_MIN: "tree",
}


def hold_for_unjudged(rnd: Round, starving: Starving, refusal: Refusal) -> None:
    """No round for a group whose previous one is not judged: its waiting pods take (first fit) the
    room its earlier victims are freeing, so no other group plans on that room, and nothing more."""
    room = rnd.pacing.held.get(starving.group, EMPTY)
    for pod in starving.accepted:
        if all(v <= room[r] for r, v in pod.requests.items()):
            room = room - pod.requests
            rnd.ledger.admit(starving.group, pod.requests)
        rnd.skip_pending(pod, refusal)


def reclaim_guarantees(rnd: Round) -> None:
    starving_groups = find_starving(rnd, rnd.pending)
    ready = []
    # Groups waiting for the judgement of their previous round first, so the room their victims
    # are freeing is theirs.
    for starving in starving_groups:
        unjudged = rnd.pacing.unjudged(starving.group)
        if unjudged is None:
            ready.append(starving)
        else:
            hold_for_unjudged(rnd, starving, unjudged)
    for starving in ready:
        for pod in starving.accepted:
            if rnd.stopped is not None:
                rnd.result.unreclaimable.append(f"{pod.key} (quota {starving.group}): deferred: {rnd.stopped}")
                continue
            serve(rnd, starving.group, pod)
