"""The controller's side of the Reservation protocol (migration.md §3): no eviction before the
scheduler side acknowledges the room; the replacement is the pod recorded on the Reservation; a
replacement bound elsewhere decides the job at once; no reservation-aware scheduler, no Reservation.

The scheduler side is played by hand here (the simulated scheduler is taken out of the cluster
where a test needs to act in its place), so each rule is tested on its own."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from descheduler import metrics
from descheduler.fakecluster.apiserver.binding import bind_pod
from descheduler.fakecluster.scheduler import Scheduler
from descheduler.migration import replacements
from descheduler.migration.api import MigrationApi
from descheduler.migration.controller import MigrationController
from descheduler.migration.objects import (
    ANNOTATION_SCHEDULER_NAMES,
    SCHEDULER_LEASE,
    SCHEDULER_LEASE_NAMESPACE,
    TAINT_MOVING_OFF,
)
from descheduler.migration.presence import SchedulerPresence

from .conftest import NS, RESERVATIONS, Harness, make_policy

LEASES = "leases.coordination.k8s.io"


def _without_scheduler(h: Harness) -> None:
    h.cluster.components.remove(h.cluster.scheduler)


def _conditions(h: Harness, name: str) -> list[str]:
    return [c["type"] for c in (h.job(name).get("status") or {}).get("conditions") or [] if c["status"] == "True"]


def _set_reservation_status(h: Harness, name: str, **status: Any) -> None:
    obj = h.cluster.store.get(RESERVATIONS, name)
    obj["status"] = {**(obj.get("status") or {}), **status}
    h.cluster.store.update(obj, subresource="status")


def _evicted(h: Harness, pod: str) -> bool:
    found = h.cluster.store.list("pods", NS, field_selector=f"metadata.name={pod}")
    return not found or bool(found[0]["metadata"].get("deletionTimestamp"))


def _new_web_pod(h: Harness, before: set[str]) -> dict[str, Any] | None:
    fresh = [p for p in h.pods() if p["metadata"]["name"] not in before]
    return fresh[0] if fresh else None


def test_no_eviction_until_the_scheduler_side_acknowledges_the_reservation(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness()
    _without_scheduler(h)
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    controller = h.controller()
    h.run(controller, 20)
    [reservation] = h.reservations()
    assert (reservation.get("status") or {}).get("phase", "Pending") == "Pending"
    assert _conditions(h, name) == ["ReservationCreated"]
    assert h.job(name)["status"]["reason"] == "WaitingForScheduler"
    assert not _evicted(h, "web-0") and h.evictions() == 0
    _set_reservation_status(h, name, phase="Available", acknowledgedBy="scheduler-1")
    controller.reconcile_once()
    assert _conditions(h, name) == ["ReservationCreated", "ReservationScheduled", "Evicted"]
    assert "scheduler-1 holds room on node node-c" in str(h.job(name)["status"]["conditions"])
    assert h.evictions() == 1


def _evict_under_hand_acknowledgement(h: Harness, target: str) -> tuple[str, set[str], MigrationController]:
    _without_scheduler(h)
    before = {p["metadata"]["name"] for p in h.pods()}
    [name] = h.submit(h.plan_move("web-0", target))
    controller = h.controller()
    controller.reconcile_once()
    _set_reservation_status(h, name, phase="Available", acknowledgedBy="test")
    controller.reconcile_once()
    assert h.evictions() == 1
    h.cluster.advance(1)  # the ReplicaSet creates the replacement, unbound
    return name, before, controller


def _replaced(h: Harness) -> tuple[str, dict[str, Any], MigrationController]:
    """A move to node-c evicted under hand acknowledgement: its job, the replacement the ReplicaSet
    made for it (not bound yet) and the controller."""
    name, before, controller = _evict_under_hand_acknowledgement(h, "node-c")
    replacement = _new_web_pod(h, before)
    assert replacement is not None
    return name, replacement, controller


def test_the_replacement_is_the_pod_recorded_on_the_reservation_not_a_guess(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness()
    name, replacement, controller = _replaced(h)
    bind_pod(h.cluster.store, NS, replacement["metadata"]["name"], {"target": {"name": "node-d"}})
    h.cluster.advance(1)
    controller.reconcile_once()
    # A pod of the workload bound elsewhere, and nothing recorded on the Reservation: not this job's.
    assert "ReplacementBound" not in _conditions(h, name)
    assert [r["metadata"]["name"] for r in h.reservations()] == [name]
    _set_reservation_status(
        h,
        name,
        phase="Consumed",
        consumedBy=f"{NS}/{replacement['metadata']['name']}",
        consumedByUID=replacement["metadata"]["uid"],
    )
    controller.reconcile_once()
    # Recorded: the record decides (here: landed elsewhere than reserved).
    assert h.job(name)["status"]["newPodRef"]["name"] == replacement["metadata"]["name"]
    assert "instead of the reserved node node-c" in h.job(name)["status"]["message"]


def test_a_replacement_bound_on_the_reserved_node_without_the_extenders_bind_counts_and_frees_the_room(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness()
    name, replacement, controller = _replaced(h)
    # A scheduler that binds by itself (no bind verb through the extender) put it on the reserved node.
    bind_pod(h.cluster.store, NS, replacement["metadata"]["name"], {"target": {"name": "node-c"}})
    h.cluster.advance(1)
    h.run(controller, 20, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded"
    assert h.job(name)["status"]["newPodRef"]["name"] == replacement["metadata"]["name"]
    assert h.reservations() == []
    bound = next(c for c in h.job(name)["status"]["conditions"] if c["type"] == "ReplacementBound")
    assert "did not record it there" in bound["message"]


def test_a_replacement_bound_back_on_the_source_fails_the_job_at_once_and_frees_the_room(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness(policy=None)
    name, replacement, controller = _replaced(h)
    bind_pod(h.cluster.store, NS, replacement["metadata"]["name"], {"target": {"name": "node-a"}})
    _set_reservation_status(
        h,
        name,
        phase="Failed",
        reason="ReplacementElsewhere",
        consumedBy=f"{NS}/{replacement['metadata']['name']}",
        consumedByUID=replacement["metadata"]["uid"],
    )
    controller.reconcile_once()
    status = h.job(name)["status"]
    assert status["phase"] == "Failed" and status["reason"] == "ReplacementElsewhere"
    assert "was bound to node node-a instead of the reserved node node-c" in status["message"]
    assert "back on the source node" in status["message"]
    assert h.reservations() == []  # released at once, not held until the TTL


def test_a_replacement_bound_on_another_cool_node_is_elsewhere_never_succeeded_as_planned(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness()
    name, replacement, controller = _replaced(h)
    bind_pod(h.cluster.store, NS, replacement["metadata"]["name"], {"target": {"name": "node-d"}})
    _set_reservation_status(
        h, name, phase="Failed", reason="ReplacementElsewhere", consumedBy=f"{NS}/{replacement['metadata']['name']}"
    )
    elsewhere = {"strategy": "LowNodeLoad", "result": "elsewhere"}
    counted = metrics.sample("descheduler_migrations_total", elsewhere)
    controller.reconcile_once()
    status = h.job(name)["status"]
    # Decided at once, with where it went: the job status, its Event and the metric all say "elsewhere".
    assert (status["phase"], status["reason"]) == ("Failed", "ReplacementElsewhere")
    assert status["message"] == (
        f"replacement {NS}/{replacement['metadata']['name']} was bound to node node-d instead of the reserved "
        "node node-c: that node stays under its thresholds"
    )
    assert status["newPodRef"]["name"] == replacement["metadata"]["name"]
    assert "ReplacementBound" not in _conditions(h, name)
    assert h.reservations() == []  # released at once, not held until the TTL
    [event] = [e for e in h.events("PodMigrationJob", name) if e["reason"] == "ReplacementElsewhere"]
    assert event["type"] == "Warning" and "node-d" in event["message"]
    assert metrics.sample("descheduler_migrations_total", elsewhere) == counted + 1


def test_a_reserved_node_refused_by_kube_schedulers_filters_fails_the_job_at_once(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness()
    name, replacement, controller = _replaced(h)
    refusal = f"kube-scheduler's filters refused reserved node node-c for the replacement {NS}/{replacement['metadata']['name']}"
    _set_reservation_status(h, name, phase="Failed", reason="ReservedNodeRefused", message=refusal)
    controller.reconcile_once()
    status = h.job(name)["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "ReservedNodeRefused")
    assert status["message"] == f"{refusal}; Reservation {name} released"
    assert h.reservations() == []  # not held until the ttl: the replacement is free to go anywhere


def test_a_replacement_pending_after_its_eviction_shows_in_the_gauge_until_it_is_bound(
    make_harness: Callable[..., Harness],
) -> None:
    h = make_harness()
    name, replacement, _ = _replaced(h)
    assert not replacement["spec"].get("nodeName")
    h.cluster.advance(90)
    [pending] = replacements.publish(h.snapshot())
    assert (pending.job, pending.pod) == (name, f"{NS}/{replacement['metadata']['name']}")
    assert metrics.sample("descheduler_replacement_pending_seconds") >= 90
    bind_pod(h.cluster.store, NS, replacement["metadata"]["name"], {"target": {"name": "node-c"}})
    h.cluster.advance(1)
    assert replacements.publish(h.snapshot()) == []
    assert metrics.sample("descheduler_replacement_pending_seconds") == 0


def _lease(h: Harness, renewed_ago: float, serves: str | None = None) -> None:
    """The scheduler Lease as if last renewed `renewed_ago` seconds ago by extender-1, listing the
    schedulerNames it `serves` (None: no list)."""
    renewed = (h.now() - timedelta(seconds=renewed_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {"holderIdentity": "extender-1", "leaseDurationSeconds": 15, "renewTime": renewed}
    annotations = {} if serves is None else {ANNOTATION_SCHEDULER_NAMES: serves}

    def renew(lease: dict[str, Any]) -> None:
        lease["spec"] = spec
        lease["metadata"]["annotations"] = annotations

    if h.cluster.store.exists(LEASES, SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE):
        h.cluster.store.modify(LEASES, SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE, renew)
        return
    h.cluster.store.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": SCHEDULER_LEASE, "namespace": SCHEDULER_LEASE_NAMESPACE, "annotations": annotations},
            "spec": spec,
        }
    )


def _presence_controller(h: Harness) -> MigrationController:
    presence = SchedulerPresence(MigrationApi(h.api))
    return MigrationController(h.api, lambda: h.policy, h.snapshot, h.now, h.recorder, presence=presence)


def test_without_a_reservation_scheduler_the_pod_moves_without_a_reservation(
    make_harness: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness()
    _stock_scheduler(monkeypatch)
    _lease(h, renewed_ago=120)  # the extender stopped renewing two minutes ago
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    controller = _presence_controller(h)
    seen: list[dict[str, Any]] = []

    def done() -> bool:
        seen.extend(h.reservations())
        return h.phase(name) in ("Succeeded", "Failed", "Aborted")

    h.run(controller, 60, until=done)
    status = h.job(name)["status"]
    assert status["phase"] == "Succeeded", status
    assert seen == []  # no Reservation that nothing would honour
    created = next(c for c in status["conditions"] if c["type"] == "ReservationCreated")
    assert created["status"] == "False" and created["reason"] == "NoReservationScheduler"
    assert "last renewed by extender-1 at " in created["message"]
    assert metrics.sample("descheduler_reservation_scheduler") == 0
    reasons = [e["reason"] for e in h.events("PodMigrationJob", name)]
    # Preferred (the default): it waited the grace after the controller started, then went without.
    assert reasons.index("WaitingForScheduler") < reasons.index("NoReservationScheduler")
    evicted_at = next(c for c in status["conditions"] if c["type"] == "Evicted")["lastTransitionTime"]
    assert _seconds(evicted_at) - _seconds(h.job(name)["status"]["startTime"]) >= 30
    replacement = h.cluster.store.get("pods", status["newPodRef"]["name"], NS)
    assert replacement["spec"]["nodeName"] != "node-a"


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _stock_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheduler that places pods but knows nothing of Reservations, as a stock kube-scheduler."""
    monkeypatch.setattr(Scheduler, "renew_lease", lambda self, now: None)
    monkeypatch.setattr(Scheduler, "_acknowledge", lambda self: None)


def _without_reservation(cause: str) -> float:
    return metrics.sample("descheduler_moves_without_reservation_total", {"cause": cause})


def test_required_never_evicts_without_a_reservation(
    make_harness: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(policy=make_policy(ttl="2m", reservationScheduler="{expect: Required}"))
    _stock_scheduler(monkeypatch)
    _lease(h, renewed_ago=120)
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    h.run(_presence_controller(h), 180, until=lambda: h.phase(name) in ("Succeeded", "Failed", "Aborted"))
    status = h.job(name)["status"]
    assert status["phase"] == "Aborted" and h.evictions() == 0 and h.reservations() == []
    created = next(c for c in status["conditions"] if c["type"] == "ReservationCreated")
    assert created["reason"] == "WaitingForScheduler" and "expect is Required" in created["message"]
    events = [e for e in h.events("PodMigrationJob", name) if e["reason"] == "WaitingForScheduler"]
    assert len(events) == 1 and events[0]["type"] == "Warning"


def test_preferred_takes_the_scheduler_that_comes_within_the_grace(
    make_harness: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness()
    renew = Scheduler.renew_lease
    monkeypatch.setattr(Scheduler, "renew_lease", lambda self, now: None)
    _lease(h, renewed_ago=120)  # the extender is not up yet when the controller starts
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    controller = _presence_controller(h)
    h.run(controller, 10)
    assert h.evictions() == 0 and h.reservations() == [] and h.job(name)["status"]["reason"] == "WaitingForScheduler"
    monkeypatch.setattr(Scheduler, "renew_lease", renew)  # the extender comes up 10 s after the controller
    h.run(controller, 60, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded"
    assert "ReservationScheduled" in _conditions(h, name)


def test_absent_never_makes_a_reservation(make_harness: Callable[..., Harness]) -> None:
    h = make_harness(policy=make_policy(reservationScheduler="{expect: Absent}"))
    before = _without_reservation("policy")
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    h.run(_presence_controller(h), 60, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded" and h.reservations() == []
    created = next(c for c in h.job(name)["status"]["conditions"] if c["type"] == "ReservationCreated")
    assert created["reason"] == "NoReservationScheduler" and "expect: Absent" in created["message"]
    assert _without_reservation("policy") == before + 1


def test_only_pods_whose_scheduler_asks_the_extender_get_a_reservation(
    make_harness: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness()
    _without_scheduler(h)
    _lease(h, renewed_ago=1, serves="load-aware-scheduler")
    before = _without_reservation("unserved")
    [name] = h.submit(h.plan_move("web-0", "node-c"))  # on the default scheduler
    _presence_controller(h).reconcile_once()
    assert h.reservations() == [] and h.evictions() == 1
    created = next(c for c in h.job(name)["status"]["conditions"] if c["type"] == "ReservationCreated")
    assert "serves schedulerName load-aware-scheduler, not default-scheduler" in created["message"]
    assert _without_reservation("unserved") == before + 1


def test_a_fresh_scheduler_lease_keeps_the_reservation_protocol(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    _without_scheduler(h)
    _lease(h, renewed_ago=3, serves="default-scheduler,load-aware-scheduler")
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    _presence_controller(h).reconcile_once()
    assert [r["metadata"]["name"] for r in h.reservations()] == [name]
    assert metrics.sample("descheduler_reservation_scheduler") == 1


def test_a_room_whose_pod_still_runs_does_not_draw_another_moves_replacement(
    make_harness: Callable[..., Harness],
) -> None:
    # web-0 and web-1 both get acknowledged rooms (node-d and node-c); the eviction rate lets only
    # web-0 go now. Its replacement must take web-0's room, not web-1's, whose pod still runs
    # (node-c would win a tie of equal rooms by name).
    h = make_harness(policy=make_policy(evictQPS=0.02, evictBurst=1, bucket=2, maxMigratingPerWorkload=2))
    [first] = h.submit(h.plan_move("web-0", "node-d"))
    [second] = h.submit(h.plan_move("web-1", "node-c"))
    controller = h.controller()
    h.run(controller, 30, until=lambda: h.phase(first) == "Succeeded")
    assert h.phase(first) == "Succeeded"
    assert h.evictions() == 1 and not _evicted(h, "web-1")
    replacement = h.job(first)["status"]["newPodRef"]["name"]
    assert h.cluster.store.get("pods", replacement, NS)["spec"]["nodeName"] == "node-d"
    [waiting] = h.reservations()
    assert waiting["metadata"]["name"] == second and waiting["status"]["phase"] == "Available"
    assert not waiting["status"].get("consumedBy")
    h.run(controller, 120, until=lambda: h.phase(second) == "Succeeded")
    assert h.phase(second) == "Succeeded"
    assert h.reservations() == []


def _node_taints(h: Harness, node: str) -> list[str]:
    return [t["key"] for t in (h.cluster.store.get("nodes", node).get("spec") or {}).get("taints") or ()]


def test_a_move_without_a_reservation_taints_its_source_until_it_ends(
    make_harness: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(policy=make_policy(reservationScheduler="{expect: Absent}"))
    tainted: list[list[str]] = []
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    controller = _presence_controller(h)

    def done() -> bool:
        tainted.append(_node_taints(h, "node-a"))
        return h.phase(name) == "Succeeded"

    h.run(controller, 60, until=done)
    assert h.phase(name) == "Succeeded"
    assert [TAINT_MOVING_OFF] in tainted  # while the move ran
    controller.reconcile_once()
    assert _node_taints(h, "node-a") == []


def test_a_leftover_moving_off_taint_is_removed_at_start(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()

    def leftover(node: dict[str, Any]) -> None:
        node["spec"]["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": TAINT_MOVING_OFF, "effect": "PreferNoSchedule"},
        ]

    h.cluster.store.modify("nodes", "node-b", None, leftover)
    _presence_controller(h).reconcile_once()
    assert _node_taints(h, "node-b") == ["dedicated"]


def test_steering_can_be_turned_off(make_harness: Callable[..., Harness]) -> None:
    h = make_harness(policy=make_policy(reservationScheduler="{expect: Absent}", steerOffSource="false"))
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    seen: set[str] = set()
    h.run(
        _presence_controller(h),
        60,
        until=lambda: seen.update(_node_taints(h, "node-a")) or h.phase(name) == "Succeeded",
    )
    assert h.phase(name) == "Succeeded" and TAINT_MOVING_OFF not in seen
