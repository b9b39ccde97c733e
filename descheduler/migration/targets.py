"""Where to hold room for a moved pod: the planned target re-checked with the scheduling core on
fresh data, else the best feasible node (migration.md §3 step 2)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Set
from dataclasses import dataclass

import msgspec
import numpy as np

from descheduler.model import MigrationJob, Pod, Reservation
from descheduler.policy import SchedulingArgs
from descheduler.scheduling import ClusterView, best_node, build_table, refusal
from descheduler.scheduling.predicates import over_thresholds
from descheduler.scheduling.table import METRIC_NONE, shift_load
from descheduler.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Target:
    """A node to reserve on, or why there is none (`cooling`: only cooldown stands in the way)."""

    node: str | None
    why: str = ""
    cooling: bool = False


class Placement:
    """One node table for a reconcile pass; each room reserved during the pass is held in it at once,
    so two jobs of the same pass never count on the same free room."""

    def __init__(
        self,
        snapshot: Snapshot,
        args: SchedulingArgs,
        *,
        reservations: Iterable[Reservation],
        placing: Set[str],
    ) -> None:
        """`reservations`: the live ones (read this pass, fresher than a cache); `placing`: jobs
        still looking for a target, whose planned moves must not count as if already made."""
        jobs: tuple[MigrationJob, ...] = tuple(j for j in snapshot.jobs if j.name not in placing)
        fresh = dataclasses.replace(snapshot, jobs=jobs, reservations=tuple(reservations))
        self.view = ClusterView(build_table(fresh, args))

    @staticmethod
    def _incoming(pod: Pod) -> Pod:
        # Reservations match the pod's controller, so a sibling's room would look like this pod's
        # own; the moved pod is checked as a stranger to every reservation.
        return msgspec.structs.replace(pod, owner=None)

    def choose(self, pod: Pod, planned: str, cooling: Set[str]) -> Target:
        """The planned node when it still fits, else the best feasible node; never the pod's own."""
        table = self.view.table
        incoming = self._incoming(pod)
        excluded = {pod.node_name, *cooling}
        planned_why = ""
        if planned:
            if planned == pod.node_name:
                planned_why = f"planned target {planned} is the pod's own node"
            elif planned not in table.index:
                planned_why = f"planned target {planned} is not a known node"
            elif planned in cooling:
                planned_why = f"planned target {planned} was a source within the cooldown"
            else:
                reason = refusal(incoming, planned, self.view)
                if reason is None:
                    return Target(planned)
                planned_why = f"planned target {planned}: {reason}"
        choice = best_node(incoming, self.view, exclude=excluded)
        if choice.node is not None:
            return Target(choice.node, planned_why)
        summary = choice.summary()
        why = f"{planned_why}; {summary}" if planned_why else summary
        if cooling - {pod.node_name} and best_node(incoming, self.view, exclude={pod.node_name}).node is not None:
            return Target(None, f"{why}; only nodes that were recently a source fit", cooling=True)
        return Target(None, why)

    def over_thresholds(self, node: str) -> str:
        """Why `node`'s estimated usage is above its load thresholds (scheduling-core.md §3), or ""."""
        table = self.view.table
        row = table.index.get(node)
        if row is None or table.metric[row] == METRIC_NONE:
            return ""
        used, alloc, limit = self.view.estimated[row], table.alloc[row], table.thresholds[row]
        over = np.flatnonzero(over_thresholds(used, alloc, limit))
        if not over.size:
            return ""
        col = int(over[0])
        return f"node {node} {table.resources[col]} {used[col] * 100 / alloc[col]:.0f}% > {limit[col]:g}%"

    def hold(self, pod: Pod, node: str) -> None:
        """Count the pod's requests and expected load on `node` for the rest of the pass, and the pod
        itself there for the rules that count pods (topology spread, pod affinity, host ports): its
        replacement will run there."""
        table = self.view.table
        row = table.index.get(node)
        if row is not None:
            shift_load(self.view, row, table.load_of(pod), 1)
            self.view.location[pod.key] = node
