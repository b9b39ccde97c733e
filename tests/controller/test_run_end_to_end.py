"""`descheduler run` as real processes against the simulated cluster in real time: two replicas
with leader election, the leader killed mid-run (SIGKILL), the standby taking over; the demo's
hot nodes relieved with no pod evicted twice, no limit exceeded and no orphan Reservation."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario
from descheduler.policy import parse_policy
from descheduler.simulate.record import limit_violations
from tests import waiting

# Every deadline below is derived from these timings (the policy's, the lease's, the scenario's),
# times a generous factor, so the test waits on conditions and not on the speed of the machine.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.25
LEASE = ("--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.25")
INTERVAL, TTL, COOLDOWN = 3.0, 90.0, 15.0
# A replica process imports, lists every kind and syncs its cache before it campaigns: seconds on
# a busy two-core machine.
STARTUP = 30.0
SLACK = 2.0
GRACE_PERIOD = 30.0  # the pods' terminationGracePeriodSeconds (the Kubernetes default)
ROUNDS = 3  # rounds of moves the demo needs at this pacing (2 seen)
# The migration pacing scaled down (one move per workload per 15 s, a 15 s cooldown) so the demo's
# two hot nodes are relieved within a few rounds; the production defaults would take 10 minutes.
POLICY = f"""\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {INTERVAL:g}s
strategies:
  - name: LowNodeLoad
    args:
      highThresholds: {{cpu: 70}}
      lowThresholds: {{cpu: 45}}
migration:
  ttl: {TTL:g}s
  cooldown: {COOLDOWN:g}s
  objectLimiters:
    workload: {{duration: {COOLDOWN:g}s, maxMigrating: 1}}
"""
PMJ = "podmigrationjobs.descheduler.dev"
SERIES = {
    "descheduler_build_info",
    "descheduler_cycles_total",
    "descheduler_cycle_duration_seconds",
    "descheduler_migrations_total",
    "descheduler_evictions_total",
    "descheduler_migration_jobs",
    "descheduler_nodes",
    "descheduler_cache_objects",
    "descheduler_watch_restarts_total",
    "descheduler_api_requests_total",
    "descheduler_leader",
    "descheduler_policy_reload_total",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    def __init__(self, name: str, kubeconfig: Path, policy: Path, logs: Path) -> None:
        self.name = name
        self.port = free_port()
        self.log = (logs / f"{name}.log").open("w")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "descheduler", "run", "--policy", str(policy), "--kubeconfig", str(kubeconfig)),
                *("--identity", name, "--lease-namespace", "default", "--port", str(self.port), "--log-format", "json"),
                *LEASE,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def scrape(self) -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as reply:
                return str(reply.read().decode())
        except OSError:
            return None

    def metric(self, name: str) -> float | None:
        text = self.scrape()
        if text is None:
            return None
        values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")]
        return values[0] if values else 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    # The clock starts now (metrics carry wall-clock times); the load is the demo's afternoon peak.
    with SimulatedCluster(load_demo_scenario()) as c:
        c.advance(60)  # pods running, metrics published
        with c.running_in_real_time():
            yield c


def phase(job: dict[str, Any]) -> str:
    return str((job.get("status") or {}).get("phase", ""))


def wait_for(predicate: Any, timeout: float, what: str, state: Any = None) -> float:
    return waiting.wait_for(predicate, timeout, what, interval=0.1, state=state)


def test_two_replicas_one_leader_killed_the_other_finishes_with_no_duplicate_eviction(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(POLICY)
    policy = parse_policy(POLICY)
    store = cluster.store
    replicas = [Replica(name, kubeconfig, policy_path, tmp_path) for name in ("replica-a", "replica-b")]
    both_leading: list[str] = []
    done = threading.Event()

    def watch_leaders() -> None:
        while not done.is_set():
            leading = [r.name for r in replicas if r.metric("descheduler_leader") == 1.0]
            if len(leading) > 1:
                both_leading.append(",".join(leading))
            time.sleep(0.05)

    def jobs() -> list[dict[str, Any]]:
        return store.list(PMJ)

    violations: list[str] = []

    def watch_limits() -> None:
        while not done.is_set():
            violations.extend(limit_violations(jobs(), store.list("pods"), policy))
            time.sleep(0.1)

    monitors = [threading.Thread(target=f, daemon=True) for f in (watch_leaders, watch_limits)]
    for m in monitors:
        m.start()
    try:
        wait_for(
            lambda: any(r.metric("descheduler_leader") == 1.0 for r in replicas),
            SLACK * (STARTUP + LEASE_DURATION + RETRY_PERIOD),
            "a leader",
        )
        leader = next(r for r in replicas if r.metric("descheduler_leader") == 1.0)
        standby = next(r for r in replicas if r is not leader)
        assert standby.metric("descheduler_cycles_total") in (None, 0.0)  # the standby never plans
        wait_for(lambda: len(jobs()) > 0, SLACK * (STARTUP + 2 * INTERVAL), "the first PodMigrationJob")
        leader.proc.kill()  # no release, no goodbye
        # The standby takes over once the lease it saw renewed last has run out.
        wait_for(
            lambda: standby.metric("descheduler_leader") == 1.0,
            SLACK * (LEASE_DURATION + RETRY_PERIOD),
            "the standby to lead",
        )
        # The new leader finishes what the old one started (each job is bounded by its TTL) and
        # relieves the hot nodes. (A job still Pending waits for a limit and has touched nothing.)
        wait_for(
            lambda: any(phase(j) == "Succeeded" for j in jobs()) and not [j for j in jobs() if phase(j) == "Running"],
            SLACK * (TTL + LEASE_DURATION + INTERVAL),
            "running jobs to end",
            lambda: [(j["metadata"]["name"], j.get("status")) for j in jobs() if phase(j) == "Running"],
        )
        # Each further round waits out the workload cooldown, moves within the TTL, and is seen
        # by the next cycle; the node metrics catch up within one report interval.
        report = cluster.scenario.timing.report_interval_seconds
        wait_for(
            lambda: (standby.metric('descheduler_nodes{class="high"}') or 0) == 0,
            SLACK * (ROUNDS * (COOLDOWN + TTL + INTERVAL) + report),
            "no hot node",
            lambda: [(phase(j), j["metadata"]["name"]) for j in jobs()],
        )
        # "No hot node" holds as soon as the last move is under way: let the moves in flight end.
        wait_for(
            lambda: not [j for j in jobs() if phase(j) == "Running"],
            SLACK * (TTL + INTERVAL),
            "the moves in flight to end",
            lambda: [(j["metadata"]["name"], j.get("status")) for j in jobs() if phase(j) == "Running"],
        )
        exposed = standby.scrape() or ""
    finally:
        done.set()
        for m in monitors:
            m.join(5)
        for r in replicas:
            r.stop()
    assert both_leading == []
    series = {line.split()[2] for line in exposed.splitlines() if line.startswith("# TYPE ")}
    assert series >= SERIES, SERIES - series
    assert "descheduler_leader 1.0" in exposed
    assert violations == []
    evicted: dict[str, int] = {}
    for job in jobs():
        conditions = (job.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Evicted" and c.get("status") == "True" for c in conditions):
            uid = job["spec"]["podRef"]["uid"]
            evicted[uid] = evicted.get(uid, 0) + 1
    assert evicted and all(n == 1 for n in evicted.values()), evicted
    succeeded = [j for j in jobs() if j["status"]["phase"] == "Succeeded"]
    assert succeeded
    # No orphan Reservation: every one left is consumed or gone with its job.
    for reservation in store.list("reservations.descheduler.dev"):
        assert (reservation.get("status") or {}).get("phase") in ("Consumed", "Expired", "Failed"), reservation
    for job in jobs():
        if job["status"]["phase"] == "Pending":  # waiting for a limit: never started
            assert not job["status"].get("conditions"), job
    # No pod of a workload lost: every Deployment has its replicas running again, once the last
    # replacement has started (the kubelet's start and ready delays, a StatefulSet's grace period).
    timing = cluster.scenario.timing
    settle = timing.start_delay_seconds + timing.ready_delay_seconds + GRACE_PERIOD

    def short() -> list[str]:
        missing = []
        for deployment in store.list("deployments.apps"):
            selector = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())
            running = [
                p
                for p in store.list("pods", deployment["metadata"]["namespace"], label_selector=selector)
                if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
            ]
            if len(running) != deployment["spec"]["replicas"]:
                missing.append(f"{deployment['metadata']['name']}: {len(running)}/{deployment['spec']['replicas']}")
        return missing

    wait_for(lambda: not short(), SLACK * settle, "every Deployment back to its replicas", short)
