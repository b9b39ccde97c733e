"""Quality on skewed clusters built from the public traces, over a simulated day.

    .venv/bin/python -m benchmarks.quality [--nodes 20 --seed 1 ...]     # print one scenario's results
    .venv/bin/python -m benchmarks.run quality                          # all scenarios, into RESULTS.md

Each scenario (descheduler/fakecluster/traces.py: sampled Alibaba openb nodes and their share of pods,
packed first-fit so some nodes are full and others empty; cpu follows the Alibaba 2018 diurnal
curve, memory the GenAI per-pod series) runs three times through `Simulation` (the real cache,
planning loop, executor and migration controller against the simulated API server):

- off: the same policy in dryRun (nothing moves): hot-node-minutes without the descheduler;
- ours: LowNodeLoad (load-aware, per-target accounting, ReservationFirst), the load-aware scheduler;
- baseline: upstream-like LowNodeUtilization (benchmarks/baseline.py: requests, pooled headroom,
  EvictDirectly) with a spread-scoring scheduler that knows nothing of load.

Measured from the outside (ground truth: the simulated kubelet's per-pod usage, sampled every
migration period): hot-node-minutes (nodes above the high threshold of cpu 70% or memory 80%, times
minutes), moves made (pods evicted), ping-pong (a moved pod's replacement lands on a node that is
hot at the next cycle, or a replacement is moved again), and the minimum moves needed: for each
cycle of the off run, an integer program (scipy's HiGHS) finds the fewest pods to move from the
initial placement so every node is ≤ high on cpu and memory usage and every target still fits the
moved pods' requests; the largest of these over the day is the minimum (any run that keeps every
node ≤ high at that cycle has moved at least that many pods).
"""

from __future__ import annotations

import argparse
import json
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from benchmarks.baseline import baseline_policy_text, register_baseline, use_spread_scheduler
from descheduler.controller.cycle import CycleResult
from descheduler.eligibility import eviction_refusal
from descheduler.fakecluster.scenario import LoadedScenario, Timing
from descheduler.fakecluster.traces import trace_scenario
from descheduler.policy import Policy, parse_policy
from descheduler.quantity import to_units
from descheduler.simulate.record import SimulationRecord
from descheduler.simulate.runner import Simulation, SimulationOptions
from descheduler.snapshot import Snapshot

DAY = 86_400
START = datetime(2026, 1, 15, 0, 0, tzinfo=UTC)  # midnight UTC: the trace's cpu curve peaks around 06:00
LOW = {"cpu": 45.0, "memory": 55.0}
HIGH = {"cpu": 70.0, "memory": 80.0}
INTERVAL_MINUTES = 10
TICK_SECONDS = 30.0
MIGRATION_PERIOD = 60.0
# (name, trace nodes, seed): small enough for an exact integer program, a day in a few minutes.
SCENARIOS: tuple[tuple[str, int, int], ...] = (("openb-20-s1", 20, 1), ("openb-30-s4", 30, 4))

LIMITS = """
evictor: {minReplicas: 1}
limits: {maxEvictionsPerCycle: 10, maxEvictionsPerNode: 2}
"""


def _flow(values: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in values.items()) + "}"


def ours_policy(dry_run: bool = False) -> Policy:
    return parse_policy(
        f"""
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {INTERVAL_MINUTES}m
dryRun: {"true" if dry_run else "false"}
strategies:
- name: LowNodeLoad
  args:
    lowThresholds: {_flow(LOW)}
    highThresholds: {_flow(HIGH)}
"""
        + LIMITS
    )


def baseline_policy() -> Policy:
    register_baseline()
    text = (
        baseline_policy_text(f"{INTERVAL_MINUTES}m", LOW, HIGH) + LIMITS + "migration: {defaultMode: EvictDirectly}\n"
    )
    return parse_policy(text)


def coarse(loaded: LoadedScenario, tick: float = TICK_SECONDS) -> LoadedScenario:
    """The scenario with coarser simulated ticks (a day in minutes of wall time)."""
    timing = Timing(tickSeconds=tick, reportIntervalSeconds=60, startDelaySeconds=1.0, readyDelaySeconds=5.0)
    scenario = loaded.scenario.model_copy(update={"timing": timing})
    return LoadedScenario(scenario=scenario, objects=loaded.objects, source=loaded.source)


# ------------------------------------------------------------------ observing a run


@dataclass(slots=True)
class SeenPod:
    key: str
    node: str
    owner: str
    created: float
    bound: float  # seconds since the run began, when first seen bound


class QualityRecord(SimulationRecord):
    """Keeps every cycle's snapshot when asked (the off run: the integer programs need them)."""

    keep: bool = False
    snapshots: list[tuple[float, Snapshot]]

    def on_cycle(self, now: float, result: CycleResult) -> None:
        super().on_cycle(now, result)
        if self.keep and result.snapshot is not None:
            self.snapshots.append((now - self.began, result.snapshot))


class QualitySimulation(Simulation):
    """A Simulation that samples ground truth after every migration period: which nodes are hot by
    the kubelet's usage, and where every pod was first bound."""

    def __init__(self, scenario: LoadedScenario, policy: Policy, cycles: int, *, spread: bool, keep: bool) -> None:
        options = SimulationOptions(cycles=cycles, migration_period=MIGRATION_PERIOD, warmup_seconds=90.0)
        super().__init__(scenario, policy, options, start=START.timestamp())
        record = QualityRecord(policy, began=self.cluster.now)
        record.keep, record.snapshots = keep, []
        self.record = record
        if spread:
            use_spread_scheduler(self.cluster)
        self.samples: list[tuple[float, frozenset[str]]] = []
        self.seen: dict[str, SeenPod] = {}
        overhead = scenario.scenario.usage.overhead_units()
        self._overhead = (overhead.get("cpu", 0), overhead.get("memory", 0))
        self._limit: dict[str, tuple[float, float]] = {}
        for obj in scenario.objects:
            if obj.get("kind") == "Node":
                allocatable = obj["status"]["allocatable"]
                self._limit[obj["metadata"]["name"]] = (
                    to_units("cpu", allocatable["cpu"]) * HIGH["cpu"] / 100,
                    to_units("memory", allocatable["memory"]) * HIGH["memory"] / 100,
                )

    def _observe(self) -> None:
        super()._observe()
        elapsed = self.cluster.now - self.record.began
        used = {name: [self._overhead[0], self._overhead[1]] for name in self._limit}
        for usage in self.cluster.kubelet.usage.values():
            if usage.node in used:
                used[usage.node][0] += usage.cpu
                used[usage.node][1] += usage.memory
        hot = frozenset(n for n, (cpu, mem) in used.items() if cpu > self._limit[n][0] or mem > self._limit[n][1])
        self.samples.append((elapsed, hot))
        for pod in self.cluster.store.list("pods"):
            meta = pod["metadata"]
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or meta.get("uid") in self.seen:
                continue
            owner = next((r.get("uid", "") for r in meta.get("ownerReferences") or [] if r.get("controller")), "")
            created = _seconds(meta.get("creationTimestamp"), self.record.began)
            self.seen[meta["uid"]] = SeenPod(
                f"{meta['namespace']}/{meta['name']}", node, owner, created if created is not None else 0.0, elapsed
            )

    def hot_at(self, seconds: float) -> frozenset[str]:
        times = [t for t, _ in self.samples]
        i = bisect_right(times, seconds + 1e-6) - 1
        return self.samples[i][1] if i >= 0 else frozenset()

    def hot_node_minutes(self) -> float:
        return sum(len(hot) for _, hot in self.samples) * MIGRATION_PERIOD / 60

    def ping_pong(self) -> list[str]:
        """Moves whose replacement landed on a node hot (by usage) at the next cycle; replacements moved again."""
        found: list[str] = []
        cycle_times = [c.seconds for c in self.record.cycles]
        claimed: set[str] = set()
        replacements: dict[str, str] = {}  # replacement pod key -> the job that placed it
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
            if seen is None:
                continue
            claimed.add(new)
            replacements[seen.key] = name
            later = [t for t in cycle_times if t >= seen.bound]
            if later and seen.node in self.hot_at(later[0]):
                found.append(f"{name}: the replacement {seen.key} landed on {seen.node}, hot at the next cycle")
        for name, job in jobs:
            ref = (job.get("spec") or {}).get("podRef") or {}
            key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
            if key in replacements and replacements[key] != name and _evicted_at(job, self.record.began) is not None:
                found.append(f"{name}: moves {key} again, which {replacements[key]} had placed")
        return found


def _seconds(stamp: Any, began: float) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() - began


def _evicted_at(job: dict[str, Any], began: float) -> float | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Evicted" and condition.get("status") == "True":
            return _seconds(condition.get("lastTransitionTime"), began)
    return None


# ------------------------------------------------------------------ the minimum number of moves


@dataclass(slots=True)
class Minimum:
    moves: int | None  # None: no placement brings every node ≤ high
    at_seconds: float = 0.0
    exact: bool = True
    cycles_solved: int = 0
    hot_nodes: int = 0
    notes: list[str] = field(default_factory=list)


def minimum_moves(snapshot: Snapshot, policy: Policy, time_limit: float = 60.0) -> tuple[int | None, bool]:
    """The fewest pods to move so every node is ≤ HIGH on cpu and memory usage, each moved pod's
    requests fitting its target (an integer program). (moves, proven optimal); (None, True) when
    no placement can do it; (0, True) when no node is hot."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # type: ignore[import-untyped]
    from scipy.sparse import lil_matrix  # type: ignore[import-untyped]

    nodes = [n for n in snapshot.nodes]
    index = {n.name: i for i, n in enumerate(nodes)}
    measured = ("cpu", "memory")
    limit = np.array([[(n.allocatable.get(r) or 0) * HIGH[r] / 100 for r in measured] for n in nodes])
    used = np.array(
        [
            [(snapshot.node_usage[n.name].usage.get(r) or 0) if n.name in snapshot.node_usage else 0 for r in measured]
            for n in nodes
        ],
        dtype=np.float64,
    )
    if not (used > limit).any():
        return 0, True
    request_names = sorted({r for n in nodes for r in n.allocatable})
    alloc = np.array([[n.allocatable.get(r, 0) for r in request_names] for n in nodes], dtype=np.float64)
    requested = np.zeros_like(alloc)
    pods = [p for p in snapshot.pods if p.node_name in index and not p.terminal]
    for pod in pods:
        requested[index[pod.node_name]] += [1 if r == "pods" else pod.requests.get(r) or 0 for r in request_names]
    movable = [
        p
        for p in pods
        if p.key in snapshot.pod_usage and eviction_refusal(p, snapshot, policy.evictor, snapshot.now) is None
    ]
    targets = [i for i, n in enumerate(nodes) if n.ready and not n.unschedulable]
    variables = [(k, t) for k, p in enumerate(movable) for t in targets if t != index[p.node_name]]
    if not variables:
        return None, True
    usage = np.array([[snapshot.pod_usage[p.key].usage.get(r) or 0 for r in measured] for p in movable], float)
    req = np.array([[1 if r == "pods" else p.requests.get(r) or 0 for r in request_names] for p in movable], float)
    n_nodes, n_vars = len(nodes), len(variables)
    rows = len(movable) + n_nodes * (len(measured) + len(request_names))
    a = lil_matrix((rows, n_vars))
    upper = np.zeros(rows)
    for j, (k, t) in enumerate(variables):
        a[k, j] = 1  # each pod moves at most once
        source = index[movable[k].node_name]
        base = len(movable)
        for r in range(len(measured)):
            a[base + source * len(measured) + r, j] -= usage[k, r]
            a[base + t * len(measured) + r, j] += usage[k, r]
        base = len(movable) + n_nodes * len(measured)
        for r in range(len(request_names)):
            a[base + source * len(request_names) + r, j] -= req[k, r]
            a[base + t * len(request_names) + r, j] += req[k, r]
    upper[: len(movable)] = 1
    base = len(movable)
    upper[base : base + n_nodes * len(measured)] = (limit - used).ravel()
    base += n_nodes * len(measured)
    upper[base:] = np.maximum(alloc - requested, 0).ravel()
    result = milp(
        c=np.ones(n_vars),
        constraints=LinearConstraint(a.tocsr(), -np.inf, upper),
        integrality=np.ones(n_vars),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    if result.status == 2:  # infeasible
        return None, True
    if result.x is None:
        bound = getattr(result, "mip_dual_bound", None)
        return (int(np.ceil(bound - 1e-6)) if bound is not None else None), False
    return round(result.fun), result.status == 0


def day_minimum(snapshots: list[tuple[float, Snapshot]], policy: Policy) -> Minimum:
    """The largest per-cycle minimum over the day (cycles with the same hot set and load shape are
    solved once per distinct hot set)."""
    best = Minimum(moves=0)
    for seconds, snapshot in snapshots:
        moves, exact = minimum_moves(snapshot, policy)
        best.cycles_solved += 1
        if moves is None:
            best.notes.append(f"cycle at {seconds / 3600:.1f} h: no placement brings every node ≤ high")
            continue
        if best.moves is None or moves > best.moves:
            best.moves, best.at_seconds, best.exact = moves, seconds, exact
    return best


# ------------------------------------------------------------------ running a scenario


def run_one(loaded: LoadedScenario, policy: Policy, cycles: int, *, spread: bool, keep: bool) -> dict[str, Any]:
    started = time.perf_counter()
    simulation = QualitySimulation(loaded, policy, cycles, spread=spread, keep=keep)
    record = simulation.run()
    ping_pong = simulation.ping_pong()
    out: dict[str, Any] = {
        "moves": record.moves_made(),
        "jobs": record.phases(),
        "pingPong": len(ping_pong),
        "pingPongDetails": ping_pong[:10],
        "hotNodeMinutes": simulation.hot_node_minutes(),
        "peakHotNodes": max((len(h) for _, h in simulation.samples), default=0),
        "limitViolations": len(set(record.limit_violations)),
        "orphanReservations": len(record.orphan_reservations),
        "wallSeconds": round(time.perf_counter() - started, 1),
    }
    if keep:
        assert isinstance(record, QualityRecord)
        minimum = day_minimum(record.snapshots, policy)
        out["minimum"] = {
            "moves": minimum.moves,
            "atHours": round(minimum.at_seconds / 3600, 2),
            "exact": minimum.exact,
            "cyclesSolved": minimum.cycles_solved,
            "notes": minimum.notes[:5],
        }
    return out


def run_scenario(name: str, nodes: int, seed: int, hours: float = 24.0) -> dict[str, Any]:
    loaded = coarse(trace_scenario(nodes=nodes, seed=seed))
    cycles = int(hours * 60 / INTERVAL_MINUTES)
    off = run_one(loaded, ours_policy(dry_run=True), cycles, spread=False, keep=True)
    ours = run_one(loaded, ours_policy(), cycles, spread=False, keep=False)
    baseline = run_one(loaded, baseline_policy(), cycles, spread=True, keep=False)
    minimum = off["minimum"]["moves"]
    for run in (ours, baseline):
        run["ratio"] = round(run["moves"] / minimum, 3) if minimum else None
    pods = sum(1 for o in loaded.objects if o.get("kind") == "Pod")
    return {
        "name": name,
        "nodes": nodes,
        "pods": pods,
        "seed": seed,
        "hours": hours,
        "off": off,
        "ours": ours,
        "baseline": baseline,
    }


def run_quality() -> dict[str, Any]:
    """Every scenario; the flat metrics the runner's table shows, and the scenarios for the detail."""
    scenarios = [run_scenario(name, nodes, seed) for name, nodes, seed in SCENARIOS]
    ratios = {k: [s[k]["ratio"] for s in scenarios if s[k]["ratio"] is not None] for k in ("ours", "baseline")}
    return {
        "ours_ratio": max(ratios["ours"], default=0.0),
        "baseline_ratio": max(ratios["baseline"], default=0.0),
        "ours_ping_pong": sum(s["ours"]["pingPong"] for s in scenarios),
        "baseline_ping_pong": sum(s["baseline"]["pingPong"] for s in scenarios),
        "scenarios": scenarios,
    }


def render_quality(run: dict[str, Any]) -> str:
    """The side-by-side table for RESULTS.md."""
    header = [
        "scenario",
        "run",
        "moves made",
        "minimum needed",
        "moves ÷ minimum",
        "ping-pong",
        "hot-node-minutes",
        "peak hot nodes",
        "limit violations",
    ]
    rows = []
    for s in run.get("scenarios", []):
        minimum = s["off"]["minimum"]
        shown = (
            "—"
            if minimum["moves"] is None
            else f"{minimum['moves']}" + ("" if minimum["exact"] else " (≥, time limit)")
        )
        for label, key in (
            ("descheduler off", "off"),
            ("ours (LowNodeLoad)", "ours"),
            ("baseline (LowNodeUtilization)", "baseline"),
        ):
            r = s[key]
            ratio = r.get("ratio")
            rows.append(
                [
                    f"{s['name']} ({s['nodes']} nodes, {s['pods']} pods)",
                    label,
                    str(r["moves"]),
                    shown if key != "off" else f"{shown} (at {minimum['atHours']:.1f} h)",
                    "—" if key == "off" or ratio is None else f"{ratio:.2f}×",
                    "—" if key == "off" else str(r["pingPong"]),
                    f"{r['hotNodeMinutes']:.0f}",
                    str(r["peakHotNodes"]),
                    "—" if key == "off" else str(r["limitViolations"]),
                ]
            )
    from benchmarks.run import markdown_table

    text = [
        "#### Side by side: descheduler off, ours, and the upstream-like baseline",
        "",
        markdown_table(header, rows),
        "",
        f"A simulated day from 00:00 UTC, one cycle every {INTERVAL_MINUTES} min, the cluster ticking every "
        f"{TICK_SECONDS:g} s, the migration controller every {MIGRATION_PERIOD:g} s. Thresholds: low "
        f"{_flow(LOW)}, high {_flow(HIGH)} percent — on usage for ours, on requests for the baseline. Both: "
        "at most 10 evictions a cycle and 2 per node, minReplicas 1 (every trace pod is its own one-replica "
        "ReplicaSet). Hot-node-minutes: nodes above the high threshold by the kubelet's real usage, sampled "
        "every minute. Minimum needed: the largest, over the cycles of the off run, of the exact integer-program "
        "minimum of pods to move from the initial placement so every node is ≤ high (targets must fit the "
        "moved pods' requests).",
    ]
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hours", type=float, default=24.0)
    args = parser.parse_args()
    result = run_scenario(f"openb-{args.nodes}-s{args.seed}", args.nodes, args.seed, args.hours)
    print(json.dumps(result, indent=1))
    print(render_quality({"scenarios": [result]}))


if __name__ == "__main__":
    main()
