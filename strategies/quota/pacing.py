"""Pacing across rounds: lender cooldown, (starving, lender) backoff, and the state that carries them.

Both rules refuse a lender with a `Refusal` whose code is defined here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from descheduler import timestamps
from descheduler.model import Pod
from descheduler.policy import QuotaReclaimArgs
from descheduler.refusal import Refusal, define
from descheduler.snapshot import Snapshot
from strategies.quota.accounting import Ledger, is_pending

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


@dataclass(slots=True)
class Pacing:
    now: datetime
    args: QuotaReclaimArgs
    last_eviction: dict[str, datetime] = field(default_factory=dict)  # lender -> last planned victims
    backoff: dict[str, datetime] = field(default_factory=dict)  # "starving/lender" -> retry after
    reclaims: dict[str, dict[str, Any]] = field(default_factory=dict)  # this round's reclaims, per group
    carried: dict[str, dict[str, Any]] = field(default_factory=dict)  # earlier reclaims still terminating
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, state: Mapping[str, Any], now: datetime, args: QuotaReclaimArgs) -> Pacing:
        pacing = cls(now=now, args=args)
        cooldown = timedelta(seconds=args.lender_cooldown_seconds)
        pacing.last_eviction = {k: v for k, v in _times(state.get("lenderLastEviction")).items() if now - v < cooldown}
        pacing.backoff = {k: v for k, v in _times(state.get("backoff")).items() if v > now}
        raw = state.get("reclaims")
        if isinstance(raw, Mapping):
            pacing.carried = {str(k): dict(v) for k, v in raw.items() if isinstance(v, Mapping)}
        return pacing

    def check_progress(self, snapshot: Snapshot, ledger: Ledger) -> None:
        """Back off (starving, lender) pairs whose last reclaim freed capacity the group did not get.

        That happens when the cluster's scheduler is not quota-aware and the lender's replacement
        pods went back into the freed slot.
        """
        earlier, self.carried = self.carried, {}
        if not earlier:
            return
        pods = _pods_named(snapshot, earlier.values())
        for group, record in sorted(earlier.items()):
            victims = [str(v) for v in record.get("victims", [])]
            if any(v in pods and not pods[v].terminal for v in victims):
                self.carried[group] = record  # victims still terminating: judge next round
                continue
            if group not in ledger.used:
                continue
            waiting = [str(p) for p in record.get("pods", []) if str(p) in pods and is_pending(pods[str(p)])]
            before = record.get("used", {})
            used = ledger.used[group]
            gained = isinstance(before, Mapping) and any(used[r] > int(v) for r, v in before.items())
            if not waiting or gained:
                continue
            until = self.now + timedelta(seconds=self.args.backoff_seconds)
            for lender in sorted({str(x) for x in record.get("lenders", [])}):
                self.backoff[f"{group}/{lender}"] = until
                self.warnings.append(
                    f"QuotaReclaim: reclaim for quota {group} from {lender} made no progress "
                    f"({', '.join(waiting)} still pending, {group} uses no more than before; the replacement "
                    f"probably took the freed capacity — is the scheduler quota-aware?); backing off "
                    f"{self.args.backoff_seconds}s"
                )

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
        if self.args.lender_cooldown_seconds > 0:
            for lender in lenders:
                self.last_eviction[lender] = self.now
        entry = self.reclaims.setdefault(group, {"pods": [], "victims": [], "lenders": [], "used": dict(used)})
        entry["pods"].append(pod)
        entry["victims"].extend(victims)
        entry["lenders"] = sorted({*entry["lenders"], *lenders})

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.last_eviction:
            out["lenderLastEviction"] = {k: timestamps.format_time(v) for k, v in sorted(self.last_eviction.items())}
        if self.backoff:
            out["backoff"] = {k: timestamps.format_time(v) for k, v in sorted(self.backoff.items())}
        reclaims = {**self.carried, **self.reclaims}
        if reclaims:
            out["reclaims"] = dict(sorted(reclaims.items()))
        return out
