"""Reservation-then-evict on the simulated cluster, through the real client (migration.md §3–4)."""

from __future__ import annotations

from collections.abc import Callable

from descheduler import metrics
from descheduler.plan_cycle import plan_cycle

from .conftest import NS, RESERVATIONS, Harness, hot_cluster_objects, make_policy, node, pdb


def test_hot_pod_moves_to_the_planned_cool_node_through_a_reservation(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    plan, _ = plan_cycle(h.snapshot(), h.policy)
    [move] = plan.migrations
    assert move.source_node == "node-a" and move.target_node in ("node-b", "node-c", "node-d")
    [name] = h.submit(plan)
    victim = move.pod.name
    controller = h.controller()
    seen_reservation: list[dict[str, object]] = []

    def done() -> bool:
        seen_reservation.extend(h.reservations())
        return h.phase(name) in ("Succeeded", "Failed", "Aborted")

    succeeded_before = metrics.sample(
        "descheduler_migrations_total", {"strategy": "LowNodeLoad", "result": "succeeded"}
    )
    h.run(controller, 60, until=done)

    job = h.job(name)
    status = job["status"]
    assert status["phase"] == "Succeeded", status
    assert status["targetNode"] == move.target_node
    # The Reservation was on the planned node, held the pod's requests, and was consumed by the replacement.
    assert {r["spec"]["nodeName"] for r in seen_reservation} == {move.target_node}
    assert seen_reservation[0]["spec"]["resources"] == {"cpu": "1", "memory": "1Gi", "pods": "1"}
    replacement = status["newPodRef"]["name"]
    assert replacement != victim
    assert h.cluster.store.get("pods", replacement, NS)["spec"]["nodeName"] == move.target_node
    assert [b.reservation for b in h.cluster.scheduler.bindings if b.pod == replacement] == [name]
    assert [c["type"] for c in status["conditions"]] == [
        "ReservationCreated",
        "ReservationScheduled",
        "Evicted",
        "ReplacementBound",
        "ReplacementReady",
    ]
    old = h.cluster.store.list("pods", NS, field_selector=f"metadata.name={victim}")
    assert all(p["metadata"].get("deletionTimestamp") for p in old)  # terminating, or gone already
    assert h.evictions() == 1
    assert h.reservations() == []  # released once the job is done
    assert len(h.ready_pods()) == 4
    # Events: Descheduled on the pod (strategy and reason), each phase change on the job.
    [descheduled] = h.events("Pod", victim)
    assert descheduled["reason"] == "Descheduled"
    assert "LowNodeLoad" in descheduled["message"] and move.reason in descheduled["message"]
    assert descheduled["source"]["component"] == "descheduler" and descheduled["reportingComponent"] == "descheduler"
    reasons = [e["reason"] for e in h.events("PodMigrationJob", name)]
    assert reasons[0] == "MigrationStarted" and reasons[-1] == "MigrationSucceeded"
    assert {"ReservationCreated", "Evicted", "ReplacementBound"} <= set(reasons)
    assert job["metadata"]["annotations"]["descheduler.dev/strategy"] == "LowNodeLoad"
    assert job["metadata"]["annotations"]["descheduler.dev/reason"] == move.reason
    after = metrics.sample("descheduler_migrations_total", {"strategy": "LowNodeLoad", "result": "succeeded"})
    assert after == succeeded_before + 1


def test_the_same_plan_submitted_twice_makes_one_job(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    plan = h.plan_move("web-0", "node-c")
    first = h.submit(plan)
    again = h.submit(plan)
    assert first == again and len(h.cluster.store.list("podmigrationjobs.descheduler.dev")) == 1


def test_a_pod_already_moving_gets_no_second_job_from_a_later_cycle(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    [first] = h.submit(h.plan_move("web-0", "node-c"))
    h.cluster.advance(60)
    assert h.submit(h.plan_move("web-0", "node-d")) == []
    assert [j["metadata"]["name"] for j in h.cluster.store.list("podmigrationjobs.descheduler.dev")] == [first]


def test_pdb_without_budget_keeps_the_job_waiting_then_it_proceeds(make_harness: Callable[..., Harness]) -> None:
    h = make_harness(hot_cluster_objects(extra=[pdb("web", 4)]), make_policy(ttl="10m"))
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    controller = h.controller()
    h.run(controller, 30, until=lambda: h.evictions() > 0)
    status = h.job(name)["status"]
    assert status["phase"] == "Running" and status["reason"] == "DisruptionBudget"
    assert "The disruption budget web needs 4 healthy pods and has 4 currently" in status["message"]
    # The room is not held while the budget says no: it would draw another move's replacement.
    assert "its Reservation is released until then" in status["message"] and h.reservations() == []
    h.run(controller, 30)
    assert h.cluster.store.exists("pods", "web-0", NS) and h.phase(name) == "Running"
    blocked = h.evictions()
    assert 2 <= blocked <= 5  # retried with backoff, not every second

    def relax(obj: dict[str, object]) -> None:
        obj["spec"]["minAvailable"] = 3  # type: ignore[index]
        obj["metadata"]["generation"] = 2  # type: ignore[index]

    h.cluster.store.modify("poddisruptionbudgets.policy", "web", NS, relax)
    h.run(controller, 120, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded"
    assert h.job(name)["status"]["newPodRef"]["name"] in {p["metadata"]["name"] for p in h.ready_pods()}
    assert len(h.ready_pods()) == 4


def test_ttl_expiry_before_eviction_aborts_and_leaves_the_pod_alone(make_harness: Callable[..., Harness]) -> None:
    h = make_harness(hot_cluster_objects(extra=[pdb("web", 4)]), make_policy(ttl="45s"))
    uid = h.cluster.store.get("pods", "web-0", NS)["metadata"]["uid"]
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    h.run(h.controller(), 90, until=lambda: h.phase(name) != "Running" and h.phase(name) != "Pending")
    status = h.job(name)["status"]
    assert status["phase"] == "Aborted" and status["reason"] == "Timeout"
    assert "not touched" in status["message"]
    assert h.cluster.store.get("pods", "web-0", NS)["metadata"]["uid"] == uid
    assert not h.cluster.store.get("pods", "web-0", NS)["metadata"].get("deletionTimestamp")
    assert h.reservations() == []
    reasons = [e["reason"] for e in h.events("PodMigrationJob", name)]
    assert reasons[-1] == "MigrationAborted"


def test_a_target_that_filled_up_leads_to_another_target(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", "node-c"))

    def cordon(obj: dict[str, object]) -> None:
        obj["spec"]["unschedulable"] = True  # type: ignore[index]

    h.cluster.store.modify("nodes", "node-c", "", cordon)
    h.run(h.controller(), 60, until=lambda: h.phase(name) == "Succeeded")
    status = h.job(name)["status"]
    assert status["phase"] == "Succeeded"
    assert status["targetNode"] in ("node-b", "node-d")
    assert "planned target node-c" in next(
        c["message"] for c in status["conditions"] if c["type"] == "ReservationCreated"
    )


def test_no_feasible_target_fails_unschedulable_with_the_pod_untouched(make_harness: Callable[..., Harness]) -> None:
    objects = [node("node-a"), node("node-b", cpu="1")] + [
        o for o in hot_cluster_objects(web_elsewhere=0) if o["kind"] != "Node"
    ]
    h = make_harness(objects)
    [name] = h.submit(h.plan_move("web-0", "node-b"))
    h.run(h.controller(), 10, until=lambda: h.phase(name) == "Failed")
    status = h.job(name)["status"]
    assert status["phase"] == "Failed" and status["reason"] == "Unschedulable"
    assert "planned target node-b: usage: cpu would reach" in status["message"]
    assert h.evictions() == 0 and h.reservations() == []
    assert h.cluster.store.exists("pods", "web-0", NS)


def test_evict_directly_skips_the_reservation(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", None, mode="EvictDirectly", strategy="QuotaReclaim"))
    h.run(h.controller(), 10, until=lambda: h.phase(name) == "Succeeded")
    status = h.job(name)["status"]
    assert status["phase"] == "Succeeded"
    assert [c["type"] for c in status["conditions"]] == ["Evicted"]
    assert h.evictions() == 1
    assert not h.cluster.store.list(RESERVATIONS)


def test_delete_policy_ignores_the_disruption_budget(make_harness: Callable[..., Harness]) -> None:
    h = make_harness(hot_cluster_objects(extra=[pdb("web", 4)]), make_policy(eviction_policy="Delete"))
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    h.run(h.controller(), 60, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded"
    assert h.evictions() == 0
    assert h.cluster.server.faults.count(verb="delete", path=f"/namespaces/{NS}/pods/web-0$") == 1
    [event] = h.events("Pod", "web-0")
    assert event["message"].startswith("Deleted by the descheduler")


def test_two_budgets_on_one_pod_fail_the_job_and_release_the_room(make_harness: Callable[..., Harness]) -> None:
    second = pdb("web", 1)
    second["metadata"]["name"] = "web-too"
    h = make_harness(hot_cluster_objects(extra=[pdb("web", 1), second]))
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    h.run(h.controller(), 10, until=lambda: h.phase(name) == "Failed")
    status = h.job(name)["status"]
    assert status["reason"] == "MultiplePodDisruptionBudgets"
    assert h.reservations() == [] and h.cluster.store.exists("pods", "web-0", NS)


def test_a_pod_that_vanished_fails_the_job_missing_pod(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    h.cluster.store.delete("pods", "web-0", NS)
    h.cluster.store.finalize_pod(NS, "web-0")
    h.run(h.controller(), 3, until=lambda: h.phase(name) == "Failed")
    assert h.job(name)["status"]["reason"] == "MissingPod"
    assert h.evictions() == 0
