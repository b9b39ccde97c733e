"""kube-scheduler's volume and device rules in the core (scheduling-core.md §2 items 8–9), judged for
the replacement of a moved pod. Tables follow kube-scheduler's own tests:
pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go (TestVolumeBinding),
volumezone/volume_zone_test.go (TestSingleZone, TestMultiZone),
volumerestrictions/volume_restrictions_test.go (TestAccessModeConflicts),
nodevolumelimits/csi_test.go (TestCSILimits) and
dynamicresources/dynamicresources_test.go (TestPlugin: "claim allocated for another node")."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.scheduling import feasible_mask, predicates, refusal
from tests.builders import Obj, node, pod
from tests.scheduling.test_pod_rules import fits, the_pod, view_of

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
DRIVER = "ebs.csi.aws.com"


def why(objects: list[Obj], node_name: str, name: str = "p") -> str:
    snap, view = view_of(objects)
    found = refusal(the_pod(snap, name), node_name, view)
    return "" if found is None else str(found)


def scheduler_words(objects: list[Obj], node_name: str, name: str = "p") -> str:
    snap, view = view_of(objects)
    found = refusal(the_pod(snap, name), node_name, view)
    assert found is not None
    return predicates.for_scheduler(found)


def pvc(
    name: str, volume: str = "", *, storage_class: str | None = None, modes: tuple[str, ...] = ("ReadWriteOnce",)
) -> Obj:
    spec: Obj = {"volumeName": volume, "accessModes": list(modes)}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
        "status": {"phase": "Bound" if volume else "Pending"},
    }


def pv(name: str, *terms: Obj, labels: dict[str, str] | None = None, csi: str = "") -> Obj:
    spec: Obj = {"capacity": {"storage": "1Gi"}}
    if terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": list(terms)}}
    if csi:
        spec["csi"] = {"driver": DRIVER, "volumeHandle": csi}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def storage_class(
    name: str, *, wait: bool = True, zones: tuple[str, ...] = (), default: bool = False, provisioner: str = DRIVER
) -> Obj:
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": {}},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate",
    }
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}]
    if default:
        obj["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] = "true"
    return obj


def csi_node(name: str, limit: int) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [{"name": DRIVER, "nodeID": name, "allocatable": {"count": limit}}]},
    }


def label_in(key: str, *values: str) -> Obj:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def claiming(name: str, node_name: str, *claims: str, owner: str | None = "db") -> Obj:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return pod(name, node_name, "100m", "64Mi", owner=owner, volumes=volumes)


def ephemeral_pod(name: str, node_name: str, storage_class_name: str | None) -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    volumes = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}]
    return pod(name, node_name, "100m", "64Mi", owner="job", volumes=volumes)


TWO_ZONES = [
    node("a1", labels={ZONE: "zone-a", HOSTNAME: "a1"}),
    node("a2", labels={ZONE: "zone-a", HOSTNAME: "a2"}),
    node("b1", labels={ZONE: "zone-b", HOSTNAME: "b1"}),
]


# --- VolumeBinding ----------------------------------------------------------------------------------


def test_a_bound_volumes_node_affinity_keeps_the_pod_to_its_nodes() -> None:
    objects = [*TWO_ZONES, claiming("p", "a1", "data"), pvc("data", "disk-a"), pv("disk-a", label_in(ZONE, "zone-a"))]
    assert fits(objects) == {"a1": True, "a2": True, "b1": False}
    assert why(objects, "b1") == "volume disk-a: its node affinity does not allow this node"
    assert scheduler_words(objects, "b1") == "node(s) had volume node affinity conflict"


@pytest.mark.parametrize(
    ("objects", "b1", "reason"),
    [
        # "all bound": a volume without node affinity restricts nothing.
        ([pvc("data", "nfs"), pv("nfs")], True, ""),
        # "PVC does not exist": not judged, so the pod stays.
        ([], False, "VolumeBinding: PersistentVolumeClaim default/data is not in the snapshot"),
        # "pv not found"
        ([pvc("data", "gone")], False, "claim default/data is bound to volume gone, which does not exist"),
        # "immediate claims not bound"
        (
            [pvc("data", storage_class="fast"), storage_class("fast", wait=False)],
            False,
            "claim default/data is unbound and its StorageClass binds immediately",
        ),
        # A claim with no class binds immediately (IsDelayBindingMode).
        ([pvc("data")], False, "claim default/data is unbound and its StorageClass binds immediately"),
        # "unbound claims no matches" of a delayed class with allowedTopologies.
        (
            [pvc("data", storage_class="zonal"), storage_class("zonal", zones=("zone-a",))],
            False,
            "claim default/data: StorageClass zonal provisions no volume for this node (allowedTopologies)",
        ),
        # A delayed class provisioning anywhere.
        ([pvc("data", storage_class="any"), storage_class("any")], True, ""),
    ],
    ids=["bound-anywhere", "pvc-missing", "pv-missing", "unbound-immediate", "no-class", "wffc-topology", "wffc-any"],
)
def test_volume_binding(objects: list[Obj], b1: bool, reason: str) -> None:
    cluster = [*TWO_ZONES, claiming("p", "a1", "data"), *objects]
    assert fits(cluster)["b1"] is b1
    assert why(cluster, "b1").removesuffix(": a rule the planner does not model, so the pod stays") == reason


def test_an_ephemeral_volume_is_judged_by_its_new_claims_class_not_by_the_old_claims_volume() -> None:
    # The pod's current claim is bound to a volume on a1; its replacement gets a new claim of class
    # zonal, which provisions in zone-b only.
    objects = [
        *TWO_ZONES,
        ephemeral_pod("p", "a1", "zonal"),
        pvc("p-scratch", "local-a1", storage_class="zonal"),
        pv("local-a1", label_in(HOSTNAME, "a1")),
        storage_class("zonal", zones=("zone-b",)),
    ]
    assert fits(objects) == {"a1": False, "a2": False, "b1": True}
    assert why(objects, "a2") == (
        "ephemeral volume scratch: StorageClass zonal provisions no volume for this node (allowedTopologies)"
    )


def test_an_ephemeral_volume_naming_no_class_gets_the_default_one() -> None:
    objects = [*TWO_ZONES, ephemeral_pod("p", "a1", None), storage_class("std", zones=("zone-a",), default=True)]
    assert fits(objects) == {"a1": True, "a2": True, "b1": False}


@pytest.mark.parametrize(
    ("classes", "reason"),
    [
        ([], "VolumeBinding: ephemeral volume scratch names no StorageClass and the cluster has no default"),
        (
            [storage_class("std", wait=False, default=True)],
            "VolumeBinding: ephemeral volume scratch: StorageClass std binds immediately, so where its new volume "
            "is provisioned is not known",
        ),
    ],
    ids=["no-default", "immediate"],
)
def test_an_ephemeral_volume_whose_new_volume_cannot_be_placed_is_not_judged(classes: list[Obj], reason: str) -> None:
    objects = [*TWO_ZONES, ephemeral_pod("p", "a1", None), *classes]
    snap, view = view_of(objects)
    assert predicates.unjudged_rule(the_pod(snap, "p"), view) == reason
    assert not any(fits(objects).values())


# --- VolumeZone ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "passes"),
    [
        ({ZONE: "us-west1-a"}, {}, True),  # "node without labels"
        ({ZONE: "us-west1-a"}, {ZONE: "us-west1-a"}, True),  # "label zone matched"
        ({ZONE: "us-west1-a"}, {ZONE: "us-west1-b"}, False),  # "label zone failure domain not matched"
        ({REGION: "us-west1"}, {REGION: "us-west1", ZONE: "us-west1-a"}, True),  # "label region matched"
        ({REGION: "us-west1"}, {REGION: "us-east1", ZONE: "us-west1-a"}, False),  # "label region not matched"
        ({BETA_ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-a"}, True),  # "beta zone label matched"
        ({BETA_ZONE: "us-west1-a"}, {ZONE: "us-west1-a"}, True),  # "beta PV label, GA node label"
        ({BETA_ZONE: "us-west1-a"}, {ZONE: "us-west1-b"}, False),
        ({ZONE: "us-west1-a__us-west1-b"}, {ZONE: "us-west1-b"}, True),  # TestMultiZone: a set of zones
        ({ZONE: "us-west1-a__us-west1-b"}, {ZONE: "us-west1-c"}, False),
        ({ZONE: "us-west1-a"}, {"uselessLabel": "none"}, True),  # "node without topology labels"
        (
            {ZONE: "us-west1-a", REGION: "us-west1-a"},
            {ZONE: "us-west1-a"},
            False,
        ),  # "pv with zone and region, node with only zone"
        ({ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-a"}, False),  # "pv with zone,node with beta zone"
    ],
)
def test_volume_zone(pv_labels: dict[str, str], node_labels: dict[str, str], passes: bool) -> None:
    objects = [
        node("n", labels=node_labels),
        claiming("p", "", "data"),
        pvc("data", "vol"),
        pv("vol", labels=pv_labels),
    ]
    assert fits(objects) == {"n": passes}
    if not passes:
        assert scheduler_words(objects, "n") == "node(s) had no available volume zone"


# --- VolumeRestrictions: ReadWriteOncePod ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("other", "terminating", "passes"),
    [(False, False, True), (True, False, False), (True, True, True)],
    ids=["alone", "another-pod", "another-pod-terminating"],
)
def test_a_read_write_once_pod_claim_another_pod_uses_refuses_every_node(
    other: bool, terminating: bool, passes: bool
) -> None:
    objects = [*TWO_ZONES, claiming("p", "a1", "data"), pvc("data", "vol", modes=("ReadWriteOncePod",)), pv("vol")]
    if other:  # TestAccessModeConflicts' "failed conflict"; a terminating user is leaving
        user = claiming("other", "b1", "data", owner="x")
        if terminating:
            user["metadata"]["deletionTimestamp"] = "2026-01-15T12:00:00Z"
        objects.append(user)
    assert set(fits(objects).values()) == {passes}
    if not passes:
        assert why(objects, "a2") == "claim default/data is ReadWriteOncePod and default/other uses it"


def test_a_read_write_once_claim_may_be_shared() -> None:
    objects = [*TWO_ZONES, claiming("p", "a1", "data"), claiming("other", "b1", "data", owner="x")]
    objects += [pvc("data", "vol"), pv("vol")]
    assert all(fits(objects).values())


# --- NodeVolumeLimits --------------------------------------------------------------------------------------


def limited(*pods: Obj, limit: int = 2) -> list[Obj]:
    """a2 has a limit of `limit` volumes of DRIVER; a1 and b1 have no CSINode (no limit)."""
    volumes: list[Obj] = []
    for i in range(4):
        volumes += [pvc(f"c{i}", f"vol{i}"), pv(f"vol{i}", csi=f"handle-{i}")]
    return [*TWO_ZONES, csi_node("a2", limit), *volumes, *pods]


@pytest.mark.parametrize(
    ("on_a2", "limit", "passes"),
    [
        ((), 1, True),  # "fits when node volume limit >= new pods CSI volume"
        (("c1",), 2, True),
        (("c1",), 1, False),  # "doesn't when node volume limit <= pods CSI volume"
        (("c0",), 1, True),  # "count unique volumes": the pod's volume is attached there already
        (("c1", "c2"), 3, True),
        (("c1", "c2"), 2, False),
    ],
)
def test_node_volume_limits(on_a2: tuple[str, ...], limit: int, passes: bool) -> None:
    objects = limited(claiming("p", "a1", "c0"), *(claiming(f"q-{c}", "a2", c, owner="q") for c in on_a2), limit=limit)
    found = fits(objects)
    assert found["a2"] is passes
    assert found["b1"]  # no CSINode, no limit
    if not passes:
        assert why(objects, "a2") == f"{DRIVER}: the node's limit of {limit} volumes would be exceeded"
        assert scheduler_words(objects, "a2") == "node(s) exceed max volume count"


def test_an_unbound_claim_counts_against_its_classs_provisioner() -> None:
    objects = limited(claiming("q", "a2", "c1", owner="q"), limit=1)
    objects += [claiming("p", "a1", "new"), pvc("new", storage_class="any"), storage_class("any")]
    assert fits(objects) == {"a1": True, "a2": False, "b1": True}


def test_a_move_planned_this_cycle_frees_its_volume_on_the_source_and_takes_it_to_the_target() -> None:
    objects = limited(claiming("q", "a2", "c1", owner="q"), claiming("p", "a1", "c0"), limit=1)
    snap, view = view_of(objects)
    p = the_pod(snap, "p")
    assert not feasible_mask(p, view)[view.table.index["a2"]]
    view.move(the_pod(snap, "q"), "b1")
    assert feasible_mask(p, view)[view.table.index["a2"]]


# --- DynamicResources -----------------------------------------------------------------------------------


def resource_claim(name: str, *nodes: str, allocated: bool = True) -> Obj:
    status: Obj = {}
    if allocated:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(nodes)}]}
        status["allocation"] = {"nodeSelector": {"nodeSelectorTerms": [term]}} if nodes else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {},
        "status": status,
    }


def device_pod(**entry: Any) -> Obj:
    obj = pod("p", "a1", "100m", "64Mi", owner="gpu")
    obj["spec"]["resourceClaims"] = [{"name": "gpu", **entry}]
    return obj


def test_an_allocated_claims_node_selector_keeps_the_pod_to_its_nodes() -> None:
    objects = [*TWO_ZONES, device_pod(resourceClaimName="shared"), resource_claim("shared", "a1", "a2")]
    assert fits(objects) == {"a1": True, "a2": True, "b1": False}
    assert scheduler_words(objects, "b1") == "resourceclaim not available on the node"


def test_an_allocated_claim_without_a_node_selector_allows_every_node() -> None:
    assert all(fits([*TWO_ZONES, device_pod(resourceClaimName="net"), resource_claim("net")]).values())


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        (
            [device_pod(resourceClaimTemplateName="gpu-template")],
            "DynamicResources: claim gpu is made from template gpu-template; the replacement's devices are "
            "allocated when it is scheduled",
        ),
        (
            [device_pod(resourceClaimName="shared"), resource_claim("shared", allocated=False)],
            "DynamicResources: ResourceClaim default/shared is not allocated",
        ),
        (
            [device_pod(resourceClaimName="shared")],
            "DynamicResources: ResourceClaim default/shared is not in the snapshot",
        ),
    ],
    ids=["template", "unallocated", "missing"],
)
def test_a_claim_the_core_cannot_judge_keeps_the_pod_and_names_the_rule(objects: list[Obj], reason: str) -> None:
    cluster = [*TWO_ZONES, *objects]
    snap, view = view_of(cluster)
    assert predicates.unjudged_rule(the_pod(snap, "p"), view) == reason
    assert why(cluster, "b1") == f"{reason}: a rule the planner does not model, so the pod stays"


def test_an_inline_disk_is_not_judged() -> None:
    obj = pod("p", "a1", "100m", "64Mi", volumes=[{"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}])
    snap, view = view_of([*TWO_ZONES, obj])
    assert predicates.unjudged_rule(the_pod(snap, "p"), view) == (
        "VolumeRestrictions: inline gcePersistentDisk volume d (same-disk conflicts are not modelled)"
    )


def test_the_extender_leaves_the_volume_rules_to_kube_scheduler() -> None:
    objects = [*TWO_ZONES, claiming("p", "a1", "data"), pvc("data", "disk-a"), pv("disk-a", label_in(ZONE, "zone-a"))]
    snap, view = view_of(objects)
    assert predicates.checks(the_pod(snap, "p"), view, scheduler_filtered=True).passed().all()
