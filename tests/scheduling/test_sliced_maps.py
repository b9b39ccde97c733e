"""The sliced C-level maps the table build runs over every pod agree with one plain `map`."""

from __future__ import annotations

import sys
from itertools import repeat
from types import FrameType
from typing import Any

import numpy as np
import pytest

from descheduler.model import Node, Pod
from descheduler.podrows import SLICE, rows_of, sliced, sliced_column


@pytest.mark.parametrize("size", [0, 1, SLICE - 1, SLICE, SLICE + 1, 2 * SLICE + 3])
def test_sliced_map_equals_one_map_at_every_slice_boundary(size: int) -> None:
    vectors = [{"cpu": i, **({"gpu": 1} if i % 7 == 0 else {})} for i in range(size)]
    assert sliced(dict.get, vectors, "gpu", 0) == list(map(dict.get, vectors, repeat("gpu"), repeat(0)))
    expected = np.fromiter(map(dict.get, vectors, repeat("cpu"), repeat(0)), np.int64, size)
    column = sliced_column(dict.get, vectors, np.int64, "cpu", 0)
    assert column.dtype == np.int64
    assert np.array_equal(column, expected)


def test_sliced_column_of_a_tuple_keeps_order() -> None:
    items = tuple(range(SLICE * 2 + 5))
    assert sliced_column(int.__neg__, items, np.int64).tolist() == [-i for i in items]


def test_a_profile_hook_sees_a_call_per_slice() -> None:
    """The extender's rebuild steps aside for requests only at calls its profile hook sees
    (descheduler/extender/yielding.py): a pass over every pod must make one per slice."""
    vectors = [{"cpu": i} for i in range(3 * SLICE)]
    calls = 0

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "c_call":
            calls += 1

    sys.setprofile(hook)
    try:
        sliced(dict.get, vectors, "cpu", 0)
    finally:
        sys.setprofile(None)
    assert calls >= 3


def test_rows_of_indexes_the_counted_pods_across_slices() -> None:
    nodes = (Node(name="n1"),)
    pods = tuple(Pod(namespace="default", name=f"p{i}", node_name="n1" if i % 3 else "") for i in range(2 * SLICE + 7))
    rows = rows_of(pods, nodes)
    assert dict(rows.index) == {p.key: i for i, p in enumerate(pods) if p.node_name}
