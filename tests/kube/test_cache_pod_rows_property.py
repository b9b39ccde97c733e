"""Property: the node table built on the cache's snapshot, from the per-pod rows the cache keeps as
events arrive, equals the table built from scratch on the same objects (every array, exactly), after
any sequence of pod adds, changes (node, phase, resources, deletion), deletes and node changes; and
a snapshot's rows never change under it when later events arrive."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from kube_support import apply_step, cluster_changes, reference_snapshot
from kubernetes import client as k8s

from descheduler.kube import KINDS, NODES, PODS, ClusterCache, KubeClient
from descheduler.loadsource.reading import LoadReading
from descheduler.model import LABEL_PRIORITY_CLASS, Node, NodeUsage, OwnerRef, Pod, PodUsage
from descheduler.policy import SchedulingArgs
from descheduler.resources import Resources
from descheduler.scheduling import NodeTable, build_table
from descheduler.scheduling.table import PER_NODE_ARRAYS
from descheduler.snapshot import Snapshot

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
NODE_NAMES = ("n1", "n2", "n3")
POD_NAMES = ("p", "p-1", "q", "z")
NAMESPACES_USED = ("a", "b")
ARGS = SchedulingArgs()

amounts = st.sampled_from((0, 1, 100, 250, 2**30))
resources = st.fixed_dictionaries(
    {}, optional={"cpu": amounts, "memory": amounts, "example.com/gpu": st.sampled_from((0, 1, 2))}
).map(Resources)
moments = st.sampled_from((None, NOW - timedelta(seconds=30), NOW - timedelta(seconds=600)))

pods = st.builds(
    lambda ns, name, node, phase, requests, limits, prod_label, priority, deleting, scheduled, owner: Pod(
        namespace=ns,
        name=name,
        node_name=node,
        phase=phase,
        requests=requests,
        limits=limits,
        labels={LABEL_PRIORITY_CLASS: "koord-prod"} if prod_label else {},
        priority=priority,
        qos="Burstable" if requests else "BestEffort",
        deleting=deleting,
        scheduled_at=scheduled,
        owner=OwnerRef(kind="ReplicaSet", name=owner, uid=f"uid-{owner}", controller=True) if owner else None,
    ),
    st.sampled_from(NAMESPACES_USED),
    st.sampled_from(POD_NAMES),
    st.sampled_from(("", *NODE_NAMES, "gone")),
    st.sampled_from(("Running", "Pending", "Succeeded", "Failed")),
    resources,
    resources,
    st.booleans(),
    st.sampled_from((None, 9500, 5500)),
    st.booleans(),
    moments,
    st.sampled_from(("", "rs1")),
)
node_usages = st.dictionaries(
    st.sampled_from(NODE_NAMES),
    st.tuples(resources, st.sampled_from((0, 60, 3600)), st.sampled_from((NOW, NOW - timedelta(seconds=60)))),
)
pod_usages = st.dictionaries(st.tuples(st.sampled_from(NAMESPACES_USED), st.sampled_from(POD_NAMES)), resources)
changes = cluster_changes(pods, NODE_NAMES, st.tuples(node_usages, pod_usages))


def reading(
    nodes: dict[str, tuple[Resources, int, datetime]], pod_usage: dict[tuple[str, str], Resources]
) -> LoadReading:
    return LoadReading(
        source="test",
        read_at=NOW,
        node_usage={
            name: NodeUsage(node=name, timestamp=at, usage=usage, source="test", report_interval_seconds=interval)
            for name, (usage, interval, at) in nodes.items()
        },
        pod_usage={
            f"{ns}/{name}": PodUsage(namespace=ns, name=name, timestamp=NOW, usage=usage, source="test")
            for (ns, name), usage in pod_usage.items()
        },
    )


def assert_same_table(got: NodeTable, want: NodeTable) -> None:
    """Every array and index of two node tables, exactly; each counted pod's row by key."""
    for name in ("names", "index", "resources", "column", "measured", "metric_age", "taint_groups"):
        assert getattr(got, name) == getattr(want, name), name
    for name in PER_NODE_ARRAYS:
        mine, theirs = getattr(got, name), getattr(want, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name
    assert set(got.pod_rows) == set(want.pod_rows)
    by_key = {p.key: p for p in want.snapshot.pods}
    for key in want.pod_rows:
        mine, theirs = got.load_of(by_key[key]), want.load_of(by_key[key])
        for part in ("requests", "usage", "estimate"):
            assert np.array_equal(getattr(mine, part), getattr(theirs, part)), (key, part)
        assert (mine.has_metric, mine.prod) == (theirs.has_metric, theirs.prod), key


def sized_node(name: str) -> Node:
    return Node(name=name, allocatable=Resources({"cpu": 4000, "memory": 2**33, "pods": 110}))


def with_load(snapshot: Snapshot, load: LoadReading) -> Snapshot:
    usage = {name: u for name, u in load.node_usage.items() if name in snapshot.node_by_name}
    return dataclasses.replace(snapshot, node_usage=usage, pod_usage=dict(load.pod_usage))


@settings(max_examples=150, deadline=None)
@given(initial=st.lists(pods, max_size=12), steps=changes)
def test_table_from_cached_rows_equals_table_from_scratch(initial: list[Pod], steps: list[tuple[str, object]]) -> None:
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    cache = ClusterCache(kube, kinds=(NODES, PODS))  # fed directly, never started
    taken: list[tuple[Snapshot, NodeTable]] = []
    try:
        cache.replace(KINDS[NODES], {n: Node(name=n) for n in NODE_NAMES[:2]}, {})
        cache.replace(KINDS[PODS], {p.key: p for p in initial}, {})
        for step, value in [*steps, ("snapshot", ({}, {}))]:
            if step != "snapshot":
                apply_step(cache, step, value, node=sized_node)
            else:
                assert isinstance(value, tuple)
                load = reading(*value)
                snapshot = cache.snapshot(NOW, load)
                assert snapshot.pod_rows is not None and snapshot.pod_rows.fits(snapshot.pods, snapshot.nodes)
                table = build_table(snapshot, ARGS)
                assert_same_table(table, build_table(dataclasses.replace(snapshot, pod_rows=None), ARGS))
                assert_same_table(table, build_table(with_load(reference_snapshot(cache, NOW), load), ARGS))
                taken.append((snapshot, table))
        for snapshot, table in taken:  # later events changed nothing a snapshot already holds
            assert_same_table(build_table(snapshot, ARGS), table)
    finally:
        kube.close()


def test_rows_made_for_other_pods_are_not_used() -> None:
    """A Snapshot copied with other pods (dataclasses.replace) counts its own pods, not the cache's rows."""
    kube = KubeClient(k8s.Configuration(host="http://127.0.0.1:9"))
    try:
        cache = ClusterCache(kube, kinds=(NODES, PODS))
        cache.replace(KINDS[NODES], {"n1": Node(name="n1")}, {})
        running = [Pod(namespace="a", name=f"p{i}", node_name="n1", requests=Resources({"cpu": 100})) for i in range(3)]
        cache.replace(KINDS[PODS], {p.key: p for p in running}, {})
        snapshot = cache.snapshot(NOW)
        fewer = dataclasses.replace(snapshot, pods=snapshot.pods[:1])
        table = build_table(fewer, ARGS)
        assert table.requested[0, table.column["cpu"]] == 100
        assert set(table.pod_rows) == {"a/p0"}
        assert build_table(snapshot, ARGS).requested[0, table.column["cpu"]] == 300
    finally:
        kube.close()
