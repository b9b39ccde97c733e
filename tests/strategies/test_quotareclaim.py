"""QuotaReclaim (quotareclaim.md): exact victims for each rule, and reasons for every refusal."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from descheduler.errors import InputError
from descheduler.model import ElasticQuota
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import load_policy
from descheduler.resources import Resources
from descheduler.snapshot import load_snapshot
from strategies import registry
from strategies.quota.tree import build_tree
from strategies.quotareclaim import QuotaReclaim
from tests.builders import migration_job
from tests.quota_builders import (
    GPU,
    NOW,
    PARENT_LABEL,
    node,
    pdb,
    pod,
    quota,
    run,
    skip_code,
    skip_reason,
    ts,
    victims,
)

ROOT = Path(__file__).resolve().parents[2]


def two_groups(pending_cpu: int = 2, **pending: object) -> list[dict[str, object]]:
    """team-a borrows (6 of min 4 cpu, three 2-cpu pods); team-b uses 2 of min 4; the node is full."""
    return [
        node("n1", cpu="8"),
        quota("team-a", min={"cpu": 4}, max={"cpu": 8}),
        quota("team-b", min={"cpu": 4}, max={"cpu": 8}),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=2, age=3600 - 60 * i) for i in range(3)],
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train-7", "team-b", cpu=pending_cpu, age=600, **pending),  # type: ignore[arg-type]
    ]


def test_registered_under_its_name() -> None:
    assert registry()["QuotaReclaim"] is QuotaReclaim


def test_demo_snapshot_gives_back_exactly_one_pod() -> None:
    snapshot = load_snapshot(ROOT / "descheduler/demo/quota.yaml")
    policy = load_policy(ROOT / "config/examples/quota-reclaim-demo.yaml")
    plan, _ = plan_cycle(snapshot, policy)
    assert [(m.pod.name, m.target_node, m.mode, str(m.serves)) for m in plan.migrations] == [
        ("web-2", None, "EvictDirectly", "team-b/train-7")
    ]
    assert plan.migrations[0].reason.startswith("quota team-b below min cpu 2/4, waiting pod team-b/train-7")


def test_borrower_gives_back_newest_pod_only() -> None:
    plan, _ = run(two_groups())
    assert victims(plan) == ["team-a/a-2"]
    assert plan.migrations[0].strategy == "QuotaReclaim"


def test_pending_pod_that_would_make_its_group_borrow_triggers_nothing() -> None:
    plan, _ = run(two_groups(pending_cpu=3))
    assert victims(plan) == []
    assert "would make quota team-b borrow" in (skip_reason(plan, "team-b/train-7") or "")


def test_pending_grace_is_honoured() -> None:
    plan, _ = run(two_groups(), {"pendingGraceSeconds": 900})
    assert victims(plan) == []
    assert "pendingGraceSeconds 900" in (skip_reason(plan, "team-b/train-7") or "")


def test_preemption_policy_never_does_not_trigger() -> None:
    plan, _ = run(two_groups(preemption_policy="Never"))
    assert victims(plan) == []


def test_pending_pod_that_fits_in_free_capacity_evicts_nothing() -> None:
    objects = two_groups()
    objects[0] = node("n1", cpu="10")
    plan, _ = run(objects)
    assert victims(plan) == []
    assert "fits in free capacity" in (skip_reason(plan, "team-b/train-7") or "")


def lender_with_one_large_pod(pending_cpu: int) -> list[dict[str, object]]:
    """team-a (min 3) runs one 4-cpu pod on a 4-cpu cluster: over min by less than the pod."""
    return [
        node("n1", cpu="4"),
        quota("team-a", min={"cpu": 3}),
        quota("team-b", min={"cpu": 4}),
        pod("big", "team-a", node="n1", cpu=4),
        pod("train", "team-b", cpu=pending_cpu),
    ]


def test_strict_floor_reports_lender_granularity() -> None:
    plan, _ = run(lender_with_one_large_pod(4), {"lenderFloor": "Strict"})
    assert victims(plan) == []
    assert len(plan.unreclaimable) == 1
    message = plan.unreclaimable[0]
    assert message.startswith("team-b/train (quota team-b)")
    assert "lender granularity" in message and "team-a/big" in message
    assert "lenderFloor Strict" in (skip_reason(plan, "team-a/big") or "")


def test_net_gain_reclaims_when_the_fix_is_larger_than_the_damage() -> None:
    plan, _ = run(lender_with_one_large_pod(4), {"lenderFloor": "NetGain"})
    assert victims(plan) == ["team-a/big"]


def test_net_gain_refuses_an_even_trade() -> None:
    plan, _ = run(lender_with_one_large_pod(3), {"lenderFloor": "NetGain"})
    assert victims(plan) == []
    assert "lenderFloor NetGain" in plan.unreclaimable[0]


def test_floor_none_reclaims_like_the_anchors() -> None:
    plan, _ = run(lender_with_one_large_pod(3), {"lenderFloor": "None"})
    assert victims(plan) == ["team-a/big"]


def three_level_tree(l1_pods: int) -> list[dict[str, object]]:
    """root{p1{starving, l1}, p2{l2}}; l2 borrows 6 over its min on a full 16-cpu node."""
    return [
        node("n1", cpu=str(2 * l1_pods + 12)),
        quota("root", min={"cpu": 12}),
        quota("p1", min={"cpu": 6}, parent="root"),
        quota("p2", min={"cpu": 6}, parent="root"),
        quota("starving", min={"cpu": 4}, parent="p1"),
        quota("l1", min={"cpu": 2}, parent="p1"),
        quota("l2", min={"cpu": 6}, parent="p2"),
        *[pod(f"l1-{i}", "l1", node="n1", cpu=2, age=3600 - i) for i in range(l1_pods)],
        *[pod(f"l2-{i}", "l2", node="n1", cpu=2, age=3600 - i) for i in range(6)],
        pod("job", "starving", cpu=2),
    ]


def test_parent_branch_over_its_min_must_pay_first() -> None:
    # p1 uses 6 of min 6 (l1 borrows inside it): p1 cannot receive from p2's branch.
    plan, _ = run(three_level_tree(3), {"hierarchyOrder": "TopDown"})
    assert victims(plan) == ["l1/l1-2"]
    assert "l2/l2-5" not in victims(plan)


@pytest.mark.parametrize(("order", "expected"), [("TopDown", "l2/l2-5"), ("SiblingsFirst", "l1/l1-1")])
def test_hierarchy_order_picks_the_lender_branch(order: str, expected: str) -> None:
    # p1 uses 4 of min 6, so it can receive from anywhere; both l1 (4/2) and l2 (12/6) borrow.
    plan, _ = run(three_level_tree(2), {"hierarchyOrder": order})
    assert victims(plan) == [expected]


def test_only_the_contested_resource_is_reclaimed() -> None:
    objects = [
        node("n1", cpu="16", gpu=4),
        quota("team-a", min={"cpu": 8, GPU: 2}),
        quota("team-b", min={"cpu": 4, GPU: 4}),
        quota("team-c", min={"cpu": 2}),
        *[pod(f"a-gpu-{i}", "team-a", node="n1", cpu=1, gpu=1, age=3600 - i) for i in range(4)],
        *[pod(f"a-cpu-{i}", "team-a", node="n1", cpu=2, age=10) for i in range(2)],
        *[pod(f"c-{i}", "team-c", node="n1", cpu=2, age=5) for i in range(3)],
        pod("train", "team-b", cpu=1, gpu=2),
    ]
    plan, _ = run(objects)
    # GPU is contested (none free); CPU is not (2 free): team-c borrows cpu but is never asked.
    assert victims(plan) == ["team-a/a-gpu-3", "team-a/a-gpu-2"]
    assert all(m.serves is not None and str(m.serves) == "team-b/train" for m in plan.migrations)
    assert "gpu" in plan.migrations[0].reason


def test_pdb_protected_pod_is_skipped_and_terminating_pod_counts_as_freed() -> None:
    objects = [
        node("n1", cpu="7"),
        quota("team-a", min={"cpu": 2}),
        quota("team-b", min={"cpu": 4}),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=1, age=3600 - i) for i in range(3)],
        pod("a-3", "team-a", node="n1", cpu=1, age=100, labels={"pdb": "yes"}),
        pod("a-4", "team-a", node="n1", cpu=1, age=50, deleting=True),
        pdb("guard", "team-a", {"pdb": "yes"}, allowed=0),
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train", "team-b", cpu=2),
    ]
    plan, _ = run(objects)
    # 1 cpu is free once the terminating a-4 is gone: one victim is enough, and not a-3.
    assert victims(plan) == ["team-a/a-2"]
    assert "PodDisruptionBudget guard" in (skip_reason(plan, "team-a/a-3") or "")


def test_pdb_budget_counts_victims_already_chosen() -> None:
    objects = [
        node("n1", cpu="6"),
        quota("team-a", min={"cpu": 1}),
        quota("team-b", min={"cpu": 4}),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=1, age=3600 - i, labels={"app": "a"}) for i in range(4)],
        pdb("one-at-a-time", "team-a", {"app": "a"}, allowed=1),
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train", "team-b", cpu=2),
    ]
    plan, _ = run(objects)
    assert victims(plan) == []
    assert "PDB" in plan.unreclaimable[0]


def over_max(since_seconds_ago: int | None) -> list[dict[str, object]]:
    since = None if since_seconds_ago is None else NOW - timedelta(seconds=since_seconds_ago)
    return [
        node("n1", cpu="16"),
        quota("team-a", min={"cpu": 2}, max={"cpu": 4}, over_max_since=since),
        pod("old", "team-a", node="n1", cpu=2, age=3000),
        pod("mid", "team-a", node="n1", cpu=3, age=2000),
        pod("new", "team-a", node="n1", cpu=1, age=1000),
    ]


def test_over_max_removes_least_important_then_puts_back() -> None:
    plan, state = run(over_max(300), {"overMaxDelaySeconds": 120})
    # Removed new (1) then mid (3) to get 6 → 2; new fits back under max 4: only mid goes.
    assert victims(plan) == ["team-a/mid"]
    assert plan.migrations[0].serves is None
    assert "over max cpu 6/4" in plan.migrations[0].reason
    assert state["overMaxSince"] == {"team-a": "2026-01-15T11:55:00Z"}


def test_over_max_waits_for_the_delay() -> None:
    plan, state = run(over_max(60), {"overMaxDelaySeconds": 120})
    assert victims(plan) == []
    assert state["overMaxSince"] == {"team-a": "2026-01-15T11:59:00Z"}


def test_over_max_episode_starts_now_without_annotation_and_state_carries_it() -> None:
    plan, state = run(over_max(None), {"overMaxDelaySeconds": 120})
    assert victims(plan) == []
    assert state["overMaxSince"] == {"team-a": "2026-01-15T12:00:00Z"}
    later, _ = run(over_max(None), {"overMaxDelaySeconds": 120}, state=state, now=NOW + timedelta(seconds=130))
    assert victims(later) == ["team-a/mid"]


def test_per_round_cap_never_commits_part_of_a_victim_set() -> None:
    plan, _ = run(two_groups(pending_cpu=2), {"maxEvictionsPerRound": 0})
    assert victims(plan) == []
    assert "deferred" in plan.unreclaimable[0]
    objects = [
        node("n1", cpu="8"),
        quota("team-a", min={"cpu": 2}),
        quota("team-b", min={"cpu": 6}),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=1, age=3600 - i) for i in range(6)],
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("first", "team-b", cpu=1, priority=10),
        pod("second", "team-b", cpu=2, priority=5),
    ]
    plan, _ = run(objects, {"maxEvictionsPerRound": 2})
    assert victims(plan) == ["team-a/a-5"]
    assert any(u.startswith("team-b/second (quota team-b): deferred") for u in plan.unreclaimable)


def test_per_lender_cap() -> None:
    objects = [
        node("n1", cpu="8"),
        quota("team-a", min={"cpu": 1}),
        quota("team-c", min={"cpu": 1}),
        quota("team-b", min={"cpu": 4}),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=1, age=3600 - i) for i in range(4)],
        *[pod(f"c-{i}", "team-c", node="n1", cpu=1, age=3600 - i) for i in range(3)],
        pod("b-0", "team-b", node="n1", cpu=1),
        pod("train", "team-b", cpu=2),
    ]
    plan, _ = run(objects, {"maxEvictionsPerLender": 1})
    # team-a (3 over) is asked first but may give one pod; team-c (2 over) gives the other.
    assert victims(plan) == ["team-a/a-3", "team-c/c-2"]


@pytest.mark.parametrize(("policy", "expected"), [("Any", ["team-a/a-2"]), ("LowerPriority", [])])
def test_reclaim_policy_lower_priority(policy: str, expected: list[str]) -> None:
    objects = two_groups(priority=50)
    objects = [o if o["kind"] != "Pod" or o["metadata"]["namespace"] != "team-a" else _prio(o, 100) for o in objects]
    plan, _ = run(objects, {"reclaimPolicy": policy})
    assert victims(plan) == expected
    if policy == "LowerPriority":
        assert "reclaimPolicy LowerPriority" in plan.unreclaimable[0]


def test_lower_priority_takes_only_lower_priority_victims() -> None:
    objects = two_groups(priority=50)
    objects = [_prio(o, 100) if o["metadata"]["name"] == "a-2" else o for o in objects]
    plan, _ = run(objects, {"reclaimPolicy": "LowerPriority"})
    # a-2 is the newest but outranks the waiting pod; lowest priority first puts it last anyway.
    assert victims(plan) == ["team-a/a-1"]


def _prio(obj: dict[str, object], priority: int) -> dict[str, object]:
    spec = dict(obj["spec"])  # type: ignore[call-overload]
    spec["priority"] = priority
    return {**obj, "spec": spec}


def gang_objects() -> list[dict[str, object]]:
    return [
        node("n1", cpu="5"),
        quota("team-a", min={"cpu": 2}),
        quota("team-b", min={"cpu": 4}),
        pod("single", "team-a", node="n1", cpu=1, age=3000),
        *[pod(f"job-{i}", "team-a", node="n1", cpu=1, age=100, owner=("Job", "train-job")) for i in range(2)],
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train", "team-b", cpu=1),
    ]


def test_a_gang_moves_whole_or_not_at_all() -> None:
    strict, _ = run(gang_objects(), {"lenderFloor": "Strict"})
    # The Job's two pods would take team-a from 3 to 1 < min 2: the gang stays, a single pod goes.
    assert victims(strict) == ["team-a/single"]
    free_for_all, _ = run(gang_objects(), {"lenderFloor": "None"})
    assert victims(free_for_all) == ["team-a/job-0", "team-a/job-1"]


def test_pod_group_label_makes_a_gang() -> None:
    objects = gang_objects()
    for obj in objects:
        if obj["metadata"]["name"].startswith("job-"):  # type: ignore[index]
            obj["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet"  # type: ignore[index]
            obj["metadata"]["labels"]["pod-group.scheduling.sigs.k8s.io"] = "pg"  # type: ignore[index]
    plan, _ = run(objects, {"lenderFloor": "None"})
    assert victims(plan) == ["team-a/job-0", "team-a/job-1"]


def test_a_gang_member_refusal_is_said_of_that_member_for_the_whole_gang() -> None:
    objects = gang_objects()
    for obj in objects:
        if obj["metadata"]["name"] == "job-1":  # type: ignore[index]
            obj["metadata"]["labels"]["quota.scheduling.koordinator.sh/preemptible"] = "false"  # type: ignore[index]
    plan, _ = run(objects, {"lenderFloor": "None"})
    assert "team-a/job-0" not in victims(plan)
    for member in ("team-a/job-0", "team-a/job-1"):
        assert skip_code(plan, member) == "NotPreemptible"
        assert skip_reason(plan, member) == "team-a/job-1: quota.scheduling.koordinator.sh/preemptible=false"


def test_non_preemptible_and_daemonset_pods_are_never_victims() -> None:
    objects = two_groups()
    for obj in objects:
        if obj["metadata"]["name"] == "a-2":  # type: ignore[index]
            obj["metadata"]["labels"]["quota.scheduling.koordinator.sh/preemptible"] = "false"  # type: ignore[index]
        if obj["metadata"]["name"] == "a-1":  # type: ignore[index]
            obj["metadata"]["ownerReferences"][0]["kind"] = "DaemonSet"  # type: ignore[index]
    plan, _ = run(objects)
    assert victims(plan) == ["team-a/a-0"]
    assert "preemptible=false" in (skip_reason(plan, "team-a/a-2") or "")
    assert skip_reason(plan, "team-a/a-1") == "daemonset pod"


def test_pods_map_to_the_only_quota_of_their_namespace_or_are_unmanaged() -> None:
    objects = [
        node("n1", cpu="8"),
        quota("team-a", min={"cpu": 4}, namespace="shared"),
        quota("team-x", min={"cpu": 1}, namespace="shared"),
        quota("team-b", min={"cpu": 4}),
        *[pod(f"a-{i}", "shared", node="n1", cpu=2) for i in range(3)],  # two quotas there: unmanaged
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train", "team-b", cpu=2),
    ]
    plan, _ = run(objects)
    assert victims(plan) == []
    labelled = [pod(f"a-{i}", "shared", node="n1", cpu=2, quota="team-a", age=3600 - i) for i in range(3)]
    plan, _ = run([*objects[:4], *labelled, *objects[7:]])
    assert victims(plan) == ["shared/a-2"]


def test_both_api_groups_are_read() -> None:
    objects = two_groups()
    objects[1] = quota("team-a", min={"cpu": 4}, max={"cpu": 8}, api_group="scheduling.x-k8s.io")
    plan, _ = run(objects)
    assert victims(plan) == ["team-a/a-2"]


def test_aggregate_min_gate_closes_free_capacity_above_the_guarantees() -> None:
    objects = two_groups()
    objects[0] = node("n1", cpu="10")  # 2 cpu free, but Σ min 8 is all used
    assert victims(run(objects)[0]) == []
    assert victims(run(objects, {"aggregateMinGate": True})[0]) == ["team-a/a-2"]


def test_dry_run_reports_without_planning_evictions() -> None:
    plan, _ = run(two_groups(), {"dryRun": True})
    assert victims(plan) == []
    assert (skip_reason(plan, "team-a/a-2") or "").startswith("dryRun: would evict: quota team-b below min")


def test_dry_run_skips_carry_their_own_code() -> None:
    plan, _ = run(two_groups(), {"dryRun": True})
    assert skip_code(plan, "team-a/a-2") == "DryRun"
    assert skip_code(plan, "team-b/train-7") is None  # served (in words), not refused


def test_unreclaimable_groups_a_lender_refusal_by_its_rule_not_its_words() -> None:
    # A lender whose name says "quota" is still held back by a limit (its cooldown), not by the tree.
    objects = [
        node("n1", cpu="8"),
        quota("borrowing-quota", min={"cpu": 4}, max={"cpu": 8}),
        quota("team-b", min={"cpu": 4}, max={"cpu": 8}),
        *[pod(f"a-{i}", "borrowing-quota", node="n1", cpu=2, age=3600 - 60 * i) for i in range(3)],
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train-7", "team-b", cpu=2, age=600),
    ]
    state = {"lenderLastEviction": {"borrowing-quota": ts(NOW - timedelta(seconds=10))}}
    plan, _ = run(objects, {"lenderCooldownSeconds": 60}, state=state)
    assert victims(plan) == []
    assert plan.unreclaimable[0].endswith(
        "Why: limits — borrowing-quota: lender cooldown: borrowing-quota's previous victims were planned 10s ago "
        "(< lenderCooldownSeconds 60)"
    )


def test_lender_cooldown_and_backoff_from_state() -> None:
    first, state = run(two_groups(), {"lenderCooldownSeconds": 60})
    assert victims(first) == ["team-a/a-2"]
    assert state["lenderLastEviction"] == {"team-a": "2026-01-15T12:00:00Z"}
    again, _ = run(two_groups(), {"lenderCooldownSeconds": 60}, state=state, now=NOW + timedelta(seconds=10))
    assert victims(again) == []
    # The victim is gone, yet team-b got nothing (a replacement took the slot): back off.
    objects = [o for o in two_groups() if o["metadata"]["name"] != "a-2"]  # type: ignore[index]
    objects.append(pod("a-2-replacement", "team-a", node="n1", cpu=2, age=5))
    later, later_state = run(objects, state=state, now=NOW + timedelta(seconds=90))
    assert victims(later) == []
    assert any("made no progress" in w for w in later.warnings)
    assert "team-b/team-a" in later_state["backoff"]


# --- bad quota objects --------------------------------------------------------------------------


def _warnings(plan: object) -> str:
    return "\n".join(getattr(plan, "warnings", ()))


def test_min_above_max_is_reported_and_the_group_is_left_alone() -> None:
    objects = two_groups()
    objects[1] = quota("team-a", min={"cpu": 4}, max={"cpu": 2})
    plan, _ = run(objects)
    assert victims(plan) == []
    assert "quota team-a has min > max (cpu 4 > 2)" in _warnings(plan)
    objects[1], objects[2] = quota("team-a", min={"cpu": 4}), quota("team-b", min={"cpu": 4}, max={"cpu": 1})
    plan, _ = run(objects)
    assert victims(plan) == []
    assert any("not served: quota team-b is skipped" in u for u in plan.unreclaimable)


def test_unknown_parent_skips_the_subtree() -> None:
    objects = two_groups()
    objects[1] = quota("team-a", min={"cpu": 4}, parent="nowhere")
    plan, _ = run(objects)
    assert victims(plan) == []
    assert "quota team-a parent quota 'nowhere' does not exist" in _warnings(plan)


def test_parent_cycle_is_reported() -> None:
    tree = build_tree(
        [
            ElasticQuota(namespace="x", name="a", api_group="g", labels={PARENT_LABEL: "b"}),
            ElasticQuota(namespace="x", name="b", api_group="g", labels={PARENT_LABEL: "a"}),
            ElasticQuota(namespace="x", name="c", api_group="g", labels={PARENT_LABEL: "b"}),
            ElasticQuota(namespace="x", name="ok", api_group="g"),
        ],
        PARENT_LABEL,
    )
    assert tree.untrusted["a"] == "parent cycle a → b → a"
    assert tree.untrusted["b"] == "parent cycle a → b → a"
    assert tree.untrusted["c"].startswith("ancestor quota")
    assert tree.trusted("ok")


def test_children_min_above_parent_min_skips_the_parent_subtree() -> None:
    objects = three_level_tree(3)
    objects[2] = quota("p1", min={"cpu": 5}, parent="root")  # children's min sum 6 > 5
    plan, _ = run(objects)
    assert victims(plan) == []
    text = _warnings(plan)
    assert "quota p1 children's min sum exceeds its min (cpu 6 > 5)" in text
    assert "(and l1, starving below it)" in text


def test_negative_quantities_are_untrusted() -> None:
    tree = build_tree(
        [ElasticQuota(namespace="x", name="neg", api_group="g", min=Resources({"cpu": -1000}))], PARENT_LABEL
    )
    assert tree.untrusted["neg"] == "has negative quantities (cpu)"


def test_duplicate_quota_names_are_untrusted() -> None:
    tree = build_tree(
        [ElasticQuota(namespace=ns, name="dup", api_group="g") for ns in ("x", "y")],
        PARENT_LABEL,
    )
    assert tree.untrusted["dup"].startswith("defined more than once")


def test_malformed_quantity_is_rejected_when_loading() -> None:
    objects = two_groups()
    objects[1] = quota("team-a", min={"cpu": "lots"})
    with pytest.raises(InputError):
        run(objects)


def test_a_pod_a_migration_job_moves_is_skipped_with_the_code_every_strategy_gives_it() -> None:
    job = migration_job("job-a-2", "a-2", "")
    job["spec"]["podRef"]["namespace"] = "team-a"
    plan, _ = run([*two_groups(), job])
    skipped = {str(s.pod): s for s in plan.skipped}
    assert (skipped["team-a/a-2"].code, skipped["team-a/a-2"].reason) == (
        "MigrationInProgress",
        "already being moved by a migration job",
    )
    assert "team-a/a-2" not in victims(plan)


def test_every_job_of_a_round_describes_the_cluster_as_the_round_found_it() -> None:
    """Issue 41, finding 6: the reasons read "0/8 … 7/8" across one round's jobs; now each states the
    cluster's use, and what the round already planned for the group apart."""
    objects = [
        *[node(f"n{i}", cpu="4") for i in range(4)],
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
        *[pod(f"a-{i}", "team-a", node=f"n{i % 4}", cpu=1, owner=("ReplicaSet", "a")) for i in range(12)],
        *[pod(f"b-{i}", "team-b", node=f"n{i % 4}", cpu=1, owner=("ReplicaSet", "b")) for i in range(4)],
        *[pod(f"w-{i}", "team-b", cpu=1, age=600, owner=("ReplicaSet", "b")) for i in range(3)],
    ]
    plan, _ = run(objects, limits={"maxEvictionsPerNode": 3})
    reasons = [m.reason for m in plan.migrations]
    assert len(reasons) == 3
    assert all(r.startswith("quota team-b below min cpu 4/8") and "lender team-a uses cpu 12/4" in r for r in reasons)
    assert [r.split(", waiting pod")[0] for r in reasons[1:]] == [
        "quota team-b below min cpu 4/8 (cpu 5/8 with this round's earlier waiting pods)",
        "quota team-b below min cpu 4/8 (cpu 6/8 with this round's earlier waiting pods)",
    ]
