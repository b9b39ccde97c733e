"""Time the extender: one filter + prioritize pair per pod, as kube-scheduler sends them.

Target (scheduling-core.md §7, testing.md §4): 5,000 candidate node names, p99 ≤ 10 ms per pair,
≥ 1,000 pods/s sustained on one core. Each pod's NodeNames come in a fresh random order (kube-
scheduler collects feasible nodes from 16 parallel workers), the prioritize call carries the
filter's answer (as kube-scheduler passes it on), and each pod is then reported bound to the
node the extender scored best (the cache's watch event), so the assumed-pods ledger is exercised.

    .venv/bin/python -m benchmarks.bench_extender [--nodes 5000] [--pods 150000] [--requests 2000]
        [--candidates 5000] [--mode in-process|http|both] [--refresh] [--bind]

`http`: the extender serves from a child process pinned to CPU 0, the client runs pinned to CPU 1
(with `--bind` it also reports each binding to the server's process, as its watch would); the
server process's CPU time per pair is reported next to the wall-clock rate. `--refresh`: the
state is also rebuilt in the background (as a changing cluster makes it), to show its effect on
latency. `child_extender_http` gives benchmarks/run.py the HTTP figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import resource
import socket
import statistics
import threading
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


class KeptAlive:
    """A lean HTTP/1.1 client on one kept-alive connection, as Go's is: the request in one write, the
    answer read by its Content-Length. http.client took ~0.15 ms more of the client's CPU a request
    (5,000 names; its headers parsed by the email package, its buffered reads), time the latency
    counted as the server's and that a busy machine stretched."""

    def __init__(self, host: str, port: int) -> None:
        self._sock = socket.create_connection((host, port))
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._host = f"{host}:{port}".encode()
        self._pending = b""

    def post(self, path: str, body: bytes) -> bytes:
        head = b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        self._sock.sendall(head % (path.encode(), self._host, len(body)) + body)
        data = self._pending
        while (end := data.find(b"\r\n\r\n")) < 0:
            data += self._recv()
        status_line, *lines = data[:end].split(b"\r\n")
        length = next(int(v) for k, _, v in (line.partition(b":") for line in lines) if k.lower() == b"content-length")
        while len(data) < end + 4 + length:
            data += self._recv()
        answer, self._pending = data[end + 4 : end + 4 + length], data[end + 4 + length :]
        if status_line.split(b" ")[1] != b"200":
            raise RuntimeError(f"{path}: {status_line.decode()} {answer[:200]!r}")
        return answer

    def _recv(self) -> bytes:
        chunk = self._sock.recv(1 << 18)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    def close(self) -> None:
        self._sock.close()


@dataclass
class HttpRun:
    """One run of pairs over HTTP: what the client saw and what the server process spent."""

    latencies: list[float]  # seconds per filter + prioritize pair, as the client waited for them
    wall: float  # seconds for the whole run
    server_cpu: float  # CPU seconds of the server process (every thread: requests, bindings, rebuilds)
    rebuilds: float  # state rebuilds completed during the run


def _serve(snapshot: Snapshot, refresh: bool, events: list[bytes], control: Connection, bindings: Connection) -> None:
    """The extender's process: serves on a free port, and records each binding the client reports as
    the cache would hand it over after decoding the pod's watch event (on a thread of its own)."""
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

    def watch() -> None:
        while (bound := bindings.recv()) is not None:
            i, node = bound
            extender.observe_binding(bound_record(events[i], node), node)

    watcher = threading.Thread(target=watch, name="bindings", daemon=True)
    watcher.start()
    control.send(server.port)
    control.recv()  # the client is about to start the measured run
    start, rebuilds = resource.getrusage(resource.RUSAGE_SELF), _refreshes()
    while control.recv() == "rebuilds?":  # until the run is over, its last binding sent
        control.send(_refreshes() - rebuilds)
    watcher.join(60)
    end = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime)
    control.send((cpu, _refreshes() - rebuilds))
    server.stop()
    extender.stop()


REFRESH_ROUNDS = 5  # at most this many passes over the pods while waiting for a rebuild to be swapped in


def http_run(snapshot: Snapshot, bodies: Bodies, *, refresh: bool = False, bind: bool = False) -> HttpRun:
    """Filter + prioritize pairs over one kept-alive HTTP/1.1 connection to a server in a process of its
    own pinned to CPU 0 (this one runs on CPU 1); with `bind`, each pod is then reported bound to the
    node the extender scored best, to the server's process, as its watch would (counted in its CPU).
    With `refresh`, the state is rebuilt back to back meanwhile and the pods are asked about again
    until one rebuild has completed (at most REFRESH_ROUNDS passes)."""
    ctx = multiprocessing.get_context("fork")
    control, control_child = ctx.Pipe()
    bindings, bindings_child = ctx.Pipe()
    events = [bound_event(json.loads(p)) for p in bodies.pods] if bind else []
    child = ctx.Process(target=_serve, args=(snapshot, refresh, events, control_child, bindings_child), daemon=True)
    child.start()
    port = control.recv()
    previous = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if previous is not None and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    conn = KeptAlive("127.0.0.1", port)

    def call(verb: str) -> Callable[[bytes], bytes]:
        return lambda body: conn.post(f"/{verb}", body)

    def bound(i: int, node: str) -> None:
        if node:
            bindings.send((i, node))

    try:
        run_pairs(Bodies(bodies.pods[:50], bodies.names[:50]), call("filter"), call("prioritize"), None)
        control.send("start")
        started = time.perf_counter()
        latencies, _ = run_pairs(bodies, call("filter"), call("prioritize"), bound if bind else None)
        # While the state is rebuilt, the run goes on (the same pods again) until a rebuild has been
        # swapped in, up to REFRESH_ROUNDS times as long: the swap's moment is part of what it measures.
        for _ in range(REFRESH_ROUNDS - 1 if refresh else 0):
            control.send("rebuilds?")
            if control.recv() >= 1:
                break
            more, _ = run_pairs(bodies, call("filter"), call("prioritize"), bound if bind else None)
            latencies += more
        wall = time.perf_counter() - started
        bindings.send(None)
        control.send("stop")
        server_cpu, rebuilds = control.recv()
    finally:
        conn.close()
        child.join(30)
        if child.is_alive():
            child.kill()
        if previous is not None:
            os.sched_setaffinity(0, previous)
    return HttpRun(latencies, wall, server_cpu, rebuilds)


def over_http(snapshot: Snapshot, bodies: Bodies, refresh: bool, bind: bool) -> None:
    run = http_run(snapshot, bodies, refresh=refresh, bind=bind)
    n = len(run.latencies)
    rebuilt = f"; {run.rebuilds:.0f} state rebuilds meanwhile" if refresh else ""
    print(
        f"HTTP on loopback, {n} pairs{', bindings reported' if bind else ''}: {_percentiles(run.latencies)}; "
        f"{n / run.wall:.0f} pods/s wall; server {run.server_cpu / n * 1000:.2f} ms CPU per pair = "
        f"{n / run.server_cpu:.0f} pods/s per server CPU-second{rebuilt}"
    )


def child_extender_http() -> dict[str, float]:
    """The extender over HTTP as kube-scheduler calls it, for benchmarks/run.py: per run, a filter and
    a prioritize POST per pod on one kept-alive connection to a server process of its own. "all": every
    node's name (5,000 at BENCH_NODES=5000); "500": 500 names; "refresh": all names while the state is
    rebuilt back to back, the pods asked about again until a rebuild is swapped in; "bound": all
    names, each pod then reported bound in the server's process (as its watch would, and as the
    in-process figures do: the next pod's answer recomputes that row)."""
    nodes = int(os.environ.get("BENCH_NODES", "5000"))
    pods = int(os.environ.get("BENCH_PODS", "150000"))
    requests = int(os.environ.get("BENCH_REQUESTS", "800"))
    snapshot = generated_snapshot(nodes, pods)
    out: dict[str, float] = {}
    for label, candidates, refresh, bind in (
        ("all", nodes, False, False),
        ("500", min(500, nodes), False, False),
        ("refresh", nodes, True, False),
        ("bound", nodes, False, True),
    ):
        run = http_run(snapshot, make_bodies(snapshot, requests, candidates), refresh=refresh, bind=bind)
        ordered = sorted(run.latencies)
        n = len(ordered)
        out[f"http_{label}_p50_ms"] = statistics.median(ordered) * 1000
        out[f"http_{label}_p99_ms"] = ordered[min(n - 1, int(0.99 * n))] * 1000
        out[f"http_{label}_pods_per_server_cpu_second"] = n / run.server_cpu
        out[f"http_{label}_pods_per_second_wall"] = n / run.wall
        if refresh:
            out[f"http_{label}_rebuilds"] = run.rebuilds
            out[f"http_{label}_pairs"] = n
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000, help="pods already running in the cluster")
    parser.add_argument("--requests", type=int, default=2000, help="filter+prioritize pairs to time")
    parser.add_argument("--candidates", type=int, default=0, help="node names per request (default: all nodes)")
    parser.add_argument("--mode", choices=("in-process", "http", "both"), default="both")
    parser.add_argument("--refresh", action="store_true", help="rebuild the state in the background meanwhile")
    parser.add_argument("--bind", action="store_true", help="over HTTP, report each pod bound to the server")
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
        over_http(snapshot, bodies, options.refresh, options.bind)


if __name__ == "__main__":
    main()
