"""The sliced C-level maps the table build runs over every pod agree with one plain `map`."""

from __future__ import annotations

from itertools import repeat

import numpy as np
import pytest

from descheduler.podrows import SLICE, sliced, sliced_column


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
