"""A simulated day under faults: the controller keeps working and loses nothing (issue 18).

    .venv/bin/python -m benchmarks.soak --hours 24 --nodes 100 --seed 1    # the full run, JSON on stdout
    .venv/bin/python -m benchmarks.run soak                                # the same, into RESULTS.md

A trace cluster (descheduler/fakecluster/traces.py: sampled Alibaba openb nodes and pods, cpu on the
2018 diurnal curve, memory on the GenAI per-pod series) runs on simulated time with what
`descheduler run` and `descheduler extender` run, over HTTP to the fake API server with the
official client: two controller replicas (each its own client, list-watch cache, load reader,
planning loop, executor, migration controller, policy file and leader elector, the electors
racing each other on threads every retry period), and the extender that the simulated
kube-scheduler calls to filter, prioritize and bind every pod.

Faults come at seeded random times (`random.Random(seed)`, the same schedule for the same seed):
API 500/503/429 bursts on every verb and resource the controller uses, watches dropped (cleanly
or by reset), 410 Gone on resume (history forgotten, as after compaction), responses slower than
the client's timeout, the leader killed (no release) and restarted, both replicas restarted at
once to race for the Lease, the load source failing or going stale, an invalid policy pushed
then a valid one, and, while a move is in flight, its Reservation or PodMigrationJob deleted by
hand, its target node deleted, or a PodDisruptionBudget tightened on its workload.

After every step the auditor looks at the API (the store and the server's audit log), not at
what the controller believes, and counts what must stay zero: evictions beyond a limit or a
PodDisruptionBudget, a pod evicted twice (or evicted with no job), Reservations older than their
TTL and orphans at the end, workloads below their replicas for longer than a move needs, cycles
that planned moves on data that could not be read, and two leaders at once; and how long the
controller took to plan again after each fault.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from benchmarks.quality import HIGH, LOW, START, coarse
from descheduler.controller.command import eviction_client
from descheduler.controller.cycle import CycleResult, PlanningLoop
from descheduler.controller.leader import LeaderElector, LeaseConfig, election_client
from descheduler.controller.reload import PolicyFile
from descheduler.controller.source import ClusterSource
from descheduler.events import EventRecorder
from descheduler.extender import CacheSource, Extender, ExtenderServer
from descheduler.extender.command import EXTENDER_KINDS
from descheduler.extender.reservations import ReservationWriter
from descheduler.fakecluster.apiserver import ApiError, Faults, Store
from descheduler.fakecluster.apiserver.faults import AuditEntry
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.metrics import MetricsPublisher
from descheduler.fakecluster.pods import controller_ref, is_ready, is_terminating
from descheduler.fakecluster.scheduler import ExtenderConfig
from descheduler.fakecluster.traces import trace_scenario
from descheduler.kube import CLUSTER_KINDS, MIGRATION_JOBS, RESERVATIONS, ClusterCache, connect
from descheduler.kube.client import USER_AGENT
from descheduler.labels import LabelSelector
from descheduler.loadsource import cache_kinds, reader_for
from descheduler.migration.api import Evictions, MigrationApi
from descheduler.migration.controller import MigrationController
from descheduler.migration.executor import Executor
from descheduler.migration.objects import TERMINAL_PHASES, parse_reservation
from descheduler.migration.presence import SchedulerPresence, plan_routes
from descheduler.policy import Policy, PolicyError, parse_policy
from descheduler.simulate.record import limit_violations, orphan_reservations, phase
from descheduler.simulate.runner import settle
from descheduler.timestamps import parse_time

LEASE_NAMESPACE = "kube-system"
EVICTION = re.compile(r"/namespaces/([^/]+)/pods/([^/]+)/eviction$")
POD = re.compile(r"/namespaces/([^/]+)/pods/([^/]+)$")
NOTHING = re.compile(r"(?!)")
METRICS_PATH = r"^/apis/metrics\.k8s\.io/"
TERMINAL_RESERVATION = frozenset({"Consumed", "Expired", "Failed"})
FAULT_KINDS = (
    "api-error",
    "watch-drop",
    "watch-gone",
    "slow-response",
    "leader-kill",
    "lease-race",
    "load-error",
    "load-stale",
    "bad-policy",
    "reservation-deleted",
    "job-deleted",
    "node-deleted",
    "pdb-tightened",
)
MID_MOVE = frozenset({"reservation-deleted", "job-deleted", "node-deleted", "pdb-tightened"})
# What the controller calls, by (method, path regex): every verb on every resource it uses.
API_TARGETS: tuple[tuple[str | None, str], ...] = (
    ("GET", r"/pods$"),
    ("GET", r"/nodes$"),
    ("GET", r"/poddisruptionbudgets$"),
    ("GET", r"/replicasets$"),
    ("GET", r"/podmigrationjobs$"),
    ("GET", r"/reservations$"),
    ("GET", r"/podmigrationjobs/[^/]+$"),
    ("POST", r"/podmigrationjobs$"),
    ("PUT", r"/podmigrationjobs/"),
    ("PATCH", r"/podmigrationjobs/"),
    ("DELETE", r"/podmigrationjobs/"),
    ("POST", r"/reservations$"),
    ("PATCH", r"/reservations/"),
    ("PUT", r"/reservations/"),
    ("DELETE", r"/reservations/"),
    ("POST", r"/eviction$"),
    ("GET", r"/leases/"),
    ("PUT", r"/leases/"),
    ("POST", r"/events$"),
    ("PATCH", r"/events/"),
    ("GET", METRICS_PATH),
    (None, r"/pods"),
)
# A policy the controller must refuse, one of each kind of mistake.
BAD_POLICIES = (
    "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\ninterval: [5m\n",  # not YAML
    "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\nintervall: 5m\n",  # unknown field
    "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\nstrategies:\n- name: LowNodeLoad\n"
    "  args: {lowThresholds: {cpu: 80}, highThresholds: {cpu: 170}}\n",  # out of range, low > high
)


@dataclass(slots=True)
class SoakOptions:
    nodes: int = 100
    hours: float = 24.0
    seed: int = 1
    faults_per_hour: float = 32.0
    tick: float = 15.0  # the cluster's step, the migration controller's period, the electors' retry period
    interval_minutes: int = 5
    client_timeout: float = 3.0  # the replicas' request timeout; slow responses exceed it
    lease_duration: float = 45.0
    renew_deadline: float = 30.0
    moved_within: float = 300.0  # a workload below its replicas longer than this has lost a pod
    settle_seconds: float = 2.0  # how long (wall) a replica's cache may take to catch up before a cycle
    start_hour: float = 0.0  # of the trace's day (UTC); its load ramps up to a peak around 06:00


def policy_text(options: SoakOptions, note: str = "") -> str:
    def flow(values: dict[str, float]) -> str:
        return "{" + ", ".join(f"{k}: {v:g}" for k, v in values.items()) + "}"

    return f"""\
# soak policy{note}
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {options.interval_minutes}m
evictor: {{minReplicas: 1}}
limits: {{maxEvictionsPerCycle: 10, maxEvictionsPerNode: 2}}
strategies:
- name: LowNodeLoad
  args:
    lowThresholds: {flow(LOW)}
    highThresholds: {flow(HIGH)}
migration:
  ttl: 5m
  maxMigratingPerNode: 2
"""


# ------------------------------------------------------------------------------------------ the world


class PausableMetrics:
    """The metrics publisher, which a fault can pause: the load source then serves stale data."""

    def __init__(self, publisher: MetricsPublisher) -> None:
        self.publisher = publisher
        self.paused_until = 0.0

    def step(self, now: float) -> None:
        if now >= self.paused_until:
            self.publisher.step(now)


class ExtenderStep:
    """Runs just before the simulated scheduler: the extender's cache catches up (bounded: a
    dropped watch may leave it behind, as in a real cluster), its state is rebuilt, and the
    scheduler Lease is renewed on the simulated clock (the extender's job in a cluster)."""

    def __init__(self, world: World, cache: ClusterCache, extender: Extender) -> None:
        self.world = world
        self.cache = cache
        self.extender = extender

    def step(self, now: float) -> None:
        settle(self.cache, self.world.cluster, timeout=self.world.options.settle_seconds)
        self.extender.refresh(force=True)
        self.world.cluster.scheduler.renew_lease(now)


class Replica:
    """One `descheduler run` process: its own client, cache, policy file, loop and elector."""

    def __init__(self, world: World, identity: str) -> None:
        self.world = world
        self.identity = identity
        options = world.options
        self.policy_file = PolicyFile(world.policy_path)  # first: an invalid policy stops the start
        self.kube = connect(world.kubeconfig, None, qps=10_000, burst=10_000, timeout=options.client_timeout)
        # Its own User-Agent, so the audit log tells this replica's requests from the others'.
        self.user_agent = f"{USER_AGENT} ({identity})"
        self.kube.api_client.user_agent = self.user_agent
        policy = self.policy_file.policy
        self.cache = ClusterCache(
            self.kube, kinds=(*CLUSTER_KINDS, *cache_kinds(policy.load_source)), backoff=(0.05, 1.0)
        )
        self.cache.start()
        self.source = ClusterSource(self.kube, self.cache)

        def current() -> Policy:
            return self.policy_file.policy

        lease = LeaseConfig(
            namespace=LEASE_NAMESPACE,
            identity=identity,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.tick,
        )
        # As `descheduler run` builds them: the elector and the evictions through clients of their own.
        self.evicting = eviction_client(self.kube.configuration, lease)
        presence = SchedulerPresence(MigrationApi(self.kube.api_client), LEASE_NAMESPACE)
        events = EventRecorder(self.kube.api_client, clock=world.clock)
        self.loop = PlanningLoop(
            self.source,
            Executor(self.kube.api_client, current),
            current,
            world.clock,
            routes=plan_routes(presence, current),
        )
        self.migration = MigrationController(
            self.kube.api_client,
            current,
            self.source.snapshot_now(world.clock, current),
            world.clock,
            events,
            presence=presence,
            evictions=Evictions(self.evicting.api_client, self.evicting.timeout),
        )
        # Simulated time runs faster than the wall: no rate limit, or a renewal would wait for the wall.
        self.election = election_client(self.kube.configuration, lease, qps=10_000)
        self.elector = LeaderElector(
            self.election.api_client,
            lease,
            on_started=self._started,
            on_stopped=lambda: None,  # the driver asks is_leader before any work
            monotonic=world.cluster.clock,
            wall=world.clock,
        )
        self.next_cycle = 0.0

    def _started(self) -> None:
        self.next_cycle = self.world.cluster.now  # a new leader plans at once

    def work(self, now: float) -> CycleResult | None:
        """The leader's work at `now`: a cycle when one is due, then a migration step."""
        result = None
        if now >= self.next_cycle:
            self.policy_file.check()
            settle(self.cache, self.world.cluster, timeout=self.world.options.settle_seconds)
            result = self.loop.run_cycle()
            self.next_cycle = now + self.policy_file.policy.interval.total_seconds()
        self.migration.reconcile_once()
        return result

    def kill(self) -> None:
        """SIGKILL: the process is gone at once; nothing is released or finished."""
        self.cache.stop(timeout=1.0)
        self.source.close()
        self.election.close()
        self.evicting.close()
        self.kube.close()


@dataclass(slots=True)
class Fault:
    kind: str
    at: float
    detail: str
    ended: float | None = None  # when the fault stopped acting (None: still acting)
    ready: float | None = None  # the first step after it ended with a leader whose cache is synced
    recovered: float | None = None  # the first cycle that planned after it ended
    handle: object | None = None
    count: int = 0  # how many requests a failing or slow rule applies to
    until: float = 0.0  # when a fault that acts for a while is withdrawn
    undo: Callable[[], None] | None = None


class World:
    """The cluster, the extender, the replicas and the policy file, stepped on simulated time."""

    def __init__(self, options: SoakOptions) -> None:
        self.options = options
        self._tmp = tempfile.TemporaryDirectory(prefix="descheduler-soak-")
        folder = Path(self._tmp.name)
        self.policy_path = folder / "policy.yaml"
        self.policy_path.write_text(policy_text(options))
        self.policy = parse_policy(self.policy_path.read_text(), str(self.policy_path))
        loaded = coarse(trace_scenario(nodes=options.nodes, seed=options.seed), options.tick)
        self.began = START.timestamp() + options.start_hour * 3600
        self.cluster = SimulatedCluster(loaded, start=self.began)
        self.metrics = PausableMetrics(self.cluster.metrics)
        components = self.cluster.components
        components[components.index(self.cluster.metrics)] = self.metrics
        self.cluster.start()
        self.faults = self.cluster.server.faults
        self.kubeconfig = self.cluster.write_kubeconfig(folder / "kubeconfig")
        self.replicas: dict[str, Replica | None] = {"descheduler-a": None, "descheduler-b": None}
        self.restarts: dict[str, float] = {}  # identity -> when its process starts again
        self.crashes = 0  # starts refused for an invalid policy
        self._extender_parts: list[Any] = []
        self.extender = self._start_extender()

    def clock(self) -> datetime:
        return datetime.fromtimestamp(self.cluster.now, UTC)

    def _start_extender(self) -> Extender:
        client = connect(self.kubeconfig, None, qps=10_000, burst=10_000, timeout=self.options.client_timeout)
        cache = ClusterCache(
            client, kinds=(*EXTENDER_KINDS, *cache_kinds(self.policy.load_source)), backoff=(0.05, 1.0)
        )
        reader = reader_for(self.policy.load_source, client, cache)
        source = CacheSource(cache, reader.read, load_interval=0.0, wall_clock=self.clock)
        extender = Extender(source, self.policy.scheduling, writer=ReservationWriter(client, "soak-extender"))
        cache.start()
        if not cache.wait_synced(30):
            raise RuntimeError(f"the extender's cache did not sync: {cache.not_ready()}")
        extender.start()  # as `descheduler extender`: refreshes and acknowledges Reservations on its own threads
        server = ExtenderServer(extender, "127.0.0.1", 0).start()
        scheduler = self.cluster.scheduler
        scheduler.extender = ExtenderConfig(url_prefix=server.url, weight=5, bind_verb="bind")
        scheduler.lease_namespace = LEASE_NAMESPACE
        components = self.cluster.components
        components.insert(components.index(scheduler), ExtenderStep(self, cache, extender))
        self._extender_parts = [server, cache, reader, client]
        return extender

    def start_replica(self, identity: str) -> None:
        """Start the process; with the policy file invalid it exits at once, as `descheduler run`
        does, and Kubernetes tries again later (CrashLoopBackOff)."""
        try:
            self.replicas[identity] = Replica(self, identity)
        except PolicyError:
            self.crashes += 1
            self.restarts[identity] = self.cluster.now + 2 * self.options.tick
            return
        self.restarts.pop(identity, None)

    def kill(self, identity: str, restart_after: float) -> bool:
        replica = self.replicas.get(identity)
        if replica is None:
            return False
        replica.kill()
        self.replicas[identity] = None
        self.restarts[identity] = self.cluster.now + restart_after
        return True

    def leader(self) -> Replica | None:
        leaders = [r for r in self.replicas.values() if r is not None and r.elector.is_leader]
        return leaders[0] if leaders else None

    def elect(self) -> int:
        """Every live replica's elector takes its round at the same instant, on threads of their
        own, so the candidates race for the Lease as two processes do. Returns how many lead."""
        live = [r for r in self.replicas.values() if r is not None]
        threads = [threading.Thread(target=r.elector.step, name=f"elect-{r.identity}") for r in live]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for replica in live:
            if replica.elector.lost:  # a lost leader exits; Kubernetes restarts it
                self.kill(replica.identity, restart_after=self.options.tick)
        return sum(r.elector.is_leader for r in live if r is not None and not r.elector.lost)

    def close(self) -> None:
        for identity in list(self.replicas):
            replica = self.replicas.get(identity)
            if replica is not None:
                replica.kill()
        server, cache, reader, client = self._extender_parts
        server.stop()
        self.extender.stop()
        cache.stop()
        reader.close()
        client.close()
        self.cluster.stop()
        self._tmp.cleanup()


# ------------------------------------------------------------------------------------------ faults


class Injector:
    """Draws the fault schedule from the seed and applies each fault when it is due."""

    def __init__(self, world: World, rng: random.Random) -> None:
        self.world = world
        self.rng = rng
        options = world.options
        began, seconds = world.cluster.now, options.hours * 3600
        count = round(options.faults_per_hour * options.hours)
        # Evenly spread with jitter, so every hour of the day gets its share; kinds in turn, shuffled.
        kinds = [FAULT_KINDS[i % len(FAULT_KINDS)] for i in range(count)]
        rng.shuffle(kinds)
        spacing = seconds / max(1, count)
        self.schedule = [(began + spacing * (i + rng.uniform(0.1, 0.9)), kind) for i, kind in enumerate(kinds)]
        self.pending: list[tuple[float, str]] = []  # mid-move faults waiting for a move in flight
        self.faults: list[Fault] = []
        self.dropped: Counter[str] = Counter()
        self.on_node_deleted: Callable[[str], None] | None = None
        self.on_reservation_deleted: Callable[[dict[str, Any]], None] | None = None

    def step(self, now: float) -> None:
        while self.schedule and self.schedule[0][0] <= now:
            self.pending.append(self.schedule.pop(0))
        waiting = []
        for due, kind in self.pending:
            fault = self._apply(kind, now)
            if fault is not None:
                self.faults.append(fault)
            elif now - due < 3 * 3600:
                waiting.append((due, kind))
            else:
                self.dropped[kind] += 1  # no move in flight for three hours
        self.pending = waiting
        self._expire(now)

    def _expire(self, now: float) -> None:
        faults = self.world.faults
        for fault in self.faults:
            if fault.ended is not None:
                continue
            if fault.kind in ("api-error", "load-error") and fault.handle is not None:
                if faults.served(fault.handle) >= fault.count or now >= fault.until:
                    faults.cancel(fault.handle)
                    fault.ended = now
            elif fault.kind == "slow-response" and fault.handle is not None:
                if now >= fault.until:
                    faults.cancel(fault.handle)
                    fault.ended = now
            elif now >= fault.until:
                if fault.undo is not None:
                    fault.undo()
                fault.ended = now

    def _apply(self, kind: str, now: float) -> Fault | None:
        world, rng = self.world, self.rng
        faults = world.faults
        if kind == "api-error":
            method, path = rng.choice(API_TARGETS)
            status, count = rng.choice((500, 503, 429)), rng.randint(1, 8)
            handle = faults.fail_next(count, path=path, method=method, status=status, retry_after=1)
            detail = f"{method or '*'} {path} {status} x{count}"
            return Fault(kind, now, detail, handle=handle, count=count, until=now + 600)
        if kind == "load-error":
            count = rng.randint(1, 5)
            handle = faults.fail_next(count, path=METRICS_PATH, status=rng.choice((500, 503)))
            return Fault(kind, now, f"metrics.k8s.io x{count}", handle=handle, count=count, until=now + 600)
        if kind == "slow-response":
            method, path = rng.choice([t for t in API_TARGETS if t[0] == "GET"])
            seconds = world.options.client_timeout + 1.0
            count = rng.randint(1, 3)
            handle = faults.delay(seconds, path=path, method=method, count=count)
            return Fault(
                kind, now, f"{method} {path} +{seconds:g}s x{count}", handle=handle, count=count, until=now + 300
            )
        if kind in ("watch-drop", "watch-gone"):
            if kind == "watch-gone":
                world.cluster.store.forget_history()
            abrupt = rng.random() < 0.5
            closed = faults.drop_watches(abrupt=abrupt)
            return Fault(kind, now, f"{closed} watches {'reset' if abrupt else 'ended'}", ended=now)
        if kind == "leader-kill":
            leader = world.leader()
            if leader is None:
                return None
            world.kill(leader.identity, restart_after=rng.uniform(0, 60))
            return Fault(kind, now, f"{leader.identity} killed", ended=now)
        if kind == "lease-race":
            restart = rng.uniform(0, world.options.lease_duration * 2)
            killed = [identity for identity in list(world.replicas) if world.kill(identity, restart)]
            return Fault(kind, now, f"{', '.join(killed)} restart together after {restart:.0f}s", ended=now)
        if kind == "load-stale":
            seconds = rng.uniform(300, 1200)
            world.metrics.paused_until = now + seconds
            return Fault(kind, now, f"metrics paused {seconds:.0f}s", until=now + seconds)
        if kind == "bad-policy":
            return self._bad_policy(now)
        return self._mid_move(kind, now)

    def _bad_policy(self, now: float) -> Fault:
        world, rng = self.world, self.rng
        text = rng.choice(BAD_POLICIES)
        world.policy_path.write_text(text)
        note = f" (restored at {now:.0f})"

        def restore() -> None:
            world.policy_path.write_text(policy_text(world.options, note))

        # Fixed within 5-15 min, as when an operator sees the PolicyRejected Event.
        return Fault("bad-policy", now, text.splitlines()[-1][:60], until=now + rng.uniform(300, 900), undo=restore)

    def _mid_move(self, kind: str, now: float) -> Fault | None:
        world, rng = self.world, self.rng
        store = world.cluster.store
        jobs = [j for j in store.list(MIGRATION_JOBS) if phase(j) not in TERMINAL_PHASES]
        if not jobs:
            return None
        job = rng.choice(jobs)
        name = job["metadata"]["name"]
        status = job.get("status") or {}
        if kind == "job-deleted":
            store.delete(MIGRATION_JOBS, name)
            return Fault(kind, now, name, ended=now)
        reservations = [
            r
            for r in store.list(RESERVATIONS)
            if (status.get("reservationRef") or {}).get("name") == r["metadata"]["name"]
            and (r.get("status") or {}).get("phase") not in TERMINAL_RESERVATION
        ]
        if kind == "reservation-deleted":
            if not reservations:
                return None
            if self.on_reservation_deleted is not None:
                self.on_reservation_deleted(job)
            store.delete(RESERVATIONS, reservations[0]["metadata"]["name"])
            return Fault(kind, now, f"{reservations[0]['metadata']['name']} of {name}", ended=now)
        if kind == "node-deleted":
            target = (reservations[0].get("spec") or {}).get("nodeName") if reservations else status.get("targetNode")
            if not target or not store.exists("nodes", target):
                return None
            node = store.get("nodes", target)
            if self.on_node_deleted is not None:
                self.on_node_deleted(target)
            store.delete("nodes", target)

            def rejoin() -> None:
                meta = {k: v for k, v in node["metadata"].items() if k in ("name", "labels", "annotations")}
                store.create({**node, "metadata": meta})

            return Fault(
                kind, now, f"{target} (target of {name})", ended=now, until=now + rng.uniform(600, 1800), undo=rejoin
            )
        return self._tighten_pdb(job, now)

    def _tighten_pdb(self, job: dict[str, Any], now: float) -> Fault | None:
        world, rng = self.world, self.rng
        store = world.cluster.store
        ref = (job.get("spec") or {}).get("podRef") or {}
        try:
            pod = store.get("pods", ref.get("name", ""), ref.get("namespace", ""))
        except ApiError:
            return None
        labels = pod["metadata"].get("labels") or {}
        selector = {"app": labels["app"]} if "app" in labels else labels
        namespace = pod["metadata"]["namespace"]
        matching = [p for p in store.list("pods", namespace) if _matches(selector, p) and is_ready(p)]
        name = f"soak-{len(self.faults)}"
        store.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"minAvailable": len(matching), "selector": {"matchLabels": selector}},
            }
        )

        def relax() -> None:
            with contextlib.suppress(ApiError):
                store.delete("poddisruptionbudgets.policy", name, namespace)

        until = now + rng.uniform(600, 1800)
        detail = f"{namespace}/{name} minAvailable {len(matching)} over {job['metadata']['name']}"
        return Fault("pdb-tightened", now, detail, ended=now, until=until, undo=relax)

    def ready(self, now: float) -> None:
        """A leader with a synced cache at `now` (it answers /readyz): back from every ended fault."""
        self._reached("ready", now)

    def recovered(self, now: float) -> None:
        """A cycle planned at `now`: every fault that had ended by then has been recovered from."""
        self._reached("recovered", now)

    def _reached(self, moment: str, now: float) -> None:
        for fault in self.faults:
            if getattr(fault, moment) is None and fault.ended is not None and fault.ended <= now:
                setattr(fault, moment, now)

    def finish(self) -> None:
        for fault in self.faults:
            if fault.ended is None:
                if fault.handle is not None:
                    self.world.faults.cancel(fault.handle)
                if fault.undo is not None:
                    fault.undo()


def _matches(selector: dict[str, str], pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


# ------------------------------------------------------------------------------------------ the auditor


@dataclass(slots=True)
class Auditor:
    """Counts, from the API after every step, what must stay zero."""

    store: Store
    faults: Faults
    policy: Policy
    options: SoakOptions
    audit_index: int = 0
    evictions: list[tuple[float, str]] = field(default_factory=list)  # (when, namespace/name)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # every job seen, its last state
    job_of_pod: dict[str, str] = field(default_factory=dict)
    violations: dict[str, list[str]] = field(default_factory=dict)
    below_since: dict[str, float] = field(default_factory=dict)  # workload -> since when below replicas
    lost_reported: set[str] = field(default_factory=set)
    with_node: dict[str, float] = field(default_factory=dict)  # workload -> when a fault deleted its node
    short_after_node_loss: list[str] = field(default_factory=list)
    with_reservation: dict[str, float] = field(default_factory=dict)  # workload -> when a fault deleted its room
    short_after_reservation_loss: list[str] = field(default_factory=list)
    healthy_before: dict[str, tuple[int, int, LabelSelector]] = field(default_factory=dict)
    ready_before: set[str] = field(default_factory=set)
    labels_before: dict[str, dict[str, str]] = field(default_factory=dict)
    stale_reservations: set[str] = field(default_factory=set)  # reported past their TTL

    def violation(self, what: str, detail: str) -> None:
        self.violations.setdefault(what, []).append(detail)

    def before(self) -> None:
        """Before the controller acts: each PDB's healthy pods, each pod's readiness."""
        store = self.store
        pods = [p for p in store.list("pods") if not is_terminating(p)]
        self.ready_before = {_key(p) for p in pods if is_ready(p)}
        self.labels_before = {_key(p): p["metadata"].get("labels") or {} for p in pods}
        self.healthy_before = {}
        for pdb in store.list("poddisruptionbudgets.policy"):
            selector = LabelSelector.from_dict((pdb.get("spec") or {}).get("selector"))
            namespace = pdb["metadata"]["namespace"]
            healthy = sum(
                1
                for p in pods
                if p["metadata"]["namespace"] == namespace
                and _key(p) in self.ready_before
                and selector.matches(p["metadata"].get("labels") or {})
            )
            minimum = (pdb.get("spec") or {}).get("minAvailable")
            if isinstance(minimum, int):
                self.healthy_before[f"{namespace}/{pdb['metadata']['name']}"] = (healthy, minimum, selector)

    def after(self, now: float, leaders: int) -> None:
        store = self.store
        if leaders > 1:
            self.violation("leaderOverlap", f"{leaders} leaders at {now:.0f}")
        for job in store.list(MIGRATION_JOBS):
            self.jobs[job["metadata"]["name"]] = job
            ref = (job.get("spec") or {}).get("podRef") or {}
            self.job_of_pod.setdefault(f"{ref.get('namespace', '')}/{ref.get('name', '')}", job["metadata"]["name"])
        self._evictions(now)
        pods = store.list("pods")
        for problem in limit_violations(store.list(MIGRATION_JOBS), pods, self.policy):
            self.violation("limits", f"{now:.0f}: {problem}")
        self._reservations(now)
        self._workloads(now, pods)

    def _evictions(self, now: float) -> None:
        entries = self.faults.audit_log(self.audit_index)
        self.audit_index += len(entries)
        spent: Counter[str] = Counter()
        for entry in entries:
            # An eviction, or a pod deleted over the API (the migration's Delete policy): the
            # simulated cluster's own components write to the store, not over HTTP.
            match = (EVICTION if entry.method == "POST" else POD if entry.method == "DELETE" else NOTHING).search(
                entry.path
            )
            if match is None or entry.status not in (200, 201, 202):
                continue
            key = f"{match.group(1)}/{match.group(2)}"
            if any(k == key for _, k in self.evictions):
                self.violation("evictedTwice", f"{key} at {entry.at:.0f}")
            if key not in self.job_of_pod:
                self.violation("evictedWithoutJob", f"{key} at {entry.at:.0f}")
            self.evictions.append((entry.at, key))
            if key not in self.ready_before:
                continue  # an unready pod's eviction does not spend a budget
            namespace = key.split("/", 1)[0]
            labels = self.labels_before.get(key, {})
            for name, (healthy, minimum, selector) in self.healthy_before.items():
                if name.startswith(namespace + "/") and selector.matches(labels):
                    spent[name] += 1
                    if healthy - spent[name] < minimum:
                        self.violation(
                            "beyondPdb", f"{key} at {entry.at:.0f}: {name} had {healthy} healthy, min {minimum}"
                        )

    def _reservations(self, now: float) -> None:
        grace = self.options.lease_duration + 4 * self.options.tick
        for reservation in self.store.list(RESERVATIONS):
            if (reservation.get("status") or {}).get("phase") in TERMINAL_RESERVATION:
                continue
            created = parse_time(reservation["metadata"]["creationTimestamp"]).timestamp()
            ttl = parse_reservation(reservation).spec.ttl.total_seconds()
            if now - created > ttl + grace:
                name = reservation["metadata"]["name"]
                if name not in self.stale_reservations:
                    self.stale_reservations.add(name)
                    self.violation("reservationPastTtl", f"{name}: {now - created:.0f}s old, ttl {ttl:.0f}s")

    def _workloads(self, now: float, pods: list[dict[str, Any]]) -> None:
        ready: Counter[str] = Counter()
        for pod in pods:
            ref = controller_ref(pod)
            if ref is not None and is_ready(pod) and not is_terminating(pod):
                ready[f"{pod['metadata']['namespace']}/{ref.get('name')}"] += 1
        for rs in self.store.list("replicasets.apps"):
            owner = f"{rs['metadata']['namespace']}/{rs['metadata']['name']}"
            want = int((rs.get("spec") or {}).get("replicas") or 0)
            if ready[owner] >= want:
                self.below_since.pop(owner, None)
                self.lost_reported.discard(owner)
                continue
            since = self.below_since.setdefault(owner, now)
            if now - since <= self.options.moved_within or owner in self.lost_reported:
                continue
            self.lost_reported.add(owner)
            detail = f"{owner}: {ready[owner]}/{want} ready for {now - since:.0f}s at {now:.0f}"
            # Short within an hour of a fault that took its room: the fault's doing, reported apart.
            if since - self.with_node.get(owner, -math.inf) < 3600:
                self.short_after_node_loss.append(detail)
            elif since - self.with_reservation.get(owner, -math.inf) < 3600:
                self.short_after_reservation_loss.append(detail)
            else:
                self.violation("podsLost", detail)

    def node_deleted(self, node: str) -> None:
        """A fault deleted `node`: the workloads of its pods, and of every move headed there (its
        Reservation or target on the node), may stay short until the cluster has room for them
        elsewhere; that is the fault's doing."""
        now = self.store.clock()
        for pod in self.store.list("pods"):
            ref = controller_ref(pod)
            if ref is not None and (pod.get("spec") or {}).get("nodeName") == node:
                self.with_node[f"{pod['metadata']['namespace']}/{ref.get('name')}"] = now
        held = {
            r["metadata"]["name"]
            for r in self.store.list(RESERVATIONS)
            if (r.get("spec") or {}).get("nodeName") == node
        }
        for job in self.store.list(MIGRATION_JOBS):
            status = job.get("status") or {}
            headed = status.get("targetNode") == node or (status.get("reservationRef") or {}).get("name") in held
            if phase(job) in TERMINAL_PHASES or not headed:
                continue
            workload = self._workload_of(job)
            if workload:
                self.with_node[workload] = now

    def reservation_deleted(self, job: dict[str, Any]) -> None:
        """A fault deleted the Reservation of `job`'s move: once the pod is evicted, its replacement has
        no room held for it and may wait for room elsewhere; that is the fault's doing."""
        workload = self._workload_of(job)
        if workload:
            self.with_reservation[workload] = self.store.clock()

    def _workload_of(self, job: dict[str, Any]) -> str | None:
        """namespace/name of the workload `job` moves a pod of, from the job or its pod."""
        ref = (job.get("spec") or {}).get("podRef") or {}
        namespace = ref.get("namespace", "")
        workload = ((job.get("status") or {}).get("workload") or {}).get("name")
        if not workload:  # not started yet: the pod still runs and names its controller
            with contextlib.suppress(ApiError):
                owner = controller_ref(self.store.get("pods", ref.get("name", ""), namespace))
                workload = owner.get("name") if owner else None
        return f"{namespace}/{workload}" if workload else None

    def planned_on_unreadable(self, now: float, result: CycleResult, load_failed: bool) -> None:
        """A cycle that submitted moves although its load read failed, or with a source or target
        whose node metrics (as the API holds them) were older than the policy allows."""
        if not result.submitted or result.plan is None:
            return
        if load_failed:
            self.violation("plannedOnUnreadable", f"{now:.0f}: the load read failed, {len(result.submitted)} submitted")
        limit = self.policy.scheduling.node_metric_expiration_seconds
        ages = _node_metric_ages(self.store, now)
        for migration in result.plan.migrations:
            for node in (migration.source_node, migration.target_node):
                if node and ages.get(node, float("inf")) > limit:
                    self.violation("plannedOnUnreadable", f"{now:.0f}: {migration.pod} via {node}, metrics stale")

    def orphans_at_end(self) -> None:
        for name in orphan_reservations(self.store):
            self.violation("orphanReservations", name)


def load_read_failed(entries: list[AuditEntry], user_agent: str) -> bool:
    """Whether the client `user_agent` asked metrics.k8s.io and the last answer to one of its paths
    was an error: a read retried to success read the load; one that ended on an error did not (the
    audit log tells the replica's requests from the extender's and the other replica's)."""
    last: dict[str, int] = {}
    for entry in entries:
        if entry.user_agent == user_agent and re.search(METRICS_PATH, entry.path):
            last[entry.path] = entry.status
    return any(status >= 300 for status in last.values())


def _node_metric_ages(store: Store, now: float) -> dict[str, float]:
    ages = {}
    for metric in store.list("nodes.metrics.k8s.io"):
        stamp = metric.get("timestamp")
        if stamp:
            ages[metric["metadata"]["name"]] = now - parse_time(stamp).timestamp()
    return ages


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


# ------------------------------------------------------------------------------------------ the run


def run_soak(options: SoakOptions, progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    rng = random.Random(options.seed)
    world = World(options)
    try:
        world.faults.start_audit()
        for identity in world.replicas:
            world.start_replica(identity)
        auditor = Auditor(world.cluster.store, world.faults, world.policy, options)
        injector = Injector(world, rng)
        injector.on_node_deleted = auditor.node_deleted
        injector.on_reservation_deleted = auditor.reservation_deleted
        cluster = world.cluster
        end = cluster.now + options.hours * 3600
        cycles: Counter[str] = Counter()
        reported = cluster.now
        while cluster.now < end:
            now = cluster.now
            injector.step(now)
            for identity, when in list(world.restarts.items()):
                if when <= now:
                    world.start_replica(identity)
            leaders = world.elect()
            leader = world.leader()
            if leader is not None and leader.loop.not_ready() is None:
                injector.ready(now)
            auditor.before()
            if leader is not None:
                mark = world.faults.audit_length()
                result = leader.work(now)
                if result is not None:
                    failed = load_read_failed(world.faults.audit_log(mark), leader.user_agent)
                    cycles["planned" if result.plan is not None else "skipped"] += 1
                    auditor.planned_on_unreadable(now, result, failed)
                    if result.plan is not None:
                        injector.recovered(now)
            cluster.advance(options.tick)
            auditor.after(cluster.now, leaders)
            if progress is not None and cluster.now - reported >= 3600:
                reported = cluster.now
                progress((cluster.now - (end - options.hours * 3600)) / 3600)
        injector.finish()
        _drain(world, auditor, options)
        auditor.orphans_at_end()
        return _figures(options, world, auditor, injector, cycles, time.perf_counter() - started)
    finally:
        world.close()


def _drain(world: World, auditor: Auditor, options: SoakOptions) -> None:
    """After the last fault: the jobs in flight end (bounded by two TTLs), so outcomes are final."""
    cluster = world.cluster
    deadline = cluster.now + 2 * world.policy.migration.ttl.total_seconds() + options.lease_duration
    while cluster.now < deadline:
        for identity in list(world.restarts):
            world.start_replica(identity)
        leaders = world.elect()
        leader = world.leader()
        auditor.before()
        if leader is not None:
            leader.migration.reconcile_once()
        cluster.advance(options.tick)
        auditor.after(cluster.now, leaders)
        if leader is not None and not any(phase(j) not in TERMINAL_PHASES for j in cluster.store.list(MIGRATION_JOBS)):
            break


def _figures(
    options: SoakOptions,
    world: World,
    auditor: Auditor,
    injector: Injector,
    cycles: Counter[str],
    wall: float,
) -> dict[str, Any]:
    def seconds(moment: Callable[[Fault], float | None]) -> dict[str, Any]:
        by_kind: dict[str, list[float]] = {}
        for fault in injector.faults:
            when = moment(fault)
            if fault.ended is not None and when is not None:
                by_kind.setdefault(fault.kind, []).append(when - fault.ended)
        every = [s for values in by_kind.values() for s in values]
        summary = {kind: _spread(values) for kind, values in sorted(by_kind.items())}
        return {"all": _spread(every), **summary} if every else {}

    outcomes: Counter[str] = Counter()
    for job in auditor.jobs.values():
        status = job.get("status") or {}
        outcomes[f"{phase(job)}: {status.get('reason') or '-'}"] += 1
    zeros = (
        "limits",
        "beyondPdb",
        "evictedTwice",
        "evictedWithoutJob",
        "reservationPastTtl",
        "orphanReservations",
        "podsLost",
        "plannedOnUnreadable",
        "leaderOverlap",
    )
    return {
        "seed": options.seed,
        "nodes": options.nodes,
        "pods": sum(1 for _ in world.cluster.store.list("pods")),
        "simulatedHours": options.hours,
        "wallSeconds": round(wall, 1),
        "faults": len(injector.faults),
        "faultsByKind": dict(sorted(Counter(f.kind for f in injector.faults).items())),
        "faultsNotApplicable": dict(sorted(injector.dropped.items())),
        "cycles": dict(cycles),
        "startsRefusedForAnInvalidPolicy": world.crashes,
        "movesAttempted": len(auditor.jobs),
        "evictions": len(auditor.evictions),
        "outcomes": dict(sorted(outcomes.items())),
        "workloadsShortAfterANodeWasDeleted": auditor.short_after_node_loss,
        "workloadsShortAfterTheirReservationWasDeleted": auditor.short_after_reservation_loss,
        "invariants": {name: len(auditor.violations.get(name, [])) for name in zeros},
        "violations": {name: details[:10] for name, details in auditor.violations.items()},
        "readyAgainSeconds": seconds(lambda f: f.ready),
        "plannedAgainSeconds": seconds(lambda f: f.recovered),
        "notRecovered": sum(1 for f in injector.faults if f.recovered is None),
        "faultLog": [
            {"kind": f.kind, "at": round(f.at - world.began), "detail": f.detail} for f in injector.faults[:2000]
        ],
    }


def soak_metrics(figures: dict[str, Any]) -> dict[str, Any]:
    """The flat numbers `benchmarks.run` tabulates, and the figures for the tables below them."""
    ready, planned = figures["readyAgainSeconds"].get("all", {}), figures["plannedAgainSeconds"].get("all", {})
    return {
        "simulated_hours": figures["simulatedHours"],
        "faults": figures["faults"],
        **figures["invariants"],
        "ready_again_median": ready.get("median"),
        "ready_again_max": ready.get("max"),
        "planned_again_median": planned.get("median"),
        "planned_again_max": planned.get("max"),
        "wall_seconds": figures["wallSeconds"],
        "figures": {k: v for k, v in figures.items() if k != "faultLog"},
    }


def render_soak(figures: dict[str, Any]) -> str:
    """Markdown: the run's facts, the faults by kind with recovery times, the moves' outcomes."""
    ready, planned = figures["readyAgainSeconds"], figures["plannedAgainSeconds"]

    def cell(summary: dict[str, Any], kind: str) -> str:
        entry = summary.get(kind)
        return f"{entry['median']:.0f} / {entry['max']:.0f}" if entry else "—"

    lines = [
        f"Seed {figures['seed']}, {figures['nodes']} nodes, {figures['pods']} pods at the end, "
        f"{figures['simulatedHours']:g} simulated hours in {figures['wallSeconds']:.0f} s of wall time; "
        f"cycles {figures['cycles']}; {figures['movesAttempted']} moves attempted, {figures['evictions']} evictions; "
        f"{figures['startsRefusedForAnInvalidPolicy']} replica starts refused while the policy file was invalid; "
        f"{figures['notRecovered']} faults not followed by a planning cycle before the end; "
        f"{len(figures['workloadsShortAfterANodeWasDeleted'])} workloads short for more than 5 min after a fault "
        "deleted their node or their move's target node, and "
        f"{len(figures.get('workloadsShortAfterTheirReservationWasDeleted', []))} after a fault deleted the "
        "Reservation holding their replacement's room (no room elsewhere at the time; the fault's doing, not "
        "counted as pods lost).",
        "",
        "| fault | injected | back: median / max (s) | planning again: median / max (s) |",
        "|---|---|---|---|",
    ]
    for kind, count in figures["faultsByKind"].items():
        lines.append(f"| {kind} | {count} | {cell(ready, kind)} | {cell(planned, kind)} |")
    skipped = figures.get("faultsNotApplicable") or {}
    if skipped:
        lines += ["", "Not injected (no move in flight within three hours of the due time): " + json.dumps(skipped)]
    lines += ["", "| job outcome | count |", "|---|---|"]
    lines += [f"| {outcome} | {count} |" for outcome, count in figures["outcomes"].items()]
    found = figures.get("violations") or {}
    if found:
        lines += ["", "Violations (first ten of each): " + json.dumps(found)]
    return "\n".join(lines)


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values), "n": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults-per-hour", type=float, default=32.0)
    parser.add_argument("--start-hour", type=float, default=0.0, help="of the trace's day, UTC")
    parser.add_argument("--output", type=Path, help="write the figures here as JSON as well")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    options = SoakOptions(
        nodes=args.nodes,
        hours=args.hours,
        seed=args.seed,
        faults_per_hour=args.faults_per_hour,
        start_hour=args.start_hour,
    )
    figures = run_soak(options, progress=lambda hours: print(f"{hours:.0f} h", flush=True, file=sys.stderr))
    text = json.dumps(figures, indent=2)
    if args.output:
        args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
