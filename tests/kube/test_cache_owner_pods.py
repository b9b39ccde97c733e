"""Property: the pods per controller uid the cache keeps as events arrive (Snapshot.owner_pods, read
by the eviction budget) are exactly the snapshot's pods grouped by owner uid in the snapshot's order,
after any adds, changes (node, phase, owner), deletes and node changes; pods bound to a node that
does not exist are left out; a snapshot's index never changes under it when later events arrive."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kube_support import apply_step, cluster_changes
from kubernetes import client as k8s

from descheduler.budget import _pods_by_owner
from descheduler.kube import KINDS, NODES, PODS, ClusterCache, KubeClient
from descheduler.model import Node, OwnerRef, Pod
from descheduler.snapshot import Snapshot
from tests.kube.test_cache_pod_rows_property import NOW
from tests.kube.test_cache_snapshot_property import NODE_NAMES, pods

changes = cluster_changes(pods, NODE_NAMES)


def grouped(snapshot: Snapshot) -> dict[str, tuple[Pod, ...]]:
    out: dict[str, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.owner is not None:
            out.setdefault(pod.owner.uid, []).append(pod)
    return {uid: tuple(found) for uid, found in out.items()}


@given(initial=st.lists(pods, max_size=12), steps=changes)
def test_owner_index_equals_the_snapshot_pods_grouped_by_owner(
    initial: list[Pod], steps: list[tuple[str, object]]
) -> None:
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    cache = ClusterCache(kube, kinds=(NODES, PODS))  # fed directly, never started
    taken: list[tuple[Snapshot, dict[str, tuple[Pod, ...]]]] = []
    try:
        cache.replace(KINDS[NODES], {n: Node(name=n) for n in NODE_NAMES[:2]}, {})
        cache.replace(KINDS[PODS], {p.key: p for p in initial}, {})
        for step, value in [*steps, ("snapshot", None)]:
            if step != "snapshot":
                apply_step(cache, step, value)
            else:
                snapshot = cache.snapshot(NOW)
                assert snapshot.owner_pods is not None and snapshot.owner_pods.fits(snapshot.pods)
                want = grouped(snapshot)
                assert dict(snapshot.owner_pods.by_owner) == want
                taken.append((snapshot, want))
        for snapshot, want in taken:  # later events changed nothing a snapshot already holds
            assert snapshot.owner_pods is not None and dict(snapshot.owner_pods.by_owner) == want
    finally:
        kube.close()


def test_a_pod_changed_in_place_is_held_as_changed() -> None:
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    cache = ClusterCache(kube, kinds=(NODES, PODS))
    try:
        cache.replace(KINDS[NODES], {"n1": Node(name="n1")}, {})
        owner = OwnerRef(kind="ReplicaSet", name="rs1", uid="uid-rs1", controller=True)
        running = Pod(namespace="a", name="p", node_name="n1", phase="Running", owner=owner)
        cache.replace(KINDS[PODS], {running.key: running}, {})
        assert cache.snapshot(NOW).owner_pods.by_owner == {"uid-rs1": (running,)}  # type: ignore[union-attr]
        relabelled = Pod(namespace="a", name="p", node_name="n1", phase="Running", owner=owner, labels={"x": "1"})
        cache.apply(KINDS[PODS], "MODIFIED", relabelled.key, relabelled, None)
        assert cache.snapshot(NOW).owner_pods.by_owner == {"uid-rs1": (relabelled,)}  # type: ignore[union-attr]
    finally:
        kube.close()


def test_the_budget_groups_the_pods_itself_when_the_index_was_made_for_other_pods() -> None:
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    cache = ClusterCache(kube, kinds=(NODES, PODS))
    try:
        cache.replace(KINDS[NODES], {"n1": Node(name="n1")}, {})
        owner = OwnerRef(kind="ReplicaSet", name="rs1", uid="uid-rs1", controller=True)
        cache.replace(KINDS[PODS], {"a/p": Pod(namespace="a", name="p", node_name="n1", owner=owner)}, {})
        snapshot = cache.snapshot(NOW)
        assert _pods_by_owner(snapshot) is snapshot.owner_pods.by_owner  # type: ignore[union-attr]
        other = Pod(namespace="a", name="q", node_name="n1", owner=owner)
        copied = Snapshot(
            **{**{f: getattr(snapshot, f) for f in Snapshot.__dataclass_fields__}, "pods": (*snapshot.pods, other)}
        )
        assert dict(_pods_by_owner(copied)) == {"uid-rs1": [*snapshot.pods, other]}
    finally:
        kube.close()
