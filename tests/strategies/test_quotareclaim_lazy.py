"""QuotaReclaim builds victim units, cluster free and progress lookups only when a group acts (issue 15).

The property test runs each generated world twice: as shipped (lazy), and with every lazy piece
forced up front — all groups' victim units built before planning, cluster free computed with the
ledger, every pod looked up for the progress check. The eager run is the oracle: building less
must never plan, skip, warn or remember anything different. The fixed plans pin the paths only
laziness takes (a gang partner outside the lender's group, a carried reclaim, an over-max parent).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies.quota.pacing as pacing_module
import strategies.quotareclaim as quotareclaim_module
from descheduler.model import Pod
from descheduler.resources import Resources
from descheduler.snapshot import Snapshot
from strategies.quota.accounting import Ledger, node_free
from strategies.quota.tree import QuotaTree
from strategies.quota.units import VictimUnits
from tests.quota_builders import GPU, NOW, node, pdb, pod, quota, run, victims

Obj = dict[str, Any]
GROUPS = ("qa", "qb", "qc", "qd", "qe")


class _EagerUnits(VictimUnits):
    """Every group's units built at once, as before issue 15."""

    __slots__ = ()

    def __init__(
        self,
        all_pods: Sequence[Pod],
        holding: Mapping[str, list[Pod]],
        requested: Mapping[str, Mapping[str, int]],
        group_of: Any,
    ) -> None:
        super().__init__(all_pods, holding, requested, group_of)
        for group in self.groups():
            self.of(group)


class _EagerLedger(Ledger):
    __slots__ = ()

    @classmethod
    def build(cls, tree: QuotaTree, requested: Mapping[str, Mapping[str, int]], free_source: Any, gate: bool) -> Ledger:
        ledger = super().build(tree, requested, free_source, gate)
        _ = ledger.cluster_free
        return ledger


def _every_pod(snapshot: Snapshot, records: object) -> dict[str, Pod]:
    return {p.key: p for p in snapshot.pods}


@contextmanager
def eager() -> Iterator[None]:
    patch = pytest.MonkeyPatch()
    patch.setattr(quotareclaim_module, "VictimUnits", _EagerUnits)
    patch.setattr(quotareclaim_module, "Ledger", _EagerLedger)
    patch.setattr(pacing_module, "_pods_named", _every_pod)
    try:
        yield
    finally:
        patch.undo()


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    """Trees, over-max, shared namespaces, unknown labels, gangs across groups, PDBs, limits, dry run."""
    groups = list(GROUPS[: draw(st.integers(1, len(GROUPS)))])
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 3)))]
    objects: list[Obj] = [
        node(
            name,
            cpu=str(draw(st.integers(2, 8))),
            gpu=draw(st.integers(0, 4)),
            unschedulable=i > 0 and draw(st.booleans()),
        )
        for i, name in enumerate(nodes)
    ]
    for i, g in enumerate(groups):
        minimum = {"cpu": draw(st.integers(0, 8)), **({GPU: draw(st.integers(0, 3))} if draw(st.booleans()) else {})}
        maximum = {"cpu": draw(st.integers(0, 12))} if draw(st.integers(0, 3)) == 0 else None
        since = NOW - timedelta(seconds=draw(st.sampled_from([10, 500]))) if draw(st.booleans()) else None
        objects.append(
            quota(
                g,
                min=minimum,
                max=maximum,
                parent=draw(st.sampled_from([None, None, None, None, *groups[:i], "missing"])) if i else None,
                namespace=draw(st.sampled_from([g, g, g, "shared"])),
                over_max_since=since,
            )
        )
    namespaces = sorted({*groups, "shared", "free"})
    for i in range(draw(st.integers(0, 18))):
        home = draw(st.sampled_from(groups))
        gang = draw(st.sampled_from([None, None, None, "g1", "g2", "job"]))
        labels = {"pod-group.scheduling.sigs.k8s.io": gang} if gang in ("g1", "g2") else {}
        if draw(st.integers(0, 6)) == 0:
            labels["quota.scheduling.koordinator.sh/preemptible"] = "false"
        if draw(st.integers(0, 4)) == 0:
            labels["pdb"] = "yes"
        obj = pod(
            f"p{i}",
            draw(st.sampled_from([home, home, home, *namespaces])),
            node=draw(st.sampled_from(nodes)) if draw(st.integers(0, 3)) else None,
            cpu=draw(st.integers(0, 4)) or None,
            gpu=draw(st.integers(0, 2)) if draw(st.booleans()) else 0,
            priority=draw(st.sampled_from([None, 0, 10, 100])),
            quota=draw(st.sampled_from([home, home, home, None, None, *groups, "ghost"])),
            age=draw(st.sampled_from([30, 600, 3600, 3601])),
            labels=labels,
            owner=("Job", "j1") if gang == "job" else ("ReplicaSet", ""),
            deleting=draw(st.integers(0, 8)) == 0,
            preemption_policy=draw(st.sampled_from([None, None, None, "Never"])),
        )
        if draw(st.integers(0, 8)) == 0:
            obj["status"]["phase"] = "Succeeded"
        objects.append(obj)
    objects += [
        pdb(f"guard-{ns}", ns, {"pdb": "yes"}, allowed=draw(st.integers(0, 2)))
        for ns in namespaces
        if draw(st.integers(0, 3)) == 0
    ]
    args: dict[str, Any] = {
        "lenderFloor": draw(st.sampled_from(["Strict", "NetGain", "None"])),
        "reclaimPolicy": draw(st.sampled_from(["Any", "LowerPriority"])),
        "hierarchyOrder": draw(st.sampled_from(["TopDown", "SiblingsFirst"])),
        "aggregateMinGate": draw(st.booleans()),
        "maxEvictionsPerRound": draw(st.sampled_from([0, 1, 3, 10, 10])),
        "dryRun": draw(st.integers(0, 7)) == 0,
        "pendingGraceSeconds": draw(st.sampled_from([0, 60])),
        "overMaxDelaySeconds": draw(st.sampled_from([0, 120])),
        "lenderCooldownSeconds": draw(st.sampled_from([0, 300])),
        "backoffSeconds": draw(st.sampled_from([0, 300])),
    }
    if draw(st.booleans()):
        args["maxEvictionsPerLender"] = draw(st.integers(0, 3))
    return {"objects": objects, "args": args, "then": draw(st.sampled_from(["same", "victims_gone", "victims_done"]))}


def two_cycles(world: Mapping[str, Any]) -> list[Any]:
    """A cycle, then one a minute later with its victims gone, finished or still there, fed its state."""
    first, state = run(copy.deepcopy(world["objects"]), world["args"])
    planned = {(m.pod.namespace, m.pod.name) for m in first.migrations}
    later: list[Obj] = []
    for obj in copy.deepcopy(world["objects"]):
        meta = obj["metadata"]
        if obj["kind"] == "Pod" and (meta["namespace"], meta["name"]) in planned:
            if world["then"] == "victims_gone":
                continue
            if world["then"] == "victims_done":
                obj["status"]["phase"] = "Succeeded"
        later.append(obj)
    second, second_state = run(later, world["args"], state=state, now=NOW + timedelta(seconds=60))
    return [first.to_dict(), state, second.to_dict(), second_state]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_building_only_for_groups_that_act_plans_what_building_everything_plans(world: dict[str, Any]) -> None:
    lazy = two_cycles(world)
    with eager():
        assert two_cycles(world) == lazy


def test_eager_oracle_really_builds_everything() -> None:
    """The oracle differs from the product in what it builds, or the property above tests nothing."""
    objects = [node("n1", cpu="4"), quota("team-a", min={"cpu": 2}), pod("a", "team-a", node="n1", cpu=1)]
    built: list[str] = []
    original = VictimUnits._build

    def spy(self: VictimUnits, group: str) -> Any:
        built.append(group)
        return original(self, group)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(VictimUnits, "_build", spy)
        run(objects)
        assert built == []
        with eager():
            run(objects)
        assert built == ["team-a"]


# --- fixed plans on the paths only laziness takes -------------------------------------------------


def gpu_reclaim(partner_labels: Mapping[str, str]) -> list[Obj]:
    """team-b waits for a gpu; team-a's pods request only cpu, but one is in a gang with a gpu pod."""
    return [
        node("n1", cpu="16", gpu=2),
        quota("team-a", min={"cpu": 1}),
        quota("team-b", min={"cpu": 2, GPU: 2}),
        pod("a-solo", "team-a", node="n1", cpu=2),
        pod("a-gang", "team-a", node="n1", cpu=2, labels={"pod-group.scheduling.sigs.k8s.io": "pg"}),
        pod(
            "partner",
            "team-a",
            node="n1",
            gpu=2,
            labels={"pod-group.scheduling.sigs.k8s.io": "pg", **partner_labels},
        ),
        pod("train", "team-b", cpu=1, gpu=1),
    ]


def test_a_lender_whose_own_pods_do_not_request_the_resource_is_asked_through_its_gang() -> None:
    # partner names a quota that does not exist: unmanaged, but team-a's gang unit requests its gpu,
    # so team-a is a lender to ask (and refuse: it does not borrow gpu), not one without gpu pods.
    plan, _ = run(gpu_reclaim({"quota.scheduling.koordinator.sh/name": "ghost"}))
    assert victims(plan) == []
    assert plan.unreclaimable == (
        "team-b/train (quota team-b) needs nvidia.com/gpu 1 beyond free capacity; eligible victims would free "
        "only nvidia.com/gpu 0; nothing evicted for it. Why: tree — team-a: quota team-a is not borrowing "
        "nvidia.com/gpu (nvidia.com/gpu 0/0 used/min)",
    )
    alone = gpu_reclaim({"quota.scheduling.koordinator.sh/name": "ghost", "pod-group.scheduling.sigs.k8s.io": ""})
    plan, _ = run(alone)
    assert plan.unreclaimable[0].endswith("Why: no other group borrows the contested resources")


def test_a_gang_whole_in_its_group_is_a_victim_though_its_gpu_pod_alone_requests_the_gpu() -> None:
    objects = gpu_reclaim({})
    objects[1] = quota("team-a", min={"cpu": 1})
    plan, _ = run(objects, {"lenderFloor": "None"})
    assert victims(plan) == ["team-a/a-gang", "team-a/partner"]
    assert all(str(m.serves) == "team-b/train" for m in plan.migrations)


def test_a_reclaim_whose_victims_still_terminate_is_carried_not_judged() -> None:
    objects: list[Obj] = [
        node("n1", cpu="8"),
        quota("team-a", min={"cpu": 4}),
        quota("team-b", min={"cpu": 4}),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=2, age=3600 - 60 * i) for i in range(3)],
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1) for i in range(2)],
        pod("train", "team-b", cpu=2, age=600),
    ]
    first, state = run(objects)
    assert victims(first) == ["team-a/a-2"]
    terminating = [o for o in objects if o["metadata"]["name"] != "a-2"]
    terminating.append(pod("a-2", "team-a", node="n1", cpu=2, age=3480, deleting=True))
    later, later_state = run(terminating, state=state, now=NOW + timedelta(seconds=60))
    assert victims(later) == []
    assert not any("made no progress" in w for w in later.warnings)
    assert later_state["reclaims"] == state["reclaims"]
    assert "backoff" not in later_state


def test_an_over_max_parent_trims_the_least_important_pods_of_its_whole_subtree() -> None:
    objects: list[Obj] = [
        node("n1", cpu="16"),
        quota("parent", min={"cpu": 4}, max={"cpu": 6}, over_max_since=NOW - timedelta(seconds=600)),
        quota("left", min={"cpu": 2}, parent="parent"),
        quota("right", min={"cpu": 2}, parent="parent"),
        quota("idle", min={"cpu": 8}),
        *[pod(f"l-{i}", "left", node="n1", cpu=2, priority=10, age=3600 - i) for i in range(2)],
        *[pod(f"r-{i}", "right", node="n1", cpu=2, priority=5 * i, age=3600 - i) for i in range(2)],
        pod("idle-0", "idle", node="n1", cpu=1),
    ]
    plan, state = run(objects)
    # 8 cpu used of max 6: r-0 (priority 0) goes; the parent is then at its max.
    assert victims(plan) == ["right/r-0"]
    assert plan.migrations[0].reason.startswith("quota parent over max cpu 8/6 (used/max)")
    assert state["overMaxSince"] == {"parent": "2026-01-15T11:50:00Z"}


def test_a_pod_naming_an_unknown_quota_is_reported_whatever_its_phase() -> None:
    finished = pod("done", "team-a", node="n1", cpu=1, quota="ghost")
    finished["status"]["phase"] = "Succeeded"
    plan, _ = run([node("n1"), quota("team-a", min={"cpu": 1}), finished])
    assert any("pods name quota 'ghost'" in w for w in plan.warnings)


def test_free_capacity_is_never_computed_when_no_pod_waits() -> None:
    objects = [
        node("n1", cpu="4"),
        quota("team-a", min={"cpu": 2}, max={"cpu": 8}),
        pod("a", "team-a", node="n1", cpu=1),
    ]
    computed: list[Resources] = []

    def spy(snapshot: Snapshot, usable: Any) -> Resources:
        computed.append(node_free(snapshot, usable))
        return computed[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quotareclaim_module, "node_free", spy)
        run(objects)
        assert computed == []
        run([*objects, pod("wait", "team-a", cpu=1)])
        assert computed == [Resources({"cpu": 3000, "memory": 64 * 2**30, "pods": 110})]
