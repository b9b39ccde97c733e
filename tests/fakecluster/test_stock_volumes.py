"""The fake's stock scheduler on kube-scheduler's volume and DRA filters (descheduler/fakecluster/
stock_volumes.py). Cases after kube-scheduler's tables in pkg/scheduler/framework/plugins/:
volumebinding/volume_binding_test.go (TestVolumeBinding), volumezone/volume_zone_test.go
(TestSingleZone, TestMultiZone), volumerestrictions/volume_restrictions_test.go
(TestAccessModeConflicts), nodevolumelimits/csi_test.go (TestCSILimits) and
dynamicresources/dynamicresources_test.go (allocated claims' node selectors)."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.scheduler import Scheduler
from descheduler.fakecluster.stock import StockScheduler
from descheduler.fakecluster.stock_volumes import (
    BIND_CONFLICT,
    CANNOT_ALLOCATE,
    CLAIM_NOT_ON_NODE,
    MAX_VOLUME_COUNT,
    NODE_CONFLICT,
    RWOP_CONFLICT,
    UNBOUND_IMMEDIATE,
    ZONE_CONFLICT,
    StorageObjects,
)

from .conftest import T0
from .conftest import node as store_node
from .conftest import pod as store_pod

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def node(name: str, **labels: str) -> Raw:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


NODES = [node("a1", **{ZONE: "zone-a"}), node("a2", **{ZONE: "zone-a"}), node("b1", **{ZONE: "zone-b"})]


def pod(name: str, *claims: str, on: str = "") -> Raw:
    spec: Raw = {
        "containers": [{"name": "c"}],
        "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)],
    }
    if on:
        spec["nodeName"] = on
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {}}


def claim(
    name: str, volume: str = "", cls: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",), size: str = "1Gi"
) -> Raw:
    meta: Raw = {"name": name, "namespace": "default"}
    if volume:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    spec: Raw = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if volume:
        spec["volumeName"] = volume
    if cls:
        spec["storageClassName"] = cls
    return {"metadata": meta, "spec": spec}


def on_nodes(*names: str, key: str = "kubernetes.io/hostname") -> Raw:
    return {
        "required": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(names)}]}]
        }
    }


def volume(name: str, affinity: Raw | None = None, labels: dict[str, str] | None = None, **spec: Any) -> Raw:
    body: Raw = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], **spec}
    if affinity:
        body["nodeAffinity"] = affinity
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": body}


def storage_class(
    name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "example.com/csi", **extra: Any
) -> Raw:
    return {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode, **extra}


def feasible(incoming: Raw, pods: list[Raw] = [], nodes: list[Raw] = NODES, **storage: list[Raw]) -> list[str]:  # noqa: B006
    return StockScheduler(nodes, pods, storage=StorageObjects.of(**storage)).feasible(incoming)


def refusals(incoming: Raw, pods: list[Raw] = [], nodes: list[Raw] = NODES, **storage: list[Raw]) -> dict[str, str]:  # noqa: B006
    return StockScheduler(nodes, pods, storage=StorageObjects.of(**storage)).refusals(incoming)


# --- VolumeBinding ---------------------------------------------------------------------------


def test_a_bound_claim_keeps_the_pod_where_its_volumes_node_affinity_allows() -> None:
    # TestVolumeBinding "PVC bound to a volume with node affinity": a local PV on a1.
    found = refusals(pod("p", "data"), claims=[claim("data", "local-a1")], volumes=[volume("local-a1", on_nodes("a1"))])
    assert found == {"a2": NODE_CONFLICT, "b1": NODE_CONFLICT}


def test_a_bound_volume_without_node_affinity_fits_every_node() -> None:
    assert feasible(pod("p", "data"), claims=[claim("data", "nfs")], volumes=[volume("nfs")]) == ["a1", "a2", "b1"]


def test_a_claim_that_does_not_exist_refuses_every_node() -> None:
    # TestVolumeBinding "PVC does not exist"
    found = refusals(pod("p", "missing"))
    assert set(found.values()) == {'persistentvolumeclaim "missing" not found'} and len(found) == 3


def test_an_unbound_immediate_claim_refuses_every_node() -> None:
    # TestVolumeBinding "immediate claims not bound"
    found = refusals(pod("p", "data"), claims=[claim("data", cls="fast")], classes=[storage_class("fast", "Immediate")])
    assert set(found.values()) == {UNBOUND_IMMEDIATE}


def test_a_claim_pre_bound_by_volume_name_alone_is_not_yet_bound() -> None:
    # binder.go: volumeName without the bind-completed annotation counts as unbound immediate.
    pre_bound = claim("data", "local-a1")
    del pre_bound["metadata"]["annotations"]
    found = refusals(pod("p", "data"), claims=[pre_bound], volumes=[volume("local-a1", on_nodes("a1"))])
    assert set(found.values()) == {UNBOUND_IMMEDIATE}


def test_a_wait_for_first_consumer_claim_provisions_where_the_class_allowed_topologies_allow() -> None:
    # TestVolumeBinding "unbound claims ... provisioning" with allowedTopologies.
    allowed = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-b"]}]}]
    found = refusals(
        pod("p", "data"),
        claims=[claim("data", cls="zonal")],
        classes=[storage_class("zonal", allowedTopologies=allowed)],
    )
    assert found == {"a1": BIND_CONFLICT, "a2": BIND_CONFLICT}


def test_a_wait_for_first_consumer_class_without_a_provisioner_needs_a_static_volume_that_fits() -> None:
    # TestVolumeBinding "unbound claims no matches" / "unbound claim with matching volume".
    local = storage_class("local", provisioner="kubernetes.io/no-provisioner")
    incoming = pod("p", "data")
    assert feasible(incoming, claims=[claim("data", cls="local")], classes=[local]) == []
    volumes = [volume("free-a2", on_nodes("a2"), storageClassName="local")]
    assert feasible(incoming, claims=[claim("data", cls="local")], classes=[local], volumes=volumes) == ["a2"]


@pytest.mark.parametrize(
    ("change", "fits"),
    [
        ({}, ["a2"]),
        ({"capacity": {"storage": "512Mi"}}, []),  # too small
        ({"accessModes": ["ReadOnlyMany"]}, []),  # not the mode asked
        ({"claimRef": {"namespace": "default", "name": "other"}}, []),  # bound to another claim
        ({"claimRef": {"namespace": "default", "name": "data"}}, ["a2"]),  # pre-bound to this one
        ({"storageClassName": "other"}, []),
    ],
)
def test_a_static_volume_matches_by_class_size_modes_and_claim_ref(change: Raw, fits: list[str]) -> None:
    local = storage_class("local", provisioner="kubernetes.io/no-provisioner")
    pv = volume("pv-a2", on_nodes("a2"), storageClassName="local")
    pv["spec"].update(change)
    assert feasible(pod("p", "data"), claims=[claim("data", cls="local")], classes=[local], volumes=[pv]) == fits


# --- VolumeZone ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "fits"),
    [
        (
            {ZONE: "zone-a"},
            ["a1", "a2", "plain"],
        ),  # TestSingleZone: the zone matches; a node without zone labels passes
        ({ZONE: "zone-a__zone-b"}, ["a1", "a2", "b1", "plain"]),  # TestMultiZone: `__` joins a set of zones
        ({BETA_ZONE: "zone-b"}, ["b1", "plain"]),  # a beta label on the PV reads the node's GA label
        ({REGION: "r1"}, ["plain"]),  # the zoned nodes carry no region label
    ],
)
def test_volume_zone_labels_keep_the_pod_in_the_volumes_zones(labels: dict[str, str], fits: list[str]) -> None:
    nodes = [*NODES, node("plain")]
    pv = volume("disk", labels=labels)
    assert feasible(pod("p", "data"), nodes=nodes, claims=[claim("data", "disk")], volumes=[pv]) == fits


def test_volume_zone_refusal_reads_as_kube_schedulers() -> None:
    pv = volume("disk", labels={ZONE: "zone-b"})
    assert refusals(pod("p", "data"), claims=[claim("data", "disk")], volumes=[pv])["a1"] == ZONE_CONFLICT


# --- VolumeRestrictions --------------------------------------------------------------------


def test_a_read_write_once_pod_claim_in_use_refuses_every_node() -> None:
    # TestAccessModeConflicts "pod conflicts": another pod (terminating ones too) holds the claim.
    rwop = claim("data", "disk", modes=("ReadWriteOncePod",))
    holder = pod("holder", "data", on="a1")
    found = refusals(pod("p", "data"), [holder], claims=[rwop], volumes=[volume("disk")])
    assert found == dict.fromkeys(["a1", "a2", "b1"], RWOP_CONFLICT)
    holder["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert feasible(pod("p", "data"), [holder], claims=[rwop], volumes=[volume("disk")]) == []


def test_a_read_write_once_pod_claim_not_in_use_is_free() -> None:
    # TestAccessModeConflicts "nothing": no other pod uses it; a ReadWriteOnce claim is not restricted.
    rwop = claim("data", "disk", modes=("ReadWriteOncePod",))
    assert feasible(pod("p", "data"), claims=[rwop], volumes=[volume("disk")]) == ["a1", "a2", "b1"]
    rwo = claim("data", "disk")
    assert feasible(pod("p", "data"), [pod("holder", "data", on="a1")], claims=[rwo], volumes=[volume("disk")]) == [
        "a1",
        "a2",
        "b1",
    ]


# --- NodeVolumeLimits ----------------------------------------------------------------------


def csi_volume(name: str, driver: str = "ebs.csi.aws.com") -> Raw:
    return volume(name, csi={"driver": driver, "volumeHandle": f"handle-{name}"})


def csi_node(name: str, count: int | None, driver: str = "ebs.csi.aws.com") -> Raw:
    entry: Raw = {"name": driver, "nodeID": name}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {"metadata": {"name": name}, "spec": {"drivers": [entry]}}


def test_csi_limits_refuse_a_node_whose_driver_count_would_be_exceeded() -> None:
    # TestCSILimits "should not count ... / should count": a1 holds 2 of its 2, a2 holds 1 of 2.
    claims = [claim(n, n) for n in ("v1", "v2", "v3", "new")]
    volumes = [csi_volume(n) for n in ("v1", "v2", "v3", "new")]
    pods = [pod("x", "v1", "v2", on="a1"), pod("y", "v3", on="a2")]
    csi_nodes = [csi_node("a1", 2), csi_node("a2", 2), csi_node("b1", None)]
    found = refusals(pod("p", "new"), pods, claims=claims, volumes=volumes, csi_nodes=csi_nodes)
    assert found == {"a1": MAX_VOLUME_COUNT}


def test_csi_limits_count_a_volume_already_attached_once() -> None:
    # A volume the node already has (a shared ReadWriteMany claim) adds nothing.
    claims = [claim("v1", "v1"), claim("v2", "v2")]
    volumes = [csi_volume("v1"), csi_volume("v2")]
    pods = [pod("x", "v1", "v2", on="a1")]
    found = refusals(pod("p", "v1"), pods, claims=claims, volumes=volumes, csi_nodes=[csi_node("a1", 2)])
    assert found == {}


def test_csi_limits_count_an_unbound_claim_under_its_class_provisioner() -> None:
    # TestCSILimits: pending claims count under their StorageClass's provisioner.
    claims = [claim("v1", "v1"), claim("new", cls="ebs")]
    found = refusals(
        pod("p", "new"),
        [pod("x", "v1", on="a1")],
        claims=claims,
        volumes=[csi_volume("v1")],
        classes=[storage_class("ebs", provisioner="ebs.csi.aws.com")],
        csi_nodes=[csi_node("a1", 1)],
    )
    assert found == {"a1": MAX_VOLUME_COUNT}


# --- DynamicResources ----------------------------------------------------------------------


def claimed(name: str, *claims: str) -> Raw:
    raw = pod(name)
    raw["spec"]["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    return raw


def resource_claim(name: str, selector: Raw | None, allocated: bool = True) -> Raw:
    status: Raw = {}
    if allocated:
        status["allocation"] = {"devices": {"results": []}}
        if selector is not None:
            status["allocation"]["nodeSelector"] = selector
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {}, "status": status}


def test_an_allocated_resource_claim_keeps_the_pod_on_the_nodes_its_selector_matches() -> None:
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a2"]}]}]}
    found = refusals(claimed("p", "gpu"), resource_claims=[resource_claim("gpu", selector)])
    assert found == {"a1": CLAIM_NOT_ON_NODE, "b1": CLAIM_NOT_ON_NODE}


def test_an_allocated_claim_without_a_node_selector_is_available_everywhere() -> None:
    assert feasible(claimed("p", "net"), resource_claims=[resource_claim("net", None)]) == ["a1", "a2", "b1"]


def test_a_claim_missing_or_not_allocated_refuses_every_node() -> None:
    assert set(refusals(claimed("p", "gpu")).values()) == {'resourceclaim "gpu" not found'}
    pending = resource_claim("gpu", None, allocated=False)
    assert set(refusals(claimed("p", "gpu"), resource_claims=[pending]).values()) == {CANNOT_ALLOCATE}


# --- the simulated scheduler reads the objects from the store ------------------------------


def test_the_simulated_scheduler_binds_a_pod_where_its_local_volume_is(store: Store) -> None:
    incoming = store_pod("p")
    incoming["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    local = volume("local-n2", on_nodes("n2"))
    store.load(
        [
            store_node("n1"),
            store_node("n2"),
            {"apiVersion": "v1", "kind": "PersistentVolume", **local},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim("data", "local-n2")},
            incoming,
        ]
    )
    Scheduler(store).step(T0)
    assert store.get("pods", "p", "default")["spec"]["nodeName"] == "n2"
