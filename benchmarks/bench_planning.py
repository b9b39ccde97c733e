"""Time one LowNodeLoad planning cycle and `best_node` on a generated cluster.

Targets (testing.md §4): one cycle at 5,000 nodes / 150,000 pods from an in-memory snapshot
≤ 1 s; `best_node` over 5,000 nodes ≤ 2 ms median. With --constrained, 30% of the pods are under a
zone spread and 5% use a claim bound to a zonal volume (issue 60's target: the cycle still ≤ 1 s).

    .venv/bin/python -m benchmarks.bench_planning [--nodes 5000] [--pods 150000] [--runs 5] [--constrained]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time

from benchmarks.cluster import generated_snapshot
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import parse_policy
from descheduler.scheduling import ClusterView, best_node, build_table

POLICY = """
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
strategies:
- name: LowNodeLoad
  args:
    lowThresholds: {cpu: 45, memory: 55}
    highThresholds: {cpu: 70, memory: 80}
"""
LIMITS = """
limits: {maxEvictionsPerCycle: 10, maxEvictionsPerNode: 2}
"""


def _stats(samples: list[float]) -> str:
    low, mid, high = (value * 1000 for value in (min(samples), statistics.median(samples), max(samples)))
    return f"median {mid:.1f} ms (min {low:.1f}, max {high:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--constrained", action="store_true", help="30%% of pods under a zone spread, 5%% with claims")
    options = parser.parse_args()
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores; {options.nodes} nodes, {options.pods} pods"
        + (", 30% under a zone spread, 5% with zonal claims" if options.constrained else "")
    )
    started = time.perf_counter()
    shares = {"spread_share": 0.3, "pvc_share": 0.05} if options.constrained else {}
    snapshot = generated_snapshot(options.nodes, options.pods, **shares)
    print(f"generate snapshot: {time.perf_counter() - started:.2f} s")
    policy = parse_policy(POLICY)
    limited = parse_policy(POLICY + LIMITS)
    table_times = []
    for _ in range(options.runs):
        started = time.perf_counter()
        table = build_table(snapshot, policy.scheduling)
        table_times.append(time.perf_counter() - started)
    print(f"build_table: {_stats(table_times)}")
    # With the default policy's limits (10 moves a cycle), then unlimited: the planner's worst case.
    for label, chosen in (("limits of the default policy", limited), ("no limits", policy)):
        cycle, moves = [], 0
        for _ in range(options.runs):
            started = time.perf_counter()
            plan, _ = plan_cycle(snapshot, chosen)
            cycle.append(time.perf_counter() - started)
            moves = len(plan.migrations)
        print(f"plan_cycle, LowNodeLoad, {label} ({moves} moves): {_stats(cycle)}  target ≤ 1000 ms")
    view = ClusterView(table)
    pods = [p for p in snapshot.pods[:: max(len(snapshot.pods) // 200, 1)]]
    samples = []
    for pod in pods:
        started = time.perf_counter()
        best_node(pod, view, exclude=(pod.node_name,))
        samples.append(time.perf_counter() - started)
    print(f"best_node over {options.nodes} nodes ({len(samples)} pods): {_stats(samples)}  target ≤ 2 ms median")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
