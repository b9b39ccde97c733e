"""A Reservation's room is for the replacement of the pod it was made for: owner pods may take it
only once that pod is leaving or gone (scheduling/predicates.py `claimable`). Otherwise, while one
move waits for its eviction, the replacement of another move of the same workload takes its room,
and one move is left with a room no pod will ever come to."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from descheduler.extender.reservations import ReservationRecord, choose_for_binding
from descheduler.scheduling import ClusterView, build_table
from descheduler.scheduling.predicates import claimable, owned_reservations
from tests.builders import lnl_policy, node, pod, policy, reservation, snapshot, uid


def room(name: str, node_name: str, replaces: str | None, phase: str = "Available") -> dict[str, Any]:
    obj = reservation(name, node_name, {"cpu": "1", "memory": "1Gi"}, owner="web", phase=phase)
    if replaces is not None:
        obj["spec"]["replaces"] = {"namespace": "default", "name": replaces, "uid": uid("pod", "default", replaces)}
    obj["metadata"]["creationTimestamp"] = "2026-01-15T12:00:00Z"
    return obj


OBJECTS = [
    node("hot"),
    node("cool-c"),
    node("cool-d"),
    pod("web-0", "hot", deleting=True),  # evicted: terminating
    pod("web-1", "hot"),  # its move waits (a budget, the eviction rate)
    pod("web-new"),  # the workload's next pod, pending
    room("room-0", "cool-d", replaces="web-0"),
    room("room-1", "cool-c", replaces="web-1"),
    room("room-old", "cool-c", replaces=None),  # made by an older controller: no pod named
]


def view() -> ClusterView:
    return ClusterView(build_table(snapshot(OBJECTS), policy(lnl_policy()).scheduling))


def new_pod() -> Any:
    return next(p for p in snapshot(OBJECTS).pods if p.name == "web-new")


def test_a_room_is_claimable_once_its_pod_is_leaving_or_gone() -> None:
    v = view()
    rooms = {r.name: r for r in v.table.snapshot.reservations}
    assert claimable(rooms["room-0"], v.table)  # web-0 is terminating
    assert not claimable(rooms["room-1"], v.table)  # web-1 still runs
    assert claimable(rooms["room-old"], v.table)


def test_a_pod_seen_leaving_before_the_next_snapshot_frees_its_room_at_once() -> None:
    v = view()
    v.table.leaving.add(uid("pod", "default", "web-1"))
    rooms = {r.name: r for r in v.table.snapshot.reservations}
    assert claimable(rooms["room-1"], v.table)


def test_the_workloads_next_pod_may_use_only_the_claimable_rooms() -> None:
    assert sorted(r.name for r in owned_reservations(new_pod(), view())) == ["room-0", "room-old"]


def test_binding_on_the_node_of_a_waiting_room_does_not_take_it() -> None:
    v = view()
    records = [ReservationRecord.of(o) for o in OBJECTS if o["kind"] == "Reservation"]
    choice = choose_for_binding(new_pod(), "cool-c", records, lambda r: claimable(r, v.table))
    # room-old (claimable) on cool-c is taken; room-1, whose pod still runs, is left alone.
    assert choice.consume is not None and choice.consume.name == "room-old"
    records = [r for r in records if r.name != "room-old"]
    choice = choose_for_binding(new_pod(), "cool-c", records, lambda r: claimable(r, v.table))
    # With no claimable room on cool-c, the pod went elsewhere than web-0's room: that one is failed.
    assert choice.consume is None and choice.fail is not None and choice.fail.name == "room-0"


def test_the_controller_names_the_moved_pod_on_its_reservation() -> None:
    from descheduler.migration.objects import parse_job
    from descheduler.migration.records import reservation_body

    job = parse_job(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "PodMigrationJob",
            "metadata": {"name": "job-1", "uid": "job-uid", "creationTimestamp": "2026-01-15T12:00:00Z"},
            "spec": {"podRef": {"namespace": "default", "name": "web-1"}},
        }
    )
    raw = next(o for o in OBJECTS if o["kind"] == "Pod" and o["metadata"]["name"] == "web-1")
    moved = next(p for p in snapshot(OBJECTS).pods if p.name == "web-1")
    body = reservation_body(job, moved, raw, "cool-c", datetime(2026, 1, 15, 12, 0, 1, tzinfo=UTC))
    assert body["spec"]["replaces"] == {"namespace": "default", "name": "web-1", "uid": moved.uid}
    assert body["spec"]["owners"][0]["controller"]["apiVersion"] == "apps/v1"
