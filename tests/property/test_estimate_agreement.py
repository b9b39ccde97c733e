"""The node table's bulk estimate and the scalar estimator are two codings of one formula: they must agree."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.model import Node, Pod
from descheduler.policy import SchedulingArgs
from descheduler.resources import Resources
from descheduler.scheduling import build_table, estimate
from descheduler.scheduling.table import pod_matrix
from descheduler.snapshot import Snapshot

amounts = st.integers(min_value=0, max_value=64_000)
vectors = st.fixed_dictionaries({}, optional={"cpu": amounts, "memory": amounts})


@settings(max_examples=200, deadline=None)
@given(
    pods=st.lists(st.tuples(vectors, vectors), min_size=1, max_size=20),
    cpu_factor=st.integers(1, 100),
    memory_factor=st.integers(1, 100),
)
def test_bulk_estimate_equals_the_scalar_estimator(
    pods: list[tuple[dict[str, int], dict[str, int]]], cpu_factor: int, memory_factor: int
) -> None:
    factors = {"cpu": cpu_factor, "memory": memory_factor}
    records = [
        Pod(namespace="ns", name=f"p{i}", node_name="n", requests=Resources(req), limits=Resources(lim))
        for i, (req, lim) in enumerate(pods)
    ]
    snapshot = Snapshot.build(
        now=datetime(2026, 1, 1, tzinfo=UTC),
        nodes=[Node(name="n", allocatable=Resources({"cpu": 10**9, "memory": 10**12, "pods": 1000}))],
        pods=records,
    )
    table = build_table(snapshot, SchedulingArgs(estimated_scaling_factors=factors))
    bulk = pod_matrix(table, records).estimate
    for row, pod in zip(bulk, records, strict=True):
        scalar = table.vector(estimate(pod.requests, pod.limits, factors))
        cols = [table.column["cpu"], table.column["memory"]]
        assert np.array_equal(row[cols], scalar[cols]), (pod.requests, pod.limits)
