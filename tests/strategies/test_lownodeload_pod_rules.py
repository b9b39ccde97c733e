"""LowNodeLoad honours kube-scheduler's pod-level hard rules (scheduling-core.md §2): a zone-spread pod
is not sent to a zone that would break its maxSkew, a hostPort pod not to a node whose port is
taken, and the hot node is still relieved by the pods that may move (issue 60's two-zone cluster)."""

from __future__ import annotations

from typing import Any

from descheduler.report import render_table
from tests.builders import Obj, container, lnl_policy, loaded_node, moves, plan, skips

ZONE = "topology.kubernetes.io/zone"
WEB_SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


def exporter(name: str) -> dict[str, Any]:
    """A pod of controller `exp` holding host port 9100."""
    c = container(cpu="1", memory="1Gi")
    c["ports"] = [{"containerPort": 9100, "hostPort": 9100}]
    return {"name": name, "owner": "exp", "containers": [c]}


def cluster(*, rules: bool = True) -> list[Obj]:
    """a1 (zone-a) hot at 7 of 8 cpu; a2 (zone-a) normal; b1 and b2 (zone-b) cool, b1 the coolest.
    web has one replica in zone-a (a-web, on a1) and two in zone-b; exp holds port 9100 on b1."""
    zone_a, zone_b = {ZONE: "zone-a"}, {ZONE: "zone-b"}
    objs = [
        *loaded_node(
            "a1",
            [
                ({"name": "a-web", "owner": "web"}, "1"),
                (exporter("exp-a"), "1"),
                ({"name": "plain-1", "owner": "plain"}, "1"),
                ({"name": "plain-2", "owner": "plain"}, "1"),
            ],
            system="3",
            labels=zone_a,
        ),
        *loaded_node("a2", [], system="4", labels=zone_a),
        *loaded_node("b1", [({"name": "web-b1", "owner": "web"}, "100m"), (exporter("exp-b1"), "100m")], labels=zone_b),
        *loaded_node("b2", [({"name": "web-b2", "owner": "web"}, "100m")], system="2", labels=zone_b),
    ]
    if rules:
        return objs
    for obj in objs:  # the same cluster without the rules: the control
        if obj["kind"] == "Pod":
            obj["spec"].pop("topologySpreadConstraints", None)
            for c in obj["spec"]["containers"]:
                c.pop("ports", None)
    return objs


def _with_spread(objs: list[Obj]) -> list[Obj]:
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["labels"].get("app") == "web":
            obj["spec"]["topologySpreadConstraints"] = WEB_SPREAD
    return objs


def test_without_the_rules_the_planner_would_break_the_spread_and_the_port() -> None:
    # The control: what the planner did before it honoured the rules (issue 60).
    assert moves(plan(cluster(rules=False), lnl_policy()))[:2] == [("a-web", "a1", "b1"), ("exp-a", "a1", "b1")]


def test_a_zone_spread_pod_is_not_sent_to_a_zone_that_would_break_max_skew() -> None:
    result = plan(_with_spread(cluster()), lnl_policy())
    assert "a-web" not in [name for name, _, _ in moves(result)]
    # Zone-b holds 2 web pods, zone-a none once a-web leaves: 2 + 1 - 0 > maxSkew 1 on every zone-b node.
    assert "2 zone spread app=web would exceed maxSkew" in skips(result)["a-web"]


def test_a_host_port_pod_is_not_sent_to_a_node_whose_port_is_taken() -> None:
    result = plan(_with_spread(cluster()), lnl_policy())
    assert ("exp-a", "a1", "b2") in moves(result)  # b1 is cooler, but exp-b1 holds 9100 there


def test_the_hot_node_is_still_relieved_by_the_pods_that_may_move() -> None:
    result = plan(_with_spread(cluster()), lnl_policy())
    moved = [name for name, source, _ in moves(result) if source == "a1"]
    # 7 cpu - 3 moved (1 cpu each) = 4 cpu = 50% < high 60%.
    assert sorted(moved) == ["exp-a", "plain-1", "plain-2"]


def test_a_pod_whose_rule_the_core_cannot_judge_is_not_moved_and_the_plan_names_the_rule() -> None:
    objs = _with_spread(cluster())
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "a-web":
            obj["spec"]["topologySpreadConstraints"] = [{**WEB_SPREAD[0], "nodeTaintsPolicy": "Sometimes"}]
    result = plan(objs, lnl_policy())
    assert "a-web" not in [name for name, _, _ in moves(result)]
    assert skips(result)["a-web"] == (
        "PodTopologySpread: spec.topologySpreadConstraints[0] nodeTaintsPolicy 'Sometimes': "
        "a rule the planner does not model, so the pod stays"
    )
    assert "nodeTaintsPolicy 'Sometimes'" in render_table(result.plan, width=400, color=False)
