"""The Strategy protocol: a pure function from a cycle's view of the cluster to moves and reasons."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from descheduler.budget import EvictionBudget
from descheduler.model import Pod
from descheduler.plan import Migration, NodeReport, ReclaimStall, Skip
from descheduler.policy import Policy
from descheduler.refusal import Refusal, define
from descheduler.scheduling import ClusterView, NodeTable
from descheduler.scheduling.table import BoolArray
from descheduler.snapshot import Snapshot

MIGRATION_IN_PROGRESS = define("MigrationInProgress", "already being moved by a migration job")


@dataclass(slots=True)
class PlanContext:
    """What every strategy of one cycle shares: the snapshot, one view of assumed moves, one budget."""

    snapshot: Snapshot
    policy: Policy
    table: NodeTable
    view: ClusterView
    budget: EvictionBudget
    considered: BoolArray  # nodes the policy's nodeSelector lets the descheduler look at
    moving: frozenset[str]  # pods ("namespace/name") that a migration job is already moving
    targets: BoolArray  # nodes that may receive moved pods (not a source within the migration cooldown)
    state: Mapping[str, Any] = field(default_factory=dict)  # this strategy's state from the last cycle

    def moving_refusal(self, pod: Pod) -> Refusal | None:
        """A pod a migration job is already moving is not planned again (every strategy)."""
        return Refusal(code=MIGRATION_IN_PROGRESS) if pod.key in self.moving else None


@dataclass(slots=True)
class StrategyResult:
    migrations: list[Migration] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    nodes: list[NodeReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unreclaimable: list[str] = field(default_factory=list)
    reclaim_stalls: list[ReclaimStall] = field(default_factory=list)  # QuotaReclaim: rounds without progress
    state: dict[str, Any] = field(default_factory=dict)  # kept by the controller for the next cycle


class Strategy(Protocol):
    """A strategy plugin. It must not do I/O or read the clock: `ctx.snapshot.now` is the time."""

    name: ClassVar[str]
    args_model: ClassVar[type[BaseModel]]

    def plan(self, ctx: PlanContext, args: Any) -> StrategyResult: ...
