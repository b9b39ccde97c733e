"""Snapshots at scale: `descheduler snapshot save` and `descheduler plan --snapshot`, per file format.

    .venv/bin/python -m benchmarks.bench_snapshot [--nodes 5000] [--pods 150000] [--formats json.gz,json,yaml]

This process runs the fake API server (descheduler.fakecluster) holding the cluster: the nodes and
pods of `benchmarks.server_shapes` (as the real kube-apiserver returns them: ~6.5 KB a pod with its
managedFields, status and token volume) and metrics-server's NodeMetrics and PodMetrics for them
(the default policy's load source); the template's nodeSelector is dropped (see `api_pods`). Each
measurement is the real command in a fresh process: `snapshot save FILE --kubeconfig …` lists
the cluster over HTTP through the product's listing code and writes FILE; `plan --snapshot FILE -o
json` loads it and plans one cycle with the default policy; `load` is `load_snapshot(FILE)` alone in
a fresh interpreter. Wall seconds, CPU seconds (user + system) and peak RSS are the child's own
(wait4), so the server's work is in the wall time only.
Issue 43's target: saving or loading 5,000 nodes / 150,000 pods within 10 s and 1 GiB.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.fake_apiserver_load import pods as generated_pods
from benchmarks.server_shapes import nodes as api_nodes
from benchmarks.server_shapes import pods as server_pods
from descheduler.timestamps import format_time

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("json.gz", "json", "yaml")
TIMEOUT = 3600.0


def api_pods(pods: int, nodes: int) -> Iterator[dict[str, Any]]:
    """`server_shapes.pods` without the template's nodeSelector, which pins every pod to the node the
    template was read from (no node here has that name, so no pod could move and the plan would
    time the refusals of every node for every candidate instead)."""
    for pod in server_pods(pods, nodes):
        pod["spec"].pop("nodeSelector", None)
        yield pod


def node_metrics(nodes: int, pods: int, stamp: str) -> Iterator[dict[str, Any]]:
    """metrics.k8s.io NodeMetrics as metrics-server returns them; the first 10% of nodes run hot."""
    per_node = pods // max(nodes, 1) + 1
    for i in range(nodes):
        cpu = int((2.6 if i < nodes // 10 else 0.6) * 300 * per_node) + 300
        yield {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": f"node-{i:05d}", "creationTimestamp": stamp},
            "timestamp": stamp,
            "window": "20.047s",
            "usage": {"cpu": f"{cpu * 1_000_000}n", "memory": f"{(400 * per_node + 1024) * 1024}Ki"},
        }


def pod_metrics(pods: int, nodes: int, stamp: str) -> Iterator[dict[str, Any]]:
    """PodMetrics for the pods (pod i runs on node i % nodes), one per container, in metrics-server's
    units (nanocores, KiB) and each pod's a little its own, as measured usage is."""
    for i, pod in enumerate(generated_pods(pods, nodes)):
        meta = pod["metadata"]
        cpu = int((2.6 if i % nodes < nodes // 10 else 0.6) * 250)
        jitter = i * 7919 % 997
        yield {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "creationTimestamp": stamp,
                "labels": meta["labels"],
            },
            "timestamp": stamp,
            "window": "18.372s",
            "containers": [
                {
                    "name": "main",
                    "usage": {"cpu": f"{cpu * 1_000_000 + jitter * 1009}n", "memory": f"{409600 + jitter}Ki"},
                },
                {"name": "sidecar", "usage": {"cpu": f"{20_000_000 + jitter * 13}n", "memory": f"{65536 + jitter}Ki"}},
            ],
        }


def _key(suffix: str) -> str:
    return suffix.replace(".", "_")


@contextmanager
def served_cluster(nodes: int, pods: int, directory: Path, stamp: str) -> Iterator[Path]:
    """The fake API server holding the cluster, with metrics read at `stamp`, and a kubeconfig
    pointing at it."""
    from descheduler.fakecluster.apiserver import FakeApiServer

    with FakeApiServer(history_size=16) as server:
        server.store.load(api_nodes(nodes))
        server.store.load(api_pods(pods, nodes))
        server.store.load(node_metrics(nodes, pods, stamp))
        server.store.load(pod_metrics(pods, nodes, stamp))
        gc.collect()
        gc.freeze()  # the seeded store is long-lived: keep the GC from re-walking it while serving
        yield server.write_kubeconfig(directory / "kubeconfig")


# Runs a command and prints its wall and CPU seconds (and the kernel's part of them) and peak RSS.
# It runs in a small interpreter of its own because a process's peak RSS (ru_maxrss) starts from
# that of the process it was forked from: a child forked straight from this one (the server holding
# the whole cluster) would report this one's gigabytes.
_SPAWN = """
import json, os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps({"seconds": time.perf_counter() - started, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "kernel_seconds": usage.ru_stime, "peak_rss_mib": usage.ru_maxrss / 1024,
                  "exit": os.waitstatus_to_exitcode(status)}))
"""


def measure(argv: Sequence[str]) -> dict[str, float]:
    """Run a command in a fresh process: its wall and CPU seconds and its peak RSS (MiB)."""
    done = subprocess.run(
        [sys.executable, "-c", _SPAWN, *argv], capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT, check=False
    )
    lines = done.stdout.strip().splitlines()
    result: dict[str, float] = json.loads(lines[-1]) if lines else {"exit": done.returncode}
    if result.pop("exit") != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr[-3000:]}")
    return result


# Loading alone, in a process of its own: interpreter start, imports and `load_snapshot`.
LOAD = [sys.executable, "-c", "import sys; from descheduler.snapshot import load_snapshot; load_snapshot(sys.argv[1])"]


def descheduler(*args: str) -> list[str]:
    return [sys.executable, "-m", "descheduler", *args]


def bench(nodes: int, pods: int, formats: Sequence[str], directory: Path) -> dict[str, float]:
    """Save the served cluster in each format, then plan on each file; flat metric keys."""
    # Metrics as of now (the pods' template was made on a real cluster at a recent time, and a pod
    # scheduled after its node's metric counts as not yet in it); every plan is evaluated 30 s after
    # them, however long the saves took, so each format plans the same cycle.
    read = datetime.now(UTC).replace(microsecond=0)
    stamp, now = format_time(read), format_time(read + timedelta(seconds=30))
    result: dict[str, float] = {}
    with served_cluster(nodes, pods, directory, stamp) as kubeconfig:
        for suffix in formats:
            path = directory / f"cluster.{suffix}"
            saved = measure(descheduler("snapshot", "save", str(path), "--kubeconfig", str(kubeconfig)))
            result.update({f"save_{_key(suffix)}_{name}": value for name, value in saved.items()})
            result[f"file_{_key(suffix)}_mib"] = path.stat().st_size / 2**20
            print(f"saved {path.name}: {saved}", file=sys.stderr, flush=True)
    for suffix in formats:
        path = directory / f"cluster.{suffix}"
        loaded = measure([*LOAD, str(path)])
        result.update({f"load_{_key(suffix)}_{name}": value for name, value in loaded.items()})
        planned = measure(descheduler("plan", "--snapshot", str(path), "--now", now, "-o", "json"))
        result.update({f"plan_{_key(suffix)}_{name}": value for name, value in planned.items()})
        print(f"{path.name}: loaded {loaded}, planned {planned}", file=sys.stderr, flush=True)
        path.unlink()
    return result


def child_snapshot() -> dict[str, float]:
    """Every format at BENCH_NODES / BENCH_PODS (default 5,000 / 150,000), for benchmarks.run."""
    nodes = int(os.environ.get("BENCH_NODES", "5000"))
    pods = int(os.environ.get("BENCH_PODS", "150000"))
    with tempfile.TemporaryDirectory() as directory:
        return bench(nodes, pods, FORMATS, Path(directory))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--formats", default=",".join(FORMATS), help="file suffixes, comma-separated")
    parser.add_argument("--dir", type=Path, help="where to write the files (default: a temporary directory)")
    args = parser.parse_args()
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        result = bench(args.nodes, args.pods, formats, Path(directory))
    print(json.dumps(result))
    for suffix in formats:
        key = _key(suffix)
        print(
            f"{suffix:8} {result[f'file_{key}_mib']:7.0f} MiB"
            + "".join(
                f"  {what} {result[f'{what}_{key}_seconds']:6.1f} s wall"
                f" {result[f'{what}_{key}_cpu_seconds']:6.1f} s CPU {result[f'{what}_{key}_peak_rss_mib']:5.0f} MiB"
                for what in ("save", "load", "plan")
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
