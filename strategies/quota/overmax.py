"""Over-max revocation: trim a group that stayed above its max for overMaxDelaySeconds (quotareclaim.md §2–3)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from descheduler.model import ANNOTATION_OVER_MAX_SINCE
from descheduler.resources import Resources
from descheduler.timestamps import format_time
from strategies.quota.pacing import parse_time
from strategies.quota.round import (
    Round,
    budget_refusal,
    max_evictions_per_lender,
    max_evictions_per_round,
    take,
)
from strategies.quota.tree import usage_words
from strategies.quota.units import Unit


def _over(used: Resources, maximum: Resources | None) -> list[str]:
    if maximum is None:
        return []
    return [r for r in sorted(maximum) if used[r] > maximum[r]]


def revoke_over_max(rnd: Round, previous: Mapping[str, Any]) -> dict[str, str]:
    """Plan the trims; return the over-max episode starts to keep (group -> RFC 3339 time)."""
    tree, ledger, args = rnd.tree, rnd.ledger, rnd.args
    now = rnd.ctx.snapshot.now
    remembered = previous if isinstance(previous, Mapping) else {}
    episodes: dict[str, str] = {}
    delay = timedelta(seconds=args.over_max_delay_seconds)
    for name in sorted(tree.groups):
        group = tree.groups[name]
        if not tree.trusted(name):
            continue
        over = _over(ledger.used[name], group.max)
        if not over:
            continue
        annotated = group.quota.annotations.get(ANNOTATION_OVER_MAX_SINCE)
        since = parse_time(annotated) or parse_time(remembered.get(name)) or now
        if annotated and parse_time(annotated) is None:
            rnd.result.warnings.append(
                f"QuotaReclaim: quota {name} annotation {ANNOTATION_OVER_MAX_SINCE}={annotated!r} is not an "
                "RFC 3339 time; ignoring it"
            )
        since = min(since, now)
        episodes[name] = format_time(since)
        if now - since < delay:
            continue
        _trim(rnd, name, over, since, now)
    return episodes


def _trim(rnd: Round, name: str, over: list[str], since: datetime, now: datetime) -> None:
    tree, ledger, args = rnd.tree, rnd.ledger, rnd.args
    maximum = tree.groups[name].max
    assert maximum is not None
    members = set(tree.subtree(name))
    candidates = sorted(
        (u for g in sorted(members) for u in rnd.units.of(g) if u.requests_any(over)),
        key=Unit.victim_order,
    )
    used = ledger.used[name]
    removed: list[Unit] = []
    trial_used = used
    trial = rnd.round_budget.fork()
    per_lender = dict(rnd.per_lender)
    for unit in candidates:
        if not _over(trial_used, maximum):
            break
        if not unit.requests_any(_over(trial_used, maximum)):
            continue
        refusal = rnd.static_refusal(unit, need_usable_node=False) or rnd.pacing.lender_refusal(unit.group)
        cap = args.max_evictions_per_lender
        if refusal is None and cap is not None and per_lender.get(unit.group, 0) + len(unit.pods) > cap:
            refusal = max_evictions_per_lender(unit.group, cap)
        if refusal is None:
            refusal = budget_refusal(trial, unit)
        if refusal is not None:
            rnd.skip(unit, refusal)
            continue
        take(trial, unit)
        per_lender[unit.group] = per_lender.get(unit.group, 0) + len(unit.pods)
        removed.append(unit)
        trial_used = trial_used - unit.requests
    # Put back, most recently removed first, every unit that still fits under max.
    for unit in list(reversed(removed)):
        back = trial_used + unit.requests
        if all(back[r] <= maximum[r] for r in maximum):
            removed.remove(unit)
            trial_used = back
    still = _over(trial_used, maximum)
    age = int((now - since).total_seconds())
    reason = (
        f"quota {name} over max {usage_words(used, maximum, over)} (used/max) since {format_time(since)} "
        f"({age}s ≥ overMaxDelaySeconds {args.over_max_delay_seconds})"
    )
    committed = 0
    for unit in removed:
        if rnd.evicted + len(unit.pods) > args.max_evictions_per_round:
            rnd.stopped = max_evictions_per_round(args.max_evictions_per_round)
            break
        rnd.commit([unit], reason, None)
        committed += 1
    if still or committed < len(removed):
        left = removed[committed:]
        rnd.result.unreclaimable.append(
            f"quota {name} over max {usage_words(used, maximum, over)} (used/max): "
            + (f"eligible pods cannot bring it under max ({', '.join(still)} stays over)" if still else "")
            + ("; " if still and left else "")
            + (f"{len(left)} victim(s) deferred by maxEvictionsPerRound" if left else "")
        )
