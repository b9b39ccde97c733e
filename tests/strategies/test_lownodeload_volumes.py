"""LowNodeLoad and PersistentVolumes (issue 60): a StatefulSet pod whose claim is bound to a local
volume stays, and `plan` says "pinned by volume local-a1"; a pod on a zonal volume moves within its
zone only (kube-scheduler's VolumeBinding filter); the hot node is relieved by the pods that may move."""

from __future__ import annotations

from typing import Any

from descheduler.report import render_table
from tests.builders import Obj, lnl_policy, loaded_node, moves, plan, skips

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def claimed(name: str, claim: str) -> dict[str, Any]:
    return {
        "name": name,
        "owner": name.rsplit("-", 1)[0],
        "owner_kind": "StatefulSet",
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    }


def pvc(name: str, volume: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"volumeName": volume},
        "status": {"phase": "Bound"},
    }


def pv(name: str, key: str, value: str) -> Obj:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
    }


def cluster() -> list[Obj]:
    """a1 (zone-a) hot at 7 of 8 cpu; a2 (zone-a) warmer than the zone-b nodes, still low."""
    zone_a, zone_b = {ZONE: "zone-a"}, {ZONE: "zone-b"}
    return [
        *loaded_node(
            "a1",
            [
                (claimed("db-0", "data-db-0"), "1"),
                (claimed("cache-0", "data-cache-0"), "1"),
                ({"name": "plain-1", "owner": "plain"}, "1"),
                ({"name": "plain-2", "owner": "plain"}, "1"),
            ],
            system="3",
            labels=zone_a,
        ),
        *loaded_node("a2", [], system="2", labels=zone_a),
        *loaded_node("b1", [], labels=zone_b),
        *loaded_node("b2", [], labels=zone_b),
        pvc("data-db-0", "local-a1"),
        pv("local-a1", HOSTNAME, "a1"),
        pvc("data-cache-0", "disk-a"),
        pv("disk-a", ZONE, "zone-a"),
    ]


def test_a_pod_on_a_local_volume_stays_and_the_plan_says_why() -> None:
    result = plan(cluster(), lnl_policy())
    assert "db-0" not in [name for name, _, _ in moves(result)]
    assert skips(result)["db-0"] == "pinned by volume local-a1"
    assert "pinned by volume local-a1" in render_table(result.plan, width=400, color=False)


def test_a_pod_on_a_zonal_volume_moves_within_its_zone() -> None:
    result = plan(cluster(), lnl_policy())
    # b1 and b2 are cooler, but the volume disk-a is usable in zone-a only.
    assert ("cache-0", "a1", "a2") in moves(result)


def test_the_hot_node_is_still_relieved_by_the_pods_that_may_move() -> None:
    result = plan(cluster(), lnl_policy())
    moved = sorted(name for name, source, _ in moves(result) if source == "a1")
    assert moved == ["cache-0", "plain-1", "plain-2"]
    assert {target for name, _, target in moves(result) if name.startswith("plain")} <= {"b1", "b2"}


def test_without_the_claims_in_the_snapshot_the_pods_stay_and_the_rule_is_named() -> None:
    # The same cluster with no claims or volumes in the snapshot (an older snapshot file): where the
    # volumes let the pods run is unknown, so they are not moved rather than placed on a guess.
    objs = [o for o in cluster() if o["kind"] not in ("PersistentVolumeClaim", "PersistentVolume")]
    result = plan(objs, lnl_policy())
    assert "cache-0" not in [name for name, _, _ in moves(result)]
    assert skips(result)["cache-0"] == (
        "VolumeBinding: PersistentVolumeClaim default/data-cache-0 is not in the snapshot: "
        "a rule the planner does not model, so the pod stays"
    )
