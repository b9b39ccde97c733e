"""How fast each node's usage is rising (LowNodeLoad `lookAhead`), told one of two ways
(`lookAheadBasis`):

- cluster: every node rises in proportion to its pods' usage, at the rate the whole cluster's pod usage
  rose over each of the last two spans of `lookAhead` (the slower of the two, and only while both were
  rises). A ramp the cluster shares, as the day's morning rise, is met before nodes cross high; one
  pod's burst barely moves the cluster's total, so bursty pods are not extrapolated. The spans are
  read from the totals of earlier cycles (the latest at least 90% of a span before), so the trend does
  not depend on how often cycles run.
- pods: a node's rise is the sum over its pods of each pod's rise, and a pod's rise counts only while it
  rose over both of the last two cycles (the smaller of the two steps). Only pods that stayed on their
  node count, so a pod moved in (or a replacement started) is not read as the node's load rising.

The readings are kept in the strategy's state, so the rise is known once two spans (cluster) or three
cycles (pods) have been read; `plan` on a saved snapshot has no earlier reading and sees none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from descheduler.policy.lownodeload import LookAheadBasis
from descheduler.scheduling.table import FloatArray, IntArray, pod_rows
from descheduler.strategy import PlanContext

STATE_KEY = "trend"
SPAN_SLACK = 0.9  # a span's start is the latest reading at least this share of a span before its end


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
    totals: tuple[tuple[float, FloatArray], ...]  # (at, the cluster's pod usage per column), oldest first


@dataclass(frozen=True, slots=True)
class Rise:
    per_node: FloatArray  # per table row and column, in units, over the horizon
    known: bool  # False until enough earlier readings exist: no rise can be told yet


def node_rise(
    ctx: PlanContext, horizon_seconds: float, state: dict[str, Any], basis: LookAheadBasis = "cluster"
) -> Rise:
    """Per table row and column: how much the node's usage will rise over `horizon_seconds`, by `basis`
    (see the module docstring); zeros until it can be told. Stores this cycle's reading in `state`."""
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
    totals = (*(previous.totals if previous else ()), (at, usage[counted].sum(axis=0)))
    # Keep what the next cycles' two spans can reach back to: everything newer than two spans, and the
    # latest reading before that.
    oldest = max((i for i, (t, _) in enumerate(totals) if t <= at - 2 * horizon_seconds), default=0)
    totals = totals[oldest:]
    counts: tuple[IntArray, FloatArray] | None = None  # per pod that counts: its node row, its rise
    if previous is not None:
        before = np.fromiter(map(previous.index.get, rows.keys, repeat(-1)), dtype=np.int64, count=rows.size)
        stayed = counted & (before >= 0)
        stayed[stayed] = previous.node[before[stayed]] == node[stayed]
        was = before[stayed]
        step[stayed] = usage[stayed] - previous.usage[was]
        if basis == "pods" and previous.steps_known:
            now_step, last_step = step[stayed], previous.step[was]
            both = np.where((now_step > 0) & (last_step > 0), np.minimum(now_step, last_step), 0.0)
            counts = rows.node[stayed], both * (horizon_seconds / (at - previous.at))
    if basis == "cluster" and (rate := _cluster_rate(totals, horizon_seconds)) is not None:
        counts = rows.node[counted], usage[counted] * rate * horizon_seconds
    if counts is not None:
        on_node, pod_rise = counts
        for col in range(len(table.resources)):
            rise[:, col] = np.bincount(on_node, weights=pod_rise[:, col], minlength=table.size)[: table.size]
    state[STATE_KEY] = Reading(at, tuple(table.resources), rows.index, node, usage, step, previous is not None, totals)
    return Rise(rise, known=counts is not None)


def _cluster_rate(totals: tuple[tuple[float, FloatArray], ...], span: float) -> FloatArray | None:
    """Per column, the slower of the cluster's relative rise rates (per second) over the last two spans,
    0 where either was not a rise; None until the readings reach back two spans."""

    def start(end: float) -> tuple[float, FloatArray] | None:
        earlier = [(t, total) for t, total in totals if t <= end - SPAN_SLACK * span]
        return earlier[-1] if earlier else None

    end = totals[-1]
    middle = start(end[0])
    first = start(middle[0]) if middle is not None else None
    if middle is None or first is None:
        return None
    rates = []
    for (t0, v0), (t1, v1) in ((first, middle), (middle, end)):
        rates.append(np.divide(v1 - v0, v0 * (t1 - t0), out=np.zeros_like(v0), where=v0 > 0))
    slower: FloatArray = np.where((rates[0] > 0) & (rates[1] > 0), np.minimum(rates[0], rates[1]), 0.0)
    return slower
