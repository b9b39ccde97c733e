"""Pacing across rounds: lender cooldown, (starving, lender) backoff, the judgement of each round,
and the state that carries them (quotareclaim.md §4).

A round's record (per waiting group: its waiting pods, victims, lenders and the group's use) is
judged once none of its victims is still leaving — terminating, or with an active migration job —
or, at the latest, `judgement_wait` after the round. Until then no new round is planned for that
group (its record is never overwritten), so a round never starts before the last one is judged.
The verdict: progress (the group got some of the room: its backoff resets), no progress (every
victim gone, the waiting pods still pending, the group no better off: a `ReclaimStall` for the
controller's Event and metric, and a backoff that doubles per verdict from backoffSeconds up to
`BACKOFF_GROWTH_CAP` times it), or none (the waiting pods were deleted, or some victims were never
evicted: their jobs say why).

The rules refuse a lender or a waiting group with a `Refusal` whose code is defined here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from descheduler import timestamps
from descheduler.model import Pod
from descheduler.plan import QuotaRef, ReclaimStall
from descheduler.policy import QuotaReclaimArgs
from descheduler.refusal import Refusal, define
from descheduler.resources import EMPTY, Resources
from descheduler.snapshot import Snapshot
from strategies.quota.accounting import Ledger, is_pending
from strategies.quota.tree import QuotaTree, usage_words

LENDER_COOLDOWN = define(
    "LenderCooldown",
    "lender cooldown: {subject}'s previous victims were planned {waited}s ago (< lenderCooldownSeconds {cooldown})",
    brief="lender cooldown",
)
RECLAIM_BACKOFF = define(
    "ReclaimBackoff",
    "backoff: an earlier reclaim for {group} from {subject} made no progress; retry after {until}",
    brief="backoff",
)
PREVIOUS_ROUND_UNJUDGED = define(
    "PreviousReclaimUnjudged",
    "the previous reclaim for quota {subject} ({ago}s ago) is not judged yet: {leaving} of its {victims} "
    "victim(s) still leaving; no new round before it is (waits at most {wait}s)",
    brief="the previous reclaim for its quota is not judged yet",
)
# Each consecutive no-progress verdict of a (waiting group, lender) pair doubles its backoff, from
# backoffSeconds up to this many times it (300 s: 300, 600, 1200, 2400, 2400, ...).
BACKOFF_GROWTH_CAP = 8
_LISTED = 5  # pods an Event or warning names before "and N more"


def parse_time(value: Any) -> datetime | None:
    """A recorded time, or None when it is not one with a time zone (the record is then not trusted)."""
    if not isinstance(value, str):
        return None
    try:
        return timestamps.parse_time(value, zone_required=True)
    except ValueError:
        return None


def _times(raw: Any) -> dict[str, datetime]:
    out: dict[str, datetime] = {}
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            parsed = parse_time(value)
            if parsed is not None:
                out[str(key)] = parsed
    return out


def _pods_named(snapshot: Snapshot, records: Iterable[Mapping[str, Any]]) -> dict[str, Pod]:
    """The snapshot's pods that the records name (as victims or waiting pods), by key."""
    keys = {str(k) for record in records for part in ("victims", "pods") for k in record.get(part, [])}
    # A pod's name is what follows one of the key's slashes: compare names before building keys.
    names = {key[i + 1 :] for key in keys for i, c in enumerate(key) if c == "/"}
    found: dict[str, Pod] = {}
    for pod in snapshot.pods:
        if pod.name in names:
            key = pod.key
            if key in keys:
                found[key] = pod
    return found


def _listed(keys: Iterable[str]) -> str:
    keys = list(keys)
    shown = ", ".join(keys[:_LISTED])
    return shown if len(keys) <= _LISTED else f"{shown} and {len(keys) - _LISTED} more"


def backoff_for(base_seconds: int, verdicts: int) -> int:
    """The backoff after `verdicts` consecutive no-progress verdicts: doubling, capped."""
    if verdicts <= 0:
        return 0
    return base_seconds * min(1 << min(verdicts - 1, 16), BACKOFF_GROWTH_CAP)


@dataclass(slots=True)
class Pacing:
    now: datetime
    args: QuotaReclaimArgs
    judgement_wait: timedelta = timedelta(minutes=10)  # the longest a round waits for its victims to leave
    last_eviction: dict[str, datetime] = field(default_factory=dict)  # lender -> last planned victims
    backoff: dict[str, datetime] = field(default_factory=dict)  # "starving/lender" -> retry after
    no_progress: dict[str, int] = field(default_factory=dict)  # "starving/lender" -> consecutive verdicts
    reclaims: dict[str, dict[str, Any]] = field(default_factory=dict)  # this round's reclaims, per group
    carried: dict[str, dict[str, Any]] = field(default_factory=dict)  # earlier reclaims not judged yet
    held: dict[str, Resources] = field(default_factory=dict)  # group -> room its unjudged victims free
    leaving: dict[str, int] = field(default_factory=dict)  # group -> its unjudged victims still leaving
    stalls: list[ReclaimStall] = field(default_factory=list)  # no-progress verdicts of this round
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, state: Mapping[str, Any], now: datetime, args: QuotaReclaimArgs, judgement_wait: timedelta) -> Pacing:
        pacing = cls(now=now, args=args, judgement_wait=judgement_wait)
        cooldown = timedelta(seconds=args.lender_cooldown_seconds)
        pacing.last_eviction = {k: v for k, v in _times(state.get("lenderLastEviction")).items() if now - v < cooldown}
        pacing.backoff = {k: v for k, v in _times(state.get("backoff")).items() if v > now}
        counts = state.get("noProgress")
        if isinstance(counts, Mapping):
            pacing.no_progress = {str(k): v for k, v in counts.items() if isinstance(v, int) and v > 0}
        raw = state.get("reclaims")
        if isinstance(raw, Mapping):
            pacing.carried = {str(k): dict(v) for k, v in raw.items() if isinstance(v, Mapping)}
        return pacing

    def check_progress(self, snapshot: Snapshot, ledger: Ledger, tree: QuotaTree, moving: Set[str]) -> None:
        """Judge the earlier rounds whose victims have all left; keep the others (`carried`).

        A victim is leaving while its pod is terminating or a migration job (`moving`) is still
        active for it. No progress means the freed room went to other pods — possible when the
        cluster's scheduler is not quota-aware and the lender's replacements went back into it.
        """
        earlier, self.carried = self.carried, {}
        if not earlier:
            return
        pods = _pods_named(snapshot, earlier.values())
        for group, record in sorted(earlier.items()):
            victims = [str(v) for v in record.get("victims", [])]
            present = {v: pods[v] for v in victims if v in pods and not pods[v].terminal}
            leaving = [v for v, p in present.items() if p.deleting or v in moving]
            at = parse_time(record.get("at")) or self.now
            if leaving:
                if self.now - at < self.judgement_wait:
                    self.carried[group] = {**record, "at": timestamps.format_time(at)}
                    self.held[group] = sum((present[v].requests for v in leaving), EMPTY)
                    self.leaving[group] = len(leaving)
                    continue
                self.warnings.append(
                    f"QuotaReclaim: {len(leaving)} victim(s) of the reclaim for quota {group} planned at "
                    f"{timestamps.format_time(at)} are still leaving after {int(self.judgement_wait.total_seconds())}s "
                    f"({_listed(leaving)}); no longer waiting to judge it"
                )
                continue
            if group not in ledger.used or group not in tree.groups:
                continue
            lenders = sorted({str(x) for x in record.get("lenders", [])})
            recorded = [str(p) for p in record.get("pods", [])]
            waiting = [p for p in recorded if p in pods and is_pending(pods[p])]
            served = any(p in pods and pods[p].node_name and not pods[p].terminal for p in recorded)
            before = record.get("used", {})
            used = ledger.used[group]
            gained = isinstance(before, Mapping) and any(used[r] > int(v) for r, v in before.items())
            if gained or served:
                for lender in lenders:  # progress: the pair starts from backoffSeconds again
                    self.no_progress.pop(f"{group}/{lender}", None)
                    self.backoff.pop(f"{group}/{lender}", None)
                continue
            if not waiting or present:
                # The waiting pods were deleted (nothing left to do), or some victims were never
                # evicted (their jobs failed or expired and say why): no verdict on the scheduler.
                continue
            self._stall(group, record, lenders, victims, waiting, tree, used)

    def _stall(
        self,
        group: str,
        record: Mapping[str, Any],
        lenders: list[str],
        victims: list[str],
        waiting: list[str],
        tree: QuotaTree,
        used: Resources,
    ) -> None:
        longest = 0
        for lender in lenders:
            pair = f"{group}/{lender}"
            self.no_progress[pair] = self.no_progress.get(pair, 0) + 1
            seconds = backoff_for(self.args.backoff_seconds, self.no_progress[pair])
            longest = max(longest, seconds)
            if seconds > 0:
                self.backoff[pair] = self.now + timedelta(seconds=seconds)
        quota = tree.groups[group].quota
        before = record.get("used", {})
        resources = sorted(before) if isinstance(before, Mapping) and before else sorted(quota.min)
        usage = usage_words(used, quota.min, resources)
        cap = self.args.backoff_seconds * BACKOFF_GROWTH_CAP
        message = (
            f"reclaim for quota {group} from {', '.join(lenders)} made no progress: {len(victims)} pod(s) evicted "
            f"({_listed(victims)}) and gone, {_listed(waiting)} still pending, {group} uses no more than before "
            f"({usage} used/min); the freed room went to other pods — is the scheduler quota-aware? "
            f"Backing off {longest}s before reclaiming for {group} from {', '.join(lenders)} again "
            f"(doubles per round without progress, up to {cap}s)"
        )
        self.warnings.append(f"QuotaReclaim: {message}")
        self.stalls.append(
            ReclaimStall(
                quota=QuotaRef(quota.api_group, quota.namespace, quota.name),
                group=group,
                lenders=tuple(lenders),
                evicted=tuple(victims),
                waiting=tuple(waiting),
                backoff_seconds=longest,
                message=message,
            )
        )

    def forget_settled(self, pending_groups: Set[str]) -> None:
        """A group with no pending pod has nothing left to reclaim for: its pairs' counts restart."""
        self.no_progress = {k: v for k, v in self.no_progress.items() if k.split("/", 1)[0] in pending_groups}

    def unjudged(self, group: str) -> Refusal | None:
        """The group's previous round is not judged yet: no new round for it."""
        record = self.carried.get(group)
        if record is None:
            return None
        at = parse_time(record.get("at")) or self.now
        victims = [str(v) for v in record.get("victims", [])]
        facts = {
            "ago": int((self.now - at).total_seconds()),
            "leaving": self.leaving.get(group, 0),
            "victims": len(victims),
            "wait": int(self.judgement_wait.total_seconds()),
        }
        return Refusal(code=PREVIOUS_ROUND_UNJUDGED, subject=group, facts=facts)

    def lender_refusal(self, lender: str) -> Refusal | None:
        """The lender's previous victims were planned within lenderCooldownSeconds."""
        last = self.last_eviction.get(lender)
        cooldown = self.args.lender_cooldown_seconds
        if last is None or cooldown == 0:
            return None
        waited = int((self.now - last).total_seconds())
        if waited >= cooldown:
            return None
        return Refusal(code=LENDER_COOLDOWN, subject=lender, facts={"waited": waited, "cooldown": cooldown})

    def pair_refusal(self, group: str, lender: str) -> Refusal | None:
        """An earlier reclaim for `group` from `lender` made no progress: back off until its time."""
        until = self.backoff.get(f"{group}/{lender}")
        if until is None:
            return None
        return Refusal(
            code=RECLAIM_BACKOFF, subject=lender, facts={"group": group, "until": timestamps.format_time(until)}
        )

    def record(self, group: str, pod: str, victims: list[str], lenders: list[str], used: Mapping[str, int]) -> None:
        if group in self.carried:
            # Unreachable by construction (an unjudged group gets no round); never overwrite its record.
            raise ValueError(f"QuotaReclaim: a round for quota {group} while its previous one is not judged")
        if self.args.lender_cooldown_seconds > 0:
            for lender in lenders:
                self.last_eviction[lender] = self.now
        entry = self.reclaims.setdefault(
            group,
            {"at": timestamps.format_time(self.now), "pods": [], "victims": [], "lenders": [], "used": dict(used)},
        )
        entry["pods"].append(pod)
        entry["victims"].extend(victims)
        entry["lenders"] = sorted({*entry["lenders"], *lenders})

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.last_eviction:
            out["lenderLastEviction"] = {k: timestamps.format_time(v) for k, v in sorted(self.last_eviction.items())}
        if self.backoff:
            out["backoff"] = {k: timestamps.format_time(v) for k, v in sorted(self.backoff.items())}
        if self.no_progress:
            out["noProgress"] = dict(sorted(self.no_progress.items()))
        reclaims = {**self.reclaims, **self.carried}  # an unjudged record always wins
        if reclaims:
            out["reclaims"] = dict(sorted(reclaims.items()))
        return out
