"""One pod's load read straight from its maps (`one_pod_load`, what the extender asks for every pod it
is sent) equals its row of the batch computation (`pod_matrix`), whatever the pod, the nodes' resources,
the load source's reading and the estimator's factors."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.model import Node, Pod, PodUsage
from descheduler.policy import SchedulingArgs
from descheduler.resources import Resources
from descheduler.scheduling import build_table
from descheduler.scheduling.table import one_pod_load, pod_matrix
from descheduler.snapshot import Snapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = ["cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "example.com/dongle"]
amounts = st.integers(min_value=0, max_value=2**40)
vectors = st.dictionaries(st.sampled_from(NAMES), amounts, max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    requests=vectors,
    limits=vectors,
    node_resources=st.lists(st.sampled_from(NAMES), unique=True, max_size=6),
    usage=st.none() | st.dictionaries(st.sampled_from(NAMES), amounts, max_size=4),
    priority=st.none() | st.integers(min_value=0, max_value=10_000),
    factors=st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(1, 100), max_size=3),
)
def test_one_pod_load_equals_its_row_of_the_batch(
    requests: dict[str, int],
    limits: dict[str, int],
    node_resources: list[str],
    usage: dict[str, int] | None,
    priority: int | None,
    factors: dict[str, int],
) -> None:
    pod = Pod(
        namespace="ns",
        name="incoming",
        requests=Resources(requests),
        limits=Resources(limits),
        priority=priority,
    )
    node = Node(name="n", allocatable=Resources({name: 10**12 for name in node_resources}))
    readings = (
        []
        if usage is None
        else [PodUsage(namespace="ns", name="incoming", timestamp=NOW, usage=Resources(usage), source="test")]
    )
    snapshot = Snapshot.build(now=NOW, nodes=[node], pods=[], pod_usage=readings)
    table = build_table(snapshot, SchedulingArgs(estimated_scaling_factors=factors))
    batch = pod_matrix(table, [pod])
    one = one_pod_load(table, pod)
    assert one.requests.tolist() == batch.requests[0].tolist()
    assert one.usage.tolist() == batch.usage[0].tolist()
    assert one.estimate.tolist() == batch.estimate[0].tolist()
    assert one.has_metric == bool(batch.has_metric[0])
    assert one.prod == bool(batch.prod[0])
    assert one.requests.dtype == one.usage.dtype == one.estimate.dtype == np.int64


def test_a_pod_the_snapshot_counts_reads_its_row_of_the_table() -> None:
    pod = Pod(namespace="ns", name="bound", node_name="n", requests=Resources({"cpu": 500}))
    node = Node(name="n", allocatable=Resources({"cpu": 4000, "memory": 2**33, "pods": 110}))
    table = build_table(Snapshot.build(now=NOW, nodes=[node], pods=[pod]), SchedulingArgs())
    assert table.load_of(pod).requests.tolist() == pod_matrix(table, [pod]).requests[0].tolist()


@settings(max_examples=200, deadline=None)
@given(
    pods=st.lists(
        st.tuples(
            st.sampled_from([{}, {"cpu": 500}, {"cpu": 500, "memory": 2**30}]),
            st.sampled_from([{}, {"cpu": 1000}]),
            st.sampled_from([None, 5000, 9500]),  # no band, batch, prod
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_pods_outside_the_snapshot_each_get_the_load_of_their_own_maps(
    pods: list[tuple[dict[str, int], dict[str, int], int | None, bool]],
) -> None:
    """`load_of` keeps one load per (requests, limits, prod) for pods with no usage of their own:
    asked in any order, each pod gets what `one_pod_load` computes for it alone."""
    made = [
        Pod(namespace="ns", name=f"p{i}", requests=Resources(r), limits=Resources(lim), priority=priority)
        for i, (r, lim, priority, _) in enumerate(pods)
    ]
    readings = [
        PodUsage(namespace="ns", name=f"p{i}", timestamp=NOW, usage=Resources({"cpu": 7 * i}), source="test")
        for i, (*_, measured) in enumerate(pods)
        if measured
    ]
    node = Node(name="n", allocatable=Resources({"cpu": 4000, "memory": 2**33, "pods": 110}))
    table = build_table(Snapshot.build(now=NOW, nodes=[node], pods=[], pod_usage=readings), SchedulingArgs())
    for pod in made:
        mine, alone = table.load_of(pod), one_pod_load(table, pod)
        assert (mine.requests.tolist(), mine.usage.tolist(), mine.estimate.tolist()) == (
            alone.requests.tolist(),
            alone.usage.tolist(),
            alone.estimate.tolist(),
        )
        assert (mine.has_metric, mine.prod) == (alone.has_metric, alone.prod)
