"""A job's state machine, decided from its status and the facts read for it (descheduler.migration.steps):
no API, no clock; each row is one transition of migration.md §3."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from descheduler.migration import steps
from descheduler.migration.objects import PodMigrationJob, Reservation, parse_job, parse_reservation
from descheduler.migration.records import with_condition
from descheduler.migration.steps import (
    Elsewhere,
    GoWithoutReservation,
    Hold,
    Record,
    ReserveAgain,
    Transition,
)
from descheduler.migration.targets import Target
from descheduler.model import OwnerRef, Pod

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
CREATED = NOW - timedelta(minutes=1)
OWNER = OwnerRef(kind="ReplicaSet", name="web", uid="uid-rs")

NONE: dict[str, Any] = {}
CREATED_ = {"ReservationCreated": "Created"}
ACKNOWLEDGED = {**CREATED_, "ReservationScheduled": "Acknowledged"}
EVICTED = {**ACKNOWLEDGED, "Evicted": "Evicted"}
BOUND = {**EVICTED, "ReplacementBound": "Bound"}
UNRESERVED: dict[str, Any] = {"ReservationCreated": ("False", steps.NO_RESERVATION_SCHEDULER)}


def job(
    conditions: dict[str, Any] | None = None,
    *,
    phase: str = "Running",
    mode: str = "ReservationFirst",
    paused: bool = False,
    ttl: str = "5m",
    created: datetime = CREATED,
    **status: Any,
) -> PodMigrationJob:
    listed = []
    for kind, value in (conditions or {}).items():
        state, reason = value if isinstance(value, tuple) else ("True", value)
        listed.append({"type": kind, "status": state, "reason": reason, "lastTransitionTime": CREATED.isoformat()})
    return parse_job(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "PodMigrationJob",
            "metadata": {"name": "web-0-abc", "uid": "uid-job", "creationTimestamp": created.isoformat()},
            "spec": {
                "podRef": {"namespace": "shop", "name": "web-0", "uid": "uid-pod"},
                "mode": mode,
                "ttl": ttl,
                "paused": paused,
                "targetNode": "node-b",
            },
            "status": {"phase": phase, "conditions": listed, "sourceNode": "node-a", **status},
        }
    )


def pod(name: str = "web-0", uid: str = "uid-pod", node: str = "node-a", **fields: Any) -> Pod:
    return Pod(
        **{
            "namespace": "shop",
            "name": name,
            "uid": uid,
            "node_name": node,
            "phase": "Running",
            "owner": OWNER,
            **fields,
        }
    )


def reservation(phase: str = "Pending", node: str = "node-b", **status: Any) -> Reservation:
    return parse_reservation(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "web-0-abc"},
            "spec": {"nodeName": node},
            "status": {"phase": phase, **status},
        }
    )


# ------------------------------------------------------------------------------ the next step


@pytest.mark.parametrize(
    ("the_job", "expected"),
    [
        pytest.param(job(), "Reserve", id="running-reserves-first"),
        pytest.param(job(CREATED_), "AwaitAcknowledged", id="reserved-waits-for-the-scheduler"),
        pytest.param(job(ACKNOWLEDGED), "Evict", id="acknowledged-evicts"),
        pytest.param(job(EVICTED), "AwaitBound", id="evicted-waits-for-the-replacement"),
        pytest.param(job(BOUND), "AwaitReady", id="bound-waits-until-ready"),
        pytest.param(job(mode="EvictDirectly"), "Evict", id="evict-directly-evicts-at-once"),
        pytest.param(
            job({"Evicted": "Evicted"}, mode="EvictDirectly"), steps.EVICTED_DIRECTLY, id="evict-directly-done"
        ),
        pytest.param(job(UNRESERVED), "Evict", id="without-reservation-evicts"),
        pytest.param(job({**UNRESERVED, "Evicted": "Evicted"}), "AwaitStockReplacement", id="stock-replacement"),
        pytest.param(
            job({**UNRESERVED, "Evicted": "Evicted", "ReplacementBound": "Bound"}), "AwaitReady", id="stock-bound"
        ),
        pytest.param(job(phase="Pending"), None, id="pending-is-for-admission"),
        pytest.param(job(phase="Succeeded"), None, id="terminal-does-nothing"),
        pytest.param(job(phase="Failed", created=NOW - timedelta(hours=1)), None, id="terminal-never-expires"),
        pytest.param(job(EVICTED, created=NOW - timedelta(minutes=5)), "Expire", id="deadline-reached"),
        pytest.param(job(phase="Pending", created=NOW - timedelta(minutes=6)), "Expire", id="pending-past-deadline"),
        pytest.param(
            job(paused=True),
            Hold("Paused", "spec.paused is set: no step that has not begun is taken"),
            id="paused-before-eviction",
        ),
        pytest.param(job(EVICTED, paused=True), "AwaitBound", id="paused-after-eviction-goes-on"),
    ],
)
def test_next_step_follows_the_recorded_conditions(the_job: PodMigrationJob, expected: object) -> None:
    assert steps.next_step(the_job, NOW, dry_run=False, due=True) == expected


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        (NONE, Hold("DryRun", "the policy is in dryRun: nothing is reserved or evicted")),
        (ACKNOWLEDGED, Hold("DryRun", "the policy is in dryRun: nothing is reserved or evicted")),
        (EVICTED, "AwaitBound"),  # an eviction already made is seen through
    ],
)
def test_dry_run_holds_every_step_before_the_eviction(conditions: dict[str, Any], expected: object) -> None:
    assert steps.next_step(job(conditions), NOW, dry_run=True, due=True) == expected


def test_a_job_in_backoff_takes_no_step_but_still_expires() -> None:
    assert steps.next_step(job(ACKNOWLEDGED), NOW, dry_run=False, due=False) is None
    late = job(ACKNOWLEDGED, created=NOW - timedelta(minutes=10))
    assert steps.next_step(late, NOW, dry_run=False, due=False) == "Expire"


@pytest.mark.parametrize(
    ("the_job", "dry_run", "expected"),
    [
        (job(phase="Pending"), False, "Admit"),
        (job(phase="Pending", paused=True), False, Hold("Paused", "spec.paused is set: the job does not start")),
        (job(phase="Pending"), True, Hold("DryRun", "the policy is in dryRun: the job does not start")),
        (job(phase="Pending", paused=True, created=NOW - timedelta(minutes=5)), False, "Expire"),
    ],
)
def test_pending_step(the_job: PodMigrationJob, dry_run: bool, expected: object) -> None:
    assert steps.pending_step(the_job, NOW, dry_run=dry_run) == expected


# ------------------------------------------------------------------------------ the pod


@pytest.mark.parametrize(
    ("found", "why"),
    [
        (pod(), ""),
        (None, "pod shop/web-0 no longer exists"),
        (pod(uid="uid-other"), "pod shop/web-0 was replaced (UID uid-other, expected uid-pod)"),
        (pod(deleting=True), "pod shop/web-0 is being deleted"),
        (pod(phase="Succeeded"), "pod shop/web-0 has finished (Succeeded)"),
    ],
)
def test_why_pod_lost(found: Pod | None, why: str) -> None:
    assert steps.why_pod_lost(job(), found) == why


def test_reservation_first_needs_a_controller_to_recreate_the_pod() -> None:
    bare = Pod(namespace="shop", name="web-0", uid="uid-pod", node_name="node-a", phase="Running")
    refusal = steps.start_refusal(job(phase="Pending"), bare)
    assert refusal is not None and (refusal.phase, refusal.reason) == ("Failed", "NoController")
    assert steps.start_refusal(job(phase="Pending", mode="EvictDirectly"), bare) is None


def test_started_records_the_pod_it_moves() -> None:
    change = steps.started(job(phase="Pending"), pod(), "ReplicaSet shop/web")
    assert (change.phase, change.reason) == ("Running", "Started")
    assert change.message == "moving pod shop/web-0 from node node-a (ReplicaSet shop/web)"
    assert change.status is not None and change.status.workload is not None
    assert (change.status.source_node, change.status.pod_uid, change.status.workload.uid) == (
        "node-a",
        "uid-pod",
        "uid-rs",
    )


# ------------------------------------------------------------------------------ reserving


@pytest.mark.parametrize(
    ("found", "owner", "stale"),
    [
        (reservation("Pending"), "uid-job", False),
        (reservation("Available"), "", False),
        (reservation("Pending"), "uid-earlier-job", True),
        (reservation("Expired"), "uid-job", True),
        (reservation("Available", consumedBy="shop/web-9"), "uid-job", True),
    ],
)
def test_a_reservation_found_under_the_jobs_name_is_adopted_unless_stale(
    found: Reservation, owner: str, stale: bool
) -> None:
    assert steps.stale_reservation(job(), found, owner) is stale


def test_no_target_waits_out_a_cooldown_and_otherwise_fails() -> None:
    assert steps.no_target(Target(None, "only cooling nodes fit", cooling=True)) == Hold(
        "TargetCooldown", "only cooling nodes fit"
    )
    assert steps.no_target(Target(None, "0/3 nodes fit")) == Transition(
        "Failed", "Unschedulable", "no node can take the pod: 0/3 nodes fit"
    )


def test_reserved_records_the_reservation_but_keeps_the_retry_backoff() -> None:
    record = steps.reserved(job(), "web-0-abc", "node-b", "", NOW)
    assert record.status.has("ReservationCreated") and record.status.target_node == "node-b"
    assert record.status.reservation_ref is not None and record.status.reservation_ref.name == "web-0-abc"
    assert (record.event, record.message) == ("ReservationCreated", "Reservation web-0-abc holds room on node node-b")
    assert not record.progress  # made again after every "not now" of a budget: waits must keep growing


@pytest.mark.parametrize(
    ("found", "absent", "expected"),
    [
        (None, "", ReserveAgain("web-0-abc", "is gone")),
        (reservation("Expired"), "", ReserveAgain("web-0-abc", "is Expired")),
        (
            reservation("Pending"),
            "",
            Hold("WaitingForScheduler", "Reservation web-0-abc on node node-b waits for the scheduler"),
        ),
        (
            reservation("Pending"),
            None,
            Hold("WaitingForScheduler", "Reservation web-0-abc on node node-b waits for the scheduler"),
        ),
        (reservation("Pending"), "lease expired", GoWithoutReservation("lease expired")),
    ],
)
def test_acknowledgement_waits_reserves_again_or_gives_up_the_reservation(
    found: Reservation | None, absent: str | None, expected: object
) -> None:
    assert steps.acknowledgement(job(CREATED_), "web-0-abc", found, absent, NOW) == expected


def test_an_available_reservation_is_acknowledged() -> None:
    outcome = steps.acknowledgement(
        job(CREATED_), "web-0-abc", reservation("Available", acknowledgedBy="extender-1"), "", NOW
    )
    assert isinstance(outcome, Record)
    assert outcome.status.has("ReservationScheduled")
    assert outcome.status.message == "extender-1 holds room on node node-b"


def test_without_a_reservation_scheduler_the_job_records_it_and_moves_on() -> None:
    record = steps.unreserved(job(), "no Lease", NOW)
    assert steps.without_reservation(record.status)
    assert record.warning and record.progress and record.event == steps.NO_RESERVATION_SCHEDULER
    assert steps.reserves(job()) and not steps.reserves(job(UNRESERVED))


def test_forgetting_the_reservation_drops_its_conditions() -> None:
    status = steps.forgotten(job(ACKNOWLEDGED, reservationRef={"name": "web-0-abc"}).status, "ReservationLost", "x")
    assert not status.has("ReservationCreated") and not status.has("ReservationScheduled")
    assert status.reservation_ref is None and status.reason == "ReservationLost"


# ------------------------------------------------------------------------------ the replacement


REPLACEMENT = pod("web-9", "uid-web-9", "node-b", ready=True)


@pytest.mark.parametrize(
    ("found", "recorded", "expected"),
    [
        (REPLACEMENT, reservation("Consumed", consumedBy="shop/web-9"), Record),
        (pod("web-9", "uid-web-9", "node-c"), reservation("Consumed", consumedBy="shop/web-9"), Elsewhere),
        (REPLACEMENT, reservation("Failed", consumedBy="shop/web-9"), Elsewhere),
        (None, reservation("Consumed", consumedBy="shop/web-9"), Hold),
        (REPLACEMENT, reservation("Consumed", consumedBy="shop/web-9", consumedByUID="uid-other"), Hold),
        # The room is taken, but the read of the pod does not show its binding yet: not "elsewhere".
        (pod("web-9", "uid-web-9", ""), reservation("Consumed", consumedBy="shop/web-9"), Hold),
    ],
    ids=[
        "bound-on-target",
        "bound-elsewhere",
        "reservation-failed",
        "replacement-gone",
        "replacement-replaced",
        "binding-not-yet-read",
    ],
)
def test_the_replacement_is_the_pod_recorded_on_the_reservation(
    found: Pod | None, recorded: Reservation, expected: type
) -> None:
    outcome = steps.replacement_on_reservation(job(EVICTED), "web-0-abc", recorded, found, NOW)
    assert isinstance(outcome, expected)


@pytest.mark.parametrize(
    ("node", "crowded", "fails"),
    [("node-c", "", False), ("node-c", "node node-c cpu 80% > 65%", True), ("node-a", "", True)],
    ids=["cool-node-counts", "crowded-node-fails", "back-on-source-fails"],
)
def test_without_a_reservation_a_replacement_counts_only_on_a_node_under_its_thresholds(
    node: str, crowded: str, fails: bool
) -> None:
    elsewhere = Elsewhere(pod("web-9", "uid-web-9", node), steps.STOCK_SCHEDULER)
    outcome = steps.landed_elsewhere(job(EVICTED), elsewhere, crowded, NOW)
    if fails:
        assert isinstance(outcome, Transition) and (outcome.phase, outcome.reason) == ("Failed", "ReplacementElsewhere")
    else:
        assert isinstance(outcome, Record) and outcome.status.has("ReplacementBound")


@pytest.mark.parametrize(
    ("node", "crowded", "why"),
    [
        ("node-c", "", "that node stays under its thresholds"),
        ("node-c", "node node-c cpu 80% > 65%", "node node-c cpu 80% > 65%"),
        ("node-a", "", "back on the source node"),
    ],
    ids=["cool-node", "crowded-node", "back-on-source"],
)
def test_a_replacement_off_its_reservation_is_elsewhere_wherever_it_went(node: str, crowded: str, why: str) -> None:
    elsewhere = Elsewhere(pod("web-9", "uid-web-9", node), "instead of the reserved node node-b", "node-b")
    outcome = steps.landed_elsewhere(job(EVICTED), elsewhere, crowded, NOW)
    assert isinstance(outcome, Transition) and (outcome.phase, outcome.reason) == ("Failed", "ReplacementElsewhere")
    assert (
        outcome.message == f"replacement shop/web-9 was bound to node {node} instead of the reserved node node-b: {why}"
    )
    assert outcome.status is not None and outcome.status.new_pod_ref is not None
    assert outcome.status.new_pod_ref.name == "web-9"


def test_only_a_refusal_by_kube_schedulers_filters_fails_the_job_from_the_reservation() -> None:
    refused = reservation("Failed", reason="ReservedNodeRefused", message="kube-scheduler's filters refused it")
    outcome = steps.refused_by_filters(refused)
    assert isinstance(outcome, Transition) and (outcome.phase, outcome.reason) == ("Failed", "ReservedNodeRefused")
    assert outcome.message.startswith("kube-scheduler's filters refused it; Reservation ")
    assert steps.refused_by_filters(reservation("Failed", reason="ReplacementElsewhere")) is None
    assert steps.refused_by_filters(reservation("Available")) is None


def test_the_stock_replacement_is_the_owners_first_bound_pod_since_the_eviction_that_no_job_claimed() -> None:
    evicted = job({**UNRESERVED, "Evicted": "Evicted"}, workload={"kind": "ReplicaSet", "name": "web", "uid": "uid-rs"})
    before = pod("web-old", "uid-old", "node-c", created=CREATED - timedelta(minutes=5))
    claimed = pod("web-7", "uid-7", "node-c", created=CREATED + timedelta(seconds=1))
    first = pod("web-8", "uid-8", "node-d", created=CREATED + timedelta(seconds=2))
    later = pod("web-9", "uid-9", "node-c", created=CREATED + timedelta(seconds=3))
    found = steps.stock_replacement(evicted, [later, before, first, claimed], {"uid-7"})
    assert found == Elsewhere(first, steps.STOCK_SCHEDULER)
    unbound = pod("web-8", "uid-8", "", created=CREATED + timedelta(seconds=2))
    assert steps.stock_replacement(evicted, [unbound, later], set()) is None  # the first must be bound first


def test_an_eviction_the_job_did_not_see_looks_for_the_replacement_from_when_it_chose_to_go_without() -> None:
    # A controller evicted at CREATED and was killed before recording it; the next one found the pod
    # gone 30 s later. The replacement, made at once, predates that record.
    unreserved = job(UNRESERVED, workload={"kind": "ReplicaSet", "name": "web", "uid": "uid-rs"})
    status = with_condition(unreserved.status, "Evicted", CREATED + timedelta(seconds=30), reason=steps.POD_GONE)
    gone = unreserved.model_copy(update={"status": status})
    replacement = pod("web-8", "uid-8", "node-d", created=CREATED + timedelta(seconds=1))
    assert steps.stock_replacement(gone, [replacement], set()) == Elsewhere(replacement, steps.STOCK_SCHEDULER)
    seen = unreserved.model_copy(
        update={
            "status": with_condition(unreserved.status, "Evicted", CREATED + timedelta(seconds=30), reason="Evicted")
        }
    )
    assert steps.stock_replacement(seen, [replacement], set()) is None  # an eviction it saw: only pods made since


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (REPLACEMENT, "Succeeded"),
        (pod("web-9", "uid-web-9", "node-b", ready=False), None),
        (None, "ReplacementGone"),
        (pod("web-9", "uid-other", "node-b", ready=True), "ReplacementGone"),
    ],
)
def test_readiness_of_the_bound_replacement(found: Pod | None, expected: str | None) -> None:
    bound = job(BOUND, newPodRef={"namespace": "shop", "name": "web-9", "uid": "uid-web-9"})
    outcome = steps.readiness(bound, found, NOW)
    if expected is None:
        assert outcome is None
    elif expected == "Succeeded":
        assert isinstance(outcome, Transition) and outcome.phase == "Succeeded"
        assert outcome.status is not None and outcome.status.has("ReplacementReady")
    else:
        assert isinstance(outcome, Record) and outcome.status.reason == expected
        assert outcome.status.new_pod_ref is None and not outcome.status.has("ReplacementBound")


# ------------------------------------------------------------------------------ time running out


@pytest.mark.parametrize(
    ("the_job", "evicted", "ready", "expected"),
    [
        (job(CREATED_), False, False, ("Aborted", "Timeout")),
        (job(EVICTED), True, False, ("Failed", "Timeout")),
        (job(BOUND), True, True, "AwaitReady"),
        (job(mode="EvictDirectly"), True, False, ("Succeeded", "Evicted")),
    ],
    ids=["untouched-pod-aborts", "evicted-fails", "ready-replacement-succeeds", "evict-directly-done-late"],
)
def test_expiry(the_job: PodMigrationJob, evicted: bool, ready: bool, expected: object) -> None:
    outcome = steps.expiry(the_job, evicted, ready)
    assert (outcome if isinstance(outcome, str) else (outcome.phase, outcome.reason)) == expected


@pytest.mark.parametrize(
    ("the_job", "may"),
    [
        (job(), False),  # nothing reserved: nothing could have been evicted
        (job(CREATED_), True),
        (job(EVICTED), False),  # recorded
        (job(mode="EvictDirectly"), True),
        (job(UNRESERVED), True),
        (job(phase="Pending", mode="EvictDirectly"), False),
    ],
)
def test_may_be_evicted_unrecorded(the_job: PodMigrationJob, may: bool) -> None:
    assert steps.may_be_evicted_unrecorded(the_job) is may
