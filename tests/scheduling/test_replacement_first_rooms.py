"""A MakeBeforeBreak move's Reservation (`replacementFirst`): its owner is that move's replacement
alone (the rollout's label), so the room is the replacement's at once, while the moved pod still
runs; and it stands in for the moved pod's load on the target, as any move's Reservation does. The
real control plane showed both: without them the target counted the moved pod twice and refused the
replacement, which landed elsewhere (tests/realcluster/test_moves.py, make-before-break)."""

from __future__ import annotations

from typing import Any

import numpy as np

from descheduler.rollout import LABEL_REPLACES
from descheduler.scheduling import ClusterView, build_table
from descheduler.scheduling.predicates import claimable, owned_reservations
from tests.builders import lnl_policy, loaded_node, migration_job, pod, policy, reservation, snapshot, uid

MOVED = uid("pod", "default", "web-1")


def room(first: bool = True) -> dict[str, Any]:
    obj = reservation("room-1", "cool", {"cpu": "1", "memory": "1Gi"}, owner="web")
    obj["spec"]["owners"] = [
        {"controller": {"kind": "ReplicaSet"}, "labelSelector": {"matchLabels": {LABEL_REPLACES: MOVED}}}
    ]
    obj["spec"]["replaces"] = {"namespace": "default", "name": "web-1", "uid": MOVED}
    obj["spec"]["replacementFirst"] = first
    return obj


def objects(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *loaded_node("hot", [({"name": "web-1", "cpu": "2"}, "3")]),  # the moved pod: still running, 3 cpu used
        *loaded_node("cool", [], system="500m"),
        pod("web-new", owner="web-2", labels={LABEL_REPLACES: MOVED}),  # the rollout's pod, pending
        pod("web-other", owner="web-2"),  # another pod of the new ReplicaSet: not this move's
        *extra,
    ]


def view(*extra: dict[str, Any]) -> ClusterView:
    return ClusterView(build_table(snapshot(objects(*extra)), policy(lnl_policy()).scheduling))


def named(v: ClusterView, name: str) -> Any:
    return next(p for p in v.table.snapshot.pods if p.name == name)


def test_the_room_is_the_replacements_while_the_moved_pod_runs() -> None:
    v = view(room())
    [held] = v.table.snapshot.reservations
    assert claimable(held, v.table)
    assert [r.name for r in owned_reservations(named(v, "web-new"), v)] == ["room-1"]
    assert owned_reservations(named(v, "web-other"), v) == []
    # A ReservationFirst room of a running pod is not claimable yet (the moved pod goes first there).
    w = view(room(first=False))
    assert not claimable(w.table.snapshot.reservations[0], w.table)


def test_the_room_stands_in_for_the_moved_pods_load_on_the_target() -> None:
    job = migration_job("job-1", "web-1", "cool")
    cool = view().table.index["cool"]
    without_room = view(job).table.usage[cool]
    with_room = view(job, room()).table
    alone = view().table.usage[cool]
    estimate = with_room.reservation_estimate(with_room.snapshot.reservations[0])
    assert np.array_equal(with_room.usage[cool], alone + estimate)  # counted once, as the room's estimate
    assert (without_room > alone).any()  # with no room, the job's pod counts there instead
