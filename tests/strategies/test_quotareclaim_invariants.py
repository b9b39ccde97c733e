"""QuotaReclaim invariants over generated flat quota worlds (testing.md §1)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.quota_builders import node, pod, quota, run, victims

GROUPS = ("qa", "qb", "qc")


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    mins = {g: draw(st.integers(0, 6)) for g in GROUPS}
    bound: dict[str, list[int]] = {}
    capacity = draw(st.integers(4, 16))
    left = capacity
    for g in GROUPS:
        sizes = draw(st.lists(st.integers(1, 3), max_size=5))
        kept = []
        for size in sizes:
            if size <= left:
                kept.append(size)
                left -= size
        bound[g] = kept
    pending = {g: draw(st.lists(st.integers(1, 4), max_size=2)) for g in GROUPS}
    floor = draw(st.sampled_from(["Strict", "NetGain", "None"]))
    return {"capacity": capacity, "mins": mins, "bound": bound, "pending": pending, "floor": floor}


def objects(world: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [node("n1", cpu=str(world["capacity"]))]
    for g in GROUPS:
        out.append(quota(g, min={"cpu": world["mins"][g]}))
        out += [pod(f"run-{i}", g, node="n1", cpu=c, age=3600 - i) for i, c in enumerate(world["bound"][g])]
        out += [pod(f"wait-{i}", g, cpu=c, age=600 - i) for i, c in enumerate(world["pending"][g])]
    return out


def size(world: dict[str, Any], key: str) -> int:
    group, _, name = key.partition("/")
    kind, _, index = name.partition("-")
    return int(world["bound" if kind == "run" else "pending"][group][int(index)])


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds())
def test_invariants(world: dict[str, Any]) -> None:
    plan, _ = run(objects(world), {"lenderFloor": world["floor"]})
    used = {g: sum(world["bound"][g]) for g in GROUPS}
    chosen = victims(plan)
    # Never a victim from a group that does not borrow.
    for key in chosen:
        group = key.partition("/")[0]
        assert used[group] > world["mins"][group], key
    # Never below min under Strict.
    if world["floor"] == "Strict":
        for g in GROUPS:
            taken = sum(size(world, k) for k in chosen if k.startswith(g + "/"))
            assert taken == 0 or used[g] - taken >= world["mins"][g]
    served: dict[str, set[str]] = {}
    freed: dict[str, int] = {}
    for m in plan.migrations:
        assert m.serves is not None and m.target_node is None and m.mode == "EvictDirectly"
        target = str(m.serves)
        served.setdefault(target.partition("/")[0], set()).add(target)
        freed[target] = freed.get(target, 0) + size(world, f"{m.pod.namespace}/{m.pod.name}")
    # Never for demand above min: what a group is served fits under its min.
    for g, targets in served.items():
        assert used[g] + sum(size(world, t) for t in targets) <= world["mins"][g]
    # All or nothing: a served pod is never also unreclaimable, and its victims with the free room cover it.
    free = world["capacity"] - sum(used.values())
    for target in freed:
        assert not any(u.startswith(target + " ") for u in plan.unreclaimable)
    assert free + sum(freed.values()) >= sum(size(world, t) for t in freed)


@SETTINGS
@given(worlds())
def test_same_snapshot_same_plan(world: dict[str, Any]) -> None:
    first, state1 = run(objects(world), {"lenderFloor": world["floor"]})
    second, state2 = run(objects(world), {"lenderFloor": world["floor"]})
    assert first.to_dict() == second.to_dict()
    assert state1 == state2
