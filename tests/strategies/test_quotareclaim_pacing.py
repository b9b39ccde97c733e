"""QuotaReclaim's pacing across rounds (quotareclaim.md §4): in-flight victims count as room being
freed, no round before the last one is judged, no progress is reported and backs off further each
time, and a deleted waiting pod stops the reclaim.

The world is the one the problems were found with: team-a (min 4) runs twelve 1-cpu pods on a full
12-cpu cluster, borrowing 8; team-b (min 8) has eight 1-cpu pods waiting.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pytest

from strategies.quota.pacing import BACKOFF_GROWTH_CAP, backoff_for
from tests.builders import migration_job
from tests.quota_builders import NOW, node, pod, quota, run, skip_code, ts, victims

Obj = dict[str, Any]
TEAM_A = [f"team-a/a-{i:02}" for i in range(12)]
WAITING = [f"team-b/w-{i}" for i in range(8)]


def world(
    *,
    gone: Iterable[str] = (),
    evicting: Iterable[str] = (),
    terminating: Iterable[str] = (),
    refilled: int = 0,
    waiting: int = 8,
    bound_waiting: int = 0,
) -> list[Obj]:
    """The cluster, with team-a's pods `gone`, `evicting` (an active QuotaReclaim job) or
    `terminating`, `refilled` new team-a pods in the room, and team-b's first `bound_waiting` pods bound."""
    gone, evicting, terminating = set(gone), set(evicting), set(terminating)
    objects: list[Obj] = [
        node("n1", cpu="6"),
        node("n2", cpu="6"),
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
    ]
    for i, key in enumerate(TEAM_A):
        if key in gone:
            continue
        name = key.split("/")[1]
        objects.append(pod(name, "team-a", node=f"n{1 + i // 6}", cpu=1, age=3600 - i, deleting=key in terminating))
        if key in evicting:
            objects.append(quota_job(key))
    objects += [pod(f"r-{i}", "team-a", node="n1", cpu=1, age=5) for i in range(refilled)]
    for i in range(waiting):
        objects.append(pod(f"w-{i}", "team-b", node="n2" if i < bound_waiting else None, cpu=1, age=600 - i))
    return objects


def quota_job(key: str, phase: str = "Running") -> Obj:
    namespace, name = key.split("/")
    job = migration_job(f"job-{name}", name, "", phase=phase)
    job["spec"]["podRef"]["namespace"] = namespace
    job["spec"].update(mode="EvictDirectly", strategy="QuotaReclaim")
    return job


def first_round() -> tuple[list[str], dict[str, Any]]:
    plan, state = run(world())
    planned = victims(plan)
    assert len(planned) == 8
    return planned, state


# --- in-flight victims ----------------------------------------------------------------------


def test_victims_still_being_evicted_count_as_room_being_freed() -> None:
    # No state (a restarted controller): three of team-a's pods have an active QuotaReclaim job.
    in_flight = TEAM_A[-3:]
    plan, _ = run(world(evicting=in_flight))
    planned = victims(plan)
    assert len(planned) == 5  # the shortfall left: 8 waiting, 3 being freed
    assert not set(planned) & set(in_flight)
    assert [skip_code(plan, w) for w in WAITING[:3]] == ["RoomBeingFreed"] * 3
    assert "team-a/a-11" in (next(s.reason for s in plan.skipped if str(s.pod) == WAITING[0]))


def test_terminating_victims_count_as_freed_too() -> None:
    plan, _ = run(world(terminating=TEAM_A[-3:]))
    assert len(victims(plan)) == 5


# --- no round before the last one is judged -------------------------------------------------


@pytest.mark.parametrize("leaving", ["evicting", "terminating"])
def test_no_new_round_while_the_last_ones_victims_are_leaving(leaving: str) -> None:
    planned, state = first_round()
    later = NOW + timedelta(seconds=60)
    # Two victims are gone, the others still leave; a replacement took one freed slot.
    still = planned[2:]
    plan, new_state = run(world(gone=planned[:2], refilled=1, **{leaving: still}), state=state, now=later)
    assert victims(plan) == []
    assert {skip_code(plan, w) for w in WAITING} == {"PreviousReclaimUnjudged"}
    reason = next(s.reason for s in plan.skipped if str(s.pod) == WAITING[0])
    assert "previous reclaim for quota team-b (60s ago)" in reason and "6 of its 8 victim(s) still leaving" in reason
    # The unjudged record is kept as it was, not replaced.
    assert new_state["reclaims"]["team-b"] == state["reclaims"]["team-b"]
    assert new_state["reclaims"]["team-b"]["at"] == ts(NOW)


def test_a_round_waits_for_its_victims_at_most_two_migration_ttls() -> None:
    planned, state = first_round()
    later = NOW + timedelta(minutes=10, seconds=1)  # ttl 5m
    plan, new_state = run(world(terminating=planned), state=state, now=later)
    assert any("still leaving after 600s" in w for w in plan.warnings)
    assert "PreviousReclaimUnjudged" not in {skip_code(plan, w) for w in WAITING}
    assert "reclaims" not in new_state


# --- no progress ------------------------------------------------------------------------------


def refilled_after(planned: list[str]) -> list[Obj]:
    """Every victim gone; team-a's replacements took all of the freed room; team-b still waits."""
    return world(gone=planned, refilled=len(planned))


def test_no_progress_is_reported_with_the_group_lender_evictions_and_waiting_pods() -> None:
    planned, state = first_round()
    plan, new_state = run(refilled_after(planned), state=state, now=NOW + timedelta(seconds=90))
    assert victims(plan) == []
    [stall] = plan.reclaim_stalls
    assert (stall.group, stall.lenders, stall.quota.name) == ("team-b", ("team-a",), "team-b")
    assert sorted(stall.evicted) == sorted(planned)
    assert stall.waiting == tuple(WAITING)
    assert stall.backoff_seconds == 300
    assert stall.message.startswith("reclaim for quota team-b from team-a made no progress: 8 pod(s) evicted")
    assert "is the scheduler quota-aware?" in stall.message and "team-b/w-0" in stall.message
    assert new_state["noProgress"] == {"team-b/team-a": 1}
    assert new_state["backoff"] == {"team-b/team-a": ts(NOW + timedelta(seconds=90 + 300))}
    assert "reclaims" not in new_state  # judged: the record is gone
    assert plan.to_dict()["reclaimStalls"][0]["group"] == "team-b"


def test_each_round_without_progress_doubles_the_backoff() -> None:
    state: dict[str, Any] = {}
    now = NOW
    backoffs = []
    for _ in range(3):
        plan, state = run(world(), state=state, now=now)
        planned = victims(plan)
        assert len(planned) == 8  # the backoff has run out: a new round
        now += timedelta(seconds=60)
        judged, state = run(refilled_after(planned), state=state, now=now)
        [stall] = judged.reclaim_stalls
        backoffs.append(stall.backoff_seconds)
        # While backing off, team-a is not asked again.
        held, _ = run(world(), state=state, now=now + timedelta(seconds=stall.backoff_seconds - 1))
        assert victims(held) == []
        now += timedelta(seconds=stall.backoff_seconds)
    assert backoffs == [300, 600, 1200]
    assert state["noProgress"] == {"team-b/team-a": 3}


@pytest.mark.parametrize(("verdicts", "seconds"), [(0, 0), (1, 300), (2, 600), (3, 1200), (4, 2400), (9, 2400)])
def test_the_backoff_doubles_up_to_eight_times_backoff_seconds(verdicts: int, seconds: int) -> None:
    assert BACKOFF_GROWTH_CAP == 8
    assert backoff_for(300, verdicts) == seconds


def test_progress_resets_the_backoff() -> None:
    planned, state = first_round()
    state = {**state, "noProgress": {"team-b/team-a": 3}, "backoff": {"team-b/team-a": ts(NOW + timedelta(hours=1))}}
    # team-b's waiting pods got the room; a ninth (above its min) still waits, so team-b is not settled.
    objects = world(gone=planned, waiting=9, bound_waiting=8)
    plan, new_state = run(objects, state=state, now=NOW + timedelta(seconds=90))
    assert plan.reclaim_stalls == ()
    assert "noProgress" not in new_state and "backoff" not in new_state


def test_some_waiting_pods_bound_is_progress() -> None:
    planned, state = first_round()
    objects = world(gone=planned, refilled=7, bound_waiting=1)
    plan, new_state = run(objects, state={**state, "noProgress": {"team-b/team-a": 1}}, now=NOW + timedelta(seconds=90))
    assert plan.reclaim_stalls == ()
    assert "noProgress" not in new_state


def test_victims_never_evicted_give_no_verdict() -> None:
    # The jobs ended without evicting (a PDB until the ttl): not the scheduler's doing.
    _, state = first_round()
    plan, new_state = run(world(), state=state, now=NOW + timedelta(seconds=400))
    assert plan.reclaim_stalls == ()
    assert "noProgress" not in new_state


# --- the waiting pod goes away --------------------------------------------------------------


def test_waiting_pods_deleted_mid_reclaim_stop_the_reclaim() -> None:
    planned, state = first_round()
    # The waiting pods are deleted while the victims are still being evicted: nothing more goes.
    plan, state = run(world(evicting=planned, waiting=0), state=state, now=NOW + timedelta(seconds=30))
    assert victims(plan) == []
    # The victims are gone and team-a refilled the room: no verdict, no new round.
    plan, state = run(world(gone=planned, refilled=8, waiting=0), state=state, now=NOW + timedelta(seconds=90))
    assert victims(plan) == [] and plan.reclaim_stalls == ()
    assert "reclaims" not in state and "noProgress" not in state
