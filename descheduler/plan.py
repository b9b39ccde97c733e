"""The Plan: what a cycle would move and why, and what it would not and why not (README §4.3).

A move's `reason` is an explanation in words (the node's load, the quota's shortfall). A skip
carries the `Refusal` that said no: its JSON has the refusal's text as `reason` and its rule as
`code`, so tools group and count skips by code without reading the words.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

import msgspec

from descheduler.model import Pod
from descheduler.refusal import Refusal
from descheduler.resources import EMPTY, Resources
from descheduler.timestamps import format_time

NodeClass = Literal["high", "low", "normal", "excluded"]
Mode = Literal["ReservationFirst", "EvictDirectly", "MakeBeforeBreak"]


class PodKey(msgspec.Struct, frozen=True):
    namespace: str
    name: str

    @classmethod
    def of(cls, pod: Pod) -> PodKey:
        return cls(pod.namespace, pod.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class NodeReport(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    node_class: NodeClass
    reason: str
    pool: str = ""
    strategy: str = ""
    usage: Mapping[str, float] = {}  # ratios 0..1 of allocatable
    low: Mapping[str, float] = {}
    high: Mapping[str, float] = {}
    hot_cycles: int = 0
    hot_cycles_needed: int = 0
    prod_class: NodeClass | None = None


class QuotaRef(msgspec.Struct, frozen=True):
    """An ElasticQuota object: where Events about a reclaim go."""

    api_group: str
    namespace: str
    name: str


class Migration(msgspec.Struct, frozen=True, kw_only=True):
    pod: PodKey
    strategy: str
    source_node: str
    target_node: str | None
    mode: Mode
    reason: str
    usage: Resources = EMPTY
    uid: str = ""
    serves: PodKey | None = None  # QuotaReclaim: the pending pod this victim makes room for
    quota: QuotaRef | None = None  # QuotaReclaim: the victim's (borrowing) ElasticQuota
    # ReservationFirst, once the scheduler side is known (migration/presence.py): Reservation (a
    # reservation-aware scheduler serves the pod), Waits (for one), Steered (no Reservation; the
    # source carries our PreferNoSchedule taint meanwhile) or Unsteered. "" when not known.
    landing: str = ""


class ReclaimStall(msgspec.Struct, frozen=True, kw_only=True):
    """A QuotaReclaim round that made no progress: its victims are gone, its waiting pods still wait.

    The controller writes it as a Warning Event (`QuotaReclaimNoProgress`) on the waiting group's
    ElasticQuota and counts it per lender (descheduler_quota_reclaim_no_progress_total).
    """

    quota: QuotaRef  # the waiting group's ElasticQuota
    group: str
    lenders: tuple[str, ...]
    evicted: tuple[str, ...]  # the round's victims (namespace/name), all gone now
    waiting: tuple[str, ...]  # its waiting pods (namespace/name) still pending
    backoff_seconds: int  # the longest of the lenders' new backoffs
    message: str


class Skip(msgspec.Struct, frozen=True, kw_only=True):
    """A pod a strategy looked at and did not move, and the refusal that kept it."""

    pod: PodKey
    refusal: Refusal
    strategy: str = ""
    node: str = ""

    @property
    def reason(self) -> str:
        return str(self.refusal)

    @property
    def code(self) -> str:
        return self.refusal.code


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    now: datetime
    nodes: tuple[NodeReport, ...] = ()
    migrations: tuple[Migration, ...] = ()
    skipped: tuple[Skip, ...] = ()
    warnings: tuple[str, ...] = ()
    unreclaimable: tuple[str, ...] = ()
    reclaim_stalls: tuple[ReclaimStall, ...] = ()

    def summary(self) -> dict[str, int]:
        classes = [n.node_class for n in self.nodes]
        by_strategy: dict[str, int] = {}
        for m in self.migrations:
            by_strategy[m.strategy] = by_strategy.get(m.strategy, 0) + 1
        return {
            "migrations": len(self.migrations),
            "hotNodes": classes.count("high"),
            "lowNodes": classes.count("low"),
            "normalNodes": classes.count("normal"),
            "excludedNodes": classes.count("excluded"),
            "skipped": len(self.skipped),
            "warnings": len(self.warnings),
            **{f"migrations{name}": count for name, count in sorted(by_strategy.items())},
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of README §4.3 (ratios 0–1, quantities as strings)."""
        return {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Plan",
            "now": format_time(self.now),
            "nodes": [
                {
                    "name": n.name,
                    "class": n.node_class,
                    "reason": n.reason,
                    **({"pool": n.pool} if n.pool else {}),
                    **({"strategy": n.strategy} if n.strategy else {}),
                    "usage": {k: round(v, 4) for k, v in n.usage.items()},
                    "thresholds": {
                        "low": {k: round(v, 4) for k, v in n.low.items()},
                        "high": {k: round(v, 4) for k, v in n.high.items()},
                    },
                    **(
                        {"hotCycles": n.hot_cycles, "hotCyclesNeeded": n.hot_cycles_needed}
                        if n.hot_cycles_needed > 1
                        else {}
                    ),
                    **({"prodClass": n.prod_class} if n.prod_class else {}),
                }
                for n in self.nodes
            ],
            "migrations": [
                {
                    "pod": {"namespace": m.pod.namespace, "name": m.pod.name},
                    "strategy": m.strategy,
                    "sourceNode": m.source_node,
                    "targetNode": m.target_node,
                    "mode": m.mode,
                    "reason": m.reason,
                    "usage": m.usage.to_quantities(),
                    **({"serves": {"namespace": m.serves.namespace, "name": m.serves.name}} if m.serves else {}),
                    **({"landing": m.landing} if m.landing else {}),
                }
                for m in self.migrations
            ],
            "skipped": [
                {
                    "pod": {"namespace": s.pod.namespace, "name": s.pod.name},
                    "reason": s.reason,
                    "code": s.code,
                    **({"strategy": s.strategy} if s.strategy else {}),
                    **({"node": s.node} if s.node else {}),
                }
                for s in self.skipped
            ],
            "warnings": list(self.warnings),
            "unreclaimable": list(self.unreclaimable),
            **(
                {
                    "reclaimStalls": [
                        {
                            "group": r.group,
                            "lenders": list(r.lenders),
                            "evicted": list(r.evicted),
                            "waiting": list(r.waiting),
                            "backoffSeconds": r.backoff_seconds,
                            "message": r.message,
                        }
                        for r in self.reclaim_stalls
                    ]
                }
                if self.reclaim_stalls
                else {}
            ),
            "summary": self.summary(),
        }
