"""Decision quality against the peers, on trace clusters where usage departs from requests, over a
simulated day.

    .venv/bin/python -m benchmarks.quality [--family bitbrains openb --nodes 50 300 --seed 1 --hours 24]
    .venv/bin/python -m benchmarks.run quality          # every family at both sizes, into RESULTS.md
    .venv/bin/python -m benchmarks.quality --family openb --nodes 300 --runs lnuMetrics#3 --save F.json
    .venv/bin/python -m benchmarks.quality --merge benchmarks/quality-runs/openb-300-*.json

Each scenario (benchmarks/scenarios.py: a family of trace clusters at a size) runs once per contender
through `Simulation` (the real cache, planning loop, executor and migration controller against the
simulated API server), from the same start placement, with the same thresholds, caps and interval
(LIMITS, and an evictBurst of EVICT_BURST because the controller passes every BUSY_PERIOD seconds here
while moves are in flight, where the default burst of 1 would let one eviction through per pass, 0.1/s instead of
evictQPS's 10/s, and stretch a cycle's moves over minutes):

- off: our policy in dryRun (nothing moves): the hot-node-minutes without a descheduler;
- ours: LowNodeLoad (load-aware, per-target accounting, ReservationFirst) with our extender beside the
  simulated kube-scheduler;
- upstream LNU, requests and metrics (benchmarks/peers.py): evictions only; the replacement is placed
  by the simulated stock kube-scheduler (descheduler/fakecluster/stock.py), as in a cluster;
- Koordinator LowNodeLoad (benchmarks/peers.py): pooled budget, debounce, its migration limits;
  ReservationFirst, with the load-aware extender standing in for koord-scheduler.

Measured from the outside (ground truth: the simulated kubelet's per-pod usage, read after every
cluster step and held until the next): hot-node-minutes (nodes above the high threshold of cpu 70% or memory 80%, times
minutes), the worst node's p99 usage (per node, the 99th percentile over the day of its usage as a
share of allocatable on the more loaded of cpu and memory; the largest over nodes), evictions,
ping-pong (testing.md: a replacement lands on a node above its high threshold at the next cycle; also a
replacement moved again within FLAP_SECONDS, a move that did not last), failed or aborted moves,
workloads moved more than once (at any time: bursty usage can make a later move right), unready
pod-seconds per move (from the eviction until the replacement is Ready: the time its workload is a
Ready pod short; 0 for a move whose replacement is Ready before the pod goes), and moves ÷ the
hindsight minimum.

Where a contender's hot-node-minutes come from: its hot spells (a node above high from one sample to the
first sample it is not), the minutes of each before the first cycle at or after its start (no cycle
could act on it yet), and those on nodes the contender had moved a pod off or onto before the spell
began. The reaction floor is off's waiting minutes of each node's first spell: a controller that moves
pods off a node only once it reads it above high pays at least these on every node it moved no pod
onto before (until then the node's usage is off's), whatever it does after. Each contender's moves are
also split by their source's state in the off run at that time (move_causes): below high there (hot from
pods moved onto it, or moved ahead of a crossing), above but below again by the next cycle, or still above.

The hindsight minimum is a lower bound on the evictions any controller needs to keep every node ≤ high
at every cycle of the off run: per node, the fewest of its pods whose removal, once and for all, brings
it ≤ high on cpu and memory at every cycle it was above (an integer program: a pod evicted at any time
is gone by every later cycle, so the pods a node lost by a cycle are among those it lost by the end),
summed over nodes. A node is judged on the pods the off run had on it, so it ignores whether targets
have room and pods that arrive elsewhere, and moves ÷ minimum over-states every contender's ratio alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import time
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks.baseline import use_spread_scheduler
from descheduler.controller.cycle import CycleResult
from descheduler.controller.logs import configure_logging
from descheduler.eligibility import eviction_refusal
from descheduler.fakecluster.pods import is_ready
from descheduler.fakecluster.scenario import LoadedScenario, Timing
from descheduler.policy import Policy, parse_policy
from descheduler.quantity import to_units
from descheduler.simulate.record import SimulationRecord, phase
from descheduler.simulate.runner import Simulation, SimulationOptions
from descheduler.snapshot import Snapshot

DAY = 86_400
START = datetime(2026, 1, 15, 0, 0, tzinfo=UTC)  # midnight UTC: the day shapes peak in the morning
HOURS = 48.0  # two simulated days: the first warms whatever a rule learns from history, the second is scored
SCORED_HOURS = 24.0  # the last day of a run is scored (a run of a day or less: all of it)
LOW = {"cpu": 45.0, "memory": 55.0}
HIGH = {"cpu": 70.0, "memory": 80.0}
MEASURED = ("cpu", "memory")
# Each contender's cycle as it ships (benchmarks/README.md cites where each is written): ours' default
# policy `interval: 60s`; upstream's Helm chart, a CronJob on "*/2 * * * *"; koord-descheduler's
# `deschedulingInterval: 10s`. Off plans (nothing moves) every 10 min for the hindsight minimum.
SHIPPED_SECONDS = {"off": 600.0, "ours": 60.0, "lnuRequests": 120.0, "lnuMetrics": 120.0, "koordinator": 10.0}
UNIFORM_SECONDS = 60.0  # the second table: every contender on the same cycle, to tell algorithm from cadence
TIE_SEEDS = (1, 2, 3)  # upstream's victims' tie order (sort.Slice is not stable): one run per seed
# The knob each contender's users turn to trade churn for heat, and the values swept (the curves): ours'
# churn budget, limits.maxEvictionsPerHour (a string: a share of the nodes); Koordinator's
# anomalyCondition.consecutiveAbnormalities (an int; ours has the same knob, measured as a debounce);
# upstream's schedule (seconds).
SWEEP: dict[str, tuple[int | float | str, ...]] = {
    "ours": ("4%", "8%", "16%", "32%"),
    "koordinator": (0, 1, 2, 3, 4, 5),
    "lnuRequests": (60.0, 120.0, 300.0, 600.0, 1800.0),
    "lnuMetrics": (60.0, 120.0, 300.0, 600.0, 1800.0),
}
SHIPPED_KNOB: dict[str, int | str] = {"ours": 1, "koordinator": 5}  # ours ships consecutiveAbnormalities 1
# The metrics pipeline, as each source ships (descheduler/fakecluster/metrics.py cites them): metrics-server
# at --metric-resolution=15s (its chart and manifests), a cpu value the mean over the last 15 s; koordlet's
# NodeMetric every 60 s (reportIntervalSeconds), each value the mean over the last 300 s
# (aggregateDurationSeconds). Ours and upstream read metrics.k8s.io; Koordinator reads its NodeMetric.
METRICS_SERVER_FEED = {"intervalSeconds": 15, "windowSeconds": 15}
NODE_METRIC_FEED = {"intervalSeconds": 60, "windowSeconds": 300}
TICK_SECONDS = 300.0  # the traces' own resolution: every usage series steps every 5 min
# The migration controller's period while no move is in flight (stepping a 300-node cluster every
# minute made a day take hours); ground truth is read at every step and held until the next.
MIGRATION_PERIOD = 300.0
# Idle steps fall on the traces' 5-min grid, so a usage change is read when it happens; the first cycle
# comes at 2.5 min, midway between two changes.
WARMUP_SECONDS = 150.0
GRID_SECONDS = 60.0  # the worst node's p99 reads that step-wise ground truth every minute
BUSY_PERIOD = 10.0  # while a move is in flight (the product's controller steps every 2 s)
NEXT_LOOK_SECONDS = 600.0  # move_causes: whether a source of a move is still hot this much later in off
SIZES = (50, 300)
SWEEP_SIZES = (50,)
# The one-cycle table tells a contender's algorithm from its cadence, which one size shows. At 300
# nodes its runs (upstream's six on a 1-min cycle among them) would cost more than the shipped runs.
UNIFORM_SIZES = (50,)
SMOKE_NODES = 8
MINIMUM_SECONDS = 30.0  # the solver's time for one node's minimum; past it, its bound below
SLOW_CONTENDERS = ("lnuMetrics", "koordinator", "ours")  # the most moves, so the most busy steps: run first
FLAP_SECONDS = 3600.0  # a replacement moved again sooner than this counts as ping-pong
# A replacement Pending longer than this (from its creation, or the eviction if later, until it is bound)
# is stranded (issue 60: the alert's minute).
STRANDED_SECONDS = 60.0
CHARTS = Path(__file__).resolve().parent
CHART_BUCKET_HOURS = 0.5  # the picture: hot nodes averaged per half hour


# The per-cycle cap is a share of the nodes (10 at 50 nodes, 60 at 300): a fixed count that suits 50
# nodes leaves a 300-node cluster's morning ramp, with up to 105 nodes hot at once, mostly unrelieved.
def _limits(per_hour: str | None = None) -> str:
    budget = "" if per_hour is None else f', maxEvictionsPerHour: "{per_hour}"'
    return f'\nevictor: {{minReplicas: 1}}\nlimits: {{maxEvictionsPerCycle: "20%", maxEvictionsPerNode: 2{budget}}}\n'


LIMITS = _limits()
EVICT_BURST = 10


def _flow(values: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in values.items()) + "}"


def ours_policy(
    dry_run: bool = False, extra: str = "", seconds: float = SHIPPED_SECONDS["ours"], per_hour: str | None = None
) -> Policy:
    """Ours' policy: LowNodeLoad with `extra` args lines, on LIMITS (and a maxEvictionsPerHour of `per_hour`)."""
    limits = _limits(per_hour)
    return parse_policy(
        f"""
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {seconds:g}s
dryRun: {"true" if dry_run else "false"}
strategies:
- name: LowNodeLoad
  args:
    lowThresholds: {_flow(LOW)}
    highThresholds: {_flow(HIGH)}
"""
        + extra
        + limits
        + f"migration: {{evictBurst: {EVICT_BURST}}}\n"
    )


LABELS = {
    "off": "descheduler off",
    "ours": "ours (LowNodeLoad)",
    "lnuRequests": "upstream LNU, requests",
    "lnuMetrics": "upstream LNU, metrics",
    "koordinator": "Koordinator LowNodeLoad",
}


SHORT = {"ours": "ours", "lnuRequests": "LNU req.", "lnuMetrics": "LNU metrics", "koordinator": "Koord."}


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run of a contender (`base`, a LABELS key): its cycle, upstream's tie seed, and the value of
    the swept knob (SWEEP; None: the shipped default). Picklable, for the process pool."""

    base: str
    seconds: float
    seed: int | None = None
    knob: int | str | None = None  # consecutiveAbnormalities (int) or, for ours, maxEvictionsPerHour (str)

    @property
    def name(self) -> str:
        """The plain key for a contender as it ships; otherwise what differs (@cycle, ~knob, #seed)."""
        name = self.base
        if self.seconds != SHIPPED_SECONDS[self.base]:
            name += f"@{self.seconds:g}s"
        if self.knob is not None and self.knob != SHIPPED_KNOB.get(self.base):
            name += f"~{self.knob}"
        if self.seed is not None and self.seed != TIE_SEEDS[0]:
            name += f"#{self.seed}"
        return name

    @property
    def group(self) -> str:
        """The name without the tie seed: the runs whose median is reported."""
        return RunSpec(self.base, self.seconds, None, self.knob).name


@dataclass(frozen=True, slots=True)
class Contender:
    key: str
    label: str
    policy: Callable[[], Policy]
    stock: bool  # True: no extender; the simulated stock kube-scheduler alone places replacements
    reset: Callable[[], None] = lambda: None  # clears a baseline's memory between runs
    seconds: float = 600.0  # the cycle
    # The planner's whole memory is its strategy state, so quiet cycles need not run (SimulationOptions).
    skip_quiet: bool = False


def contender(spec: RunSpec, ours_args: str = "") -> Contender:
    """The contender a RunSpec names, its policy at the spec's cycle, seed and knob."""
    from benchmarks import peers

    peers.register_peers()
    seconds, interval = spec.seconds, f"{spec.seconds:g}s"
    label = LABELS[spec.base]
    if spec.base == "off":
        return Contender(spec.name, label, lambda: ours_policy(dry_run=True, seconds=seconds), False, seconds=seconds)
    if spec.base == "ours":
        budget = spec.knob if isinstance(spec.knob, str) else None
        debounce = spec.knob if isinstance(spec.knob, int) else None
        knob = "" if debounce is None else f"anomalyCondition: {{consecutiveAbnormalities: {debounce}}}"
        extra = _indented("\n".join((ours_args, knob)))
        return Contender(
            spec.name, label, lambda: ours_policy(extra=extra, seconds=seconds, per_hour=budget), False, seconds=seconds
        )
    if spec.base in ("lnuRequests", "lnuMetrics"):
        mode: Literal["requests", "metrics"] = "requests" if spec.base == "lnuRequests" else "metrics"
        tie = {} if spec.seed is None else {"tieSeed": str(spec.seed)}
        return Contender(
            spec.name,
            label,
            lambda: peers.upstream_policy(mode, interval, LOW, HIGH, LIMITS, extra_args=tie, evict_burst=EVICT_BURST),
            stock=True,
            reset=peers.reset_peer_state,
            seconds=seconds,
            skip_quiet=True,
        )
    extra_args = {} if spec.knob is None else {"anomalyCondition": f"{{consecutiveAbnormalities: {spec.knob}}}"}
    return Contender(
        spec.name,
        label,
        lambda: peers.koordinator_policy(
            interval, LOW, HIGH, LIMITS, extra_args=extra_args, evict_burst=EVICT_BURST, load_source="nodeMetric"
        ),
        stock=False,
        reset=peers.reset_peer_state,
        seconds=seconds,
        skip_quiet=True,
    )


def shipped(base: str, seed: int | None = None) -> RunSpec:
    return RunSpec(base, SHIPPED_SECONDS[base], seed if base.startswith("lnu") else None)


RUN_NAME = re.compile(r"(?P<base>[A-Za-z]+)(?:@(?P<seconds>\d+(?:\.\d+)?)s)?(?:~(?P<knob>[^#]+))?(?:#(?P<seed>\d+))?")


def run_spec(name: str) -> RunSpec:
    """The run a name stands for (RunSpec.name read back: base[@<seconds>s][~knob][#seed])."""
    found = RUN_NAME.fullmatch(name)
    if found is None or found["base"] not in LABELS:
        raise ValueError(
            f"run {name!r}: expected a contender ({', '.join(LABELS)}), then optionally @<seconds>s, "
            "~<knob> (consecutiveAbnormalities, or ours' maxEvictionsPerHour with %) and #<tie seed>"
        )
    base, knob = found["base"], found["knob"]
    seconds = float(found["seconds"]) if found["seconds"] else SHIPPED_SECONDS[base]
    seed = int(found["seed"]) if found["seed"] else (TIE_SEEDS[0] if base.startswith("lnu") else None)
    spec = RunSpec(base, seconds, seed, None if knob is None else int(knob) if knob.isdigit() else knob)
    if spec.name != name:
        raise ValueError(f"run {name!r}: not a name this benchmark gives a run (it would be {spec.name!r})")
    return spec


def contenders(ours_args: str = "") -> tuple[Contender, ...]:
    """Every contender as it ships (upstream with the first tie seed); `ours_args`: YAML lines added to
    ours' LowNodeLoad args (e.g. "reliefDepth: 0.1")."""
    return tuple(contender(shipped(base, TIE_SEEDS[0]), ours_args) for base in LABELS)


def _indented(lines: str) -> str:
    return "".join(f"    {line}\n" for line in lines.splitlines() if line.strip())


def coarse(loaded: LoadedScenario, tick: float = TICK_SECONDS, feed: str = "metricsServer") -> LoadedScenario:
    """The scenario with coarser simulated ticks (a day in minutes of wall time), usage held on the traces'
    5-min grid (so what the kubelet shows does not depend on how often a contender's run steps) and the
    metrics pipeline as it ships, `feed` the one published (metricsServer or nodeMetric: nothing reads
    the other)."""
    feeds = {
        "metricsServer": {**METRICS_SERVER_FEED, "enabled": feed == "metricsServer"},
        "nodeMetric": {**NODE_METRIC_FEED, "enabled": feed == "nodeMetric"},
    }
    timing = Timing.model_validate(
        {
            "tickSeconds": tick,
            "usageHoldSeconds": TICK_SECONDS,
            "reportIntervalSeconds": 60,
            "startDelaySeconds": 1.0,
            "readyDelaySeconds": 5.0,
        }
        | feeds
    )
    scenario = loaded.scenario.model_copy(update={"timing": timing})
    return LoadedScenario(scenario=scenario, objects=loaded.objects, source=loaded.source)


def wake_periods(feed: str) -> tuple[float, ...]:
    """When a quiet cluster can change on its own: the usage series' steps and the feed's publication."""
    published = (METRICS_SERVER_FEED if feed == "metricsServer" else NODE_METRIC_FEED)["intervalSeconds"]
    return (TICK_SECONDS, float(published))


# ------------------------------------------------------------------ the hindsight minimum


@dataclass(frozen=True, slots=True)
class Need:
    """A node above HIGH at one cycle: how far over it is per resource (≤ 0: not over on that one),
    the usage of each of its pods, and which of them the policy's evictor would evict then."""

    hour: float
    over: tuple[float, ...]
    usage: dict[str, tuple[float, ...]]
    evictable: frozenset[str]


def removals_needed(snapshot: Snapshot, policy: Policy, hour: float = 0.0) -> dict[str, Need]:
    """Per node above HIGH by measured usage: its Need."""
    out: dict[str, Need] = {}
    for node in snapshot.nodes:
        measured = snapshot.node_usage.get(node.name)
        if measured is None:
            continue
        over = tuple((measured.usage.get(r) or 0) - (node.allocatable.get(r) or 0) * HIGH[r] / 100 for r in MEASURED)
        if max(over) <= 0:
            continue
        pods = [p for p in snapshot.pods_by_node.get(node.name, ()) if not p.terminal and p.key in snapshot.pod_usage]
        usage = {p.key: tuple(float(snapshot.pod_usage[p.key].usage.get(r) or 0) for r in MEASURED) for p in pods}
        evictable = frozenset(
            p.key for p in pods if eviction_refusal(p, snapshot, policy.evictor, snapshot.now) is None
        )
        out[node.name] = Need(hour, over, usage, evictable)
    return out


def fewest_for_all(needs: Sequence[Need], time_limit: float = MINIMUM_SECONDS) -> tuple[int, bool, float | None]:
    """The fewest pods whose removal, once and for all, brings the node ≤ HIGH at every one of `needs`:
    an integer program with a 0/1 variable per pod evictable at some cycle and a row per cycle and
    resource over HIGH (scaled so its bound is 1). A pod removed counts with its usage at every cycle
    it would have been there, as it is gone by then, whenever it left. Rows no removal covers are left
    out. (count, exact, the first hour of a row left out); when the solver stops at `time_limit`, the
    count is its proven bound below."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    columns = list(dict.fromkeys(k for n in needs for k in sorted(n.evictable)))
    rows: set[tuple[float, ...]] = set()
    unreachable: float | None = None
    for need in needs:
        for r, over in enumerate(need.over):
            if over <= 0:
                continue
            row = tuple(need.usage[k][r] / over if k in need.usage else 0.0 for k in columns)
            if sum(row) < 1 - 1e-9:  # the solver's own tolerance is wider
                unreachable = need.hour if unreachable is None else min(unreachable, need.hour)
            else:
                rows.add(row)
    if not rows:
        return 0, True, unreachable
    matrix = np.array(sorted(rows))
    result = milp(
        c=np.ones(len(columns)),
        constraints=LinearConstraint(matrix, lb=np.ones(len(matrix)), ub=np.inf),
        integrality=np.ones(len(columns)),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    if result.status == 0:
        return round(result.fun), True, unreachable
    bound = getattr(result, "mip_dual_bound", None)
    assert bound is not None and np.isfinite(bound), f"no bound for the minimum: {result.message}"
    return math.ceil(bound - 1e-6), False, unreachable


@dataclass(slots=True)
class Minimum:
    """Every cycle's Needs per node; the day's minimum is, per node, the fewest of its pods whose
    removal covers every cycle it was above HIGH (`fewest_for_all`), summed over nodes."""

    needs: dict[str, list[Need]] = field(default_factory=dict)
    cycles: int = 0

    def add(self, needed: dict[str, Need]) -> None:
        self.cycles += 1
        for node, need in needed.items():
            self.needs.setdefault(node, []).append(need)

    def solve(self) -> dict[str, Any]:
        """The day's minimum: moves (summed over nodes), exact, nodes, cycles, and the nodes where
        some cycle no removal covered, with its first hour (up to 10)."""
        per_node = {node: fewest_for_all(needs) for node, needs in self.needs.items()}
        unreachable = {node: round(hour, 2) for node, (_, _, hour) in per_node.items() if hour is not None}
        return {
            "moves": sum(count for count, _, _ in per_node.values()),
            "exact": all(exact for _, exact, _ in per_node.values()),
            "nodes": len(per_node),
            "cycles": self.cycles,
            "unreachable": dict(sorted(unreachable.items())[:10]),
        }


# ------------------------------------------------------------------ observing a run


@dataclass(slots=True)
class SeenPod:
    key: str
    node: str
    owner: str
    created: float
    bound: float  # seconds since the run began, when first seen bound
    ready: float | None = None  # when first seen Ready (None: not yet)
    scheduled: float | None = None  # when it was bound (its PodScheduled condition), if it says


# Every job that evicted: (name, job, evicted at, its replacement as first seen bound, or None)
Replacements = list[tuple[str, dict[str, Any], float, SeenPod | None]]


@dataclass(frozen=True, slots=True)
class Spell:
    """A node above high by the kubelet's usage, from one sample until the first sample it is not."""

    node: str
    start: float  # seconds since the run began
    minutes: float
    waiting: float  # the minutes of it before the first cycle at or after its start: no cycle could act yet
    first: bool  # the node's first spell of the run
    touched: bool  # the contender had moved a pod off or onto the node before the spell began


class QualityRecord(SimulationRecord):
    """Adds each scored cycle's removals needed to the hindsight minimum when asked (the off run)."""

    minimum: Minimum | None
    scored_from: float = 0.0  # seconds since the run began

    def on_cycle(self, now: float, result: CycleResult) -> None:
        super().on_cycle(now, result)
        scored = now - self.began >= self.scored_from
        if self.minimum is not None and result.snapshot is not None and scored:
            self.minimum.add(removals_needed(result.snapshot, self.policy, (now - self.began) / 3600))


class QualitySimulation(Simulation):
    """A Simulation that samples ground truth after every migration period: every node's usage by the
    kubelet, which nodes are hot, and where every pod was first bound. What it reports is scored from
    `scored_from` seconds on (what comes before warms the contender's history)."""

    def __init__(
        self,
        scenario: LoadedScenario,
        policy: Policy,
        cycles: int,
        *,
        stock: bool,
        keep: bool,
        scored_from: float = 0.0,
        skip_quiet: bool = False,
        wake: tuple[float, ...] = (),
    ) -> None:
        options = SimulationOptions(
            cycles=cycles,
            migration_period=MIGRATION_PERIOD,
            busy_period=BUSY_PERIOD,
            warmup_seconds=WARMUP_SECONDS,
            align_idle_steps=True,
            skip_quiet_cycles=skip_quiet,
            wake_periods=wake,
        )
        super().__init__(scenario, policy, options, start=START.timestamp())
        record = QualityRecord(policy, began=self.cluster.now)
        record.minimum = Minimum() if keep else None
        record.scored_from = scored_from
        self.record = record
        self.scored_from = scored_from
        if stock:
            use_spread_scheduler(self.cluster)
        self.samples: list[tuple[float, frozenset[str]]] = []
        self.peaks: list[np.ndarray] = []  # per sample: each node's usage share, the larger of cpu and memory
        self.seen: dict[str, SeenPod] = {}
        self._not_ready: set[str] = set()  # seen pods not yet seen Ready
        overhead = scenario.scenario.usage.overhead_units()
        self._overhead = (overhead.get("cpu", 0), overhead.get("memory", 0))
        self._nodes: list[str] = []
        alloc: list[tuple[float, float]] = []
        for obj in scenario.objects:
            if obj.get("kind") == "Node":
                allocatable = obj["status"]["allocatable"]
                self._nodes.append(obj["metadata"]["name"])
                alloc.append((to_units("cpu", allocatable["cpu"]), to_units("memory", allocatable["memory"])))
        self._row = {name: i for i, name in enumerate(self._nodes)}
        self._alloc = np.maximum(np.array(alloc, dtype=np.float64).reshape(-1, 2), 1.0)
        self._limit = self._alloc * np.array([HIGH["cpu"], HIGH["memory"]]) / 100

    def _observe(self) -> None:
        """Ground truth after every step: the cluster's state holds until the next one."""
        super()._observe()
        elapsed = self.cluster.now - self.record.began
        self._see_pods(elapsed)
        used = np.tile(np.array(self._overhead, dtype=np.float64), (len(self._nodes), 1))
        for usage in self.cluster.kubelet.usage.values():
            row = self._row.get(usage.node)
            if row is not None:
                used[row, 0] += usage.cpu
                used[row, 1] += usage.memory
        hot = np.any(used > self._limit, axis=1)
        self.samples.append((elapsed, frozenset(self._nodes[i] for i in np.flatnonzero(hot))))
        self.peaks.append(np.max(used / self._alloc, axis=1))

    def _see_pods(self, elapsed: float) -> None:
        """Where every pod was first bound, and when, and when it was first Ready (every step: a
        replacement's node is found by it)."""
        for pod in self.cluster.store.list("pods", shared=True):
            meta = pod["metadata"]
            node = (pod.get("spec") or {}).get("nodeName")
            if meta.get("uid") in self._not_ready and is_ready(pod):
                self.seen[meta["uid"]].ready = elapsed
                self._not_ready.discard(meta["uid"])
            if not node or meta.get("uid") in self.seen:
                continue
            created = _seconds(meta.get("creationTimestamp"), self.record.began)
            self.seen[meta["uid"]] = SeenPod(
                f"{meta['namespace']}/{meta['name']}",
                node,
                _controller_uid(pod),
                created if created is not None else 0.0,
                elapsed,
                scheduled=_scheduled_at(pod, self.record.began),
            )
            if is_ready(pod):
                self.seen[meta["uid"]].ready = elapsed
            else:
                self._not_ready.add(meta["uid"])

    def hot_at(self, seconds: float) -> frozenset[str]:
        return HotSets(self.samples).at(seconds)

    def scored(self) -> tuple[list[tuple[float, frozenset[str]]], list[np.ndarray]]:
        """The samples (and peaks) from `scored_from` on, the state then starting at `scored_from`."""
        first = max(0, bisect_right([t for t, _ in self.samples], self.scored_from + 1e-6) - 1)
        samples = [(max(t, self.scored_from), hot) for t, hot in self.samples[first:]]
        return samples, self.peaks[first:]

    def move_sources(self, moves: Replacements | None = None) -> list[tuple[float, str, bool]]:
        """(evicted at, the node the pod was evicted from, whether a replacement had been bound on that
        node before) for every move that evicted (`moves`: `_replacements()`, when already found)."""
        moves = self._replacements() if moves is None else moves
        received = _first_at((seen.bound, seen.node) for _, _, _, seen in moves if seen is not None)
        out = []
        for name, _, evicted, _ in moves:
            source = self.record.sources.get(name, "")
            out.append((evicted, source, received.get(source, math.inf) < evicted))
        return out

    def _durations(self, samples: Sequence[tuple[float, frozenset[str]]]) -> list[float]:
        """How long each sample's state held: until the next sample, the last until the run's end."""
        times = [t for t, _ in samples] + [self.cluster.now - self.record.began]
        return [max(0.0, b - a) for a, b in pairwise(times)]

    def hot_node_minutes(self) -> float:
        samples, _ = self.scored()
        return sum(len(hot) * seconds for (_, hot), seconds in zip(samples, self._durations(samples), strict=True)) / 60

    def worst_p99(self) -> float:
        """The largest, over nodes, of each node's 99th-percentile usage share over the run (read on a
        GRID_SECONDS grid, each point the state of the last step before it)."""
        samples, peaks = self.scored()
        if not peaks:
            return 0.0
        times = [t for t, _ in samples]
        grid = np.arange(times[0], self.cluster.now - self.record.began, GRID_SECONDS)
        rows = np.searchsorted(np.array(times), grid, side="right") - 1
        return float(np.max(np.percentile(np.stack(peaks)[rows], 99, axis=0)))

    def hot_series(self, every_seconds: float = 600.0) -> list[tuple[float, int]]:
        """(hour of the scored span, hot nodes) at most every `every_seconds`: the picture's points."""
        out: list[tuple[float, int]] = []
        samples, _ = self.scored()
        for seconds, hot in samples:
            hours = (seconds - self.scored_from) / 3600
            if not out or hours - out[-1][0] >= every_seconds / 3600 - 1e-9 or len(hot) != out[-1][1]:
                out.append((round(hours, 3), len(hot)))
        return out

    def unready_seconds(self, moves: Replacements) -> list[float]:
        """Per move whose replacement was seen Ready: the seconds its workload was a Ready pod short,
        from the eviction (for a MakeBeforeBreak move, when the rollout removed the pod) until the
        replacement was Ready: 0 when the replacement was Ready first."""
        return [
            max(0.0, seen.ready - evicted)
            for _, _, evicted, seen in moves
            if seen is not None and seen.ready is not None
        ]

    def moved_more_than_once(self) -> int:
        """Workloads whose pods were evicted more than once in the scored span."""
        evicted = Counter(
            ((job.get("status") or {}).get("workload") or {}).get("uid", "")
            for job in self.record.jobs.values()
            if (_evicted_at(job, self.record.began) or -1.0) >= self.scored_from
        )
        return sum(1 for owner, n in evicted.items() if owner and n > 1)

    def scored_moves(self, moves: Replacements) -> Replacements:
        return [move for move in moves if move[2] >= self.scored_from]

    def scored_jobs(self) -> list[dict[str, Any]]:
        """Every job created in the scored span."""
        return [
            job
            for job in self.record.jobs.values()
            if (_seconds((job.get("metadata") or {}).get("creationTimestamp"), self.record.began) or 0.0)
            >= self.scored_from
        ]

    def scored_phases(self) -> dict[str, int]:
        """The final phase of every job created in the scored span."""
        return dict(sorted(Counter(phase(job) for job in self.scored_jobs()).items()))

    def _replacements(self) -> Replacements:
        """Every job that evicted, in eviction order: (name, job, evicted at, its replacement as first
        seen bound; None when none was). The replacement is the job's newPodRef, else the owner's first
        pod created after the eviction that no earlier job claimed."""
        out: Replacements = []
        claimed: set[str] = set()
        jobs = sorted(self.record.jobs.items(), key=lambda kv: _evicted_at(kv[1], self.record.began) or 0.0)
        for name, job in jobs:
            evicted = _evicted_at(job, self.record.began)
            if evicted is None:
                continue
            status = job.get("status") or {}
            new = (status.get("newPodRef") or {}).get("uid", "")
            owner = (status.get("workload") or {}).get("uid", "")
            if not new:
                candidates = [
                    (seen.created, uid)
                    for uid, seen in self.seen.items()
                    if seen.owner == owner
                    and owner
                    and uid not in claimed
                    and seen.created >= evicted - 1
                    and uid != status.get("podUid", "")
                ]
                new = min(candidates)[1] if candidates else ""
            seen = self.seen.get(new)
            if seen is not None:
                claimed.add(new)
            out.append((name, job, evicted, seen))
        return out

    def ping_pong(self, moves: Replacements | None = None) -> list[str]:
        """Moves whose replacement landed on a node hot (by usage) at the next cycle; replacements moved
        again within FLAP_SECONDS of being bound."""
        found: list[str] = []
        cycle_times = [c.seconds for c in self.record.cycles]
        moves = self._replacements() if moves is None else moves
        hot = HotSets(self.samples)
        placed_by: dict[str, tuple[str, float]] = {}  # replacement pod key -> the job that placed it, bound at
        for name, _, _, seen in moves:
            if seen is None:
                continue
            placed_by[seen.key] = (name, seen.bound)
            later = [t for t in cycle_times if t >= seen.bound]
            if later and seen.node in hot.at(later[0]):
                found.append(f"{name}: the replacement {seen.key} landed on {seen.node}, hot at the next cycle")
        for name, job, evicted, _ in moves:
            ref = (job.get("spec") or {}).get("podRef") or {}
            key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
            placed, bound = placed_by.get(key, (name, 0.0))
            if placed != name and evicted - bound < FLAP_SECONDS:
                found.append(f"{name}: moves {key} again {(evicted - bound) / 60:.0f} min after {placed} placed it")
        return found

    def stranded(self, moves: Replacements) -> list[str]:
        """Moves whose replacement was Pending longer than STRANDED_SECONDS: bound that much after it was
        created (or after the eviction, if created before it), or still unbound at the run's end, or
        never created that long after the eviction."""
        end = self.cluster.now - self.record.began
        unbound: dict[str, list[float]] = {}  # owner uid -> creation of its pods unbound at the end
        for pod in self.cluster.store.list("pods", shared=True):
            meta = pod["metadata"]
            if (pod.get("spec") or {}).get("nodeName") or meta.get("deletionTimestamp"):
                continue
            created = _seconds(meta.get("creationTimestamp"), self.record.began)
            unbound.setdefault(_controller_uid(pod), []).append(created if created is not None else 0.0)
        found: list[str] = []
        for name, job, evicted, seen in moves:
            if seen is not None:
                bound = seen.scheduled if seen.scheduled is not None else seen.bound
                waited = bound - max(seen.created, evicted)
                if waited > STRANDED_SECONDS:
                    found.append(f"{name}: {seen.key} Pending {waited:.0f} s before it was bound on {seen.node}")
                continue
            owner = ((job.get("status") or {}).get("workload") or {}).get("uid", "")
            pending = [created for created in unbound.get(owner, []) if created >= evicted - 1]
            since = min(pending) if pending else evicted
            if end - since > STRANDED_SECONDS:
                what = "Pending" if pending else "none created"
                found.append(f"{name}: no replacement bound {(end - evicted) / 60:.0f} min after the eviction ({what})")
        return found

    def back_to_source(self, moves: Replacements) -> list[str]:
        """Moves whose replacement was bound on the node its pod was evicted from."""
        found: list[str] = []
        for name, _, _, seen in moves:
            source = self.record.sources.get(name, "")
            if seen is not None and source and seen.node == source:
                found.append(f"{name}: the replacement {seen.key} came back to {source}")
        return found

    def hot_spells(self, moves: Replacements | None = None) -> list[Spell]:
        """Every stretch of consecutive samples a node was hot, in order of start."""
        cycle_times = [c.seconds for c in self.record.cycles]
        moves = self._replacements() if moves is None else moves
        touched = _first_at(
            (evicted, node)
            for name, _, evicted, seen in moves
            for node in (self.record.sources.get(name, ""), seen.node if seen else "")
            if node
        )
        spells: list[Spell] = []
        open_: dict[str, list[float]] = {}  # node -> [start, hot seconds, waiting seconds]
        seen_hot: set[str] = set()

        def close(node: str) -> None:
            start, hot, waiting = open_.pop(node)
            spells.append(
                Spell(
                    node,
                    start,
                    hot / 60,
                    waiting / 60,
                    first=node not in seen_hot,
                    touched=touched.get(node, math.inf) < start,
                )
            )
            seen_hot.add(node)

        samples, _ = self.scored()
        for (seconds, hot), held in zip(samples, self._durations(samples), strict=True):
            for node in [n for n in open_ if n not in hot]:
                close(node)
            for node in hot:
                spell = open_.setdefault(node, [seconds, 0.0, 0.0])
                i = bisect_left(cycle_times, spell[0] - 1e-6)
                first_cycle = cycle_times[i] if i < len(cycle_times) else math.inf
                spell[1] += held
                spell[2] += min(held, max(0.0, first_cycle - seconds))
        for node in list(open_):
            close(node)
        return sorted(spells, key=lambda s: (s.start, s.node))


def _controller_uid(pod: dict[str, Any]) -> str:
    refs = pod["metadata"].get("ownerReferences") or []
    return str(next((r.get("uid", "") for r in refs if r.get("controller")), ""))


def _scheduled_at(pod: dict[str, Any], began: float) -> float | None:
    """When the pod was bound, by its PodScheduled condition (seconds since `began`)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
            return _seconds(condition.get("lastTransitionTime"), began)
    return None


def evictions_by_rule(moves: Replacements) -> dict[str, int]:
    """The evicted pods by the scheduling rule they are under (benchmarks.zoned's names); {} when none is."""
    from benchmarks.zoned import rule_of

    rules = Counter(
        rule_of(str(((job.get("spec") or {}).get("podRef") or {}).get("name", ""))) for _, job, _, _ in moves
    )
    return dict(sorted(rules.items())) if set(rules) - {"none"} else {}


def failures(jobs: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Failed or Aborted jobs by their status reason."""
    return dict(
        sorted(
            Counter(
                f"{phase(job)} {(job.get('status') or {}).get('reason') or '?'}"
                for job in jobs
                if phase(job) in ("Failed", "Aborted")
            ).items()
        )
    )


def _first_at(events: Iterable[tuple[float, str]]) -> dict[str, float]:
    """Each node's earliest time among `events` (seconds, node)."""
    first: dict[str, float] = {}
    for at, node in events:
        if at < first.get(node, math.inf):
            first[node] = at
    return first


class HotSets:
    """A run's hot nodes by time, from its samples (seconds, hot nodes), each holding until the next."""

    def __init__(self, samples: Sequence[tuple[float, frozenset[str]]]) -> None:
        self.samples = samples
        self.times = [t for t, _ in samples]

    def at(self, seconds: float) -> frozenset[str]:
        """The nodes hot at `seconds`: those of the last sample at or before it."""
        i = bisect_right(self.times, seconds + 1e-6) - 1
        return self.samples[i][1] if i >= 0 else frozenset()


def move_causes(
    moves: Sequence[tuple[float, str, bool]], off_samples: Sequence[tuple[float, frozenset[str]]]
) -> dict[str, int]:
    """Each move (evicted at, source node, whether the contender had moved a pod onto that node before) by
    the state of its source in the off run (the same cluster without a descheduler) at that time:
    placed (below high there, and the node had received a pod: hot from what was moved onto it), ahead
    (below high there and received none: moved before it crossed, as lookAhead does), passing (above high
    there, but below by the next cycle on its own) or lasting (still above high at the next cycle)."""
    out = {"placed": 0, "ahead": 0, "passing": 0, "lasting": 0}
    off = HotSets(off_samples)
    for seconds, node, received in moves:
        if node not in off.at(seconds):
            out["placed" if received else "ahead"] += 1
        elif node not in off.at(seconds + NEXT_LOOK_SECONDS):
            out["passing"] += 1
        else:
            out["lasting"] += 1
    return out


def _seconds(stamp: Any, began: float) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() - began


def _evicted_at(job: dict[str, Any], began: float) -> float | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Evicted" and condition.get("status") == "True":
            return _seconds(condition.get("lastTransitionTime"), began)
    return None


# ------------------------------------------------------------------ running a scenario


def scored_from(hours: float) -> float:
    """Seconds from a run's start to its scored span: the last SCORED_HOURS (all of a shorter run)."""
    return max(0.0, hours - SCORED_HOURS) * 3600


def run_one(
    loaded: LoadedScenario, contender: Contender, cycles: int, *, keep: bool = False, scored: float = 0.0
) -> dict[str, Any]:
    started = time.perf_counter()
    contender.reset()
    policy = contender.policy()
    feed = policy.load_source.type  # the one metrics feed published: nothing reads the other
    simulation = QualitySimulation(
        coarse(loaded, feed=feed),
        policy,
        cycles,
        stock=contender.stock,
        keep=keep,
        scored_from=scored,
        skip_quiet=contender.skip_quiet,
        wake=wake_periods(feed),
    )
    record = simulation.run()
    replacements = simulation._replacements()
    moves = simulation.scored_moves(replacements)
    ping_pong = simulation.ping_pong(moves)
    spells = simulation.hot_spells(replacements)
    phases = simulation.scored_phases()
    samples, _ = simulation.scored()
    stranded = simulation.stranded(moves)
    back = simulation.back_to_source(moves)
    out: dict[str, Any] = {
        "seconds": contender.seconds,
        "evictions": len(moves),
        "day1Evictions": len(replacements) - len(moves),  # the warm-up day's: not scored, but churn all the same
        "jobs": phases,
        "failedOrAborted": phases.get("Failed", 0) + phases.get("Aborted", 0),
        "pingPong": len(ping_pong),
        "pingPongDetails": ping_pong[:10],
        "stranded": len(stranded),
        "strandedDetails": stranded[:10],
        "backToSource": len(back),
        "backToSourceDetails": back[:10],
        "failures": failures(simulation.scored_jobs()),
        "movedMoreThanOnce": simulation.moved_more_than_once(),
        "unreadyPodSecondsPerMove": _mean(simulation.unready_seconds(moves)),
        "hotNodeMinutes": simulation.hot_node_minutes(),
        "peakHotNodes": max((len(h) for _, h in samples), default=0),
        "hotSpells": len(spells),
        "waitingMinutes": round(sum(s.waiting for s in spells)),
        "touchedMinutes": round(sum(s.minutes for s in spells if s.touched)),
        "reactionFloor": round(sum(s.waiting for s in spells if s.first)),
        "worstP99": round(simulation.worst_p99(), 4),
        "limitViolations": len(set(record.limit_violations)),
        "orphanReservations": len(record.orphan_reservations),
        "hotSeries": simulation.hot_series(),
        "wallSeconds": round(time.perf_counter() - started, 1),
        "moveSources": simulation.move_sources(moves),  # for move_causes; not kept in the results
    }
    by_rule = evictions_by_rule(moves)
    if by_rule:
        out["evictionsByRule"] = by_rule
    if keep:
        assert isinstance(record, QualityRecord) and record.minimum is not None
        out["minimum"] = record.minimum.solve()
        out["hotSets"] = simulation.samples  # for the other runs' move_causes; not kept in the results
    return out


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def _keys(only: Sequence[str]) -> list[str]:
    """The contenders to run: `only` these (every one when empty), and off always (the hindsight minimum
    and the moves' causes are read from its run)."""
    return [base for base in LABELS if base == "off" or not only or base in only]


def plan_runs(only: Sequence[str] = (), *, uniform: bool = False, sweep: bool = False) -> list[RunSpec]:
    """The runs of one scenario: every contender (`_keys`) as it ships, upstream once per tie seed; with
    `uniform`, also every peer on UNIFORM_SECONDS (ours ships it); with `sweep`, each contender's knob
    over SWEEP (upstream's schedule with the first tie seed)."""
    keys = _keys(only)
    runs = [shipped(base, seed) for base in keys for seed in (TIE_SEEDS if base.startswith("lnu") else (None,))]
    if uniform:
        runs += [
            RunSpec(base, UNIFORM_SECONDS, seed)
            for base in keys
            if base not in ("off", "ours")
            for seed in (TIE_SEEDS if base.startswith("lnu") else (None,))
        ]
    if sweep:
        for base in (k for k in keys if k in SWEEP):
            for value in SWEEP[base]:
                if base.startswith("lnu"):
                    spec = RunSpec(base, float(value), TIE_SEEDS[0])
                else:
                    spec = RunSpec(base, SHIPPED_SECONDS[base], None, value if isinstance(value, str) else int(value))
                runs.append(spec)
    unique: dict[str, RunSpec] = {}
    for spec in runs:
        unique.setdefault(spec.name, spec)  # ours' shipped knob is ours as it ships
    return list(unique.values())


def scenario_runs(
    todo: Sequence[tuple[str, int]],
    only: Sequence[str] = (),
    *,
    uniform_sizes: Sequence[int] = UNIFORM_SIZES,
    sweep_sizes: Sequence[int] = SWEEP_SIZES,
) -> dict[tuple[str, int], list[RunSpec]]:
    """The runs of each (family, size): `plan_runs`, with the one-cycle table at `uniform_sizes` and
    the curves at `sweep_sizes`."""
    return {t: plan_runs(only, uniform=t[1] in uniform_sizes, sweep=t[1] in sweep_sizes) for t in todo}


def _loaded(family: str, nodes: int, seed: int) -> LoadedScenario:
    from benchmarks.scenarios import build

    return build(family, nodes, seed)


# The cyclic collector's thresholds in a run's process. A simulation holds millions of long-lived objects
# (every stored object decoded once and shared) and makes short-lived ones by the million; with the
# defaults (700, 10, 10) the collector scanned the old ones so often that a 300-node run spent a third
# of its time there. Results are the same either way: nothing in a run depends on when garbage goes.
GC_THRESHOLDS = (100_000, 50, 1_000)


def _run_contender(loaded: LoadedScenario, spec: RunSpec, hours: float, ours_args: str = "") -> dict[str, Any]:
    """One run over one scenario (a task of its own: `run_quality` spreads them over the cores)."""
    gc.set_threshold(*GC_THRESHOLDS)
    cycles = int(hours * 3600 / spec.seconds)
    out = run_one(loaded, contender(spec, ours_args), cycles, keep=spec.base == "off", scored=scored_from(hours))
    return out | {"base": spec.base, "knob": spec.knob}


def _scenario(
    family: str, nodes: int, seed: int, hours: float, loaded: LoadedScenario, runs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A scenario's result from its runs: each one's moves ÷ the hindsight minimum of off's."""
    minimum = runs["off"]["minimum"]["moves"]
    off_samples = runs["off"].pop("hotSets")
    for key, run in runs.items():
        moves = run.pop("moveSources")
        if key != "off":
            run["ratio"] = round(run["evictions"] / minimum, 3) if minimum else None
            run["moveCauses"] = move_causes(moves, off_samples)
    return {
        "name": f"{family}-{nodes}",
        "family": family,
        "nodes": nodes,
        "pods": sum(1 for o in loaded.objects if o.get("kind") == "Pod"),
        "seed": seed,
        "hours": hours,
        "scoredHours": min(hours, SCORED_HOURS),
        "runs": runs,
    }


def run_scenario(
    family: str,
    nodes: int,
    seed: int,
    hours: float = HOURS,
    only: Sequence[str] = (),
    ours_args: str = "",
    runs: Sequence[RunSpec] | None = None,
) -> dict[str, Any]:
    """The runs (default: `plan_runs(only)`) over one scenario, one after another."""
    loaded = _loaded(family, nodes, seed)
    specs = plan_runs(only) if runs is None else runs
    results = {spec.name: _run_contender(loaded, spec, hours, ours_args) for spec in specs}
    return _scenario(family, nodes, seed, hours, loaded, results)


def grouped(runs: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    """A run, or for upstream the median over its tie seeds of the figures the verdict and tables read,
    with each one's range (`ranges`)."""
    members = [run for key, run in runs.items() if key == name or key.startswith(f"{name}#")]
    if len(members) == 1:
        return members[0]
    figures = (
        "evictions",
        "day1Evictions",
        "hotNodeMinutes",
        "pingPong",
        "failedOrAborted",
        "movedMoreThanOnce",
        "worstP99",
        "unreadyPodSecondsPerMove",
        "stranded",
        "backToSource",
    )
    out = dict(members[0])
    out["ranges"] = {}
    for figure in figures:
        if any(run.get(figure) is None for run in members):  # a figure runs of an older version lack (or none)
            continue
        values = sorted(run[figure] for run in members)
        out[figure] = float(np.median(values))
        out["ranges"][figure] = (values[0], values[-1])
    out["limitViolations"] = max(run["limitViolations"] for run in members)
    ratios = [run["ratio"] for run in members if run.get("ratio") is not None]
    out["ratio"] = float(np.median(ratios)) if ratios else None
    out["seeds"] = len(members)
    return out


PEERS = ("lnuRequests", "lnuMetrics", "koordinator")


def knob_kind(base: str, knob: int | str | None) -> str:
    """What a run's knob is: upstream's schedule, a churn budget (a string), else consecutiveAbnormalities."""
    if base.startswith("lnu"):
        return "schedule"
    return "maxEvictionsPerHour" if isinstance(knob, str) else "consecutiveAbnormalities"


Curve = tuple[str, str]  # (contender, knob)


def curves(runs: dict[str, dict[str, Any]]) -> dict[Curve, list[tuple[str, dict[str, Any]]]]:
    """Each contender's curve along each knob swept: (run name, run), on its shipped cycle (ours,
    Koordinator) or over its schedules with the first tie seed (upstream), the contender as it ships on
    each of its curves; only curves of more than one point."""
    out: dict[Curve, list[tuple[str, dict[str, Any]]]] = {}
    defaults: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, run in runs.items():
        base = run.get("base", name)
        if base not in SWEEP or "#" in name:
            continue
        if not base.startswith("lnu") and run.get("seconds") != SHIPPED_SECONDS[base]:
            continue
        if name == shipped(base, TIE_SEEDS[0]).name:
            defaults[base] = (name, run)
            continue
        out.setdefault((base, knob_kind(base, run.get("knob"))), []).append((name, run))
    for (base, _), points in out.items():
        if base in defaults and defaults[base] not in points:
            points.append(defaults[base])

    def order(point: tuple[str, dict[str, Any]]) -> tuple[int, float, str]:
        run = point[1]  # by evictions; points of the same evictions by cycle, then knob
        return run["evictions"], run.get("seconds", 0.0), str(run.get("knob"))

    return {key: sorted(points, key=order) for key, points in out.items() if len(points) > 1}


def _does_nothing(run: dict[str, Any], off_heat: float) -> bool:
    """A peer run that evicted nothing on the scored day and left all of off's heat: no descheduler that
    evicts can have no more evictions than it, so the dominance targets leave it out (upstream in
    requests mode on pods placed by a request-spreading scheduler)."""
    return run["evictions"] == 0 and run["hotNodeMinutes"] >= off_heat


def _tie_won(ours: dict[str, Any], peer: dict[str, Any]) -> bool:
    """Whether ours wins a tie on the scored day: by fewer evictions on day 1 (in families whose load
    repeats, every contender that acts settles the cluster then), or at no eviction and no heat, which
    nothing can beat."""
    if ours.get("day1Evictions", 0) < peer.get("day1Evictions", 0):
        return True
    return ours["hotNodeMinutes"] == 0 and ours["evictions"] == 0


def verdict(scenario: dict[str, Any]) -> list[str]:
    """The targets for one scenario (issue 44), each missed one as a sentence (empty: all met)."""
    runs = scenario["runs"]
    ours = runs["ours"]
    missed: list[str] = []
    off = runs["off"]["hotNodeMinutes"]
    for key in (k for k in PEERS if k in runs):
        run = grouped(runs, key)
        if _does_nothing(run, off):
            continue
        no_worse = run["hotNodeMinutes"] >= ours["hotNodeMinutes"] and run["evictions"] >= ours["evictions"]
        better = run["hotNodeMinutes"] > ours["hotNodeMinutes"] or run["evictions"] > ours["evictions"]
        if not (no_worse and (better or _tie_won(ours, run))):
            missed.append(
                f"ours does not dominate {key} ({ours['evictions']:g} evictions / {ours['hotNodeMinutes']:.0f} "
                f"hot-node-minutes against {run['evictions']:g} / {run['hotNodeMinutes']:.0f})"
            )
    lines = curves(runs)
    mine = [run for (base, _), points in lines.items() if base == "ours" for _, run in points]
    if mine:
        for (base, _), points in lines.items():
            if base == "ours":
                continue
            for name, point in points:
                if _does_nothing(point, off):
                    continue
                if not any(
                    m["evictions"] <= point["evictions"]
                    and (
                        m["hotNodeMinutes"] < point["hotNodeMinutes"]
                        or (m["hotNodeMinutes"] == point["hotNodeMinutes"] and _tie_won(m, point))
                    )
                    for m in mine
                ):
                    missed.append(
                        f"no point of ours' curve has at most {point['evictions']:g} evictions and fewer than "
                        f"{point['hotNodeMinutes']:.0f} hot-node-minutes ({name})"
                    )
    if off > 0 and ours["hotNodeMinutes"] > 0.05 * off:
        why = ""
        if "waitingMinutes" in ours:
            why = (
                f" ({ours['waitingMinutes']} before a cycle could see the node, {ours['touchedMinutes']} on nodes "
                f"ours had moved pods off or onto; reaction floor {runs['off']['reactionFloor']})"
            )
        missed.append(f"hot-node-minutes {ours['hotNodeMinutes']:.0f} > 5% of off's {off:.0f}{why}")
    if ours.get("ratio") is not None and ours["ratio"] > 2.0:
        why = ""
        if "moveCauses" in ours:
            causes = ours["moveCauses"]
            why = (
                f" ({causes['placed']} off nodes below high without a descheduler but hot from pods moved onto them, "
                f"{causes['ahead']} before a node crossed high, {causes['passing']} off nodes that would have been "
                "below high again 10 min later)"
            )
        missed.append(f"evictions {ours['ratio']:.2f}× the hindsight minimum > 2×{why}")
    if ours["pingPong"] > 0.01 * ours["evictions"]:
        missed.append(f"{ours['pingPong']} ping-pong > 1% of {ours['evictions']} moves")
    pods = scenario.get("pods", 0)
    if ours["movedMoreThanOnce"] > 0.01 * pods:
        missed.append(f"{ours['movedMoreThanOnce']} workloads moved more than once > 1% of {pods} pods")
    if ours["failedOrAborted"]:
        missed.append(f"{ours['failedOrAborted']} failed or aborted moves")
    if ours["limitViolations"]:
        missed.append(f"{ours['limitViolations']} limit violations")
    return missed


def run_quality(
    families: Sequence[str] | None = None,
    sizes: Sequence[int] = SIZES,
    seed: int = 1,
    hours: float = HOURS,
    only: Sequence[str] = (),
    ours_args: str = "",
    *,
    uniform_sizes: Sequence[int] = UNIFORM_SIZES,
    sweep_sizes: Sequence[int] = SWEEP_SIZES,
) -> dict[str, Any]:
    """Every family at every size with the runs of `scenario_runs`, each run a task for the next free
    core; the flat metrics the runner's table shows, and the scenarios."""
    from benchmarks.scenarios import FAMILIES

    todo = [(f, n) for f in (families or FAMILIES) for n in sizes]
    specs = scenario_runs(todo, only, uniform_sizes=uniform_sizes, sweep_sizes=sweep_sizes)
    tasks = sum(len(v) for v in specs.values())
    with ProcessPoolExecutor(max_workers=max(1, min(tasks, os.cpu_count() or 1))) as pool:
        # Every run is a task of its own, the largest scenarios' and slowest contenders' first, so no core
        # sits idle while another runs the rest of a scenario; each scenario is built once, in a worker.
        built = {t: pool.submit(_loaded, *t, seed) for t in sorted(todo, key=lambda t: -t[1])}
        loaded = {t: future.result() for t, future in built.items()}
        order = sorted(
            ((t, spec) for t in todo for spec in specs[t]),
            key=lambda ts: (-ts[0][1], ts[1].base not in SLOW_CONTENDERS, ts[1].seconds),
        )
        futures = {(t, spec.name): pool.submit(_run_contender, loaded[t], spec, hours, ours_args) for t, spec in order}
        scenarios = []
        for f, n in todo:
            results = {spec.name: futures[((f, n), spec.name)].result() for spec in specs[(f, n)]}
            scenarios.append(_scenario(f, n, seed, hours, loaded[(f, n)], results))
    for scenario in scenarios:
        write_chart(scenario)
        if curves(scenario["runs"]):
            write_curve_chart(scenario)
    return summary(scenarios)


def _measured_before(run: dict[str, Any], known: dict[str, Any] | None) -> bool:
    """Whether `run` was measured before `known`, a run of the same name (both stamped by `save_document`)."""
    if known is None or "measured" not in run or "measured" not in known:
        return False
    return bool(run["measured"]["date"] < known["measured"]["date"])


def merge_results(documents: Sequence[dict[str, Any]], folder: Path = CHARTS) -> dict[str, Any]:
    """Several invocations' results as one (the full run takes hours, so it is made in parts): scenarios
    by name, a run replacing one of the same name that was measured before it (or, where either is not
    stamped, that comes in an earlier document), each run's ratio to its scenario's minimum recomputed,
    then `summary` (the verdicts) and the charts."""
    scenarios: dict[str, dict[str, Any]] = {}
    for document in documents:
        for scenario in document["scenarios"]:
            known = scenarios.setdefault(scenario["name"], {**scenario, "runs": {}})
            drawn, other = (known["seed"], known["hours"]), (scenario["seed"], scenario["hours"])
            if drawn != other:
                raise ValueError(
                    f"{scenario['name']}: runs of seed {other[0]} over {other[1]:g} h cannot merge with runs of "
                    f"seed {drawn[0]} over {drawn[1]:g} h (a different draw or span is a different scenario)"
                )
            for name, run in scenario["runs"].items():
                if not _measured_before(run, known["runs"].get(name)):
                    known["runs"][name] = run
    merged = []
    for name, scenario in scenarios.items():
        runs = scenario["runs"]
        if "off" not in runs or "ours" not in runs:
            raise ValueError(f"{name}: no document holds its off and ours runs, which every scenario needs")
        minimum = runs["off"]["minimum"]["moves"]
        for key, run in runs.items():
            if key != "off":
                run["ratio"] = round(run["evictions"] / minimum, 3) if minimum else None
        scenario["runs"] = {key: runs[key] for key in sorted(runs, key=_run_order)}
        merged.append(scenario)
    merged.sort(key=lambda s: (s["nodes"], s["family"]))
    for scenario in merged:
        write_chart(scenario, folder)
        if curves(scenario["runs"]):
            write_curve_chart(scenario, folder)
    return summary(merged)


def save_document(document: dict[str, Any], path: Path, *, measured_now: bool) -> None:
    """`document` as compact JSON at `path` (benchmarks/quality-runs keeps the runs RESULTS.md is made from); with
    `measured_now`, each run not stamped yet is stamped with this commit and the date."""
    from benchmarks.run import machine

    if measured_now:
        stamp = {key: machine()[key] for key in ("commit", "date")}
        for scenario in document["scenarios"]:
            for run in scenario["runs"].values():
                run.setdefault("measured", stamp)
    path.write_text(json.dumps(document, separators=(",", ":"), default=str) + "\n")


# What RESULTS.md does not show of a run, left out of results.json (the saved runs keep it).
UNRECORDED = ("hotSeries", "pingPongDetails", "jobs", "strandedDetails", "backToSourceDetails")


def record(run: dict[str, Any], results_json: Path, results_md: Path) -> dict[str, Any]:
    """`run`, a merge of saved runs, as the quality benchmark's entry of `results_json` (with when and at
    which commits its runs were measured, and their wall seconds added up), and `results_md` rendered again."""
    from benchmarks.run import BENCHMARKS, load_results, render, save_results

    stamps = [r["measured"] for s in run["scenarios"] for r in s["runs"].values() if "measured" in r]
    if not stamps:
        raise ValueError("none of the runs is stamped with when it was measured: save them with --save")
    scenarios = [
        {**s, "runs": {k: {f: v for f, v in r.items() if f not in UNRECORDED} for k, r in s["runs"].items()}}
        for s in run["scenarios"]
    ]
    dates = sorted(stamp["date"] for stamp in stamps)
    entry = {
        "date": dates[-1],
        "runs": [{**run, "scenarios": scenarios}],
        "seconds": round(sum(r.get("wallSeconds", 0.0) for s in scenarios for r in s["runs"].values()), 1),
        "merged": {
            "runs": sum(len(s["runs"]) for s in scenarios),
            "first": dates[0],
            "last": dates[-1],
            "commits": sorted({stamp["commit"] for stamp in stamps}),
        },
    }
    results = load_results(results_json)
    results.setdefault("benchmarks", {})["quality"] = entry
    save_results(results, results_json)
    results_md.write_text(render(results, BENCHMARKS))
    return entry


CONSTRAINED_SECTION = "quality-constrained"
CONSTRAINED_TITLE = (
    "### Decision quality under kube-scheduler's hard rules: the constrained scenarios, run apart "
    "(`quality --family bitbrains-diurnal-zoned`, issue 60)"
)


def record_section(run: dict[str, Any], results_json: Path, results_md: Path) -> str:
    """`run` (a merge of saved runs of the constrained scenarios, which the full quality run leaves out) as
    a section of its own in `results_json`, and `results_md` rendered again; the section's text."""
    from benchmarks.run import BENCHMARKS, load_results, render, save_results

    stamps = sorted(
        {f"{r['measured']['commit']} ({r['measured']['date']})" for s in run["scenarios"] for r in s["runs"].values()}
    )
    text = "\n".join([CONSTRAINED_TITLE, "", f"Measured at {', '.join(stamps)}.", "", render_quality(run)])
    results = load_results(results_json)
    results.setdefault("sections", {})[CONSTRAINED_SECTION] = text
    save_results(results, results_json)
    results_md.write_text(render(results, BENCHMARKS))
    return text


def _run_order(name: str) -> tuple[int, str]:
    """Runs in LABELS' order of their contender, then by name."""
    base = name.split("#")[0].split("@")[0].split("~")[0]
    return list(LABELS).index(base), name


NOT_JUDGED = "not judged: ours was not run (merge this run with one of ours)"


def summary(scenarios: list[dict[str, Any]]) -> dict[str, Any]:
    """The flat metrics over `scenarios` (each given its missed targets) and the scenarios."""
    judged = [s for s in scenarios if "ours" in s["runs"]]
    for scenario in scenarios:
        # A part of a run made for --merge may hold only peers: nothing to judge until ours is merged in.
        scenario["missed"] = verdict(scenario) if "ours" in scenario["runs"] else [NOT_JUDGED]
    ratios = [s["runs"]["ours"]["ratio"] for s in judged if s["runs"]["ours"].get("ratio") is not None]
    share = [
        s["runs"]["ours"]["hotNodeMinutes"] / s["runs"]["off"]["hotNodeMinutes"]
        for s in judged
        if s["runs"]["off"]["hotNodeMinutes"] > 0
    ]
    ping_pong = [s["runs"]["ours"]["pingPong"] / max(1, s["runs"]["ours"]["evictions"]) for s in judged]
    return {
        "ours_ratio": max(ratios, default=0.0),
        "ours_hot_share_of_off": round(max(share, default=0.0), 3),
        "ours_ping_pong_share": round(max(ping_pong, default=0.0), 3),
        "scenarios_missed": sum(1 for s in scenarios if s["missed"]),
        "scenarios": scenarios,
    }


def chart_name(scenario: dict[str, Any]) -> str:
    return f"quality-{scenario['name']}.svg"


def curve_chart_name(scenario: dict[str, Any]) -> str:
    return f"quality-curve-{scenario['name']}.svg"


def write_chart(scenario: dict[str, Any], folder: Path = CHARTS) -> Path:
    """Hot nodes over the scored day: off and each contender as it ships (upstream's first tie seed)."""
    from benchmarks.quality_chart import bucket_means, hot_nodes_svg

    hours = scenario.get("scoredHours", scenario["hours"])
    lines = [
        (LABELS[key], bucket_means(scenario["runs"][key]["hotSeries"], hours, CHART_BUCKET_HOURS))
        for key in LABELS
        if key in scenario["runs"]
    ]
    title = f"{scenario['name']}: {scenario['nodes']} nodes, {scenario['pods']} pods, seed {scenario['seed']}"
    path = folder / chart_name(scenario)
    path.write_text(hot_nodes_svg(title, hours, lines))
    return path


def write_curve_chart(scenario: dict[str, Any], folder: Path = CHARTS) -> Path:
    """Evictions against hot-node-minutes over the scored day: a curve per contender along its knob,
    its shipped default marked."""
    from benchmarks.quality_chart import curves_svg

    lines = []
    for (base, kind), points in curves(scenario["runs"]).items():
        default = shipped(base, TIE_SEEDS[0]).name
        lines.append(
            (
                f"{SHORT[base]}: {kind}",
                [
                    (run["evictions"], run["hotNodeMinutes"], _knob_text(kind, run), name == default)
                    for name, run in points
                ],
            )
        )
    title = f"{scenario['name']}: churn against heat, day 2 (shipped defaults filled)"
    path = folder / curve_chart_name(scenario)
    path.write_text(curves_svg(title, lines))
    return path


def _knob_text(kind: str, run: dict[str, Any]) -> str:
    """The value of a curve's knob at one of its points (the shipped point has none of its own)."""
    if kind == "schedule":
        return f"{run['seconds'] / 60:g}m"
    if run.get("knob") is not None:
        return str(run["knob"])
    return "none" if kind == "maxEvictionsPerHour" else str(SHIPPED_KNOB[run["base"]])


def _row(scenario_label: str, label: str, run: dict[str, Any], off: bool = False) -> list[str]:
    def figure(key: str, text: Callable[[Any], str]) -> str:
        if off:
            return "—"
        low, high = run.get("ranges", {}).get(key, (None, None))
        spread = f" ({text(low)}–{text(high)})" if low is not None and low != high else ""
        return text(run[key]) + spread

    ratio = run.get("ratio")
    return [
        scenario_label,
        label,
        figure("evictions", lambda v: f"{v:g}"),
        "—" if off or "day1Evictions" not in run else figure("day1Evictions", lambda v: f"{v:g}"),
        "—" if off or ratio is None else f"{ratio:.2f}×",
        f"{run['hotNodeMinutes']:.0f}"
        + (
            f" ({run['ranges']['hotNodeMinutes'][0]:.0f}–{run['ranges']['hotNodeMinutes'][1]:.0f})"
            if "ranges" in run and run["ranges"]["hotNodeMinutes"][0] != run["ranges"]["hotNodeMinutes"][1]
            else ""
        ),
        f"{run['worstP99']:.0%}",
        figure("pingPong", lambda v: f"{v:g}"),
        figure("failedOrAborted", lambda v: f"{v:g}"),
        figure("movedMoreThanOnce", lambda v: f"{v:g}"),
        "—"
        if off or run.get("unreadyPodSecondsPerMove") is None
        else figure("unreadyPodSecondsPerMove", lambda v: f"{v:.0f}"),
        "—" if off else str(run["limitViolations"]),
    ]


HEADER = [
    "scenario",
    "contender (cycle)",
    "evictions",
    "evictions on day 1",
    "÷ minimum",
    "hot-node-minutes",
    "worst node p99",
    "ping-pong",
    "failed/aborted",
    "moved > once",
    "unready pod-s / move",
    "limit violations",
]


CONSTRAINED_HEADER = [
    "scenario",
    "contender (cycle)",
    "evictions",
    "by rule",
    "failed jobs",
    "stranded > 60 s",
    "back to source",
    "hot-node-minutes",
    "ping-pong",
]


def constrained_rows(scenario: dict[str, Any]) -> list[list[str]]:
    """The constrained table's rows of a scenario whose runs counted evictions by rule ([] otherwise)."""
    runs = scenario["runs"]
    if not any("evictionsByRule" in run for run in runs.values()):
        return []
    rows = []
    for key in ("ours", *PEERS):
        if key not in runs:
            continue
        row = grouped(runs, key)
        members = [run for name, run in runs.items() if name == key or name.startswith(f"{key}#")]
        rules = Counter[str]()
        failed = Counter[str]()
        for run in members:
            rules.update(run.get("evictionsByRule", {}))
            failed.update(run.get("failures", {}))
        per = len(members)
        by_rule = ", ".join(f"{rule} {count / per:g}" for rule, count in sorted(rules.items())) or "—"
        failures = ", ".join(f"{reason} {count}" for reason, count in sorted(failed.items())) or "0"
        ranges = row.get("ranges", {})

        def figure(name: str, run: dict[str, Any] = row, spans: dict[str, Any] = ranges) -> str:
            low, high = spans.get(name, (None, None))
            spread = f" ({low:g}–{high:g})" if low is not None and low != high else ""
            return f"{run.get(name, 0):g}{spread}"

        rows.append(
            [
                scenario["name"],
                f"{LABELS[key]} ({_cycle(SHIPPED_SECONDS[key])}{_tie_orders(key, row)})",
                figure("evictions"),
                by_rule,
                failures,
                figure("stranded"),
                figure("backToSource"),
                f"{row['hotNodeMinutes']:.0f}",
                figure("pingPong"),
            ]
        )
    return rows


def _cycle(seconds: float) -> str:
    return f"{seconds:g} s" if seconds < 60 else f"{seconds / 60:g} min"


def _tie_orders(key: str, row: dict[str, Any]) -> str:
    """How many of upstream's tie orders a row is the median of (`grouped`)."""
    if not key.startswith("lnu"):
        return ""
    seeds = row.get("seeds", 1)
    return f", median of {seeds} tie orders" if seeds > 1 else ", one tie order"


def render_quality(run: dict[str, Any]) -> str:
    """The tables for RESULTS.md: every contender as it ships, every peer on one 1-min cycle, the curves'
    points; with a picture per scenario."""
    from benchmarks.run import markdown_table
    from benchmarks.scenarios import describe

    shipped_rows, uniform_rows, curve_rows, pictures = [], [], [], []
    rule_rows: list[list[str]] = []
    for s in run.get("scenarios", []):
        runs = s["runs"]
        rule_rows += constrained_rows(s)
        minimum = runs["off"]["minimum"]
        floor = runs["off"].get("reactionFloor")
        label = (
            f"{s['name']} ({s['pods']} pods, minimum {minimum['moves']}{'' if minimum['exact'] else ' ≥'}"
            f"{'' if floor is None else f', reaction floor {floor}'})"
        )
        for key in LABELS:
            if key in runs:
                row = grouped(runs, key)
                row_label = f"{LABELS[key]} ({_cycle(SHIPPED_SECONDS[key])}{_tie_orders(key, row)})"
                shipped_rows.append(_row(label, row_label, row, off=key == "off"))
        for key in ("ours", *PEERS):
            name = key if SHIPPED_SECONDS[key] == UNIFORM_SECONDS else f"{key}@{UNIFORM_SECONDS:g}s"
            if name in runs:
                row = grouped(runs, name)
                uniform_rows.append(
                    _row(label, f"{LABELS[key]} ({_cycle(UNIFORM_SECONDS)}{_tie_orders(key, row)})", row)
                )
        for (base, kind), points in curves(runs).items():
            for name, point in points:
                text = f"{LABELS[base]}: {kind} {_knob_text(kind, point)}"
                curve_rows.append(_row(label, text + (" (shipped)" if name == shipped(base, 1).name else ""), point))
        missed = "; ".join(s.get("missed", [])) or "all targets met"
        curve = f", [curve]({curve_chart_name(s)})" if curves(runs) else ""
        pictures.append(f"- [{s['name']}]({chart_name(s)}){curve}: {missed}")
    text = [
        "#### Every contender as it ships (day 2 of 2)",
        "",
        markdown_table(HEADER, shipped_rows),
        "",
    ]
    if uniform_rows:
        text += [
            "#### Every contender on the same 1-min cycle (day 2 of 2)",
            "",
            markdown_table(HEADER, uniform_rows),
            "",
        ]
    if curve_rows:
        text += ["#### The curves' points (day 2 of 2)", "", markdown_table(HEADER, curve_rows), ""]
    if rule_rows:
        text += [
            "#### Moves under kube-scheduler's hard rules (constrained scenarios, day 2 of 2)",
            "",
            markdown_table(CONSTRAINED_HEADER, rule_rows),
            "",
            "Evicted pods by the rule they are under (spread: zone topology spread; zonal and local: a "
            "PersistentVolume with a zone or node affinity; hostport: a hostPort), failed jobs by their reason, "
            f"replacements Pending more than {STRANDED_SECONDS:g} s after their creation (or their eviction, if "
            "later) until bound or the run's end (stranded), and replacements bound back on the node their pod "
            "was evicted from. Upstream's row is the median over its tie orders; its failed jobs, the sum.",
            "",
        ]
    text += [
        "Hot nodes over the scored day, one line per contender as it ships, and churn against heat where swept "
        "(with the targets each scenario missed):",
        "",
        *pictures,
        "",
        "Two simulated days from 00:00 UTC; the second is scored (evictions, moves and hot-node-minutes from "
        "24 h on; the hindsight minimum over its cycles). Each contender runs on its shipped cycle (ours 60 s, "
        "upstream's Helm CronJob every 2 min, koord-descheduler 10 s; off plans every 10 min for the minimum) "
        "and reads metrics as they are published: metrics.k8s.io every 15 s, a cpu value the mean over the "
        "last 15 s (ours, upstream); Koordinator's NodeMetric every 60 s, each value the mean over the last "
        "300 s. The cluster steps on the traces' 5-min grid and at every cycle (every 10 s while a move is in "
        "flight); quiet cycles of the peers (nothing planned, their state unchanged, nothing published since) "
        "are counted without running. Thresholds for every contender: low "
        f"{_flow(LOW)}, high {_flow(HIGH)} percent (on usage for ours, Koordinator and LNU metrics; on requests "
        "for LNU requests); at most 20% of the nodes' count in evictions a cycle and 2 per node; minReplicas 1. "
        "Upstream's rows are the median over 3 tie orders of its unstable victim sort (range in brackets). "
        "Hot-node-minutes and the worst node's p99 are measured on the kubelet's usage. The minimum is a lower "
        "bound (module docstring of benchmarks/quality.py). The reaction floor is, per node, the hot-node-minutes "
        "of the off run from its first time above high until off's next cycle.",
        "",
        "What is real and what is derived in each scenario family (benchmarks/scenarios.py):",
        "",
        *(f"- {describe(family)}" for family in dict.fromkeys(s["family"] for s in run.get("scenarios", []))),
    ]
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", nargs="*", default=["bitbrains"], help="one or more families")
    parser.add_argument("--nodes", type=int, nargs="*", default=[50], help="one or more sizes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hours", type=float, default=HOURS, help="the last 24 are scored")
    parser.add_argument("--only", nargs="*", default=(), help="contender keys (off always runs)")
    parser.add_argument("--ours-args", default="", help='YAML lines for ours\' LowNodeLoad args ("reliefDepth: 0")')
    parser.add_argument(
        "--no-uniform", action="store_true", help="without the table on one 1-min cycle (run at 50 nodes only)"
    )
    parser.add_argument("--sweep", type=int, nargs="*", default=[], help="sizes at which to sweep the knobs")
    parser.add_argument(
        "--runs",
        nargs="+",
        metavar="NAME",
        help="exactly these runs, one after another (lnuMetrics#3, koordinator@60s, ours~8%%; off always runs)",
    )
    parser.add_argument("--save", type=Path, metavar="JSON", help="also write the results there (compact JSON)")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="combine earlier runs' JSON (of two runs of a name, the one measured later) instead of running",
    )
    parser.add_argument(
        "--record-section",
        action="store_true",
        help="with --merge of constrained scenarios' runs: store them as a section of their own of RESULTS.md",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="with --merge: store the merge as the quality benchmark's result in results.json and render RESULTS.md",
    )
    args = parser.parse_args()
    if (args.record or args.record_section) and not args.merge:
        parser.error("--record and --record-section store a merge: name the saved runs with --merge")
    configure_logging("warning")  # on stderr, so stdout is the JSON and the table
    if args.merge:
        decoder = json.JSONDecoder()
        run = merge_results([decoder.raw_decode(path.read_text())[0] for path in args.merge])  # JSON, then tables
    elif args.runs:
        try:
            specs = [run_spec(name) for name in args.runs]
        except ValueError as err:
            parser.error(str(err))
        specs = [shipped("off"), *(spec for spec in specs if spec.base != "off")]
        run = summary(
            [
                run_scenario(family, nodes, args.seed, args.hours, ours_args=args.ours_args, runs=specs)
                for family in args.family
                for nodes in args.nodes
            ]
        )
    else:
        run = run_quality(
            args.family,
            args.nodes,
            args.seed,
            args.hours,
            args.only,
            args.ours_args,
            uniform_sizes=() if args.no_uniform else UNIFORM_SIZES,
            sweep_sizes=args.sweep,
        )
    if args.record or args.record_section:
        from benchmarks.run import RESULTS_JSON, RESULTS_MD

        (record if args.record else record_section)(run, RESULTS_JSON, RESULTS_MD)
    if args.save:
        save_document(run, args.save, measured_now=not args.merge)
    print(json.dumps(run, indent=1, default=str))
    print(render_quality(run))


if __name__ == "__main__":
    main()
