"""Time the extender: one filter + prioritize pair per pod, as kube-scheduler sends them.

Target (scheduling-core.md §7, testing.md §4): 5,000 candidate node names, p99 ≤ 10 ms per pair,
≥ 1,000 pods/s sustained on one core. Each pod's NodeNames come in a fresh random order (kube-
scheduler collects feasible nodes from 16 parallel workers), the prioritize call carries the
filter's answer (as kube-scheduler passes it on), and each pod is then reported bound to the
node the extender scored best (the cache's watch event), so the assumed-pods ledger is exercised.

    .venv/bin/python -m benchmarks.bench_extender [--nodes 5000] [--pods 150000] [--requests 2000]
        [--candidates 5000] [--mode in-process|http|both] [--refresh]

`http`: the extender serves from a child process pinned to CPU 0, the client runs pinned to CPU 1;
the server's CPU time per pair is reported next to the wall-clock rate. `--refresh`: the state is
also rebuilt in the background (as a changing cluster makes it), to show its effect on latency.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import random
import resource
import statistics
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, cast

import msgspec

from benchmarks.cluster import generated_snapshot
from descheduler import metrics
from descheduler.decode import RawPod, Refit, convert, pod_from_raw
from descheduler.extender import Extender, ExtenderServer, HostPriority, RefreshTiming
from descheduler.extender.sources import BindingHook, LeavingHook, ReservationHook
from descheduler.kube.kinds import KINDS, PODS
from descheduler.model import Pod
from descheduler.policy import default_policy
from descheduler.snapshot import Snapshot
from tests.extender.requests import kube_pod


class MemorySource:
    """A generated snapshot held in memory; `changing` makes every generation new (a busy cluster)."""

    def __init__(self, snapshot: Snapshot, changing: bool = False) -> None:
        self._snapshot = snapshot
        self._changing = changing
        self._calls = 0

    def not_ready(self) -> str | None:
        return None

    def generation(self) -> Hashable:
        self._calls += self._changing
        return self._calls

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def watch_bindings(self, hook: BindingHook) -> None:
        """Bindings are reported by the benchmark itself (`bound_record`)."""

    def watch_reservations(self, hook: ReservationHook) -> None:
        """The generated cluster holds no Reservations."""

    def watch_leaving(self, hook: LeavingHook) -> None:
        """No pod leaves the generated cluster."""

    def pod(self, namespace: str, name: str) -> Pod | None:
        return None


def pod_json(i: int) -> dict[str, Any]:
    """A pending pod as kube-scheduler marshals it (about 2 KiB): the contract tests' builder."""
    cpu, memory = random.Random(i).choice([("250m", "256Mi"), ("500m", "512Mi"), ("1", "1Gi"), ("2", "4Gi")])
    return kube_pod(f"web-{i:06d}", cpu=cpu, memory=memory, owner=f"web-{i % 40}", namespace=f"ns-{i % 50}")


_PLACEHOLDER = "node-to-be-bound"


def bound_event(raw: dict[str, Any]) -> bytes:
    """The watch event the cache will see once the pod is bound (its node filled in by `bound_record`)."""
    pod = {**raw, "spec": {**raw["spec"], "nodeName": _PLACEHOLDER}}
    return msgspec.json.encode({"type": "MODIFIED", "object": pod})


def bound_record(event: bytes, node: str) -> Pod:
    """What the cache hands the extender once the pod is bound: the watch event decoded as the
    reflector decodes it (`ResourceKind.event_decoder`, then `listed_record`)."""
    pods = KINDS[PODS]
    line = event.replace(_PLACEHOLDER.encode(), node.encode(), 1)
    try:
        return cast(Pod, pods.listed_record(pods.event_decoder.decode(line).object))
    except Refit:
        return pod_from_raw(convert(msgspec.json.decode(line)["object"], RawPod))


@dataclass
class Bodies:
    pods: list[bytes]
    names: list[bytes]  # one shuffled NodeNames array per request


def make_bodies(snapshot: Snapshot, requests: int, candidates: int, seed: int = 1) -> Bodies:
    rng = random.Random(seed)
    all_names = [n.name for n in snapshot.nodes]
    pods, names = [], []
    for i in range(requests):
        chosen = rng.sample(all_names, min(candidates, len(all_names)))
        pods.append(msgspec.json.encode(pod_json(i)))
        names.append(msgspec.json.encode(chosen))
    return Bodies(pods, names)


def _args(pod: bytes, names: bytes) -> bytes:
    return b'{"Pod":' + pod + b',"Nodes":null,"NodeNames":' + names + b"}"


def _names_of(filter_answer: bytes) -> bytes:
    start = filter_answer.index(b'"NodeNames":') + len(b'"NodeNames":')
    return filter_answer[start : filter_answer.index(b',"FailedNodes"', start)]


_HOSTS = msgspec.json.Decoder(list[HostPriority])


def _best(prioritize_answer: bytes) -> str:
    """The node kube-scheduler would bind to, if the extender's score alone decided."""
    hosts = _HOSTS.decode(prioritize_answer)
    return max(hosts, key=lambda h: h.Score).Host if hosts else ""


def _refreshes() -> float:
    """Successful state rebuilds so far in this process."""
    return metrics.REGISTRY.get_sample_value("descheduler_extender_refreshes_total", {"result": "success"}) or 0.0


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def p(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    median, top = statistics.median(ordered) * 1000, ordered[-1] * 1000
    return f"p50 {median:.2f} ms, p90 {p(0.9):.2f}, p99 {p(0.99):.2f}, max {top:.2f}"


def run_pairs(
    bodies: Bodies,
    filter_: Callable[[bytes], bytes],
    prioritize: Callable[[bytes], bytes],
    bound: Callable[[int, str], None] | None,
) -> tuple[list[float], float]:
    """(wall-clock latency of each filter + prioritize pair, CPU seconds the calling thread spent
    on them and on recording the bindings)."""
    latencies = []
    cpu = 0.0  # this thread's CPU time: what the extender costs even when other processes compete for the core
    for i, (pod, names) in enumerate(zip(bodies.pods, bodies.names, strict=True)):
        # Building the request bodies is kube-scheduler's work: it is left out of the time.
        asked = _args(pod, names)
        c0, t0 = time.thread_time(), time.perf_counter()
        filtered = filter_(asked)
        latency, spent = time.perf_counter() - t0, time.thread_time() - c0
        asked = _args(pod, _names_of(filtered))
        c0, t0 = time.thread_time(), time.perf_counter()
        answer = prioritize(asked)
        latencies.append(latency + time.perf_counter() - t0)
        cpu += spent + time.thread_time() - c0
        if bound is not None:
            node = _best(answer)
            c1 = time.thread_time()
            bound(i, node)
            cpu += time.thread_time() - c1
    return latencies, cpu


def in_process(snapshot: Snapshot, bodies: Bodies, refresh: bool) -> None:
    extender = Extender(
        MemorySource(snapshot, changing=refresh),
        default_policy().scheduling,
        timing=RefreshTiming(interval=1.0, build_share=1.0),
    )
    started = time.perf_counter()
    extender.refresh(force=True)
    print(f"state build (node table + encoded pieces): {time.perf_counter() - started:.2f} s")
    if refresh:
        extender.start()
    events = [bound_event(json.loads(p)) for p in bodies.pods]

    def bound(i: int, node: str) -> None:
        if node:
            extender.observe_binding(bound_record(events[i], node), node)

    # Warm-up (first-use caches), then the measured run.
    warm = Bodies(bodies.pods[:50], bodies.names[:50])
    run_pairs(warm, extender.filter, extender.prioritize, None)
    refreshes = _refreshes()
    latencies, cpu = run_pairs(bodies, extender.filter, extender.prioritize, bound)
    extender.stop()
    n = len(latencies)
    rebuilt = f"; {_refreshes() - refreshes:.0f} state rebuilds meanwhile" if refresh else ""
    print(
        f"in-process, {n} pairs: {_percentiles(latencies)}; {cpu / n * 1000:.2f} ms CPU per pod = {n / cpu:.0f} pods/s"
        f"{rebuilt}"
    )


def _serve(snapshot: Snapshot, refresh: bool, ready: Connection, done: Connection) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    extender = Extender(
        MemorySource(snapshot, changing=refresh),
        default_policy().scheduling,
        timing=RefreshTiming(interval=1.0, build_share=1.0),
    )
    extender.refresh(force=True)
    if refresh:
        extender.start()
    server = ExtenderServer(extender, "127.0.0.1", 0).start()
    ready.send(server.port)
    done.recv()  # the client is about to start the measured run
    start = resource.getrusage(resource.RUSAGE_SELF)
    done.recv()  # the run is over
    end = resource.getrusage(resource.RUSAGE_SELF)
    done.send((end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime))
    server.stop()
    extender.stop()


def over_http(snapshot: Snapshot, bodies: Bodies, refresh: bool) -> None:
    ctx = multiprocessing.get_context("fork")
    ready_parent, ready_child = ctx.Pipe()
    done_parent, done_child = ctx.Pipe()
    child = ctx.Process(target=_serve, args=(snapshot, refresh, ready_child, done_child), daemon=True)
    child.start()
    port = ready_parent.recv()
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    conn = http.client.HTTPConnection("127.0.0.1", port)

    def call(verb: str) -> Callable[[bytes], bytes]:
        def send(body: bytes) -> bytes:
            conn.request("POST", f"/{verb}", body, {"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            if response.status != 200:
                raise RuntimeError(f"{verb}: {response.status} {data[:200]!r}")
            return data

        return send

    run_pairs(Bodies(bodies.pods[:50], bodies.names[:50]), call("filter"), call("prioritize"), None)
    done_parent.send("start")
    started = time.perf_counter()
    latencies, _ = run_pairs(bodies, call("filter"), call("prioritize"), None)
    wall = time.perf_counter() - started
    done_parent.send("stop")
    server_cpu = done_parent.recv()
    conn.close()
    child.join(10)
    n = len(latencies)
    print(
        f"HTTP on loopback, {n} pairs: {_percentiles(latencies)}; {n / wall:.0f} pods/s wall; "
        f"server {server_cpu / n * 1000:.2f} ms CPU per pair = {n / server_cpu:.0f} pods/s per server CPU-second"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000, help="pods already running in the cluster")
    parser.add_argument("--requests", type=int, default=2000, help="filter+prioritize pairs to time")
    parser.add_argument("--candidates", type=int, default=0, help="node names per request (default: all nodes)")
    parser.add_argument("--mode", choices=("in-process", "http", "both"), default="both")
    parser.add_argument("--refresh", action="store_true", help="rebuild the state in the background meanwhile")
    options = parser.parse_args()
    candidates = options.candidates or options.nodes
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores; {options.nodes} nodes, {options.pods} pods; "
        f"{candidates} candidate names per request{', background refresh' if options.refresh else ''}"
    )
    started = time.perf_counter()
    snapshot = generated_snapshot(options.nodes, options.pods)
    bodies = make_bodies(snapshot, options.requests, candidates)
    print(f"generate cluster and requests: {time.perf_counter() - started:.1f} s")
    if options.mode in ("in-process", "both"):
        in_process(snapshot, bodies, options.refresh)
    if options.mode in ("http", "both"):
        over_http(snapshot, bodies, options.refresh)


if __name__ == "__main__":
    main()
