"""The cache lists PersistentVolumeClaims and PersistentVolumes into the snapshot; refused them (403),
it syncs anyway and the pods with claims are not moved, with a warning (issue 60)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kube_support import node, pod

from descheduler.eligibility import eviction_refusal, volume_refusal
from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import NODES, PODS, PVCS, PVS, ClusterCache
from descheduler.policy import EvictorArgs

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
