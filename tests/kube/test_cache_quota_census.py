"""QuotaReclaim's census from the cache's pod rows equals one plain pass over the Snapshot's pods.

The oracle is the loop the census takes without rows (every pod visited, its group found by
`Membership.group_of`). After any sequence of pod adds, changes (label, namespace-local quota,
node, phase, deletion), deletes and node changes, the census the cache's rows give has the same
groups, the same holding and pending pods in Snapshot order, the same sums, the same unknown labels
and the same holder for each key.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from kube_support import apply_step, cluster_changes
from kubernetes import client as k8s

from descheduler.kube import KINDS, NODES, PODS, ClusterCache, KubeClient
from descheduler.model import ElasticQuota, Node, Pod
from descheduler.podrows import QUOTA_LABEL
from descheduler.resources import Resources
from descheduler.snapshot import Snapshot
from strategies.quota.accounting import Census, Membership
from strategies.quota.tree import build_tree

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
NODE_NAMES = ("n1", "n2", "n3")
# team-a has one quota (its pods without a label belong to it), team-b two (they belong to none),
# team-c none.
TREE = build_tree(
    (
        ElasticQuota(namespace="team-a", name="qa", api_group="scheduling.sigs.k8s.io"),
        ElasticQuota(namespace="team-b", name="qb1", api_group="scheduling.sigs.k8s.io"),
        ElasticQuota(namespace="team-b", name="qb2", api_group="scheduling.sigs.k8s.io"),
    ),
    "quota.scheduling.koordinator.sh/parent",
)
SHARED = (Resources({"cpu": 500, "memory": 2**30}), Resources({"cpu": 1000}), Resources())
requests = st.one_of(
    st.sampled_from(SHARED),  # one object shared by many pods, as a workload's are
    st.builds(lambda c, g: Resources({"cpu": c, "nvidia.com/gpu": g}), st.integers(0, 4000), st.integers(0, 2)),
)
pods = st.builds(
    lambda ns, name, label, node, phase, requested, deleting: Pod(
        namespace=ns,
        name=name,
        node_name=node,
        phase=phase,
        labels={} if label is None else {QUOTA_LABEL: label},
        requests=requested,
        deleting=deleting,
    ),
    st.sampled_from(("team-a", "team-b", "team-c")),
    st.sampled_from(("p", "p-1", "q", "z")),
    st.sampled_from((None, "", "qa", "qb1", "qb2", "nope")),
    st.sampled_from(("", *NODE_NAMES, "gone")),
    st.sampled_from(("Running", "Pending", "Succeeded", "Failed")),
    requests,
    st.booleans(),
)


def assert_same_census(snapshot: Snapshot) -> None:
    assert snapshot.pod_rows is not None
    oracle = Membership.build(TREE, QUOTA_LABEL)
    want = Census.take(snapshot.pods, oracle)  # no rows: the loop
    assert isinstance(want.holding, dict)
    membership = Membership.build(TREE, QUOTA_LABEL)
    got = Census.take(snapshot.pods, membership, snapshot.pod_rows)
    assert not isinstance(got.holding, dict)  # the rows were read
    assert got.requested == want.requested
    assert sorted(got.holding) == sorted(want.holding) and len(got.holding) == len(want.holding)
    assert {group: got.holding[group] for group in got.holding} == want.holding
    assert got.pending == want.pending
    assert membership.unknown_labels == oracle.unknown_labels
    for pod in snapshot.pods:
        assert got.holder(pod.key) == want.holder(pod.key)
    assert got.holder("team-a/absent") is None


@settings(max_examples=200, deadline=None)
@given(initial=st.lists(pods, max_size=12), steps=cluster_changes(pods, NODE_NAMES))
def test_the_census_from_the_cache_rows_equals_one_pass_over_the_pods(
    initial: list[Pod], steps: list[tuple[str, object]]
) -> None:
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    cache = ClusterCache(kube, kinds=(NODES, PODS))  # fed directly, never started
    try:
        cache.replace(KINDS[NODES], {n: Node(name=n) for n in NODE_NAMES[:2]}, {})
        cache.replace(KINDS[PODS], {p.key: p for p in initial}, {})
        taken = []
        for step, value in [*steps, ("snapshot", None)]:
            if step != "snapshot":
                apply_step(cache, step, value)
            else:
                snapshot = cache.snapshot(NOW)
                assert_same_census(snapshot)
                taken.append(snapshot)
        for snapshot in taken:  # later events changed nothing a snapshot already holds
            assert_same_census(snapshot)
    finally:
        kube.close()


def test_another_quota_label_is_read_from_the_pods() -> None:
    """The rows keep the default quota label's value only: a policy naming another label is served
    by the loop, with the same answer."""
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    try:
        cache = ClusterCache(kube, kinds=(NODES, PODS))
        cache.replace(KINDS[NODES], {"n1": Node(name="n1")}, {})
        running = Pod(namespace="team-b", name="p", node_name="n1", labels={"team": "qb1"}, requests=SHARED[1])
        cache.replace(KINDS[PODS], {running.key: running}, {})
        snapshot = cache.snapshot(NOW)
        census = Census.take(snapshot.pods, Membership.build(TREE, "team"), snapshot.pod_rows)
        assert census.requested == {"qb1": {"cpu": 1000}}
        assert census.holding == {"qb1": [running]}
    finally:
        kube.close()
