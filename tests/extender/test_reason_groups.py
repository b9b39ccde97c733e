"""A filter stage groups its refused rows by key: the first refused row of each key gives the reason,
keys in sorted order (as np.unique orders them), whether few keys or many."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.extender.decisions import STEERED, Reasons
from descheduler.refusal import Refusal
from descheduler.scheduling.predicates import Stage


def _refusal(row: int) -> Refusal:
    return Refusal(code=STEERED, subject=f"r{row}", facts={"node": "n"})


def _grouped_by_unique(failed: np.ndarray, keys: np.ndarray, rows: np.ndarray) -> tuple[list[int], list[str]]:
    """The grouping as np.unique makes it."""
    out = Reasons(rows.size)
    where = np.flatnonzero(failed)
    if where.size:
        _, first, inverse = np.unique(keys[where], return_index=True, return_inverse=True)
        ids = np.array([out.id(_refusal(int(rows[where[i]]))) for i in first.tolist()], dtype=np.int64)
        out.reason[where] = ids[inverse.reshape(-1)]
    return out.reason.tolist(), out.texts


key_arrays = st.integers(1, 60).flatmap(
    lambda n: st.one_of(
        st.lists(st.integers(-3, 40), min_size=n, max_size=n).map(lambda v: np.array(v, dtype=np.int64)),
        st.lists(st.sampled_from([0.0, 1024.5, 2048.0, 85.0, 3.25]), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=np.float64)
        ),
        st.lists(st.booleans(), min_size=n, max_size=n).map(lambda v: np.array(v, dtype=np.bool_)),
    )
)


@settings(max_examples=300, deadline=None)
@given(key_arrays, st.data())
def test_rows_are_grouped_as_np_unique_groups_them(keys: np.ndarray, data: st.DataObject) -> None:
    n = keys.size
    failed = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    rows = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    stage = Stage(failed, lambda positions: keys[positions], _refusal)
    out = Reasons(n)
    out.stage(stage, rows)
    assert (out.reason.tolist(), out.texts) == _grouped_by_unique(failed, keys, rows)
