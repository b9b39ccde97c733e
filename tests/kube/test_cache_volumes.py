"""The cache lists PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes and
ResourceClaims into the snapshot; refused one (403), it syncs anyway and the pods that need it are
not moved, with a warning (issue 60)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kube_support import node, pod

from descheduler.eligibility import eviction_refusal, volume_refusal
from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import CSI_NODES, NODES, PODS, PVCS, PVS, RESOURCE_CLAIMS, STORAGE_CLASSES, ClusterCache
from descheduler.policy import EvictorArgs
from descheduler.scheduling import volume_rules

MakeCache = Callable[..., ClusterCache]
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
HOSTNAME = "kubernetes.io/hostname"


def _labelled(name: str) -> dict[str, Any]:
    obj = node(name)
    obj["metadata"].setdefault("labels", {})[HOSTNAME] = name
    return obj


def _seed(server: FakeApiServer) -> None:
    db = pod("db-0", node="n1", owner="db")
    db["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]
    server.store.load([_labelled("n1"), _labelled("n2"), db, pod("web-0", node="n1", owner="web")])
    server.store.load(
        [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data-db-0", "namespace": "default"},
                "spec": {"volumeName": "local-n1"},
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": "local-n1"},
                "spec": {
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["n1"]}]}
                            ]
                        }
                    }
                },
            },
        ]
    )


def test_claims_and_volumes_reach_the_snapshot_and_pin_the_pod(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server)
    cache = make_cache(kinds=(NODES, PODS, PVCS, PVS)).start()
    assert cache.wait_synced(10)
    snap = cache.snapshot(NOW)
    assert set(snap.pvcs) == {"default/data-db-0"} and set(snap.pvs) == {"local-n1"}
    assert snap.volumes_unreadable == ""
    db = next(p for p in snap.pods if p.name == "db-0")
    found = eviction_refusal(db, snap, EvictorArgs())
    assert found is not None and str(found) == "pinned by volume local-n1"


def test_refused_volumes_leave_the_pods_with_claims_unmoved_with_a_warning(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    _seed(server)
    message = 'persistentvolumes is forbidden: User "x" cannot list resource "persistentvolumes"'
    server.faults.fail_next(1000, path="^/api/v1/persistentvolumes$", status=403, message=message)
    cache = make_cache(kinds=(NODES, PODS, PVCS, PVS)).start()
    assert cache.wait_synced(10)
    assert cache.not_ready() is None
    snap = cache.snapshot(NOW)
    assert snap.volumes_unreadable == "may not list persistentvolumes"
    assert any("persistentvolumes" in w and "not moved" in w for w in snap.warnings)
    db = next(p for p in snap.pods if p.name == "db-0")
    found = eviction_refusal(db, snap, EvictorArgs())
    assert found is not None and found.code == "VolumesUnreadable"
    web = next(p for p in snap.pods if p.name == "web-0")
    assert volume_refusal(web, snap) is None


def _seed_storage(server: FakeApiServer) -> None:
    scratch = pod("job-0", node="n1", owner="job")
    scratch["spec"]["volumes"] = [
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "zonal"}}}}
    ]
    gpu = pod("gpu-0", node="n1", owner="gpu")
    gpu["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-0"}]
    server.store.load([_labelled("n1"), _labelled("n2"), scratch, gpu])
    server.store.load(
        [
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "zonal", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "pd.csi.storage.gke.io",
                "volumeBindingMode": "WaitForFirstConsumer",
                "allowedTopologies": [
                    {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}
                ],
            },
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": "n1"},
                "spec": {"drivers": [{"name": "pd.csi.storage.gke.io", "nodeID": "n1", "allocatable": {"count": 15}}]},
            },
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "gpu-0", "namespace": "default"},
                "spec": {"devices": {"requests": []}},
                "status": {
                    "allocation": {
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                            ]
                        }
                    }
                },
            },
        ]
    )


def test_storage_classes_csi_nodes_and_resource_claims_reach_the_snapshot(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    _seed_storage(server)
    cache = make_cache(kinds=(NODES, PODS, STORAGE_CLASSES, CSI_NODES, RESOURCE_CLAIMS)).start()
    assert cache.wait_synced(10)
    snap = cache.snapshot(NOW)
    zonal = snap.storage_classes["zonal"]
    assert (zonal.provisioner, zonal.wait_for_first_consumer, zonal.default) == ("pd.csi.storage.gke.io", True, True)
    assert snap.csi_nodes["n1"].limits == {"pd.csi.storage.gke.io": 15}
    claim = snap.resource_claims["default/gpu-0"]
    assert claim.allocated and claim.node_selector is not None
    assert snap.unreadable == {}


def test_refused_storage_classes_leave_the_pods_that_need_them_unjudged_with_a_warning(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    _seed_storage(server)
    message = 'storageclasses.storage.k8s.io is forbidden: User "x" cannot list resource "storageclasses"'
    server.faults.fail_next(1000, path="^/apis/storage.k8s.io/v1/storageclasses$", status=403, message=message)
    cache = make_cache(kinds=(NODES, PODS, PVCS, PVS, STORAGE_CLASSES, CSI_NODES)).start()
    assert cache.wait_synced(10)
    assert cache.not_ready() is None
    snap = cache.snapshot(NOW)
    assert set(snap.unreadable) == {STORAGE_CLASSES}
    assert any("storageclasses" in w and "not moved" in w for w in snap.warnings)
    job = next(p for p in snap.pods if p.name == "job-0")
    assert volume_rules.unjudged(job, snap) == (
        "VolumeBinding: ephemeral volume scratch: could not list storageclasses.storage.k8s.io"
    )
