"""A pod pinned to its node by a volume is not a candidate, and says so; a zonal volume keeps the
pod's targets in its zone (kube-scheduler's VolumeBinding filter: the PersistentVolume's required
node affinity, pkg/scheduler/framework/plugins/volumebinding)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from descheduler import decode
from descheduler.eligibility import eviction_refusal
from descheduler.model import EphemeralVolume, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolume
from descheduler.policy import EvictorArgs
from descheduler.snapshot import load_snapshot
from tests.builders import Obj, node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def pvc(name: str, volume: str = "", *, namespace: str = "default", phase: str = "Bound") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"pvc-{name}"},
        "spec": {"volumeName": volume, "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": phase if volume else "Pending"},
    }


def pv(name: str, *terms: dict[str, Any]) -> Obj:
    spec: Obj = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    if terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": list(terms)}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "uid": f"pv-{name}"},
        "spec": spec,
    }


def label_in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def with_claim(name: str, node_name: str, claim: str = "data") -> Obj:
    return pod(name, node_name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])


def cluster(*extra: Obj) -> list[Obj]:
    return [
        node("a1", labels={ZONE: "zone-a"}),
        node("a2", labels={ZONE: "zone-a"}),
        node("b1", labels={ZONE: "zone-b"}),
        pod("sibling", "b1", owner="web"),
        *extra,
    ]


def refusal_of(objs: list[Obj], name: str = "db-0") -> str | None:
    snap = snapshot(objs)
    found = eviction_refusal(next(p for p in snap.pods if p.name == name), snap, EvictorArgs())
    return None if found is None else f"{found.code}: {found}"


# --- decoding -------------------------------------------------------------------------------------


def test_a_pod_names_the_claims_of_its_volumes_in_both_pod_shapes() -> None:
    obj = pod(
        "db-0",
        "a1",
        volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "fast"}}}},
            {"name": "tmp", "emptyDir": {}},
        ],
    )
    text = msgspec.json.encode(obj)
    full = decode.pod_from_raw(msgspec.json.decode(text, type=decode.RawPod))
    listed = decode.pod_from_listed(msgspec.json.decode(text, type=decode.RawListedPod))
    # An ephemeral volume's claim is the pod's own ("<pod>-<volume>"): a replacement gets a new one.
    assert full.claims == ("data-db-0",)
    assert full.ephemeral == (EphemeralVolume(name="scratch", storage_class="fast"),)
    assert full.ephemeral[0].claim_of(full.name) == "db-0-scratch"
    assert listed == full
    assert full.has_pvc and full.has_local_storage


def test_claims_and_volumes_decode_into_narrow_records() -> None:
    claim = decode.pvc_from_raw(decode.convert(pvc("data", "local-a1", namespace="db"), decode.RawPVC))
    assert (claim.key, claim.volume_name, claim.phase) == ("db/data", "local-a1", "Bound")
    unbound = decode.pvc_from_raw(decode.convert(pvc("data"), decode.RawPVC))
    assert (unbound.volume_name, unbound.phase) == ("", "Pending")
    local = decode.pv_from_raw(decode.convert(pv("local-a1", label_in(HOSTNAME, "a1")), decode.RawPV))
    assert local.node_affinity == (
        NodeSelectorTerm(match_expressions=(NodeSelectorRequirement(key=HOSTNAME, operator="In", values=("a1",)),)),
    )
    assert decode.pv_from_raw(decode.convert(pv("nfs"), decode.RawPV)).node_affinity is None


def test_a_bad_operator_in_a_volume_node_affinity_is_named_by_its_field() -> None:
    bad = pv("v", {"matchExpressions": [{"key": ZONE, "operator": "Near", "values": ["a"]}]})
    try:
        decode.pv_from_raw(decode.convert(bad, decode.RawPV))
    except decode.DecodeError as error:
        assert error.field == "spec.nodeAffinity.required.nodeSelectorTerms[0].operator"
    else:
        raise AssertionError("no DecodeError")


# --- eligibility ----------------------------------------------------------------------------------


def test_a_pod_on_a_local_volume_is_pinned_and_says_by_which() -> None:
    objs = cluster(with_claim("db-0", "a1"), pvc("data", "local-a1"), pv("local-a1", label_in(HOSTNAME, "a1")))
    assert refusal_of(objs) == "PinnedByVolume: pinned by volume local-a1"


def test_the_evict_annotation_does_not_unpin_a_pod() -> None:
    target = with_claim("db-0", "a1")
    target["metadata"]["annotations"]["descheduler.alpha.kubernetes.io/evict"] = "true"
    objs = cluster(
        target,
        pvc("data", "local-a1"),
        pv("local-a1", {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a1"]}]}),
    )
    assert refusal_of(objs) == "PinnedByVolume: pinned by volume local-a1"


def test_a_zonal_volume_with_another_node_in_its_zone_does_not_pin() -> None:
    objs = cluster(with_claim("db-0", "a1"), pvc("data", "disk-a"), pv("disk-a", label_in(ZONE, "zone-a")))
    assert refusal_of(objs) is None


def test_a_zonal_volume_whose_zone_has_no_other_node_pins() -> None:
    objs = cluster(with_claim("db-0", "b1"), pvc("data", "disk-b"), pv("disk-b", label_in(ZONE, "zone-b")))
    assert refusal_of(objs) == "PinnedByVolume: pinned by volume disk-b"


def test_an_unbound_claim_or_a_volume_without_node_affinity_leaves_the_pod_movable() -> None:
    assert refusal_of(cluster(with_claim("db-0", "a1"), pvc("data"))) is None
    assert refusal_of(cluster(with_claim("db-0", "a1"), pvc("data", "nfs"), pv("nfs"))) is None
    # A claim the snapshot does not hold (an older snapshot file): movable as before.
    assert refusal_of(cluster(with_claim("db-0", "a1"))) is None


def test_a_claim_in_another_namespace_is_not_the_pods() -> None:
    objs = cluster(
        with_claim("db-0", "a1"), pvc("data", "local-a1", namespace="other"), pv("local-a1", label_in(HOSTNAME, "a1"))
    )
    assert refusal_of(objs) is None


def test_pods_with_claims_stay_when_the_volumes_could_not_be_read() -> None:
    snap = snapshot(cluster(with_claim("db-0", "a1")))
    snap = type(snap).build(
        now=snap.now, nodes=snap.nodes, pods=snap.pods, volumes_unreadable="may not list persistentvolumes"
    )
    found = eviction_refusal(next(p for p in snap.pods if p.name == "db-0"), snap, EvictorArgs())
    assert found is not None and found.code == "VolumesUnreadable"
    assert "may not list persistentvolumes" in str(found)
    sibling = next(p for p in snap.pods if p.name == "sibling")
    assert eviction_refusal(sibling, snap, EvictorArgs()) is None


def test_a_volume_allows_a_node_by_any_of_its_terms() -> None:
    volume = PersistentVolume(
        name="v",
        node_affinity=(
            NodeSelectorTerm(match_expressions=(NodeSelectorRequirement(key=ZONE, operator="In", values=("zone-b",)),)),
            NodeSelectorTerm(
                match_fields=(NodeSelectorRequirement(key="metadata.name", operator="In", values=("a1",)),)
            ),
        ),
    )
    snap = snapshot(cluster())
    assert [n.name for n in snap.nodes if volume.allows(n)] == ["a1", "b1"]


# --- the snapshot file ----------------------------------------------------------------------------


def test_claims_and_volumes_round_trip_through_a_snapshot_file(tmp_path: Path) -> None:
    objs = cluster(with_claim("db-0", "a1"), pvc("data", "local-a1"), pv("local-a1", label_in(HOSTNAME, "a1")))
    path = tmp_path / "cluster.json"
    lines = b",\n".join(msgspec.json.encode(o) for o in objs)
    path.write_bytes(b'{"apiVersion":"v1","kind":"List","metadata":{},"items":[\n' + lines + b"\n]}\n")
    loaded = load_snapshot(path)
    direct = snapshot(objs)
    assert loaded.pvcs == direct.pvcs and loaded.pvs == direct.pvs
    assert set(loaded.pvcs) == {"default/data"} and set(loaded.pvs) == {"local-a1"}
    db = next(p for p in loaded.pods if p.name == "db-0")
    assert loaded.pinned_by(db) == loaded.pvs["local-a1"]
    assert not loaded.warnings


def test_an_older_snapshot_file_without_claims_or_volumes_still_loads(tmp_path: Path) -> None:
    objs = cluster(with_claim("db-0", "a1"))
    path = tmp_path / "old.json"
    path.write_bytes(msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": objs}))
    loaded = load_snapshot(path)
    assert loaded.pvcs == {} and loaded.pvs == {}
    db = next(p for p in loaded.pods if p.name == "db-0")
    assert eviction_refusal(db, loaded, EvictorArgs()) is None


def test_storage_classes_csi_nodes_and_resource_claims_load_from_a_snapshot_file(tmp_path: Path) -> None:
    objs: list[Obj] = [
        *cluster(),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "zonal"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-a", "zone-b"]}]}],
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "a1"},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "allocatable": {"count": 25}}, {"name": "nfs"}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpu", "namespace": "default"},
            "status": {"allocation": {}},
        },
    ]
    path = tmp_path / "cluster.json"
    path.write_bytes(msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": objs}))
    loaded = load_snapshot(path)
    zonal = loaded.storage_classes["zonal"]
    assert zonal.wait_for_first_consumer and not zonal.default
    assert zonal.allowed_topologies == (
        NodeSelectorTerm(
            match_expressions=(NodeSelectorRequirement(key=ZONE, operator="In", values=("zone-a", "zone-b")),)
        ),
    )
    assert loaded.csi_nodes["a1"].limits == {"ebs.csi.aws.com": 25}
    claim = loaded.resource_claims["default/gpu"]
    assert claim.allocated and claim.node_selector is None
    assert not loaded.warnings


def test_a_claim_and_a_volume_keep_what_the_volume_rules_read() -> None:
    raw = pvc("data", "vol")
    raw["metadata"]["annotations"] = {
        "volume.beta.kubernetes.io/storage-class": "beta",
        "volume.kubernetes.io/selected-node": "a1",
    }
    raw["spec"].update(storageClassName="ga", accessModes=["ReadWriteOncePod"])
    claim = decode.pvc_from_raw(decode.convert(raw, decode.RawPVC))
    # GetPersistentVolumeClaimClass: the beta annotation wins over the field.
    assert (claim.storage_class, claim.access_modes, claim.selected_node) == ("beta", ("ReadWriteOncePod",), "a1")
    volume = pv("vol")
    volume["metadata"]["labels"] = {ZONE: "zone-a", "team": "x"}
    volume["spec"]["csi"] = {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}
    decoded = decode.pv_from_raw(decode.convert(volume, decode.RawPV))
    assert (decoded.zone_labels, decoded.csi_driver, decoded.csi_handle) == (
        {ZONE: "zone-a"},
        "ebs.csi.aws.com",
        "vol-1",
    )
