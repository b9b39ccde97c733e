"""The soak run (benchmarks/soak.py): its auditor sees each kind of damage it counts, from the API
alone; and a short run under faults (the smoke-sized soak) keeps every count at zero."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from benchmarks.soak import FAULT_KINDS, MID_MOVE, Auditor, SoakOptions, load_read_failed, run_soak
from descheduler.fakecluster.apiserver import FakeApiServer, Store
from descheduler.fakecluster.apiserver.faults import AuditEntry
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.traces import traces_dir
from descheduler.policy import default_policy
from tests.fakecluster.conftest import node, pod, replicaset

T0 = 1_768_478_400.0


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    store = Store(clock=SimClock(T0), pod_termination_delay=None)
    store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}])
    with FakeApiServer(store=store) as srv:
        srv.faults.start_audit()
        yield srv


def _auditor(server: FakeApiServer) -> Auditor:
    return Auditor(server.store, server.faults, default_policy(), SoakOptions(moved_within=60))


def _running(name: str, owner: dict[str, Any] | None = None, app: str = "web") -> dict[str, Any]:
    return pod(name, node_name="n1", phase="Running", ready=True, owner=owner, app=app)


def _job(name: str, pod_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {"name": name},
        "spec": {"podRef": {"namespace": "default", "name": pod_name}},
    }


def _evict(server: FakeApiServer, name: str) -> None:
    with server.api_client() as api:
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="default"))
        client.CoreV1Api(api).create_namespaced_pod_eviction(name, "default", body)


def test_the_auditor_counts_an_eviction_with_no_job_and_none_with_one(server: FakeApiServer) -> None:
    server.store.load([node("n1"), _running("moved"), _running("stray"), _job("job-1", "moved")])
    auditor = _auditor(server)
    auditor.before()
    _evict(server, "moved")
    _evict(server, "stray")
    auditor.after(T0, leaders=1)
    assert [d.split(" ")[0] for d in auditor.violations["evictedWithoutJob"]] == ["default/stray"]
    assert "evictedTwice" not in auditor.violations and "leaderOverlap" not in auditor.violations


def test_the_auditor_counts_a_pod_evicted_twice(server: FakeApiServer) -> None:
    """A terminating pod can be evicted again (the API answers 200): that is the second eviction."""
    server.store.load([node("n1"), _running("p"), _job("job-1", "p")])
    server.store.modify("pods", "p", "default", lambda obj: obj["spec"].update(terminationGracePeriodSeconds=30))
    auditor = _auditor(server)
    auditor.before()
    _evict(server, "p")
    _evict(server, "p")
    auditor.after(T0, leaders=1)
    assert auditor.violations["evictedTwice"] == [f"default/p at {T0:.0f}"]


def test_the_auditor_counts_a_pod_deleted_past_its_disruption_budget(server: FakeApiServer) -> None:
    """The eviction API would refuse; a DELETE (the Delete eviction policy) does not ask."""
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    }
    server.store.load([node("n1"), _running("a"), _running("b"), _job("job-1", "a"), budget])
    auditor = _auditor(server)
    auditor.before()
    with server.api_client() as api:
        client.CoreV1Api(api).delete_namespaced_pod("a", "default")
    auditor.after(T0, leaders=1)
    [problem] = auditor.violations["beyondPdb"]
    assert problem.startswith("default/a") and "default/web had 2 healthy, min 2" in problem


def test_the_auditor_counts_two_leaders_a_stale_reservation_and_a_workload_left_short(server: FakeApiServer) -> None:
    rs = replicaset("web", 1)
    reservation = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "room", "creationTimestamp": "2026-01-15T11:00:00Z"},  # an hour before T0
        "spec": {"nodeName": "n1", "resources": {"cpu": "1"}, "ttl": "5m"},
        "status": {"phase": "Available"},
    }
    server.store.load([node("n1"), rs, reservation])
    auditor = _auditor(server)
    auditor.after(T0, leaders=2)
    auditor.after(T0 + 30, leaders=1)
    assert "podsLost" not in auditor.violations  # short for 30 s: a move may take that
    auditor.after(T0 + 90, leaders=1)
    assert auditor.violations["leaderOverlap"] == [f"2 leaders at {T0:.0f}"]
    assert [d.split(":")[0] for d in auditor.violations["reservationPastTtl"]] == ["room"]
    assert auditor.violations["podsLost"] == [f"default/web: 0/1 ready for 90s at {T0 + 90:.0f}"]


@pytest.mark.skipif(traces_dir() is None, reason="the public traces are not next to the repository")
def test_a_short_soak_under_every_kind_of_fault_keeps_every_count_at_zero() -> None:
    """The smoke-sized soak: 20 trace nodes on the morning ramp (moves in flight for the mid-move
    faults), ~2 simulated hours with a fault every ~100 s. Its figures go to the log on failure."""
    options = SoakOptions(nodes=20, hours=2.0, seed=3, faults_per_hour=36, start_hour=4.5)
    figures = run_soak(options)
    summary = {k: v for k, v in figures.items() if k != "faultLog"}
    # pytest shortens a long dict in the assertion; the violations' details say what went wrong.
    print(json.dumps(summary, indent=1, default=str))
    assert figures["invariants"] == dict.fromkeys(figures["invariants"], 0), summary
    assert figures["faults"] >= 60, summary
    assert set(figures["faultsByKind"]) >= set(FAULT_KINDS) - MID_MOVE, summary
    assert figures["movesAttempted"] > 0 and figures["evictions"] > 0, summary
    assert figures["cycles"].get("planned", 0) > 0, summary


def test_a_workload_short_after_a_fault_deleted_its_node_is_reported_apart(server: FakeApiServer) -> None:
    rs = replicaset("web", 1)
    server.store.load([node("n1"), rs, _running("web-0", owner=rs), _job("job-1", "web-0")])
    auditor = _auditor(server)
    auditor.node_deleted("n1")
    server.store.delete("nodes", "n1")
    server.store.delete("pods", "web-0", "default", grace_period_seconds=0)  # the pod GC's doing
    auditor.after(T0, leaders=1)
    auditor.after(T0 + 90, leaders=1)
    assert "podsLost" not in auditor.violations
    assert auditor.short_after_node_loss == [f"default/web: 0/1 ready for 90s at {T0 + 90:.0f}"]


def test_a_workload_short_after_a_fault_deleted_its_moves_reservation_is_reported_apart(server: FakeApiServer) -> None:
    """The fault deletes the Reservation holding a move's room; once the pod is evicted, its replacement
    may wait for room elsewhere. Another workload short without such a fault is still a pod lost."""
    objects: list[dict[str, Any]] = [node("n1")]
    jobs = {app: _job(f"move-{app}", f"{app}-0") for app in ("web", "db")}
    for app, job in jobs.items():
        rs = replicaset(app, 1)
        objects += [rs, _running(f"{app}-0", owner=rs, app=app), job]
    server.store.load(objects)
    auditor = _auditor(server)
    auditor.reservation_deleted(jobs["web"])  # not started yet: its workload is named by its pod
    for app in ("web", "db"):
        server.store.delete("pods", f"{app}-0", "default", grace_period_seconds=0)  # evicted, not replaced yet
    auditor.after(T0, leaders=1)
    auditor.after(T0 + 90, leaders=1)
    assert [d.split(":")[0] for d in auditor.short_after_reservation_loss] == ["default/web"]
    assert [d.split(":")[0] for d in auditor.violations["podsLost"]] == ["default/db"]
    assert auditor.short_after_node_loss == []


def test_every_move_headed_to_a_deleted_node_is_the_faults_doing(server: FakeApiServer) -> None:
    """The fault deletes one move's target; other moves headed there (by target or Reservation) lose
    their place too, and their workloads may stay short; a move elsewhere does not."""
    objects: list[dict[str, Any]] = [node("n1"), node("n2"), node("n3")]
    jobs = {"web": ("n2", None), "api": (None, "r-api"), "db": ("n3", None)}
    for app, (target, reservation) in jobs.items():
        rs = replicaset(app, 1)
        job = _job(f"move-{app}", f"{app}-0")
        job["status"] = {"phase": "Running", "workload": {"name": app}}
        if target:
            job["status"]["targetNode"] = target
        if reservation:
            job["status"]["reservationRef"] = {"name": reservation}
        objects += [rs, _running(f"{app}-0", owner=rs, app=app), job]
    objects.append(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "r-api"},
            "spec": {"nodeName": "n2"},
        }
    )
    server.store.load(objects)
    auditor = _auditor(server)
    auditor.node_deleted("n2")
    for app in jobs:
        server.store.delete("pods", f"{app}-0", "default", grace_period_seconds=0)  # evicted, not replaced yet
    auditor.after(T0, leaders=1)
    auditor.after(T0 + 90, leaders=1)
    assert sorted(d.split(":")[0] for d in auditor.short_after_node_loss) == ["default/api", "default/web"]
    assert [d.split(":")[0] for d in auditor.violations["podsLost"]] == ["default/db"]


def test_a_load_read_fails_when_its_last_answer_is_an_error_not_when_a_retry_succeeds() -> None:
    """Judged on the replica's own requests: another client's errors (the extender reads the load
    too) say nothing of this one's read."""
    nodes, pods = "/apis/metrics.k8s.io/v1beta1/nodes", "/apis/metrics.k8s.io/v1beta1/pods"

    def answers(*entries: tuple[str, str, int]) -> list[AuditEntry]:
        return [AuditEntry(T0, "GET", path, "list", status, agent) for agent, path, status in entries]

    retried = answers(("a", nodes, 503), ("a", nodes, 503), ("a", nodes, 200), ("a", pods, 200))
    assert not load_read_failed(retried, "a")
    gave_up = answers(("a", nodes, 200), ("a", pods, 500), ("a", pods, 500))
    assert load_read_failed(gave_up, "a")
    others = answers(("extender", nodes, 503), ("a", nodes, 200), ("b", pods, 500), ("a", "/api/v1/pods", 500))
    assert not load_read_failed(others, "a")
    assert load_read_failed(others, "b")
