"""The list-watch cache at scale: decode a 150,000-pod list into the cache, apply watch events, take snapshots.

    .venv/bin/python -m benchmarks.bench_cache [--nodes 5000] [--pods 150000] [--events 30000] [--runs 3]
    .venv/bin/python -m benchmarks.bench_cache --server      # also end to end through the fake API server

Each measurement runs in a fresh subprocess so its peak RSS is its own. Targets (testing.md §4,
issue 15): decode ≤ 5 s and ≤ 1 GiB RSS for the whole process (≤ 15 s and ≤ 2 GiB at 15,000
nodes / 450,000 pods); ≥ 50,000 watch events applied per second. On a shared machine read the
CPU seconds: wall time doubles while another process runs.
The pods are the ones `benchmarks.fake_apiserver_load` seeds, in the objects a real API server
returns (`benchmarks.server_shapes`: managedFields, admission's defaults, the kubelet's status;
~6.5 KB a pod in JSON).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec

from benchmarks.server_shapes import nodes as node_objects
from benchmarks.server_shapes import pods as pod_objects
from descheduler.kube import NODES, PODS, ClusterCache, KubeClient
from descheduler.kube.gcpause import paused_gc
from descheduler.kube.kinds import KINDS
from descheduler.kube.listing import Listed, add_page, decode_page
from descheduler.kube.reflector import Reflector
from descheduler.snapshot import Snapshot

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
PAGE = 500


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def list_pages(objects: Iterator[dict[str, Any]], list_kind: str) -> Iterator[bytes]:
    """The list as the API serves it, page by page (encoded lazily so only one page is in memory)."""
    page: list[dict[str, Any]] = []
    number = 0
    for obj in objects:
        page.append(obj)
        if len(page) == PAGE:
            number += 1
            yield _page(list_kind, page, f"c{number}")
            page = []
    yield _page(list_kind, page, "")


def _page(list_kind: str, items: list[dict[str, Any]], token: str) -> bytes:
    meta = {"resourceVersion": "999", "continue": token} if token else {"resourceVersion": "999"}
    return msgspec.json.encode({"kind": list_kind, "apiVersion": "v1", "metadata": meta, "items": items})


def fill_cache(cache: ClusterCache, n_nodes: int, n_pods: int, pinned: bool = False) -> tuple[float, float, int]:
    """Decode the node and pod lists into the cache as a reflector does (GC paused while listing);
    returns (wall and CPU seconds spent decoding and applying, JSON bytes). `pinned`: see
    `server_shapes.pods`."""
    spent, cpu, size = 0.0, 0.0, 0
    for name, objects, list_kind in (
        (NODES, node_objects(n_nodes), "NodeList"),
        (PODS, pod_objects(n_pods, n_nodes, pinned=pinned), "PodList"),
    ):
        kind = KINDS[name]
        listed = Listed()
        with paused_gc():
            for body in list_pages(objects, list_kind):
                size += len(body)
                started, started_cpu = time.perf_counter(), time.process_time()
                add_page(kind, decode_page(kind, body), listed)
                spent += time.perf_counter() - started
                cpu += time.process_time() - started_cpu
            started, started_cpu = time.perf_counter(), time.process_time()
            cache.replace(kind, listed.records, listed.problems)
            spent += time.perf_counter() - started
            cpu += time.process_time() - started_cpu
    return spent, cpu, size


def offline_client() -> KubeClient:
    """A client for a server that is never called: the cache below is fed directly, never started."""
    from kubernetes import client

    return KubeClient(client.Configuration(host="http://127.0.0.1:9"))


def offline_cache() -> ClusterCache:
    return ClusterCache(offline_client(), kinds=(NODES, PODS))


def bench_decode(args: argparse.Namespace) -> dict[str, Any]:
    cache = offline_cache()
    seconds, cpu, size = fill_cache(cache, args.nodes, args.pods)
    assert cache.count(PODS) == args.pods, cache.count(PODS)
    return {"seconds": seconds, "cpu_seconds": cpu, "json_mib": size / 2**20, "peak_rss_mib": peak_rss_mib()}


def event_lines(n_events: int, n_pods: int, n_nodes: int) -> list[bytes]:
    """MODIFIED events (status and label changes) for existing pods, with ADDED and DELETED mixed in."""
    lines = []
    for i, pod in enumerate(pod_objects(n_events, n_nodes, start_rv=10_000_000)):
        if i % 10 == 9:
            event = "DELETED"
        elif i % 10 == 8:
            event = "ADDED"
            pod["metadata"]["name"] = f"new-{i}"
        else:
            event = "MODIFIED"
            pod["metadata"]["labels"]["revision"] = str(i)
            pod["status"]["conditions"][0]["status"] = "False" if i % 2 else "True"
        lines.append(msgspec.json.encode({"type": event, "object": pod}))
    return lines


def bench_events(args: argparse.Namespace) -> dict[str, Any]:
    cache = offline_cache()
    fill_cache(cache, args.nodes, args.pods)
    first_started = time.perf_counter()
    cache.snapshot(NOW)
    first_snapshot = time.perf_counter() - first_started
    lines = event_lines(args.events, args.pods, args.nodes)
    reflector = Reflector(offline_client(), KINDS[PODS], cache)
    gc.collect()
    started, started_cpu = time.perf_counter(), time.process_time()
    reflector.apply_events(lines)
    seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    snapshots = []
    for _ in range(3):
        started = time.perf_counter()
        snapshot = cache.snapshot(NOW)
        snapshots.append(time.perf_counter() - started)
        # Touch one pod so the next snapshot has to rebuild what a changed pod invalidates.
        reflector.apply_events(lines[:1])
    started = time.perf_counter()
    Snapshot.build(now=NOW, nodes=snapshot.nodes, pods=snapshot.pods)
    build = time.perf_counter() - started
    return {
        "events": len(lines),
        "seconds": seconds,
        "events_per_second": len(lines) / seconds,
        "events_per_cpu_second": len(lines) / cpu,
        "first_snapshot_seconds": first_snapshot,
        "snapshot_seconds": statistics.median(snapshots),
        "snapshot_build_seconds": build,
        "peak_rss_mib": peak_rss_mib(),
    }


def bench_server(args: argparse.Namespace) -> dict[str, Any]:
    """End to end: the fake API server holds the cluster; the cache lists and watches it over HTTP."""
    from descheduler.fakecluster.apiserver import FakeApiServer

    with FakeApiServer() as server:
        server.store.load(node_objects(args.nodes))
        server.store.load(pod_objects(args.pods, args.nodes))
        gc.freeze()  # the seeded store is long-lived: keep the GC from re-walking it
        rss_server = peak_rss_mib()
        client = KubeClient(server.configuration(), qps=0, burst=0, timeout=120)
        cache = ClusterCache(client, kinds=(NODES, PODS))
        started = time.perf_counter()
        cache.start()
        assert cache.wait_synced(600)
        sync = time.perf_counter() - started
        names = [p.name for p in cache.records(PODS)[: args.server_events]]
        namespaces = {p.name: p.namespace for p in cache.records(PODS)[: args.server_events]}
        started = time.perf_counter()
        for name in names:
            server.store.modify("pods", name, namespaces[name], lambda o: o["metadata"]["labels"].update(touched="1"))
        last = names[-1]
        while cache.get(PODS, f"{namespaces[last]}/{last}").labels.get("touched") != "1":
            time.sleep(0.005)
        watch_seconds = time.perf_counter() - started
        cache.stop()
        client.close()
    return {
        "sync_seconds": sync,
        "server_rss_mib": rss_server,
        "peak_rss_mib": peak_rss_mib(),
        "events": len(names),
        "events_per_second": len(names) / watch_seconds,
    }


BENCHMARKS = {"decode": bench_decode, "events": bench_events, "server": bench_server}


def _child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.bench_cache", "--only", name, "--nodes", str(args.nodes)]
    argv += ["--pods", str(args.pods), "--events", str(args.events), "--server-events", str(args.server_events)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--server-events", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--server", action="store_true", help="also list and watch through the fake API server")
    parser.add_argument("--only", choices=sorted(BENCHMARKS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(BENCHMARKS[args.only](args)))
        return 0

    print(f"{args.nodes} nodes, {args.pods} pods, {args.events} watch events, {args.runs} runs (fresh process each)")
    decode = [_child("decode", args) for _ in range(args.runs)]
    print(
        f"decode the node and pod lists ({decode[0]['json_mib']:.0f} MiB of JSON) into the cache: "
        f"{_spread([r['seconds'] for r in decode])} s wall, {_spread([r['cpu_seconds'] for r in decode])} s CPU; "
        f"peak RSS {_spread([r['peak_rss_mib'] for r in decode])} MiB"
        "  [target ≤ 5 s, ≤ 1024 MiB]"
    )
    events = [_child("events", args) for _ in range(args.runs)]
    print(
        f"apply {events[0]['events']} pod watch events: {_spread([r['events_per_second'] for r in events])} events/s "
        f"(per CPU second: {_spread([r['events_per_cpu_second'] for r in events])})"
        "  [target ≥ 50,000/s]"
    )
    print(
        f"cache.snapshot(): first (full sort) {_spread([r['first_snapshot_seconds'] for r in events])} s, "
        f"then {_spread([r['snapshot_seconds'] for r in events])} s; "
        f"Snapshot.build on the same records {_spread([r['snapshot_build_seconds'] for r in events])} s"
    )
    if args.server:
        server = [_child("server", args) for _ in range(max(1, args.runs // 2))]
        print(
            f"through the fake API server: list+decode to synced {_spread([r['sync_seconds'] for r in server])} s "
            f"(process peak RSS, server included, {_spread([r['peak_rss_mib'] for r in server])} MiB); "
            f"{server[0]['events']} watch events end to end {_spread([r['events_per_second'] for r in server])}/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
