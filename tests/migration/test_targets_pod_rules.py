"""Where a Reservation holds room (`targets.Placement`) honours kube-scheduler's pod-level hard rules
(scheduling-core.md §2): a planned target that breaks one is replaced, with the refusal said, and
room held earlier in the same pass counts its pod there."""

from __future__ import annotations

import yaml

from descheduler.migration.targets import Placement
from descheduler.model import Pod
from descheduler.policy import parse_policy
from descheduler.snapshot import Snapshot
from tests.builders import Obj, container, node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
ARGS = parse_policy(yaml.safe_dump({"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"})).scheduling


def placement(objects: list[Obj]) -> tuple[Snapshot, Placement]:
    snap = snapshot(objects)
    return snap, Placement(snap, ARGS, reservations=(), placing=set())


def the_pod(snap: Snapshot, name: str) -> Pod:
    return next(p for p in snap.pods if p.name == name)


def port_pod(name: str, node_name: str) -> Obj:
    c = container(cpu="100m", memory="64Mi")
    c["ports"] = [{"containerPort": 9100, "hostPort": 9100}]
    return pod(name, node_name, owner="exp", containers=[c])


def test_a_planned_target_whose_port_is_taken_is_replaced_and_the_refusal_said() -> None:
    snap, place = placement([node("n1"), node("n2"), node("n3"), port_pod("exp-1", "n1"), port_pod("exp-2", "n2")])
    target = place.choose(the_pod(snap, "exp-1"), "n2", set())
    assert target.node == "n3"
    assert target.why == "planned target n2: host port 9100/TCP in use by default/exp-2"


def test_room_held_earlier_in_the_pass_counts_its_pod_for_the_spread() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    objects: list[Obj] = [
        node("a1", labels={ZONE: "a"}),
        node("b1", labels={ZONE: "b"}),
        node("c1", labels={ZONE: "c"}),
    ]
    for name, where in (("w1", "a1"), ("w2", "a1"), ("w3", "b1"), ("w4", "c1")):
        p = pod(name, where, owner="web")
        p["spec"]["topologySpreadConstraints"] = spread
        objects.append(p)
    snap, place = placement(objects)
    # w1 leaves zone a (2 -> 1): b and c hold 1 each; every zone passes (skew 1 + 1 - 1 = 1).
    first = place.choose(the_pod(snap, "w1"), "b1", set())
    assert first.node == "b1"
    place.hold(the_pod(snap, "w1"), "b1")
    # w2 leaving empties zone a (the global minimum, 0); b holds 2 and c 1: neither passes maxSkew 1,
    # and a1 is w2's own node.
    second = place.choose(the_pod(snap, "w2"), "b1", set())
    assert second.node is None
    assert "zone spread app=web" in second.why
