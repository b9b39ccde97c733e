"""kube-scheduler's pod-level hard rules in the core (scheduling-core.md §2 items 5–7): NodePorts,
required pod affinity, topology spread (DoNotSchedule). Tables follow kube-scheduler's own tests:
pkg/scheduler/framework/plugins/nodeports/node_ports_test.go (TestNodePorts),
podtopologyspread/filtering_test.go (TestSingleConstraint, TestMultipleConstraints) and
interpodaffinity/filtering_test.go (TestRequiredAffinitySingleNode)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from descheduler.model import Pod
from descheduler.policy import parse_policy
from descheduler.scheduling import ClusterView, build_table, feasible_mask, predicates, refusal
from descheduler.snapshot import Snapshot
from tests.builders import Obj, container, migration_job, node, pod, snapshot

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
ZONED = {
    "node-a": {"zone": "zone1", "node": "node-a"},
    "node-b": {"zone": "zone1", "node": "node-b"},
    "node-x": {"zone": "zone2", "node": "node-x"},
    "node-y": {"zone": "zone2", "node": "node-y"},
}


def view_of(objects: list[Obj]) -> tuple[Snapshot, ClusterView]:
    doc = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"}
    snap = snapshot(objects)
    return snap, ClusterView(build_table(snap, parse_policy(yaml.safe_dump(doc)).scheduling))


def the_pod(snap: Snapshot, name: str) -> Pod:
    return next(p for p in snap.pods if p.name == name)


def fits(objects: list[Obj], name: str = "p") -> dict[str, bool]:
    snap, view = view_of(objects)
    mask = feasible_mask(the_pod(snap, name), view)
    return dict(zip(view.table.names, mask.tolist(), strict=True))


def with_spec(obj: Obj, **spec: Any) -> Obj:
    obj["spec"].update(spec)
    return obj


def nodes(labels: dict[str, dict[str, str]]) -> list[Obj]:
    return [node(name, labels=values) for name, values in labels.items()]


def foo_pod(name: str, node_name: str = "", *, namespace: str = "default", deleting: bool = False) -> Obj:
    return pod(name, node_name, "100m", "64Mi", owner=None, labels={"foo": ""}, namespace=namespace, deleting=deleting)


def spread(max_skew: int, key: str, selector: Obj | None = FOO, **extra: Any) -> Obj:
    out: Obj = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", **extra}
    if selector is not None:
        out["labelSelector"] = selector
    return out


def spread_pod(*constraints: Obj, labels: dict[str, str] | None = None, **kw: Any) -> Obj:
    p = pod("p", "", "100m", "64Mi", owner=None, labels={"foo": ""} if labels is None else labels, **kw)
    return with_spec(p, topologySpreadConstraints=list(constraints))


def placed(*where: tuple[str, str]) -> list[Obj]:
    return [foo_pod(name, node_name) for name, node_name in where]


SPREAD_2_1_0_3 = placed(
    ("p-a1", "node-a"),
    ("p-a2", "node-a"),
    ("p-b1", "node-b"),
    ("p-y1", "node-y"),
    ("p-y2", "node-y"),
    ("p-y3", "node-y"),
)

# --- PodTopologySpread: TestSingleConstraint / TestMultipleConstraints -------------------------------


@pytest.mark.parametrize(
    ("case", "objects", "want"),
    [
        (
            "no existing pods",
            [*nodes(ZONED), spread_pod(spread(1, "zone"))],
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
        ),
        (
            "existing pods in a different namespace do not count",
            [
                *nodes(ZONED),
                spread_pod(spread(1, "zone")),
                foo_pod("p-a1", "node-a", namespace="ns1"),
                foo_pod("p-b1", "node-a", namespace="ns2"),
                *placed(("p-x1", "node-x"), ("p-y1", "node-y")),
            ],
            {"node-a": True, "node-b": True, "node-x": False, "node-y": False},
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            [*nodes(ZONED), spread_pod(spread(1, "zone")), *SPREAD_2_1_0_3],
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
        ),
        (
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            [
                *nodes({**ZONED, "node-b": {"zon": "zone1", "node": "node-b"}}),
                spread_pod(spread(1, "zone")),
                *placed(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y")),
            ],
            {"node-a": True, "node-b": False, "node-x": False, "node-y": False},
        ),
        (
            "pod cannot be scheduled as all nodes don't have label 'rack'",
            [*nodes({"node-a": ZONED["node-a"], "node-x": ZONED["node-x"]}), spread_pod(spread(1, "rack"))],
            {"node-a": False, "node-x": False},
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            [*nodes(ZONED), spread_pod(spread(1, "node")), *SPREAD_2_1_0_3],
            {"node-a": False, "node-b": False, "node-x": True, "node-y": False},
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            [*nodes(ZONED), spread_pod(spread(2, "node")), *SPREAD_2_1_0_3],
            {"node-a": False, "node-b": True, "node-x": True, "node-y": False},
        ),
        (
            "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            [*nodes(ZONED), spread_pod(spread(1, "node"), labels={"bar": ""}), *SPREAD_2_1_0_3],
            {"node-a": False, "node-b": True, "node-x": True, "node-y": False},
        ),
        (
            # kube-scheduler's table runs PodTopologySpread alone; here NodeAffinity refuses node-b
            # and node-x too, as kube-scheduler's whole profile does ("in real case, it's false").
            "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
            [
                *nodes(ZONED),
                spread_pod(
                    spread(1, "node"),
                    affinity={
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "node", "operator": "In", "values": ["node-a", "node-y"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                ),
                *SPREAD_2_1_0_3,
            ],
            {"node-a": True, "node-b": False, "node-x": False, "node-y": False},
        ),
        (
            "terminating Pods should be excluded",
            [
                *nodes({"node-a": {"node": "node-a"}, "node-b": {"node": "node-b"}}),
                spread_pod(spread(1, "node")),
                foo_pod("p-a", "node-a", deleting=True),
                foo_pod("p-b", "node-b"),
            ],
            {"node-a": True, "node-b": False},
        ),
        (
            "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
            [*nodes(ZONED), spread_pod(spread(1, "zone"), spread(1, "node")), *SPREAD_2_1_0_3],
            {"node-a": False, "node-b": False, "node-x": True, "node-y": False},
        ),
        (
            "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
            [
                *nodes(ZONED),
                spread_pod(spread(1, "zone"), spread(1, "node")),
                *SPREAD_2_1_0_3,
                foo_pod("p-y4", "node-y"),
            ],
            {"node-a": False, "node-b": False, "node-x": False, "node-y": False},
        ),
        (
            "ScheduleAnyway is a score, not a filter",
            [*nodes(ZONED), spread_pod({**spread(1, "node"), "whenUnsatisfiable": "ScheduleAnyway"}), *SPREAD_2_1_0_3],
            {"node-a": True, "node-b": True, "node-x": True, "node-y": True},
        ),
    ],
)
def test_topology_spread_as_kube_scheduler(case: str, objects: list[Obj], want: dict[str, bool]) -> None:
    assert fits(objects) == want, case


def test_min_domains_makes_the_global_minimum_zero_when_domains_are_fewer() -> None:
    # One zone holds 2 matching pods: alone it is the global minimum (skew 1 there passes maxSkew 1)…
    two_in_zone1 = [node("node-a", labels=ZONED["node-a"]), *placed(("p-a1", "node-a"), ("p-a2", "node-a"))]
    assert fits([*two_in_zone1, spread_pod(spread(2, "zone"))]) == {"node-a": True}
    # …but with minDomains 2 and one domain, the global minimum is 0: 2 + 1 - 0 > 2.
    assert fits([*two_in_zone1, spread_pod(spread(2, "zone", minDomains=2))]) == {"node-a": False}


def test_node_taints_policy_honor_leaves_untolerated_nodes_out_of_the_count() -> None:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    objects = [
        node("node-a", labels={"node": "node-a"}),
        node("node-b", labels={"node": "node-b"}),
        node("node-t", labels={"node": "node-t"}, taints=taint),
        *placed(("p-a1", "node-a"), ("p-b1", "node-b")),
    ]
    # Ignore (the default): the tainted empty node is the global minimum 0, so 1 + 1 - 0 > 1.
    assert fits([*objects, spread_pod(spread(1, "node"))])["node-a"] is False
    honor = spread_pod(spread(1, "node", nodeTaintsPolicy="Honor"))
    assert fits([*objects, honor]) == {"node-a": True, "node-b": True, "node-t": False}


def test_node_affinity_policy_ignore_counts_nodes_the_pod_may_not_go_to() -> None:
    objects = [
        node("node-a", labels={"node": "node-a", "pool": "web"}),
        node("node-o", labels={"node": "node-o"}),
        *placed(("p-a1", "node-a")),
    ]
    selector = {"pool": "web"}
    assert fits([*objects, spread_pod(spread(1, "node"), node_selector=selector)])["node-a"] is True
    ignore = spread_pod(spread(1, "node", nodeAffinityPolicy="Ignore"), node_selector=selector)
    assert fits([*objects, ignore])["node-a"] is False  # node-o (0 pods) is the minimum now


def test_match_label_keys_narrow_the_selector_to_the_pods_own_values() -> None:
    # Pods of another revision do not count: matchLabelKeys adds `rev In (2)`.
    old = [pod(f"old-{i}", "node-a", "100m", "64Mi", owner=None, labels={"foo": "", "rev": "1"}) for i in range(3)]
    objects = [*nodes({"node-a": {"node": "node-a"}, "node-b": {"node": "node-b"}}), *old]
    plain = spread_pod(spread(1, "node"), labels={"foo": "", "rev": "2"})
    keyed = spread_pod(spread(1, "node", matchLabelKeys=["rev"]), labels={"foo": "", "rev": "2"})
    assert fits([*objects, plain]) == {"node-a": False, "node-b": True}
    assert fits([*objects, keyed]) == {"node-a": True, "node-b": True}


def test_spread_refusal_names_the_domain_the_skew_and_max_skew() -> None:
    zones = {"n1": {"topology.kubernetes.io/zone": "zone-a"}, "n2": {"topology.kubernetes.io/zone": "zone-b"}}
    web = {"matchLabels": {"app": "web"}}
    objects = [
        *nodes(zones),
        pod("w1", "n1", owner="web"),
        pod("w2", "n2", owner="web"),
        pod("w3", "n2", owner="web"),
        with_spec(pod("p", owner="web"), topologySpreadConstraints=[spread(1, "topology.kubernetes.io/zone", web)]),
    ]
    snap, view = view_of(objects)
    found = refusal(the_pod(snap, "p"), "n2", view)
    assert str(found) == "zone spread app=web: zone-b would have skew 2 > maxSkew 1"
    assert refusal(the_pod(snap, "p"), "n1", view) is None


def test_a_field_value_the_core_does_not_model_refuses_every_node_naming_the_rule() -> None:
    odd = spread_pod(spread(1, "node", nodeTaintsPolicy="Sometimes"))
    snap, view = view_of([*nodes({"node-a": {"node": "node-a"}}), odd])
    p = the_pod(snap, "p")
    assert p.unjudged == "PodTopologySpread: spec.topologySpreadConstraints[0] nodeTaintsPolicy 'Sometimes'"
    assert str(refusal(p, "node-a", view)).startswith("PodTopologySpread: spec.topologySpreadConstraints[0]")


# --- NodePorts: TestNodePorts ---------------------------------------------------------------------


def ports(*specs: str) -> list[Obj]:
    """ "UDP/127.0.0.1/8080" as kube-scheduler's test helper writes a host port."""
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "protocol": protocol, "hostIP": ip})
    return out


def port_pod(name: str, node_name: str, *specs: str) -> Obj:
    c = container(cpu="100m", memory="64Mi")
    c["ports"] = ports(*specs)
    return pod(name, node_name, owner=None, containers=[c])


@pytest.mark.parametrize(
    ("case", "wanted", "held", "fit"),
    [
        ("nothing running", (), (), True),
        ("other port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), True),
        ("same udp port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), False),
        ("same tcp port", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), False),
        ("different host ip", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), True),
        ("different protocol", ("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), True),
        ("second udp port conflict", ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), False),
        (
            "first tcp port conflict",
            ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
            ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
            False,
        ),
        ("first tcp port conflict due to 0.0.0.0 hostIP", ("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), False),
        (
            "TCP hostPort conflict due to 0.0.0.0 hostIP",
            ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
            ("TCP/127.0.0.1/8001",),
            False,
        ),
        ("second tcp port conflict to 0.0.0.0 hostIP", ("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), False),
        ("second different protocol", ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), True),
        (
            "UDP hostPort conflict due to 0.0.0.0 hostIP",
            ("UDP/127.0.0.1/8001",),
            ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
            False,
        ),
        ("empty hostIP is every address, empty protocol TCP", ("//8001",), ("TCP/10.1.1.1/8001",), False),
    ],
)
def test_node_ports_as_kube_scheduler(case: str, wanted: tuple[str, ...], held: tuple[str, ...], fit: bool) -> None:
    objects = [node("n1"), port_pod("p", "", *wanted)]
    if held:
        objects.append(port_pod("holder", "n1", *held))
    assert fits(objects) == {"n1": fit}, case


def test_sidecar_init_containers_hold_ports_and_plain_init_containers_do_not() -> None:
    sidecar = container("proxy", restart_policy="Always")
    sidecar["ports"] = ports("TCP/0.0.0.0/15000")
    init = container("setup")
    init["ports"] = ports("TCP/0.0.0.0/16000")
    holder = pod("holder", "n1", owner=None, init_containers=[sidecar, init])
    assert fits([node("n1"), holder, port_pod("p", "", "TCP/0.0.0.0/15000")]) == {"n1": False}
    assert fits([node("n1"), holder, port_pod("p", "", "TCP/0.0.0.0/16000")]) == {"n1": True}


def test_port_refusal_names_the_port_and_the_pod_holding_it() -> None:
    snap, view = view_of([node("n1"), port_pod("holder", "n1", "TCP//9100"), port_pod("p", "", "TCP//9100")])
    assert str(refusal(the_pod(snap, "p"), "n1", view)) == "host port 9100/TCP in use by default/holder"


# --- InterPodAffinity, required affinity: TestRequiredAffinitySingleNode ----------------------------


def affinity(selector: Obj, key: str = "zone", **term: Any) -> Obj:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": key, **term}]
        }
    }


def affine_pod(selector: Obj, key: str = "zone", *, labels: dict[str, str] | None = None, **term: Any) -> Obj:
    return pod("p", "", "100m", "64Mi", owner=None, labels=labels, affinity=affinity(selector, key, **term))


SECURITY_S1 = {"matchExpressions": [{"key": "security", "operator": "In", "values": ["S1"]}]}
TWO_ZONES = {"n1": {"zone": "z1"}, "n2": {"zone": "z1"}, "n3": {"zone": "z2"}}


def s1_pod(name: str, node_name: str, namespace: str = "default") -> Obj:
    return pod(name, node_name, "100m", "64Mi", owner=None, labels={"security": "S1"}, namespace=namespace)


@pytest.mark.parametrize(
    ("case", "objects", "want"),
    [
        (
            "satisfies with requiredDuringScheduling PodAffinity using In operator that matches the existing pod",
            [*nodes(TWO_ZONES), s1_pod("s1", "n1"), affine_pod(SECURITY_S1)],
            {"n1": True, "n2": True, "n3": False},
        ),
        (
            "does not satisfy PodAffinity because of mismatching namespace",
            [*nodes(TWO_ZONES), s1_pod("s1", "n1", namespace="other"), affine_pod(SECURITY_S1)],
            {"n1": False, "n2": False, "n3": False},
        ),
        (
            "satisfies PodAffinity in the namespaces the term names",
            [*nodes(TWO_ZONES), s1_pod("s1", "n3", namespace="other"), affine_pod(SECURITY_S1, namespaces=["other"])],
            {"n1": False, "n2": False, "n3": True},
        ),
        (
            "an empty namespaceSelector selects every namespace",
            [*nodes(TWO_ZONES), s1_pod("s1", "n3", namespace="other"), affine_pod(SECURITY_S1, namespaceSelector={})],
            {"n1": False, "n2": False, "n3": True},
        ),
        (
            "a node without the topology label fails the term",
            [*nodes({**TWO_ZONES, "n4": {}}), s1_pod("s1", "n4"), affine_pod(SECURITY_S1)],
            {"n1": False, "n2": False, "n3": False, "n4": False},
        ),
        (
            "the first pod of a group may go anywhere that has the topology label",
            [*nodes({**TWO_ZONES, "n4": {}}), affine_pod(SECURITY_S1, labels={"security": "S1"})],
            {"n1": True, "n2": True, "n3": True, "n4": False},
        ),
        (
            "a pod that does not match its own term is not the first of a group",
            [*nodes(TWO_ZONES), affine_pod(SECURITY_S1)],
            {"n1": False, "n2": False, "n3": False},
        ),
    ],
)
def test_required_pod_affinity_as_kube_scheduler(case: str, objects: list[Obj], want: dict[str, bool]) -> None:
    assert fits(objects) == want, case


def test_mismatch_label_keys_exclude_the_pods_own_group() -> None:
    # mismatchLabelKeys [tenant]: affinity to cache pods of *another* tenant (`tenant NotIn (a)`).
    cache_a = pod("cache-a", "n1", owner=None, labels={"app": "cache", "tenant": "a"})
    cache_b = pod("cache-b", "n3", owner=None, labels={"app": "cache", "tenant": "b"})
    term = affine_pod({"matchLabels": {"app": "cache"}}, labels={"tenant": "a"}, mismatchLabelKeys=["tenant"])
    assert fits([*nodes(TWO_ZONES), cache_a, cache_b, term]) == {"n1": False, "n2": False, "n3": True}
    keyed = affine_pod({"matchLabels": {"app": "cache"}}, labels={"tenant": "a"}, matchLabelKeys=["tenant"])
    assert fits([*nodes(TWO_ZONES), cache_a, cache_b, keyed]) == {"n1": True, "n2": True, "n3": False}


def test_affinity_refusal_names_the_selector_and_the_domain() -> None:
    snap, view = view_of([*nodes(TWO_ZONES), s1_pod("s1", "n1"), affine_pod(SECURITY_S1)])
    assert str(refusal(the_pod(snap, "p"), "n3", view)) == "pod affinity: no pod matching security in (S1) in zone=z2"


# --- moves in a cycle --------------------------------------------------------------------------------


def test_a_moved_pod_stops_counting_at_its_source_and_counts_where_it_lands() -> None:
    objects = [*nodes(ZONED), *placed(("p-a1", "node-a"), ("p-x1", "node-x")), foo_pod("p", "node-a")]
    objects[-1] = with_spec(objects[-1], topologySpreadConstraints=[spread(1, "zone")])
    snap, view = view_of(objects)
    p = the_pod(snap, "p")
    # Zones hold 1 (p-a1; the pod itself is leaving) and 1: either zone passes.
    assert feasible_mask(p, view).tolist() == [True, True, True, True]
    # The planner moves p-a1 to zone2 in this cycle: zone2 then holds 2, zone1 0.
    view.move(the_pod(snap, "p-a1"), "node-y")
    assert feasible_mask(p, view).tolist() == [True, True, False, False]


def test_a_move_planned_in_another_namespace_does_not_count_in_the_spread() -> None:
    """Spread counts the pod's own namespace only, moves planned this cycle included."""
    objects = [*nodes(ZONED), *placed(("p-a1", "node-a"), ("p-x1", "node-x")), foo_pod("p", "node-a")]
    objects[-1] = with_spec(objects[-1], topologySpreadConstraints=[spread(1, "zone")])
    objects.append(foo_pod("stranger", "node-b", namespace="other"))
    snap, view = view_of(objects)
    view.move(the_pod(snap, "stranger"), "node-y")
    assert feasible_mask(the_pod(snap, "p"), view).tolist() == [True, True, True, True]


def test_a_move_under_way_counts_at_its_target() -> None:
    objects = [*nodes(ZONED), *placed(("p-a1", "node-a"), ("p-x1", "node-x")), migration_job("j", "p-a1", "node-y")]
    objects.append(spread_pod(spread(1, "zone")))
    assert fits(objects) == {"node-a": True, "node-b": True, "node-x": False, "node-y": False}


def test_a_planned_move_takes_the_port_at_its_target_and_frees_its_source_only_once_gone() -> None:
    snap, view = view_of(
        [node("n1"), node("n2"), node("n3"), port_pod("holder", "n1", "TCP//9100"), port_pod("p", "", "TCP//9100")]
    )
    p = the_pod(snap, "p")
    assert feasible_mask(p, view).tolist() == [False, True, True]
    view.move(the_pod(snap, "holder"), "n2")
    assert feasible_mask(p, view).tolist() == [False, False, True]


def test_the_extender_filter_leaves_the_pod_level_rules_to_kube_scheduler() -> None:
    snap, view = view_of([node("n1"), port_pod("holder", "n1", "TCP//9100"), port_pod("p", "", "TCP//9100")])
    p = the_pod(snap, "p")
    assert not predicates.checks(p, view).passed()[0]
    assert predicates.checks(p, view, scheduler_filtered=True).passed()[0]


def test_a_terminating_pod_under_a_move_holds_its_port_where_it_is() -> None:
    # kube-scheduler's NodeInfo keeps a terminating pod's ports; its replacement is a pod of its own.
    holder = port_pod("holder", "n1", "TCP//9100")
    holder["metadata"]["deletionTimestamp"] = "2026-01-15T12:00:00Z"
    objects = [node("n1"), node("n2"), holder, migration_job("j", "holder", "n2"), port_pod("p", "", "TCP//9100")]
    assert fits(objects) == {"n1": False, "n2": True}
    del holder["metadata"]["deletionTimestamp"]  # still running: its move counts it at n2 already
    assert fits(objects) == {"n1": False, "n2": False}
