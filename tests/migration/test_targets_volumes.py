"""Where a Reservation holds room (`targets.Placement`) honours the pod's volumes (scheduling-core.md
§2 item 8; kube-scheduler's VolumeBinding): a zonal volume keeps the room in its zone."""

from __future__ import annotations

import yaml

from descheduler.migration.targets import Placement
from descheduler.policy import parse_policy
from tests.builders import Obj, node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
ARGS = parse_policy(yaml.safe_dump({"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"})).scheduling


def zonal_volume() -> list[Obj]:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}]}
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"volumeName": "disk-a"},
            "status": {"phase": "Bound"},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "disk-a"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
        },
    ]


def test_a_planned_target_outside_the_volumes_zone_is_replaced_by_one_inside() -> None:
    db = pod("db-0", "a1", owner="db", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
    nodes = [
        node("a1", labels={ZONE: "zone-a"}),
        node("a2", labels={ZONE: "zone-a"}),
        node("b1", labels={ZONE: "zone-b"}),
    ]
    snap = snapshot([*nodes, db, *zonal_volume()])
    place = Placement(snap, ARGS, reservations=(), placing=set())
    target = place.choose(next(p for p in snap.pods if p.name == "db-0"), "b1", set())
    assert target.node == "a2"
    assert target.why == "planned target b1: volume disk-a: its node affinity does not allow this node"
