"""The estimator follows scheduling-core.md §4, for one pod (`estimate`) and for the node table's bulk
matrix alike: round(q × factor / 100) capped at the limit, q = limit if above the request, else the
request; q = 0 estimates 250m cpu and 200Mi memory."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.model import Node, Pod
from descheduler.policy import SchedulingArgs
from descheduler.resources import Resources
from descheduler.scheduling import build_table, estimate
from descheduler.scheduling.table import pod_matrix
from descheduler.snapshot import Snapshot

DEFAULTS = {"cpu": 250, "memory": 200 * 2**20}


def spec(requests: dict[str, int], limits: dict[str, int], factors: dict[str, int]) -> dict[str, int]:
    out = {}
    for name, factor in factors.items():
        request, limit = requests.get(name, 0), limits.get(name, 0)
        q = limit if limit > request else request
        rounded = int(Fraction(q * factor, 100) + Fraction(1, 2))  # half up
        out[name] = DEFAULTS[name] if q == 0 else min(rounded, limit) if limit else rounded
    return out


amounts = st.integers(min_value=0, max_value=64_000)
vectors = st.fixed_dictionaries({}, optional={"cpu": amounts, "memory": amounts})


@settings(max_examples=200, deadline=None)
@given(
    pods=st.lists(st.tuples(vectors, vectors), min_size=1, max_size=20),
    cpu_factor=st.integers(1, 100),
    memory_factor=st.integers(1, 100),
)
def test_bulk_and_single_estimates_follow_the_spec(
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
    for row, pod, (req, lim) in zip(bulk, records, pods, strict=True):
        expected = spec(req, lim, factors)
        assert dict(estimate(pod.requests, pod.limits, factors)) == {n: v for n, v in expected.items() if v}
        assert {name: int(row[table.column[name]]) for name in factors} == expected, (req, lim)
