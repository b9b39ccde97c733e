"""Answers kept per pod shape (`shapes.Shapes`) equal fresh answers after any sequence of changes."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from descheduler.extender import Extender, SnapshotFileSource, shapes
from descheduler.extender.decisions import FilterDecision, extender_scores, filter_rows
from descheduler.extender.shapes import shape_key
from descheduler.extender.state import ClusterState
from descheduler.model import Pod
from descheduler.scheduling import ClusterView, build_table
from descheduler.scheduling.table import PER_NODE_ARRAYS, PER_NODE_LISTS
from tests.builders import node, pod, reservation, snapshot

from .conftest import scheduling_args, write_snapshot
from .test_agreement import clusters

Obj = dict[str, Any]


ZONE_B_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]
        }
    }
}


def asking(i: int, cpu: int, tolerate: bool, zone: str | None, owner: str) -> Pod:
    """A pending pod; pods drawn with equal arguments but `i` share a shape."""
    objs = [
        pod(
            f"ask-{i}",
            cpu=f"{cpu}m",
            owner=owner,
            tolerations=[{"key": "spot", "operator": "Exists"}] if tolerate else None,
            node_selector={"zone": zone} if zone in ("a", "b") else None,
            affinity=ZONE_B_AFFINITY if zone == "affinity b" else None,
        )
    ]
    return snapshot(objs).pods[0]


# Few shapes, so that asks of one shape come before and after bindings; "web" may own a Reservation.
pods = st.builds(
    asking,
    st.integers(0, 3),
    st.sampled_from([1000, 2500]),
    st.booleans(),
    st.sampled_from([None, "a", "affinity b"]),
    st.sampled_from(["batch", "batch", "web"]),
)
ops = st.one_of(
    st.tuples(st.just("ask"), pods, st.randoms(use_true_random=False)),
    st.tuples(st.just("bind"), pods, st.integers(0, 5)),
    st.tuples(st.just("reservation gone"), st.integers(0, 1)),
    st.tuples(st.just("leaving"), st.integers(0, 5)),
)


def per_row(decision: FilterDecision) -> list[tuple[str, bool] | None]:
    """What the answer says of each row: passed (None), or the reason's text and whether it is unresolvable."""
    return [None if r < 0 else (decision.reasons[r], decision.unresolvable[r]) for r in decision.reason.tolist()]


def same_answers(state: ClusterState, asker: Pod, rows: np.ndarray) -> None:
    with state.lock:
        kept = state.shapes.filter(asker, state.view, rows)
        fresh = filter_rows(asker, state.view, rows)
        assert per_row(kept) == per_row(fresh)
        assert kept.steered == fresh.steered
        assert (
            state.shapes.scores(asker, state.view, rows).tolist() == extender_scores(asker, state.view, rows).tolist()
        )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clusters(),
    st.lists(ops, max_size=25),
    st.sampled_from([{}, {"usageThresholds": {"cpu": 40}}]),
    st.sampled_from([0, 1_000_000]),
)
def test_kept_answers_equal_fresh_ones_after_any_bindings_reservations_and_leavings(
    objs: list[Obj], sequence: list[tuple[Any, ...]], args: dict[str, Any], subset_share: int
) -> None:
    """`subset_share` 0: changed rows are always recomputed on a view of just them; else never."""
    with patch.object(shapes, "SUBSET_SHARE", subset_share):
        check_sequence(objs, sequence, args)


def check_sequence(objs: list[Obj], sequence: list[tuple[Any, ...]], args: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        extender = Extender(SnapshotFileSource(write_snapshot(Path(folder) / "s.yaml", objs)), scheduling_args(**args))
        assert extender.refresh(force=True)
    state = extender.state
    assert state is not None
    names = state.table.names
    reservations = [r for r in state.table.snapshot.reservations]
    running = [p for p in state.table.snapshot.pods if p.node_name]
    for op in sequence:
        if op[0] == "ask":
            _, asker, rng = op
            rows = np.array([rng.randrange(len(names)) for _ in range(rng.randrange(1, 12))], dtype=np.int64)
            same_answers(state, asker, rows)
            same_answers(state, asker, np.arange(len(names), dtype=np.int64))
        elif op[0] == "bind":
            _, bound, at = op
            extender.observe_binding(bound, names[at % len(names)])
        elif op[0] == "reservation gone" and reservations:
            extender.observe_reservation(reservations[op[1] % len(reservations)].name, None)
        elif op[0] == "leaving" and running:
            extender.observe_leaving(running[op[1] % len(running)], op[1] % 2 == 0)
    for asker in (asking(9, cpu, tolerate, None, "batch") for cpu in (1000, 2500) for tolerate in (True, False)):
        same_answers(state, asker, np.arange(len(names), dtype=np.int64))


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
        ]
    }
}


def serving(objs: list[Obj]) -> ClusterState:
    with tempfile.TemporaryDirectory() as folder:
        extender = Extender(SnapshotFileSource(write_snapshot(Path(folder) / "s.yaml", objs)), scheduling_args())
        assert extender.refresh(force=True)
    assert extender.state is not None
    return extender.state


def test_pod_anti_affinity_is_no_reason_to_answer_afresh() -> None:
    """The extender leaves inter-pod affinity to kube-scheduler: the answer reads the pod and the rows alone."""
    apart, lonely = snapshot([pod("lonely", cpu="1"), pod("apart", cpu="1", affinity=ANTI)]).pods  # by name
    state = serving([node("n0")])
    assert shape_key(lonely, state.view) is not None
    assert shape_key(apart, state.view) == shape_key(lonely, state.view)
    guarded = serving([node("n0"), pod("db-0", "n0", owner="db", affinity=ANTI)])
    assert shape_key(lonely, guarded.view) is not None


def test_one_shape_serves_pods_of_one_workload() -> None:
    state = serving([node("n0")])
    first, second = asking(1, 1000, False, None, "web"), asking(2, 1000, False, None, "web")
    assert shape_key(first, state.view) == shape_key(second, state.view)
    assert shape_key(first, state.view) != shape_key(asking(3, 2500, False, None, "web"), state.view)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.randoms(use_true_random=False), st.sampled_from([{}, {"usageThresholds": {"cpu": 40}}]))
def test_a_view_of_some_rows_answers_for_them_as_the_whole_view_does(
    objs: list[Obj], rng: Any, args: dict[str, Any]
) -> None:
    """`ClusterView.subset` (rows in any order, repeated): the same reasons and scores, row for row, for
    a pod with a shape (no Reservation of its own, no anti-affinity in play: those look at other rows)."""
    snap = snapshot(objs)
    view = ClusterView(build_table(snap, scheduling_args(**args)))
    incoming = next(p for p in snap.pods if p.name == "incoming")
    assume(shape_key(incoming, view) is not None)
    rows = np.array([rng.randrange(view.table.size) for _ in range(rng.randrange(1, 8))], dtype=np.int64)
    part = view.subset(rows)
    at = np.arange(rows.size, dtype=np.int64)
    assert per_row(filter_rows(incoming, part, at)) == per_row(filter_rows(incoming, view, rows))
    assert extender_scores(incoming, part, at).tolist() == extender_scores(incoming, view, rows).tolist()


def test_a_subset_cuts_down_every_field_that_holds_one_entry_per_node() -> None:
    """NodeTable.PER_NODE_* must name every per-node field, or a subset would answer from other rows."""
    objs = [
        node(f"n{i}", labels={"zone": "a"}, taints=[{"key": "k", "effect": "NoSchedule"}] * (i % 2)) for i in range(5)
    ]
    table = build_table(snapshot(objs), scheduling_args())
    assert table.size != len(table.resources)
    per_node = {
        f.name
        for f in dataclasses.fields(table)
        if (isinstance(v := getattr(table, f.name), np.ndarray) and v.ndim and v.shape[0] == table.size)
        or (isinstance(v, list) and len(v) == table.size and f.name != "taint_groups")
    }
    assert per_node == set(PER_NODE_ARRAYS) | set(PER_NODE_LISTS)


def test_a_reservation_gone_frees_its_room_for_a_shape_asked_before() -> None:
    """A Reservation's room counts for every pod that does not own it; once it is gone, a shape
    asked before must see the room (the state tells every shape to start afresh)."""
    with tempfile.TemporaryDirectory() as folder:
        objs = [node("n0", cpu="4"), reservation("held", "n0", {"cpu": "3"}, owner="other")]
        extender = Extender(SnapshotFileSource(write_snapshot(Path(folder) / "s.yaml", objs)), scheduling_args())
        assert extender.refresh(force=True)
    state = extender.state
    assert state is not None
    asker, rows = asking(1, 2500, False, None, "batch"), np.array([0], dtype=np.int64)
    with state.lock:
        assert state.shapes.filter(asker, state.view, rows).reason.tolist() != [-1]  # 3 of 4 cpu held
    extender.observe_reservation("held", None)
    with state.lock:
        assert state.shapes.filter(asker, state.view, rows).reason.tolist() == [-1]
    same_answers(state, asker, rows)


def test_a_pod_that_comes_to_own_a_reservation_between_two_asks_is_answered_afresh() -> None:
    """The shape key of the last pod asked about is kept for the prioritize call that follows; a
    Reservation that appears in between makes the same pod object one that is steered to it."""
    with tempfile.TemporaryDirectory() as folder:
        objs = [node("n0", cpu="8"), node("n1", cpu="8")]
        extender = Extender(SnapshotFileSource(write_snapshot(Path(folder) / "s.yaml", objs)), scheduling_args())
        assert extender.refresh(force=True)
    state = extender.state
    assert state is not None
    asker, rows = asking(1, 1000, False, None, "web"), np.array([0, 1], dtype=np.int64)
    with state.lock:
        assert state.shapes.filter(asker, state.view, rows).reason.tolist() == [-1, -1]
    held = snapshot([reservation("held", "n1", {"cpu": "1"}, owner="web")]).reservations[0]
    extender.observe_reservation("held", held)
    with state.lock:
        assert state.shapes.filter(asker, state.view, rows).reason.tolist()[0] >= 0  # steered to n1
    same_answers(state, asker, rows)
