"""Property: whatever sequence of changes the cache applies, its incrementally kept snapshot equals
what `Snapshot.build` makes of the same records (the reference the file loader uses)."""

from __future__ import annotations

from datetime import UTC, datetime
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st
from kube_support import apply_step, cluster_changes, reference_snapshot
from kubernetes import client as k8s

from descheduler.kube import KINDS, NAMESPACES, NODES, PODS, ClusterCache, KubeClient
from descheduler.kube import cache as cache_module
from descheduler.model import Node, OwnerRef, Pod
from descheduler.snapshot import Snapshot

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
NODE_NAMES = ("n1", "n2", "n3")
NAMESPACES_USED = ("a", "a-b", "b")  # "a-b" sorts between "a" and "b" only if the order is (namespace, name)

pods = st.builds(
    lambda ns, name, node, phase, owner: Pod(
        namespace=ns,
        name=name,
        node_name=node,
        phase=phase,
        owner=OwnerRef(kind="ReplicaSet", name=owner, uid=f"uid-{owner}", controller=True) if owner else None,
    ),
    st.sampled_from(NAMESPACES_USED),
    st.sampled_from(("p", "p-1", "q", "z")),
    st.sampled_from(("", *NODE_NAMES, "gone")),
    st.sampled_from(("Running", "Pending", "Succeeded")),
    st.sampled_from(("", "rs1", "rs2")),
)
changes = cluster_changes(pods, NODE_NAMES)


def _without_warnings(snapshot: Snapshot) -> Snapshot:
    return Snapshot(**{f: getattr(snapshot, f) for f in Snapshot.__dataclass_fields__ if f != "warnings"})


@settings(max_examples=150, deadline=None)
@given(initial=st.lists(pods, max_size=12), steps=changes)
def test_incremental_snapshot_equals_snapshot_build(initial: list[Pod], steps: list[tuple[str, object]]) -> None:
    check_incremental_snapshot(initial, steps)


@settings(max_examples=100, deadline=None)
@given(initial=st.lists(pods, max_size=12), steps=changes)
def test_pod_order_merged_in_bulk_equals_snapshot_build(initial: list[Pod], steps: list[tuple[str, object]]) -> None:
    # Keys added and removed between snapshots are merged into the pod order in one pass past
    # a few dozen; here from the first, so that path is what these small clusters take.
    with patch.object(cache_module, "_ONE_BY_ONE", 0):
        check_incremental_snapshot(initial, steps)


def check_incremental_snapshot(initial: list[Pod], steps: list[tuple[str, object]]) -> None:
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    cache = ClusterCache(kube, kinds=(NODES, PODS, NAMESPACES))  # fed directly, never started
    try:
        cache.replace(KINDS[NODES], {n: Node(name=n) for n in NODE_NAMES[:2]}, {})
        cache.replace(KINDS[NAMESPACES], {"a": {"team": "x"}}, {})
        cache.replace(KINDS[PODS], {p.key: p for p in initial}, {})
        for step, value in steps:
            if step != "snapshot":
                apply_step(cache, step, value)
            else:
                assert _without_warnings(cache.snapshot(NOW)) == _without_warnings(reference_snapshot(cache, NOW))
        assert _without_warnings(cache.snapshot(NOW)) == _without_warnings(reference_snapshot(cache, NOW))
    finally:
        kube.close()
