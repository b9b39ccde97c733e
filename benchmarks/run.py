"""Run the benchmarks of testing.md §4 several times each and write `benchmarks/RESULTS.md`.

    .venv/bin/python -m benchmarks.run                 # every benchmark (~15 min on 2 cores)
    .venv/bin/python -m benchmarks.run planning-5000 extender --runs 2
    python benchmarks/run.py --list

Every repetition runs in a fresh subprocess (`--child NAME`), so its peak RSS (ru_maxrss) is its
own and no cache, GC state or allocator arena carries over. The child prints one JSON object:
metric key -> a number, or a list of samples (e.g. one per planning cycle it timed). The runner
pools the samples of all repetitions and reports median and min–max against the target.
Results are kept in `benchmarks/results.json`; naming some benchmarks re-runs only those and
re-renders RESULTS.md with the others' last results.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python benchmarks/run.py`: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_planning import LIMITS, POLICY

HERE = Path(__file__).resolve().parent
RESULTS_MD = HERE / "RESULTS.md"
RESULTS_JSON = HERE / "results.json"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
CHILD_TIMEOUT = 3600  # a child's own children (the controller process of the cache benchmark)

Sample = float | list[float]


@dataclass(frozen=True, slots=True)
class Metric:
    """One row of a benchmark's table: a key of the child's JSON, how to show it, and its target."""

    key: str
    label: str
    unit: str
    target: tuple[str, float] | None = None  # ("<=" | ">=", value)
    digits: int = 2

    def met(self, value: float) -> bool | None:
        if self.target is None:
            return None
        op, bound = self.target
        return value <= bound if op == "<=" else value >= bound

    def target_text(self) -> str:
        if self.target is None:
            return "—"
        op, bound = self.target
        return f"{'≤' if op == '<=' else '≥'} {_number(bound, self.digits)} {self.unit}".strip()


@dataclass(frozen=True, slots=True)
class Benchmark:
    name: str
    title: str
    runs: int  # default repetitions (fewer for the heaviest)
    metrics: tuple[Metric, ...]
    child: Callable[[], dict[str, Sample]]
    note: str = ""
    extra: Callable[[list[dict[str, Any]]], str] | None = field(default=None)  # more Markdown from the raw runs
    timeout: float = 3600.0  # seconds a child process may take (the scaling benchmark runs eight children of its own)


# ------------------------------------------------------------------ statistics and the table


def pooled(runs: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    """Every sample of `key` over the runs (a run may give one number or a list)."""
    out: list[float] = []
    for run in runs:
        value = run.get(key)
        if isinstance(value, list):
            out += [float(v) for v in value]
        elif isinstance(value, int | float):
            out.append(float(value))
    return out


def _number(value: float, digits: int) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def metric_row(metric: Metric, samples: Sequence[float]) -> list[str]:
    if not samples:
        return [metric.label, "—", "—", metric.target_text(), "not measured"]
    median = statistics.median(samples)
    spread = f"{_number(min(samples), metric.digits)}–{_number(max(samples), metric.digits)}"
    met = metric.met(median)
    verdict = "—" if met is None else ("met" if met else "**missed**")
    unit = f" {metric.unit}" if metric.unit else ""
    return [metric.label, f"{_number(median, metric.digits)}{unit}", spread, metric.target_text(), verdict]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def benchmark_section(bench: Benchmark, entry: Mapping[str, Any]) -> str:
    runs: list[dict[str, Any]] = entry.get("runs", [])
    header = ["metric", "median", "min–max", "target", "verdict"]
    rows = [metric_row(m, pooled(runs, m.key)) for m in bench.metrics]
    samples = max((len(pooled(runs, m.key)) for m in bench.metrics), default=0)
    lines = [
        f"### {bench.title} (`{bench.name}`)",
        "",
        f"{len(runs)} run(s), each in a fresh process; {samples} sample(s) pooled per metric"
        f"{' (fewer runs for the heaviest benchmarks)' if bench.runs < 3 else ''}. Measured {entry.get('date', '?')}.",
        "",
        markdown_table(header, rows),
    ]
    if bench.note:
        lines += ["", bench.note]
    if bench.extra is not None and runs:
        lines += ["", bench.extra(runs)]
    if entry.get("error"):
        lines += ["", f"**Failed**: {entry['error']}"]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load": [round(v, 2) for v in load],
        "commit": commit,
    }


def render(results: Mapping[str, Any], benchmarks: Sequence[Benchmark]) -> str:
    """RESULTS.md from the stored results (pure: a smoke test renders a tiny one)."""
    info = results.get("machine", {})
    parts = [
        "# Benchmark results",
        "",
        "Written by `.venv/bin/python -m benchmarks.run` (see `benchmarks/README.md`); targets from "
        "`shared/design/testing.md` §4. Medians decide met/missed; the range shows the spread over runs.",
        "",
        f"- machine: {info.get('cores', '?')} cores, Python {info.get('python', '?')}, {info.get('platform', '?')}",
        f"- last run: {info.get('date', '?')} at commit {info.get('commit') or '?'}; load average when it began "
        f"{', '.join(str(v) for v in info.get('load', []))} (the machine is shared: wall times are inflated when "
        "it is busy, CPU seconds less so)",
        "",
    ]
    summary = []
    for bench in benchmarks:
        entry = results.get("benchmarks", {}).get(bench.name)
        if not entry:
            continue
        for metric in bench.metrics:
            samples = pooled(entry.get("runs", []), metric.key)
            if metric.target is not None and samples:
                row = metric_row(metric, samples)
                summary.append([f"{bench.title}: {metric.label}", row[1], row[3], row[4]])
    if summary:
        parts += ["## Summary", "", markdown_table(["benchmark", "median", "target", "verdict"], summary), ""]
    for bench in benchmarks:
        entry = results.get("benchmarks", {}).get(bench.name)
        if entry:
            parts += [benchmark_section(bench, entry), ""]
    extra = results.get("sections", {})
    for name in sorted(extra):
        parts += [extra[name], ""]
    return "\n".join(parts).rstrip() + "\n"


# ------------------------------------------------------------------ the benchmarks (children)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _size() -> tuple[int, int]:
    return int(os.environ.get("BENCH_NODES", "5000")), int(os.environ.get("BENCH_PODS", "150000"))


def child_decode() -> dict[str, Sample]:
    from benchmarks.bench_cache import bench_decode

    nodes, pods = _size()
    got = bench_decode(argparse.Namespace(nodes=nodes, pods=pods))
    return {k: got[k] for k in ("seconds", "cpu_seconds", "peak_rss_mib", "json_mib")}


def child_watch() -> dict[str, Sample]:
    from benchmarks.bench_cache import bench_events

    nodes, pods = _size()
    got = bench_events(argparse.Namespace(nodes=nodes, pods=pods, events=30_000))
    return {
        k: got[k] for k in ("events_per_second", "events_per_cpu_second", "snapshot_seconds", "first_snapshot_seconds")
    }


# bench_planning's LowNodeLoad policy and limits, with QuotaReclaim too.
PLANNING_POLICY = POLICY + "- name: QuotaReclaim\n  args: {}\nevictor: {minReplicas: 2}\n" + LIMITS


def cluster_load(cache: Any, now: datetime, hot_share: float = 0.1, seed: int = 7) -> Any:
    """A load reading for the cache's pods: pods on the first `hot_share` of nodes use 2.6× their
    cpu request (those nodes run ~75% cpu: hot), the others 0.6× (low)."""
    import random

    from descheduler.kube import NODES, PODS
    from descheduler.loadsource import LoadReading
    from descheduler.model import NodeUsage, PodUsage
    from descheduler.resources import Resources

    rng = random.Random(seed)
    names = sorted(n.name for n in cache.records(NODES))
    hot = set(names[: int(len(names) * hot_share)])
    stamp = now - timedelta(seconds=20)
    pod_usage, totals = {}, {name: [0, 0] for name in names}
    for pod in cache.records(PODS):
        factor = 2.6 if pod.node_name in hot else 0.6
        cpu = int((pod.requests.get("cpu") or 0) * factor * rng.uniform(0.8, 1.2))
        memory = int((pod.requests.get("memory") or 0) * 0.8 * rng.uniform(0.8, 1.2))
        pod_usage[pod.key] = PodUsage(
            namespace=pod.namespace,
            name=pod.name,
            timestamp=stamp,
            usage=Resources({"cpu": cpu, "memory": memory}),
            source="bench",
        )
        if pod.node_name in totals:
            totals[pod.node_name][0] += cpu
            totals[pod.node_name][1] += memory
    node_usage = {
        name: NodeUsage(
            node=name,
            timestamp=stamp,
            usage=Resources({"cpu": c + 300, "memory": m + 2**30}),
            source="bench",
            report_interval_seconds=60,
        )
        for name, (c, m) in totals.items()
    }
    return LoadReading(source="bench", read_at=now, node_usage=node_usage, pod_usage=pod_usage)


def quotas(namespaces: int = 50) -> dict[str, Any]:
    """One ElasticQuota per namespace of the generated pods (min/max generous: nothing to reclaim,
    but QuotaReclaim accounts every pod)."""
    from descheduler.model import ElasticQuota
    from descheduler.resources import Resources

    out = {}
    for i in range(namespaces):
        ns = f"team-{i:02d}"
        out[f"{ns}/{ns}"] = ElasticQuota(
            namespace=ns,
            name=ns,
            api_group="scheduling.sigs.k8s.io",
            min=Resources({"cpu": 500_000, "memory": 2000 * 2**30}),
            max=Resources({"cpu": 5_000_000, "memory": 20_000 * 2**30}),
        )
    return out


def child_planning() -> dict[str, Sample]:
    """One planning cycle from the list-watch cache: `cache.snapshot(now, reading)` + `plan_cycle`,
    LowNodeLoad + QuotaReclaim, with the default policy's limits; then `best_node` over every node."""
    import gc

    from benchmarks.bench_cache import fill_cache, offline_client
    from descheduler.kube import NODES, PODS, ClusterCache
    from descheduler.kube.kinds import KINDS, QUOTAS_SIGS
    from descheduler.plan_cycle import plan_cycle
    from descheduler.policy import parse_policy
    from descheduler.scheduling import ClusterView, best_node, build_table

    nodes, pods = _size()
    cycles = int(os.environ.get("BENCH_CYCLES", "5"))
    cache = ClusterCache(offline_client(), kinds=(NODES, PODS, QUOTAS_SIGS))
    fill_cache(cache, nodes, pods)
    cache.replace(KINDS[QUOTAS_SIGS], quotas(), {})
    gc.collect()
    policy = parse_policy(PLANNING_POLICY)
    wall, cpu, plan_only, moves = [], [], [], 0
    state: dict[str, Any] = {}
    for i in range(cycles + 1):  # the first cycle sorts the cache's pods once: not a steady-state cycle
        now = NOW + timedelta(seconds=60 * i)
        reading = cluster_load(cache, now)
        started, started_cpu = time.perf_counter(), time.process_time()
        snapshot = cache.snapshot(now, reading)
        mid = time.perf_counter()
        plan, state = plan_cycle(snapshot, policy, state)
        end, end_cpu = time.perf_counter(), time.process_time()
        if i:
            wall.append(end - started)
            cpu.append(end_cpu - started_cpu)
            plan_only.append(end - mid)
        moves = len(plan.migrations)
    table = build_table(snapshot, policy.scheduling)
    view = ClusterView(table)
    picks = snapshot.pods[:: max(len(snapshot.pods) // 200, 1)]
    best = []
    for pod in picks:
        started = time.perf_counter()
        best_node(pod, view, exclude=(pod.node_name,))
        best.append((time.perf_counter() - started) * 1000)
    return {
        "cycle_seconds": wall,
        "cycle_cpu_seconds": cpu,
        "plan_seconds": plan_only,
        "moves": moves,
        "best_node_ms": best,
        "peak_rss_mib": peak_rss_mib(),
    }


def child_extender() -> dict[str, Sample]:
    """In-process filter + prioritize pairs as kube-scheduler sends them (see bench_extender)."""
    import json as _json

    from benchmarks.bench_extender import Bodies, MemorySource, bound_event, bound_record, make_bodies, run_pairs
    from benchmarks.cluster import generated_snapshot
    from descheduler.extender import Extender, RefreshTiming
    from descheduler.policy import default_policy

    nodes, pods = _size()
    requests = int(os.environ.get("BENCH_REQUESTS", "800"))
    snapshot = generated_snapshot(nodes, pods)
    out: dict[str, Sample] = {}
    # "refresh": all names while the state is rebuilt back to back in the background (the source
    # changes all the time, as a cluster whose watch events stream in; build_share 1.0 is the worst case).
    for label, candidates in (("all", nodes), ("500", min(500, nodes)), ("refresh", nodes)):
        if label == "refresh" and os.environ.get("BENCH_EXTENDER_REFRESH", "1") == "0":
            continue
        bodies = make_bodies(snapshot, requests, candidates)
        extender = Extender(
            MemorySource(snapshot, changing=label == "refresh"),
            default_policy().scheduling,
            timing=RefreshTiming(interval=1.0, build_share=1.0),
        )
        extender.refresh(force=True)
        if label == "refresh":
            extender.start()
        rebuilds = _successful_rebuilds()
        events = [bound_event(_json.loads(p)) for p in bodies.pods]

        def bound(i: int, node: str, extender: Any = extender, events: list[bytes] = events) -> None:
            if node:
                extender.observe_binding(bound_record(events[i], node), node)

        run_pairs(Bodies(bodies.pods[:50], bodies.names[:50]), extender.filter, extender.prioritize, None)
        latencies, cpu = run_pairs(bodies, extender.filter, extender.prioritize, bound)
        extender.stop()
        ordered = sorted(latencies)
        out[f"{label}_p50_ms"] = statistics.median(ordered) * 1000
        out[f"{label}_p99_ms"] = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000
        out[f"{label}_pods_per_cpu_second"] = len(latencies) / cpu
        if label == "refresh":
            out["refresh_rebuilds"] = _successful_rebuilds() - rebuilds
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def _successful_rebuilds() -> float:
    from descheduler import metrics

    return metrics.REGISTRY.get_sample_value("descheduler_extender_refreshes_total", {"result": "success"}) or 0.0


def child_memory() -> dict[str, Sample]:
    """The fake API server (this process) holds the cluster and its NodeMetrics; the controller's
    parts run in a second process whose peak RSS is the measurement."""
    import gc
    import tempfile

    from benchmarks.bench_cache import realistic
    from benchmarks.fake_apiserver_load import nodes as node_objects
    from benchmarks.fake_apiserver_load import pods as pod_objects
    from descheduler.fakecluster.apiserver import FakeApiServer

    nodes, pods = _size()
    with FakeApiServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.store.load(realistic(node_objects(nodes)))
        server.store.load(realistic(pod_objects(pods, nodes)))
        server.store.load(node_metrics(nodes, pods))
        gc.freeze()
        kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        argv = [sys.executable, "-m", "benchmarks.run", "--controller", str(kubeconfig)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False, cwd=HERE.parent)
        if done.returncode != 0:
            raise RuntimeError(f"the controller process failed: {done.stderr[-2000:]}")
        result: dict[str, Sample] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def node_metrics(nodes: int, pods: int) -> Any:
    """Koordinator NodeMetrics for the generated pods (`fake_apiserver_load.pods` puts pod i on node
    i % nodes); the first 10% of nodes are hot."""
    from descheduler.fakecluster.apiserver.clock import rfc3339

    stamp = rfc3339(NOW.timestamp())
    per_node: list[list[dict[str, Any]]] = [[] for _ in range(nodes)]
    for i, pod in enumerate(_pod_names(pods)):
        per_node[i % nodes].append(pod)
    for n, members in enumerate(per_node):
        factor = 2.6 if n < nodes // 10 else 0.6
        cpu = int(300 * factor)
        entries = [
            {"namespace": ns, "name": name, "podUsage": {"resources": {"cpu": f"{cpu}m", "memory": "400Mi"}}}
            for ns, name in members
        ]
        yield {
            "apiVersion": "slo.koordinator.sh/v1alpha1",
            "kind": "NodeMetric",
            "metadata": {"name": f"node-{n:05d}"},
            "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60, "aggregateDurationSeconds": 300}},
            "status": {
                "updateTime": stamp,
                "nodeMetric": {
                    "nodeUsage": {
                        "resources": {"cpu": f"{cpu * len(members) + 300}m", "memory": f"{400 * len(members) + 1024}Mi"}
                    },
                    "systemUsage": {"resources": {"cpu": "300m", "memory": "1Gi"}},
                },
                "podsMetric": entries,
            },
        }


def _pod_names(pods: int) -> Any:
    from benchmarks.fake_apiserver_load import pods as pod_objects

    for obj in pod_objects(pods, 1):
        yield obj["metadata"]["namespace"], obj["metadata"]["name"]


def controller_process(kubeconfig: str) -> dict[str, Sample]:
    """What `descheduler run` holds at 5,000 nodes / 150,000 pods: the synced cache (every kind it
    watches, NodeMetrics included), one load reading, one snapshot and one plan."""
    from descheduler.kube import CLUSTER_KINDS, ClusterCache, connect
    from descheduler.loadsource import cache_kinds, reader_for
    from descheduler.plan_cycle import plan_cycle
    from descheduler.policy import parse_policy

    policy = parse_policy(PLANNING_POLICY + "loadSource: {type: nodeMetric}\n")
    kube = connect(kubeconfig, None, qps=0, burst=0, timeout=300)
    cache = ClusterCache(kube, kinds=(*CLUSTER_KINDS, *cache_kinds(policy.load_source)))
    started = time.perf_counter()
    cache.start()
    if not cache.wait_synced(CHILD_TIMEOUT):
        raise RuntimeError(f"cache not synced: {cache.not_ready()}")
    synced = time.perf_counter() - started
    rss_synced = peak_rss_mib()
    now = NOW + timedelta(seconds=30)
    started = time.perf_counter()
    reading = reader_for(policy.load_source, kube, cache).read(now)
    snapshot = cache.snapshot(now, reading)
    plan, _ = plan_cycle(snapshot, policy)
    cycle = time.perf_counter() - started
    result: dict[str, Sample] = {
        "sync_seconds": synced,
        "rss_synced_mib": rss_synced,
        "first_cycle_seconds": cycle,
        "moves": len(plan.migrations),
        "pods": len(snapshot.pods),
        "peak_rss_mib": peak_rss_mib(),
    }
    cache.stop()
    kube.close()
    return result


# What the quality figures say, written after reading them (benchmarks/quality.py explains the method).
QUALITY_NOTE = (
    "Every row is from the run of 2026-11-28 04:37 UTC (2,240 s on 2 cores, each contender's run a task for the "
    "next free core; a 300-node day: 48-153 s for off, up to 473 s for ours; the run of 2026-11-27 16:59 took "
    "3,460 s: the scheduler that places off's and upstream LNU's pods decoded every pod at every step, and the "
    "simulation's record indexed every pod at every step; upstream LNU metrics on bitbrains-diurnal-300 went from "
    "840 s to 341 s). It "
    "gives the same figures, to the minute, as the rows before it (the peers' from 2026-11-27 16:59, off's and "
    "ours' from 2026-11-27 22:56). Every "
    "contender's migration controller has evictBurst 10 (it passes every 10 s while moves are in flight; with the "
    "default burst of 1 its token bucket let one eviction through per pass), and the simulated kubelet reuses a "
    "pod's usage until its series steps. Ours runs its default policy: reliefDepth 0.25, recentPodsLast 1h, "
    "lookAhead 10m on the cluster's rise, targetCeiling high. The hindsight minimum is an integer program over "
    "the whole day (module docstring of benchmarks/quality.py).\n\n"
    'The per-cycle cap is 20% of the nodes for every contender (`maxEvictionsPerCycle: "20%"`): 10 at 50 nodes, '
    "as before, so the 50-node rows are the same as with a cap of 10; 60 at 300 nodes, where a cap of 10 left most "
    "of a ramp unrelieved (without a descheduler bitbrains-diurnal-300 has up to 83 nodes hot at once and openb-300 "
    "up to 105). Ours at 300 nodes (lookAhead off), cap 10 against 20% (evictions / hot-node-minutes / ping-pong):\n\n"
    "| cap | bitbrains-300 | bitbrains-diurnal-300 | genai-memory-300 | openb-300 |\n"
    "|---|---|---|---|---|\n"
    "| 10 | 535 / 3,710 / 21 | 471 / 4,668 / 21 | 57 / 600 / 0 | 71 / 2,781 / 0 |\n"
    "| **20%** | 566 / 3,214 / 36 | 534 / 3,433 / 48 | 57 / 160 / 0 | 145 / 739 / 0 |\n\n"
    "Hot-node-minutes fell by 13-73% for 0-104% more evictions; ping-pong rose from 21 to 36 and 48 (6.4% and 9.0% "
    "of ours' moves there). The peers moved with the cap too: upstream LNU in metrics mode evicts 1.2-2.2x as much "
    "at 300 nodes and is cooler in every scenario, still 1.25-34x ours' hot-node-minutes; in requests mode on "
    "openb-300 it now leaves 0 (720 with a cap of 10).\n\n"
    "Met: ours leaves the fewest hot-node-minutes of all contenders in the six scenarios where usage departs from "
    "requests (bitbrains, bitbrains-diurnal, genai-memory at both sizes), and no peer is as cool with fewer "
    "evictions anywhere: Koordinator evicts 6-9x less in the bitbrains families but leaves 2.8-3.9x the "
    "hot-node-minutes; upstream LNU in metrics mode evicts 2.3-29x as many where usage departs from requests and "
    "is hotter in all eight; in requests mode it sees nothing to do on the trace VMs (requests are balanced by "
    "construction). Ours is at or under 10% "
    "of off's hot-node-minutes in six of eight scenarios: genai-memory (0.9% and 0.4%, meeting every target), "
    "bitbrains (7.7% and 9.6%) and now openb (5.5% and 5.3%: 32 and 242 where lookAhead off left 104 and 739). "
    "On openb ours is cooler than upstream LNU metrics (32 against 132, 242 against 924) with 3 more and 8 more "
    "evictions (23 against 20, 167 against 159). 0 failed moves and 0 limit violations everywhere.\n\n"
    "Where ours' hot-node-minutes and moves come from (the hot spells and the moves' causes, now counted for every "
    "run; benchmarks/quality.py's docstring): (a) Waiting for a cycle: 82-88% of ours' hot-node-minutes are between"
    " a node crossing high and the first cycle after it (usage steps every 5 min, cycles midway: 5 min on average)."
    " The reaction floor, off's minutes from each node's first crossing to the next cycle, is what a controller "
    "that acts only on nodes it reads above high cannot avoid: 2.4-2.5% of off's in bitbrains, 6.3% and 4.8% in "
    "bitbrains-diurnal, 9.7% and 5.8% in openb. Beating it takes moving before a crossing, which lookAhead does: "
    "openb's 32 and 242 are under their floors (58 and 262). (b) Nodes ours touched: 268 of 354 and 2,477 of 3,206 "
    "hot-node-minutes in bitbrains-diurnal (323 of 499 and 2,425 of 3,179 in bitbrains) were on nodes ours had "
    "relieved or moved a pod onto before. (c) Moves: in bitbrains-300, 254 of 572 came off nodes that were below "
    "high in the off run at that time and had received a pod from ours (hot from what was moved onto them), 168 off"
    " nodes that without a descheduler would have been below high again by the next cycle, 39 ahead of a crossing "
    "and 111 off nodes still hot 10 min later; bitbrains-diurnal-300 200, 167, 36, 144 of 547; at 50 nodes 23 and "
    "25 placed of 77 and 78. Without the placed moves ours would be at 1.5x and 1.6x the minimum at 300 nodes, not "
    "2.7x and 2.5x: placing a moved pod with its target's next 2 h known (ours given the future, below) removed "
    "only 4 and 11 of the 23 and 25 placed moves at 50 nodes, and not the gap. (d) Ping-pong: in bitbrains-300 "
    "(lookAhead off, an analysis script) 22 of the 27 moves whose target was above high 5 min later had moved a "
    "single pod using 0.4-0.7 of the node's high threshold, the one pod that covered the source's excess alone, "
    "onto a low node it filled to 0.97-1.0 of high; the pod's next 5-min step, often +0.1-0.2 of high, did the "
    "rest.\n\n"
    "Missed, with the numbers: (1) hot-node-minutes above 10% of off's in bitbrains-diurnal (17% and 22%): 299 of "
    "354 and 2,668 of 3,206 minutes are waits for a cycle and 268 and 2,477 on nodes ours touched (floor 6.3% and "
    "4.8%). (2) On openb, where usage is a fixed share of requests, upstream LNU in requests mode leaves 0 "
    "hot-node-minutes (ours 32 and 242) with 2.6x and 2.4x ours' evictions: it balances requests through the quiet "
    "night, before the ramp; a load-aware controller sees nothing to do then. (3) Evictions 2.2-2.7x the hindsight "
    "minimum in the bitbrains families (see (c)), and 1.53x and 1.44x on openb, where lookAhead moves 10 and 80 "
    "pods ahead of crossings that the minimum (which only has to keep every node at or below high at each cycle) "
    "does not count; with lookAhead off openb was at 1.13x and 1.25x. (4) Ping-pong 2 / 27 / 4 / 38 in the "
    "bitbrains families (71 in all, 87 with lookAhead off): see (d). What would close them, from ours given the "
    "future (below): for (1), knowing each node's usage 10 min ahead (0.7-1.9% of off's with it at 50 nodes, 6.6% "
    "in bitbrains-diurnal-300, for 1.5-1.8x the evictions); for (4), checking a target over the moved pod's and its"
    " own pods' next 2 h (0 ping-pong in bitbrains-50, bitbrains-diurnal-50 and bitbrains-diurnal-300, with no more"
    " evictions); lookAhead and the peak rules below are the online attempts at these, and reach neither; for (2), "
    "acting in quiet cycles on yesterday's peak, which a one-day simulation cannot show. (3) is not closed by any "
    "foresight tried: the best, 1.9x, had a target's next 2 h, each victim's share of its node's excess over the "
    "next 24 h, reliefDepth 0 and lookAhead off. Target rules tried at "
    "the 20% cap (lookAhead off; ours alone, evictions / hot-node-minutes / ping-pong): `targetCeiling: goal`, "
    "bitbrains-300 566 / 3,157 / 11 but bitbrains-diurnal-300 564 / 3,493 / 46; the target with the most room "
    "on the resources the source is hot on instead of the scheduler's score (a throwaway change, not kept), "
    "bitbrains-300 562 / 3,247 / 27 and bitbrains-diurnal-300 539 / 3,612 / 36, with goal as well 576 / 3,570 / "
    "41; room for the moved pod to grow (a target must stay under high with 1.15x the pod's usage; throwaway): "
    "bitbrains-300 575 / 3,153 / 13, but bitbrains-diurnal-300 567 / 3,521 / 44; with 1.5x, bitbrains-300 590 / "
    "7,820 / 7, as most hot nodes found no target; trying targets under the relief goal first and under high "
    "only if that fails (throwaway, 50 nodes): bitbrains 83 / 522 / 1, bitbrains-diurnal 84 / 395 / 0, as "
    "`goal`. Waiting a cycle before acting (`anomalyCondition: {consecutiveAbnormalities: 2}`, as Koordinator; "
    "50 nodes, lookAhead off): bitbrains 29 / 839 / 1 and bitbrains-diurnal 27 / 815 / 0, under the minimum in "
    "moves (0.83x, 0.84x) for 72-84% more hot-node-minutes; `victimSelection: minimal` moved the same pods as "
    "greedy.\n\n"
    "Tried on 2026-11-28 (throwaway changes, ours alone with lookAhead 10m, not kept; default: bitbrains-50 77 / 499 "
    "/ 2, bitbrains-diurnal-50 78 / 354 / 4, bitbrains-300 572 / 3,179 / 27, bitbrains-diurnal-300 547 / 3,206 / "
    "38). A target must have room under high for the moved workload's highest usage read over the last 24 h (its "
    "pods' readings kept by workload, so a replacement carries its earlier bursts): 50 nodes 78 / 473 / 0 and "
    "80 / 336 / 4, but 300 nodes 576 / 3,225 / 25 and 567 / 3,246 / 30, with 253 placed moves in "
    "bitbrains-300 (254 without it) and the worst node's p99 at 112% (95%): the nodes a moved pod made hot were not "
    "made hot by bursts read before the move. Moving a node's other pods before any that is spiking (its usage above "
    "1.5x or 1.2x its moving average), since a spike mostly falls back: 50 nodes 100 / 497 / 2 and 83 / 384 / 0 "
    "(1.5x), 92 / 462 / 3 and 91 / 408 / 3 (1.2x): more evictions, as a hot node's excess then takes more and "
    "smaller pods. Filling targets to the relief goal first and to high only for what is still over after that "
    "(every candidate tried both ways): 86 / 534 / 2 and 92 / 337 / 0. The Bitbrains VMs' usage does mostly fall "
    "back: after a 5-min rise of more than half the VM's mean, the median next step gives back half of the rise "
    "and two steps later 87% of it; 26% are higher two steps later (3,765 such rises over the two days). So a "
    "pod moved at its spike usually lands small (and 168 and 167 of ours' moves at 300 nodes are off nodes that "
    "would have been below high by the next cycle), and which moved pod will rise again on its new node is not "
    "told by its past.\n\n"
    "Ours given the future (2026-11-28; throwaway scripts, not in the repo): to learn which missed target better "
    "prediction could close, ours ran with parts of the day's future given to it, read from the same usage series "
    "the simulated kubelet plays. Detection: the metrics the controller and the extender read give each pod's "
    "highest usage over the next H and each node's highest summed usage over the same H, so a node is hot if it "
    "will be within H. Placement: a target passes only if its current pods plus the moved pod (and this cycle's "
    "earlier moves onto it) stay under its ceiling at every 5-min step of the next H. Victims: a hot node's "
    "candidates ordered by the share of its excess over high in the next H they would cover. Hot-node-minutes "
    "are still measured on the kubelet's usage. Ours alone, evictions / hot-node-minutes / ping-pong (moves ÷ "
    "minimum); the minimums are 35 and 32 (40 and 38 if a node must be at or below high at every 5-min step, "
    "not only at each cycle):\n\n"
    "| future given | bitbrains-50 | bitbrains-diurnal-50 |\n"
    "|---|---|---|\n"
    "| none (ours' default) | 77 / 499 / 2 (2.20x) | 78 / 354 / 4 (2.44x) |\n"
    "| detection, 5 min (the usage step no cycle reads) | 122 / 151 / 2 | 120 / 143 / 0 |\n"
    "| detection, 10 min | 140 / 44 / 1 (4.0x) | 117 / 41 / 0 (3.7x) |\n"
    "| detection, 10 min, reliefDepth 0, lookAhead off | 133 / 74 / 0 | 125 / 108 / 0 |\n"
    "| detection, 30 min | 213 / 59 / 0 | 160 / 24 / 0 |\n"
    "| detection, 1 h | 357 / 111 / 1 | 283 / 144 / 0 |\n"
    "| placement, 2 h | 75 / 494 / 0 (2.14x) | 76 / 315 / 0 (2.38x) |\n"
    "| placement, 24 h | 78 / 1,363 / 0 | 77 / 398 / 0 |\n"
    "| detection 10 min and placement 24 h | 147 / 1,125 / 0 | 138 / 311 / 0 |\n"
    "| placement 2 h, victims over 24 h | 82 / 509 / 0 | 74 / 319 / 0 |\n"
    "| placement 2 h, victims over 24 h, reliefDepth 0, lookAhead off | 67 / 490 / 0 (1.91x) | "
    "61 / 361 / 0 (1.91x) |\n\n"
    "At 300 nodes (bitbrains-diurnal-300; default 547 / 3,206 / 38, 2.52x): detection 10 min 865 / 961 / 1 (3.99x; "
    "6.6% of off's hot-node-minutes), placement 2 h 488 / 2,837 / 0 (2.25x). Knowing a node's usage 10 min ahead "
    "brings hot-node-minutes to 0.7-1.9% of off's at 50 nodes and 6.6% at 300, for 1.5-1.8x the evictions; a longer"
    " view moves more, since a node is then relieved of peaks it would reach in an hour. Checking a target over the"
    " next 2 h ends ping-pong with no more evictions (either half alone nearly does: the moved pod's own next 2 h, "
    "76 / 437 / 1 and 75 / 300 / 0; the target's pods' next 2 h, 81 / 501 / 1 and 79 / 300 / 1); over 24 h few "
    "targets pass and hot nodes go unrelieved. No form of the future brings evictions under 1.9x the minimum. In "
    "the placement 2 h runs 19 and 14 moves were still `placed` (23 and 25 without), 10 and 11 ahead, 25 and 33 "
    "passing, 21 and 18 lasting: moves off nodes hot in the off run alone (46 and 51) are 1.3x and 1.6x the "
    "minimum, before any move made necessary by a pod placed earlier. The minimum lets a moved pod vanish: the 35 "
    "pods it picked in bitbrains-50 (one of its optimal choices) cannot all be placed at the start of the day on "
    "the other nodes so that every node stays at or below high at every cycle (an integer program over those pods "
    "and the 50 nodes is infeasible). So the 1.2x target is measured against a bound that ours, given the future, "
    "came no closer to than 1.9x.\n\n"
    "lookAhead, on by default since 2026-11-27 (`lookAhead: 10m`, `lookAheadBasis: cluster`): a node is judged by "
    "its usage 10 min ahead, every node rising in proportion to its usage at the rate the whole cluster's usage "
    "rose over each of the last two 10-min spans (the slower of the two, only while both rose). A ramp the "
    "cluster shares, as openb's and bitbrains-diurnal's morning, is met before nodes cross high; one VM's burst "
    "barely moves the total. Ours alone (evictions / hot-node-minutes / ping-pong; 20% cap, evictBurst 10; "
    "`--ours-args 'lookAhead: 0s'` for the first row):\n\n"
    "| lookAhead | bitbrains | bitbrains-diurnal | genai-memory | openb |\n"
    "|---|---|---|---|---|\n"
    "| 50 nodes, 0s | 78 / 489 / 2 | 71 / 443 / 1 | 11 / 61 / 0 | 17 / 104 / 0 |\n"
    "| 50 nodes, **10m cluster** | 77 / 499 / 2 | 78 / 354 / 4 | 11 / 53 / 0 | 23 / 32 / 0 |\n"
    "| 50 nodes, 20m cluster | 82 / 506 / 4 | 78 / 325 / 2 | 11 / 53 / 0 | 26 / 4 / 0 |\n"
    "| 300 nodes, 0s | 566 / 3,214 / 36 | 534 / 3,433 / 48 | 57 / 160 / 0 | 145 / 739 / 0 |\n"
    "| 300 nodes, **10m cluster** | 572 / 3,179 / 27 | 547 / 3,206 / 38 | 57 / 160 / 0 | 167 / 242 / 0 |\n"
    "| 300 nodes, 20m cluster | | 597 / 3,120 / 44 | | 202 / 134 / 0 |\n"
    "| 300 nodes, 10m pods | | 627 / 3,300 / 56 | | 158 / 498 / 0 |\n\n"
    "On the cluster's rise 10m cut openb's hot-node-minutes by 69% and 67% for 6 and 22 more evictions, "
    "bitbrains-diurnal's by 20% and 7% for 10% and 2% more evictions, and changed little where the cluster shares "
    "no ramp (bitbrains +2% and -1%, genai-memory -13% and 0%); ping-pong fell at 300 nodes (36 to 27, 48 to 38) "
    "and rose at 50 (1 to 4 in bitbrains-diurnal). 20m went further on openb-50 (4 hot-node-minutes) for more "
    "evictions and ping-pong in bitbrains; at 300 nodes (measured 2026-11-28) it cut openb's hot-node-minutes by "
    "45% for 21% more evictions (1.74x the minimum) and bitbrains-diurnal's by 3% for 9% more evictions and more "
    "ping-pong (44), so 10m stays the default. Projecting at the later span's rate "
    "instead of the slower one (they differ only while the ramp speeds up; 300 nodes, 2026-11-28): openb 167 / "
    "233 / 0 (242 with the slower), bitbrains-diurnal 593 / 3,249 / 51. Each pod's own rise (`lookAheadBasis: "
    "pods`, the option's first form) reads bursts as trends: at 300 nodes more evictions and ping-pong for less "
    "relief. Measured before, with a cap of 10 and lookAhead on the pods' rises, at 50 nodes (before evictBurst "
    "10): 10m 81 / 437 / 2, 86 / 394 / 2, 11 / 47 / 0, 22 / 60 / 0; at 300 nodes 642 / 3,589 / 32, 530 / 4,455 / "
    "29, 60 / 536 / 0, 78 / 2,638 / 0 against 535 / 3,710 / 21, 471 / 4,668 / 21, 57 / 600 / 0, 71 / 2,781 / 0 "
    "off. Two rougher versions were dropped: counting every pod's last step (openb 27 / 20 / 0, but "
    "bitbrains-diurnal 269 / 314 / 6: each burst read as a trend) and the node's summed step over two cycles "
    "(bitbrains-diurnal 99 / 405 / 4). "
    "Filling targets only up to the relief goal instead of high was tried too: bitbrains 83 / 539 / 1, "
    "bitbrains-diurnal 84 / 408 / 0, more evictions for no fewer hot-node-minutes. It is now the option "
    "`targetCeiling: goal` (default high), measured again on 2026-11-27 (5-minute steps, evictBurst 10): at 300 "
    "nodes bitbrains 564 / 3,667 / 15 and bitbrains-diurnal 482 / 4,481 / 12 (high: 535 / 3,710 / 21 and "
    "471 / 4,668 / 21), genai-memory and openb unchanged; at 50 nodes bitbrains 83 / 532 / 1, bitbrains-diurnal "
    "84 / 395 / 0 (high: 78 / 489 / 2, 71 / 443 / 1). In those 300-node runs the replacement's own usage was "
    "what made its new node hot in most ping-pong cases (median 41 points of the node's cpu, the node's other "
    "pods +3): a low node filled to just under high by one big pod. Two other readings of ping-pong did not help "
    "at 300 nodes: no node seen high in the last hour as a target (bitbrains 536 / 3,603 / 23, diurnal 466 / "
    "4,740 / 18), and placing a pod by its peak usage over the last hour (537 / 3,672 / 27, 474 / 4,639 / 24)."
    "\n\n"
    "reliefDepth, ours alone on the same four scenarios, measured at one cluster step a minute and before "
    "recentPodsLast (evictions / "
    "hot-node-minutes / ping-pong; `python -m benchmarks.quality --family F --only ours --ours-args "
    "'reliefDepth: D'`); 0 is the behaviour before, and the peers':\n\n"
    "| reliefDepth | bitbrains-50 | bitbrains-diurnal-50 | genai-memory-50 | openb-50 |\n"
    "|---|---|---|---|---|\n"
    "| 0 | 79 / 585 / 2 | 77 / 528 / 1 | 25 / 160 / 0 | 21 / 207 / 0 |\n"
    "| 0.1 | 76 / 485 / 3 | 72 / 440 / 0 | 15 / 81 / 0 | 21 / 147 / 0 |\n"
    "| **0.25** | 75 / 494 / 6 | 70 / 468 / 2 | 11 / 59 / 0 | 18 / 131 / 0 |\n"
    "| 0.4 | 85 / 476 / 6 | 73 / 420 / 1 | 10 / 126 / 0 | 19 / 111 / 0 |\n"
    "| 0.5 | 79 / 454 / 4 | 72 / 439 / 6 | 14 / 307 / 0 | 23 / 135 / 0 |\n"
    "| 1 | 89 / 494 / 11 | 103 / 494 / 13 | 28 / 160 / 3 | 28 / 133 / 0 |\n\n"
    "Every depth from 0.1 to 0.4 beats 0 on hot-node-minutes in every family (0.5 not on genai-memory), and "
    "0.1-0.25 on evictions too (0.1 ties on openb); 1 moves far more "
    "(down to low, a node needs more pods moved) and ping-pongs. 0.25 has the fewest evictions in total (174) "
    "and hot-node-minutes as low as any (1,152 in total; 0.1: 1,153, 0.4: 1,133); 0.1 has fewer ping-pong moves "
    "(3 against 8). One cluster step a minute is coarse, and single runs of one seed move by tens of "
    "hot-node-minutes with small changes, so the differences between 0.1 and 0.4 are within that noise."
)


def child_quality() -> dict[str, Sample]:
    from benchmarks.quality import SIZES, run_quality

    # BENCH_QUALITY_SIZES=50 runs the smaller size alone (a 300-node day takes far longer).
    sizes = os.environ.get("BENCH_QUALITY_SIZES")
    return run_quality(sizes=tuple(int(n) for n in sizes.split(",")) if sizes else SIZES)


def _quality_extra(runs: list[dict[str, Any]]) -> str:
    from benchmarks.quality import render_quality

    return render_quality(runs[-1])


def child_soak() -> dict[str, Any]:
    from benchmarks.soak import SoakOptions, run_soak, soak_metrics

    return soak_metrics(run_soak(SoakOptions()))


def _soak_extra(runs: list[dict[str, Any]]) -> str:
    from benchmarks.soak import render_soak

    return render_soak(runs[-1]["figures"])


SOAK_ZEROS = (
    ("limits", "evictions beyond a limit (jobs running over a migration limit)"),
    ("beyondPdb", "evictions beyond a PodDisruptionBudget"),
    ("evictedTwice", "pods evicted twice"),
    ("evictedWithoutJob", "evictions with no job"),
    ("reservationPastTtl", "Reservations alive past their TTL (+ a failover's grace)"),
    ("orphanReservations", "orphan Reservations at the end"),
    ("podsLost", "workloads below their replicas longer than a move needs (5 min)"),
    ("plannedOnUnreadable", "cycles that planned moves on data that could not be read"),
    ("leaderOverlap", "steps with two leaders"),
)


# Cluster sizes of the scaling table (30 pods a node), and the keys each size reports.
SCALING_NODES = (500, 1000, 5000, 15000)
PODS_PER_NODE = 30


def child_scaling() -> dict[str, Sample]:
    """The planning cycle and the extender at each size of SCALING_NODES, each size in fresh
    processes of its own (the planning-5000 and extender children with the size in their env)."""
    known = by_name()
    out: dict[str, Sample] = {}
    for nodes in SCALING_NODES:
        env = {"BENCH_NODES": str(nodes), "BENCH_PODS": str(nodes * PODS_PER_NODE), "BENCH_CYCLES": "3"}
        planning = run_child(known["planning-5000"], env)
        extender = run_child(known["extender"], {**env, "BENCH_REQUESTS": "300", "BENCH_EXTENDER_REFRESH": "0"})
        out[f"cycle_cpu_seconds_{nodes}"] = statistics.median(planning["cycle_cpu_seconds"])
        out[f"planning_rss_mib_{nodes}"] = planning["peak_rss_mib"]
        out[f"extender_pods_per_cpu_second_{nodes}"] = extender["all_pods_per_cpu_second"]
        out[f"extender_p99_ms_{nodes}"] = extender["all_p99_ms"]
        out[f"extender_rss_mib_{nodes}"] = extender["peak_rss_mib"]
    return out


def _growth(small: float, large: float, ratio: float) -> str:
    """The exponent k of cost ∝ size^k between two sizes (1: linear)."""
    if small <= 0 or large <= 0:
        return "—"
    return f"{math.log(large / small) / math.log(ratio):.2f}"


def _scaling_extra(runs: list[dict[str, Any]]) -> str:
    """The scaling table of the last run, with the growth exponent from each size to the next."""
    last = runs[-1]
    header = [
        "nodes",
        "pods",
        "cycle CPU s",
        "growth",
        "extender pods/CPU s (all names)",
        "extender p99 ms",
        "time per pod growth",
        "RSS MiB (planning / extender)",
    ]
    rows = []
    previous: int | None = None
    for nodes in SCALING_NODES:
        cycle = last.get(f"cycle_cpu_seconds_{nodes}")
        rate = last.get(f"extender_pods_per_cpu_second_{nodes}")
        if cycle is None or rate is None:
            continue
        cycle_growth = per_pod_growth = "—"
        if previous is not None:
            ratio = nodes / previous
            cycle_growth = _growth(last[f"cycle_cpu_seconds_{previous}"], cycle, ratio)
            per_pod_growth = _growth(1 / last[f"extender_pods_per_cpu_second_{previous}"], 1 / rate, ratio)
        rows.append(
            [
                f"{nodes:,}",
                f"{nodes * PODS_PER_NODE:,}",
                _number(cycle, 2),
                cycle_growth,
                _number(rate, 0),
                _number(last[f"extender_p99_ms_{nodes}"], 2),
                per_pod_growth,
                f"{last[f'planning_rss_mib_{nodes}']:.0f} / {last[f'extender_rss_mib_{nodes}']:.0f}",
            ]
        )
        previous = nodes
    return (
        "Growth: the exponent k of cost ∝ size^k from the previous row (1.00 is linear; the extender's cost "
        "per pod grows with the number of candidate names, which is every node here).\n\n"
        + markdown_table(header, rows)
    )


S = "s"
MIB = "MiB"
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "decode",
        "Cache: decode a 150,000-pod list",
        3,
        (
            Metric("seconds", "decode the node and pod lists into the cache (wall)", S, ("<=", 5.0)),
            Metric("cpu_seconds", "the same, CPU seconds of the process", S, ("<=", 5.0)),
            Metric("peak_rss_mib", "peak RSS of the whole process", MIB, ("<=", 1024.0), 0),
            Metric("json_mib", "JSON decoded (5,000 nodes + 150,000 pods, pages of 500)", MIB, None, 0),
        ),
        child_decode,
        "The lists are the ones the API server returns (uid, resourceVersion, managedFields; ~1.7 KB a pod), "
        "decoded page by page as the reflector does (`benchmarks/bench_cache.py`).\n\n"
        "What it took (issue 15; the commit before, run beside this one: 3.65 s, 425 MiB): pods decode "
        "through `decode.RawListedPod`, which keeps each container's resources, the owner references, "
        "tolerations and affinity as raw JSON text, each distinct text decoded once and remembered (the "
        "pods of a workload share it; a part that does not fit its shape sends the object through "
        "`RawPod` and `pod_from_raw`, so records and error messages are unchanged); a Pod is built by "
        "position (Python builds a dict for a call with more than 15 keywords); the list is indexed in "
        "one pass. Per pod: page decode ~4 µs, building the record ~5 µs.",
    ),
    Benchmark(
        "watch",
        "Cache: apply pod watch events",
        3,
        (
            Metric("events_per_second", "pod watch events applied per second (wall)", "/s", (">=", 50_000.0), 0),
            Metric("events_per_cpu_second", "the same, per CPU second", "/s", (">=", 50_000.0), 0),
            Metric("snapshot_seconds", "`cache.snapshot()` after the events", S, None, 3),
            Metric(
                "first_snapshot_seconds",
                "the first `cache.snapshot()` (sorts every pod once and computes its node-table rows)",
                S,
                None,
                3,
            ),
        ),
        child_watch,
        "30,000 events (80% MODIFIED, 10% ADDED, 10% DELETED) on a cache holding 150,000 pods.\n\n"
        "What it took (issue 15; the commit before, run beside this one: 33,700 /s): events decode "
        "through the same remembered parts as `decode`; pods added or deleted are merged into the "
        "cache's sorted pod order at the next `snapshot()` (one pass), not inserted one by one (an "
        "insertion into 150,000 keys moved ~1 MB, ~40 µs); an event only marks its pod's node-table row. "
        "What is left per event: msgspec's decode (~4.5 µs), building the Pod, the cache's bookkeeping.",
    ),
    Benchmark(
        "planning-500",
        "Planning cycle at 500 nodes / 15,000 pods",
        3,
        (
            Metric("cycle_seconds", "one cycle from the cache: snapshot + LowNodeLoad + QuotaReclaim (wall)", S),
            Metric("cycle_cpu_seconds", "the same, CPU seconds", S),
            Metric("best_node_ms", "`best_node` over 500 nodes", "ms", None, 3),
        ),
        child_planning,
        "Five steady-state cycles per run (after a first one that sorts the cache's pods once); usage "
        "changes every cycle as a new load reading; 10% of nodes hot; one ElasticQuota per namespace.",
    ),
    Benchmark(
        "planning-5000",
        "Planning cycle at 5,000 nodes / 150,000 pods, and best_node",
        2,
        (
            Metric(
                "cycle_seconds",
                "one cycle from the cache: snapshot + LowNodeLoad + QuotaReclaim (wall)",
                S,
                ("<=", 1.0),
            ),
            Metric("cycle_cpu_seconds", "the same, CPU seconds", S, ("<=", 1.0)),
            Metric("plan_seconds", "of which `plan_cycle` (node table + strategies)", S),
            Metric("best_node_ms", "`best_node` over 5,000 nodes (200 pods)", "ms", ("<=", 2.0), 3),
            Metric("moves", "moves planned (default limits: 10 a cycle)", "", None, 0),
            Metric("peak_rss_mib", "peak RSS of the benchmark process", MIB, None, 0),
        ),
        child_planning,
        "Five steady-state cycles per run as above, with the default policy's limits (10 moves a cycle, "
        "2 per node).\n\n"
        "What it took (issue 15; the same benchmark from the commit before, run beside this one on "
        "2026-11-24: 5.10 s): the list-watch cache keeps each pod's node-table rows (requests, limits, "
        "prod class, flags, scheduled time: `descheduler/podrows.py`) and each owner's pods as watch events "
        "arrive, recomputing only the changed pods at `snapshot()`, so the node table sums arrays instead of "
        "~10 Python passes over 150,000 pods (`build_table` 2.7 → 0.37 s); `Pod.key` is a stored field (it "
        "was an f-string read 1.2 million times a cycle); QuotaReclaim builds victim units, cluster free "
        "and progress checks only for groups that act (3.2 → 0.5 s); LowNodeLoad's node classes and "
        "reports are computed a pool at a time. What is left, in order: QuotaReclaim's one pass over the "
        "pods to find each group's pods and sums (~0.3 s; a column-at-a-time version was slower than the one "
        "loop, measured side by side), the load reading's lookup of each pod's usage (~0.2 s). The first "
        "snapshot after a full list computes every pod's rows (~1.3 s at 150,000 pods; `watch`'s "
        "first-snapshot row).",
    ),
    Benchmark(
        "extender",
        "Scheduler extender: filter + prioritize at 5,000 nodes / 150,000 pods",
        2,
        (
            Metric("all_p99_ms", "p99 latency per pod, 5,000 candidate names", "ms", ("<=", 10.0)),
            Metric("all_p50_ms", "p50 latency per pod, 5,000 names", "ms"),
            Metric("all_pods_per_cpu_second", "pods per CPU second, 5,000 names", "/s", (">=", 1000.0), 0),
            Metric("500_p99_ms", "p99 latency, 500 names (kube-scheduler's sampling at 5,000 nodes)", "ms"),
            Metric("500_pods_per_cpu_second", "pods per CPU second, 500 names", "/s", None, 0),
            Metric("refresh_p99_ms", "p99 per pod, 5,000 names, the state rebuilt meanwhile", "ms", ("<=", 10.0)),
            Metric("refresh_p50_ms", "p50 latency per pod, the same", "ms"),
            Metric("refresh_rebuilds", "state rebuilds completed during that run", "", None, 0),
        ),
        child_extender,
        "In-process (`benchmarks/bench_extender.py` has the HTTP variant): 800 pods per run, each a filter "
        "request with the candidate names in a fresh random order, the prioritize call on the filter's "
        "answer, then the binding reported to the extender. The last pass does the same with the state "
        "rebuilt back to back in a background thread (the source changes all the time, as under a "
        "stream of watch events).\n\n"
        "The CPU time counts filter, prioritize and recording the binding, not building the request "
        "bodies (kube-scheduler's work; counted before 7c293df, ~60 µs a pair).\n\n"
        "**Margin**: ≥ 1,000 pods per CPU second with all 5,000 names is met, with little to spare: "
        "three sets of 3 runs at 7c293df gave medians of 1,154, 1,052 and 1,069 /s, single runs "
        "761–1,157. The commit before issue 15's work: 171 /s; 7753517, run beside 7c293df one per core: "
        "804–850 /s against 1,106–1,216. What changed last: the filter's whole answer is written by one "
        "compiled pass, the kernels' helpers are compiled into their callers, the request envelope is "
        "cut by position (checked by decoding its parts), and `filter_rows` walks no stage when every "
        "asked row passes. Before that: the names read and the answers written by compiled loops "
        "(`descheduler/extender/kernels.py`, numba), reasons and scores kept per pod shape with only "
        "the rows a binding changed recomputed on a view of just those rows "
        "(`descheduler/extender/shapes.py`, `NodeTable.subset`). What is left per pair (~0.9 ms): the "
        "changed rows' predicates and scores (~0.13–0.25 ms, some 60 small NumPy calls), the name lookup "
        "(~0.11), the HostPriorityList (~0.05–0.08), the filter answer (~0.05), the binding (~0.04). This "
        "machine's speed moved by up to 1.5× between runs of the same code within minutes, so compare "
        "side by side.\n\n"
        "While the state is rebuilt: the rebuilding thread steps aside while a request is "
        "in flight (`descheduler/extender/yielding.py`: a profile hook on that thread waits with the GIL "
        "released, after the rebuild's first 50 ms of CPU and while it keeps 40% of the time). Before: "
        "p99 108 ms with the same rebuilds. The hook costs the rebuild ~27% more CPU. That p99 was 6.83 ms on "
        "2026-11-25; on 2026-11-27 it was 4–13 ms in single runs, and the code before this change gave 23–28 ms "
        "run beside it the same hour; three sets of 3 runs that day gave medians of 10.3, 10.1 and 5.2 ms.",
    ),
    Benchmark(
        "memory",
        "Controller memory at 5,000 nodes / 150,000 pods",
        1,
        (
            Metric("peak_rss_mib", "peak RSS of the controller process", MIB, ("<=", 1024.0), 0),
            Metric("rss_synced_mib", "RSS once every kind is listed and watched", MIB, None, 0),
            Metric("sync_seconds", "list to synced through the fake API server (HTTP)", S, None, 1),
            Metric("first_cycle_seconds", "first cycle: load reading + snapshot + plan", S, None, 2),
        ),
        child_memory,
        "A `descheduler run`-like process: a ClusterCache of every kind the controller watches (NodeMetrics "
        "included, 30 pods each) filled from the fake API server over HTTP, one load reading, one snapshot "
        "and one plan (LowNodeLoad + QuotaReclaim, no ElasticQuotas in this cluster). The target is testing.md's "
        "≤ 1 GiB for the process.",
    ),
    Benchmark(
        "decode-15000",
        "Cache: decode a 450,000-pod list (15,000 nodes)",
        1,
        (
            Metric("seconds", "decode the node and pod lists into the cache (wall)", S, ("<=", 15.0)),
            Metric("cpu_seconds", "the same, CPU seconds of the process", S, ("<=", 15.0)),
            Metric("peak_rss_mib", "peak RSS of the whole process", MIB, ("<=", 2048.0), 0),
            Metric("json_mib", "JSON decoded (15,000 nodes + 450,000 pods, pages of 500)", MIB, None, 0),
        ),
        child_decode,
        "As `decode`, three times the cluster.",
    ),
    Benchmark(
        "planning-15000",
        "Planning cycle at 15,000 nodes / 450,000 pods",
        1,
        (
            Metric("cycle_seconds", "one cycle from the cache: snapshot + LowNodeLoad + QuotaReclaim (wall)", S),
            Metric("cycle_cpu_seconds", "the same, CPU seconds", S, ("<=", 3.0)),
            Metric("plan_seconds", "of which `plan_cycle` (node table + strategies)", S),
            Metric("peak_rss_mib", "peak RSS of the benchmark process", MIB, None, 0),
        ),
        child_planning,
        "As `planning-5000`, three times the cluster, three steady-state cycles.",
    ),
    Benchmark(
        "scaling",
        "Scaling: the planning cycle and the extender from 500 to 15,000 nodes (30 pods a node)",
        1,
        (
            Metric("cycle_cpu_seconds_5000", "cycle CPU seconds at 5,000 nodes", S, ("<=", 1.0)),
            Metric("cycle_cpu_seconds_15000", "cycle CPU seconds at 15,000 nodes", S, ("<=", 3.0)),
            Metric("extender_pods_per_cpu_second_5000", "extender pods per CPU second at 5,000 nodes", "/s", None, 0),
        ),
        child_scaling,
        "Each size in fresh processes: three steady-state planning cycles (as `planning-5000`) and 300 "
        "extender filter + prioritize pairs with every node a candidate (as `extender`).",
        _scaling_extra,
    ),
    Benchmark(
        "quality",
        "Decision quality against the peers as they ship (two simulated days per scenario, the second scored)",
        1,
        (
            Metric("ours_ratio", "evictions ÷ hindsight minimum (ours, worst scenario)", "×", ("<=", 2.0)),
            Metric("ours_hot_share_of_off", "hot-node-minutes ÷ off's (ours, worst scenario)", "", ("<=", 0.05)),
            Metric("ours_ping_pong_share", "ping-pong ÷ moves (ours, worst scenario)", "", ("<=", 0.01)),
            Metric("scenarios_missed", "scenarios where a target is missed", "", ("<=", 0.0), 0),
        ),
        child_quality,
        QUALITY_NOTE,
        _quality_extra,
        # Every family at both sizes with the one-cycle table and the curves at 50 nodes: about 10 h on 2 cores
        # (a 50-node run of two days takes 260-340 s, a 300-node one several times that; 2026-11-29).
        timeout=14 * 3600.0,
    ),
    Benchmark(
        "soak",
        "A simulated day under faults (100 trace nodes, two controller replicas and the extender)",
        1,
        (
            Metric("simulated_hours", "simulated hours", "h", (">=", 24.0), 0),
            Metric("faults", "faults injected", "", (">=", 500.0), 0),
            *(Metric(key, label, "", ("<=", 0.0), 0) for key, label in SOAK_ZEROS),
            Metric("ready_again_median", "back (a leader with a synced cache) after a fault ends, median", "s"),
            Metric("ready_again_max", "the same, worst", "s", None, 0),
            Metric("planned_again_median", "planning again after a fault ends, median", "s"),
            Metric("planned_again_max", "the same, worst", "s", None, 0),
            Metric("wall_seconds", "wall time of the run", "s", None, 0),
        ),
        child_soak,
        "`benchmarks/soak.py` (its docstring says what runs and which faults); the seed, the faults by kind, "
        "the moves' outcomes and the recovery times by fault kind are in the tables below. Every safety count "
        "is 0. The run before this one left 7 workloads short for 315 s at the morning peak: a metrics pause "
        "longer than nodeMetricExpirationSeconds (180 s) made the extender refuse every node with an expired "
        "metric, the node a replacement's Reservation held room on included; a pod's own Reservation now "
        "passes the expired-metric filter on its node (the room was checked on fresh metrics when it was "
        "held). The slowest recoveries (up to 870 s) follow lease races and API errors that land just before a "
        "cycle's 10-minute interval: the controller is back at once, and plans at its next interval.",
        _soak_extra,
    ),
)


def by_name() -> dict[str, Benchmark]:
    return {b.name: b for b in BENCHMARKS}


ENV = {
    "planning-500": {"BENCH_NODES": "500", "BENCH_PODS": "15000"},
    "decode-15000": {"BENCH_NODES": "15000", "BENCH_PODS": "450000"},
    "planning-15000": {"BENCH_NODES": "15000", "BENCH_PODS": "450000", "BENCH_CYCLES": "3"},
}


def run_child(bench: Benchmark, env: Mapping[str, str]) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.run", "--child", bench.name]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=bench.timeout,
        check=False,
        cwd=HERE.parent,
        env={**os.environ, **ENV.get(bench.name, {}), **env},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{bench.name}: exit {done.returncode}: {done.stderr.strip()[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def load_results(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"{path}: cannot read the stored results ({err}); delete it to start afresh") from None
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all); see --list")
    parser.add_argument("--runs", type=int, default=0, help="repetitions for each (default: each one's own)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--output", type=Path, default=RESULTS_MD)
    parser.add_argument("--render-only", action="store_true", help="re-render RESULTS.md from results.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--controller", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    known = by_name()
    if args.child:
        print(json.dumps(known[args.child].child()))
        return 0
    if args.controller:
        print(json.dumps(controller_process(args.controller)))
        return 0
    if args.list:
        for bench in BENCHMARKS:
            print(f"{bench.name:15} {bench.runs} run(s)  {bench.title}")
        return 0
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(known)}")
    results_path = args.output.with_name("results.json") if args.output != RESULTS_MD else RESULTS_JSON
    args.output.parent.mkdir(parents=True, exist_ok=True)
    results = load_results(results_path)
    if not args.render_only:
        results["machine"] = machine()
        stored = results.setdefault("benchmarks", {})
        for bench in [known[n] for n in args.names] if args.names else BENCHMARKS:
            runs = args.runs or bench.runs
            entry: dict[str, Any] = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "runs": []}
            started = time.perf_counter()
            for i in range(runs):
                print(f"{bench.name}: run {i + 1}/{runs} …", file=sys.stderr, flush=True)
                try:
                    entry["runs"].append(run_child(bench, {}))
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
                    entry["error"] = str(err)[-3000:]
                    print(f"{bench.name}: failed: {err}", file=sys.stderr)
                    break
            entry["seconds"] = round(time.perf_counter() - started, 1)
            print(f"{bench.name}: {entry['seconds']:.0f} s", file=sys.stderr)
            previous = stored.get(bench.name) or {}
            if not entry["runs"] and previous.get("runs"):
                # A failed run does not wipe the last measurement: it stays, with the failure beside it.
                entry = {**previous, "error": f"the run of {entry['date']} failed: {entry['error']}"}
            stored[bench.name] = entry
            results_path.write_text(json.dumps(results, indent=1) + "\n")
            args.output.write_text(render(results, BENCHMARKS))
    args.output.write_text(render(results, BENCHMARKS))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
