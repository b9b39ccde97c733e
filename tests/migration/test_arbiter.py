"""Arbitration (migration.md §5): limits, token buckets, cooldown, admission order; pure."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.migration.arbiter import admission_order, arbitrate
from descheduler.migration.limits import JobFacts, WorkloadFacts, cooling_sources
from descheduler.policy import MigrationArgs
from descheduler.tokenbucket import TokenBucket, replay_tokens, replay_wait

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def args(**kwargs: Any) -> MigrationArgs:
    return MigrationArgs.model_validate(kwargs)


def job(
    name: str,
    phase: str = "Pending",
    node: str = "n1",
    namespace: str = "ns",
    workload: str = "w1",
    age: int = 0,
    rank: tuple[int, ...] = (4, 0, 0),
    cycle: str = "c1",
    started: datetime | None = None,
    evicted: datetime | None = None,
) -> JobFacts:
    return JobFacts(
        name=name,
        namespace=namespace,
        pod=f"{namespace}/{name}-pod",
        phase=phase,  # type: ignore[arg-type]
        created=NOW - timedelta(seconds=age),
        source_node=node,
        workload=workload,
        cycle=cycle,
        started=started if started is not None else (NOW - timedelta(hours=1) if phase == "Running" else None),
        evicted=evicted,
        rank=rank,
    )


def web(replicas: int = 10, ready: int | None = None, pods: list[str] | None = None) -> dict[str, WorkloadFacts]:
    keys = pods if pods is not None else [f"ns/j{i}-pod" for i in range(ready if ready is not None else replicas)]
    return {"w1": WorkloadFacts("w1", "ReplicaSet ns/web", replicas, frozenset(keys))}


def verdicts(
    pending: list[JobFacts], live: list[JobFacts], workloads: dict[str, WorkloadFacts], a: MigrationArgs
) -> dict[str, Any]:
    return {v.job: v for v in arbitrate(pending, live + pending, workloads, a, NOW)}


FREE = {"objectLimiters": {"workload": {"duration": "1s", "maxMigrating": 100}}, "cooldown": "0s"}


@pytest.mark.parametrize(
    ("limit", "running", "expected"),
    [
        (
            {"maxMigratingPerNode": 2},
            [job("r1", "Running", workload="w9"), job("r2", "Running", workload="w9")],
            "MaxMigratingPerNode",
        ),
        (
            {"maxMigratingPerNode": 2},
            [job("r1", "Running", workload="w9"), job("r2", "Running", node="n2", workload="w9")],
            "Admitted",
        ),
        ({"maxMigratingGlobally": 1}, [job("r1", "Running", node="n9", workload="w9")], "MaxMigratingGlobally"),
        ({"maxMigratingPerNamespace": 1}, [job("r1", "Running", node="n9", workload="w9")], "MaxMigratingPerNamespace"),
        ({"maxMigratingPerNamespace": 1}, [job("r1", "Running", node="n9", namespace="other")], "Admitted"),
        ({"maxMigratingPerWorkload": 1}, [job("r1", "Running", node="n9")], "MaxMigratingPerWorkload"),
        ({"maxMigratingPerWorkload": "20%"}, [job("r1", "Running", node="n9")], "Admitted"),  # 20% of 10 = 2
        (
            {"maxMigratingPerWorkload": 5, "maxUnavailablePerWorkload": 1},
            [job("j1", "Running", node="n9")],
            "MaxUnavailablePerWorkload",
        ),
        ({}, [job("done", "Succeeded"), job("gone", "Aborted")], "Admitted"),  # finished jobs are not in flight
    ],
)
def test_limit_table(limit: dict[str, Any], running: list[JobFacts], expected: str) -> None:
    [verdict] = arbitrate([job("j0")], [*running, job("j0")], web(), args(**FREE, **limit), NOW)
    assert verdict.reason == expected
    assert verdict.admit == (expected == "Admitted")
    assert not verdict.permanent


@pytest.mark.parametrize(
    ("limit", "replicas", "reason"),
    [
        ({"maxMigratingGlobally": 0}, 10, "MaxMigratingGlobally"),
        ({"maxMigratingPerNode": 0}, 10, "MaxMigratingPerNode"),
        ({"maxMigratingPerWorkload": 0}, 10, "MaxMigratingPerWorkload"),
        ({"maxUnavailablePerWorkload": "0%"}, 10, "MaxUnavailablePerWorkload"),
    ],
)
def test_a_limit_that_can_never_be_met_fails_the_job(limit: dict[str, Any], replicas: int, reason: str) -> None:
    [verdict] = arbitrate([job("j0")], [job("j0")], web(replicas), args(**limit), NOW)
    assert verdict.permanent and not verdict.admit and verdict.reason == reason


def test_a_single_replica_workload_below_min_replicas_can_never_move() -> None:
    [verdict] = arbitrate([job("j0")], [job("j0")], web(1), args(), NOW, min_replicas=2)
    assert verdict.permanent and verdict.reason == "MinReplicas"
    assert "1 replica(s) < minReplicas 2" in verdict.message


def test_default_workload_limits_scale_with_replicas() -> None:
    a = args(**FREE)
    assert [a.max_migrating_for(n) for n in (1, 3, 4, 10, 11, 25)] == [1, 1, 2, 2, 2, 3]


def test_unavailable_counts_not_ready_pods_and_migrating_ones() -> None:
    # 10 replicas, 8 ready: 2 unavailable already; the default limit for 10 replicas is 2.
    pending = [job("j0")]
    [verdict] = arbitrate(pending, pending, web(10, ready=8), args(**FREE), NOW)
    assert verdict.reason == "MaxUnavailablePerWorkload" and not verdict.permanent
    assert "2 of 10 pods of ReplicaSet ns/web unavailable" in verdict.message
    # Moving a pod that is not Ready itself makes nothing less available.
    [verdict] = arbitrate([job("j9")], [job("j9")], web(10, ready=8), args(**FREE), NOW)
    assert verdict.admit


def test_admitted_jobs_count_against_later_ones_in_the_same_pass() -> None:
    pending = [job(f"j{i}", node="n1", workload=f"w{i}") for i in range(4)]
    out = arbitrate(pending, pending, {}, args(**FREE, maxMigratingPerNode=2), NOW)
    assert [v.admit for v in out] == [True, True, False, False]


def test_admission_order_is_least_important_pod_first_then_oldest_job() -> None:
    jobs = [
        job("prod-old", rank=(3, 9000, 0), age=100),
        job("free-new", rank=(0, 3000, 0), age=1),
        job("free-old", rank=(0, 3000, 0), age=50),
        job("batch", rank=(1, 5000, 0), age=10),
    ]
    assert [j.name for j in admission_order(jobs)] == ["free-old", "free-new", "batch", "prod-old"]
    out = arbitrate(jobs, jobs, {}, args(**FREE, maxMigratingGlobally=1), NOW)
    assert [(v.job, v.admit) for v in out] == [
        ("free-old", True),
        ("free-new", False),
        ("batch", False),
        ("prod-old", False),
    ]


def test_workload_token_bucket_counts_starts_recorded_in_the_jobs() -> None:
    a = args(objectLimiters={"workload": {"duration": "5m", "maxMigrating": 1}}, cooldown="0s")
    started = job("old", "Succeeded", started=NOW - timedelta(minutes=2))
    [verdict] = arbitrate([job("j0")], [started, job("j0")], web(), a, NOW)
    assert verdict.reason == "WorkloadRateLimited" and verdict.retry_after == pytest.approx(180)
    started = job("old", "Succeeded", started=NOW - timedelta(minutes=6))
    [verdict] = arbitrate([job("j0")], [started, job("j0")], web(), a, NOW)
    assert verdict.admit


def test_cooldown_holds_a_workload_moved_by_an_earlier_cycle() -> None:
    a = args(objectLimiters={"workload": {"duration": "1s", "maxMigrating": 5}}, cooldown="10m")
    moved = job("old", "Succeeded", cycle="c0", evicted=NOW - timedelta(minutes=4))
    [verdict] = arbitrate([job("j0", cycle="c1")], [moved, job("j0", cycle="c1")], web(), a, NOW)
    assert verdict.reason == "WorkloadCooldown" and verdict.retry_after == pytest.approx(360)
    # A sibling planned in the same cycle is not held back by its own cycle's move.
    [verdict] = arbitrate([job("j0", cycle="c0")], [moved, job("j0", cycle="c0")], web(), a, NOW)
    assert verdict.admit


def test_recent_sources_are_not_targets() -> None:
    jobs = [
        job("a", "Succeeded", node="n1", evicted=NOW - timedelta(minutes=3)),
        job("b", "Succeeded", node="n2", evicted=NOW - timedelta(minutes=30)),
        job("c", "Running", node="n3"),
    ]
    assert cooling_sources(jobs, timedelta(minutes=10), NOW) == {"n1"}
    assert cooling_sources(jobs, timedelta(0), NOW) == set()


def test_a_pod_cannot_be_admitted_twice() -> None:
    first = job("a")
    second = JobFacts(**{**{f: getattr(first, f) for f in first.__dataclass_fields__}, "name": "b"})
    out = arbitrate([first, second], [first, second], {}, args(**FREE), NOW)
    assert [(v.job, v.admit, v.reason) for v in out] == [("a", True, "Admitted"), ("b", False, "PodAlreadyMoving")]


def test_token_bucket_refills_at_its_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=1)
    assert bucket.take(0.0) and not bucket.take(0.1)
    assert bucket.wait_time(0.1) == pytest.approx(0.4)
    assert bucket.take(0.5)
    with pytest.raises(ValueError, match="rate > 0"):
        TokenBucket(rate=0, burst=1)


def test_replayed_bucket_matches_a_live_one() -> None:
    rng = random.Random(3)
    live = TokenBucket(rate=0.1, burst=3)
    spent = []
    t = 0.0
    for _ in range(200):
        t += rng.uniform(0.5, 20.0)
        if live.take(t):
            spent.append(NOW + timedelta(seconds=t))
        replayed = replay_tokens(spent, NOW + timedelta(seconds=t), 0.1, 3)
        assert replayed == pytest.approx(live.tokens, abs=1e-6)
    assert replay_wait([], NOW, 0.1, 3) == 0


# --- property: no limit is ever exceeded -------------------------------------------------------
# Each case tightens one limit and leaves the others wide open, so the one under test is the one
# that binds; every other limit is then checked too.

LIMITS = ("global", "node", "namespace", "workload", "unavailable", "bucket")
Case = tuple[list[JobFacts], list[JobFacts], dict[str, WorkloadFacts], MigrationArgs]


@st.composite
def scenarios(draw: st.DrawFn, focus: str) -> Case:
    workloads = {f"w{i}": draw(st.integers(1, 30)) for i in range(draw(st.integers(1, 4)))}
    jobs = []
    for i in range(draw(st.integers(0, 20))):
        phase = draw(st.sampled_from(["Pending", "Pending", "Running", "Succeeded"]))
        jobs.append(
            JobFacts(
                name=f"j{i:02d}",
                namespace=draw(st.sampled_from(["a", "b"])),
                pod=f"p{i}",
                phase=phase,
                created=NOW - timedelta(seconds=draw(st.integers(0, 600))),
                source_node=draw(st.sampled_from(["n1", "n2", "n3"])),
                workload=draw(st.sampled_from(["", *sorted(workloads)])),  # "": no controller
                cycle=draw(st.sampled_from(["c1", "c2"])),
                started=NOW - timedelta(seconds=draw(st.integers(0, 900))) if phase != "Pending" else None,
                evicted=NOW - timedelta(seconds=draw(st.integers(0, 900))) if phase == "Succeeded" else None,
                rank=(draw(st.integers(0, 4)),),
            )
        )
    facts = {}
    for uid, replicas in workloads.items():
        pods = [j.pod for j in jobs if j.workload == uid and j.phase != "Succeeded"]
        ready = set(draw(st.lists(st.sampled_from(pods), unique=True))) if pods else set()
        # The workload's other pods: mostly Ready, a few not.
        rest = max(0, replicas - len(pods))
        ready |= {f"{uid}-other-{k}" for k in range(draw(st.integers(max(0, rest - 2), rest)))}
        facts[uid] = WorkloadFacts(uid, uid, replicas, frozenset(ready))
    small = st.integers(1, 3)
    a = MigrationArgs.model_validate(
        {
            "maxMigratingGlobally": draw(small) if focus == "global" else None,
            "maxMigratingPerNode": draw(small) if focus == "node" else None,
            "maxMigratingPerNamespace": draw(small) if focus == "namespace" else None,
            "maxMigratingPerWorkload": draw(st.one_of(small, st.sampled_from(["10%", "30%"])))
            if focus == "workload"
            else 100,
            "maxUnavailablePerWorkload": draw(small) if focus == "unavailable" else 100,
            "objectLimiters": {
                "workload": {"duration": "5m", "maxMigrating": draw(small) if focus == "bucket" else 100}
            },
            "cooldown": draw(st.sampled_from(["0s", "10m"])),
        }
    )
    return [j for j in jobs if j.phase == "Pending"], jobs, facts, a


def assert_within_limits(case: Case) -> None:
    pending, jobs, workloads, a = case
    out = arbitrate(pending, jobs, workloads, a, NOW)
    admitted = {v.job for v in out if v.admit}
    in_flight = [j for j in jobs if j.phase == "Running" or j.name in admitted]
    new = [j for j in jobs if j.name in admitted]
    assert not any(v.permanent for v in out)  # waiting is the rule: no limit here resolves to zero

    def check(limit: int | None, key: Any) -> None:
        counts = Counter(key(j) for j in in_flight)
        for group in {key(j) for j in new}:
            assert limit is None or counts[group] <= limit, (group, counts[group], limit)

    check(a.max_migrating_globally, lambda j: "all")
    check(a.max_migrating_per_node, lambda j: j.source_node)
    check(a.max_migrating_per_namespace, lambda j: j.namespace)
    bucket = a.object_limiters.workload
    for uid, w in workloads.items():
        mine = [j for j in new if j.workload == uid]
        if not mine:
            continue
        assert sum(1 for j in in_flight if j.workload == uid) <= a.max_migrating_for(w.replicas)
        if any(j.pod in w.ready for j in mine):  # moving a pod that is not Ready costs no availability
            migrating = {j.pod for j in in_flight if j.workload == uid}
            assert w.replicas - len(w.ready - migrating) <= a.max_unavailable_for(w.replicas)
        starts = [j.started for j in jobs if j.workload == uid and j.started is not None]
        tokens = replay_tokens(
            starts, NOW, bucket.max_migrating / bucket.duration.total_seconds(), bucket.max_migrating
        )
        assert len(mine) <= int(tokens)


@pytest.mark.parametrize("focus", LIMITS)
def test_admissions_never_exceed_a_limit(focus: str) -> None:
    @settings(max_examples=80, deadline=None, derandomize=True)
    @given(scenarios(focus))
    def check(case: Case) -> None:
        assert_within_limits(case)

    check()


@settings(max_examples=50, deadline=None, derandomize=True)
@given(st.sampled_from(LIMITS).flatmap(scenarios), st.randoms())
def test_verdicts_do_not_depend_on_input_order(case: Case, rnd: random.Random) -> None:
    pending, jobs, workloads, a = case
    shuffled = list(pending)
    rnd.shuffle(shuffled)
    assert arbitrate(pending, jobs, workloads, a, NOW) == arbitrate(shuffled, jobs, workloads, a, NOW)
