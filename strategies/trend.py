"""How fast each node's usage is rising, from the pods' usage one cycle to the next (LowNodeLoad
`lookAhead`).

A node's rise is the sum over its pods of each pod's rise, and a pod's rise counts only while it
rose over both of the last two cycles (the smaller of the two steps): a single burst is not a trend,
and bursty pods are what LowNodeLoad otherwise moves too often. Only pods that stayed on their node
count, so a pod moved in (or a replacement started) is not read as the node's load rising. The
readings are kept in the strategy's state, so the rise is known from the third cycle of a controller
on; `plan` on a saved snapshot has no previous cycle and sees none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from descheduler.scheduling.table import FloatArray, pod_rows
from descheduler.strategy import PlanContext

STATE_KEY = "trend"


@dataclass(frozen=True, slots=True)
class Reading:
    """One cycle's pod usage, kept for the next cycle."""

    at: float  # the snapshot's time, in seconds
    resources: tuple[str, ...]  # the table's columns
    index: Mapping[str, int]  # pod key -> row
    node: npt.NDArray[np.object_]  # per row: the pod's node ("" when not counted)
    usage: FloatArray  # per row and column
    step: FloatArray  # per row and column: the rise since the reading before (0 when not known)
    steps_known: bool  # whether there was a reading before


@dataclass(frozen=True, slots=True)
class Rise:
    per_node: FloatArray  # per table row and column, in units, over the horizon
    known: bool  # False until two earlier readings exist: no rise can be told yet


def node_rise(ctx: PlanContext, horizon_seconds: float, state: dict[str, Any]) -> Rise:
    """Per table row and column: how much the node's usage will rise over `horizon_seconds` at the rate
    its pods rose (see the module docstring); zeros without two earlier readings. Stores this cycle's
    reading in `state`."""
    table = ctx.table
    rise: FloatArray = np.zeros((table.size, len(table.resources)), dtype=np.float64)
    matrix = table.pods
    if horizon_seconds <= 0 or matrix is None:
        return Rise(rise, known=False)
    rows = pod_rows(ctx.snapshot)
    at = ctx.snapshot.now.timestamp()
    usage = matrix.usage.astype(np.float64)
    counted = rows.counted & matrix.has_metric
    names = np.array([*table.names, ""], dtype=object)  # node row -1 (not bound here) reads ""
    node = np.where(counted, names[rows.node], "")
    step = np.zeros_like(usage)
    previous = ctx.state.get(STATE_KEY)
    if not isinstance(previous, Reading) or previous.resources != tuple(table.resources) or at <= previous.at:
        previous = None  # none, or one this reading cannot follow on from
    if previous is not None:
        before = np.fromiter((previous.index.get(key, -1) for key in rows.keys), dtype=np.int64, count=rows.size)
        stayed = counted & (before >= 0)
        stayed[stayed] = previous.node[before[stayed]] == node[stayed]
        was = before[stayed]
        step[stayed] = usage[stayed] - previous.usage[was]
        now_step, last_step = step[stayed], previous.step[was]
        both = np.where((now_step > 0) & (last_step > 0), np.minimum(now_step, last_step), 0.0)
        node_rows = rows.node[stayed]
        for col in range(len(table.resources)):
            rise[:, col] = np.bincount(node_rows, weights=both[:, col], minlength=table.size)[: table.size]
        rise *= horizon_seconds / (at - previous.at)
    state[STATE_KEY] = Reading(at, tuple(table.resources), rows.index, node, usage, step, previous is not None)
    return Rise(rise, known=previous is not None and previous.steps_known)
