"""Choosing the fewest victims whose removal covers a node's excess (victimSelection: minimal)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

SEARCH_LIMIT = 200_000  # nodes of the search tree before giving up on optimality


def minimal_cover(
    usages: Sequence[npt.NDArray[np.int64]], excess: npt.NDArray[np.float64], limit: int = SEARCH_LIMIT
) -> list[int] | None:
    """Indices of the smallest set whose summed usage covers `excess` on every resource.

    Among sets of that size, the first in lexicographic order of the indices (the callers' sort
    order) wins. None when even all of them together cannot cover it. When the search exceeds
    `limit` steps, the greedy prefix (in order) is returned instead.
    """
    need = np.asarray(excess, dtype=np.float64)
    if not (need > 0).any():
        return []
    n = len(usages)
    if n == 0:
        return None
    matrix = np.array(usages, dtype=np.float64).reshape(n, -1)
    if (matrix.sum(axis=0) < need).any():
        return None
    # best[s][k]: per resource, the largest sum of k items among items s.. (an optimistic bound).
    best = np.zeros((n + 1, n + 1, matrix.shape[1]))
    for start in range(n - 1, -1, -1):
        ordered = -np.sort(-matrix[start:], axis=0)
        best[start, 1 : n - start + 1] = np.cumsum(ordered, axis=0)
    lower = max(int(np.searchsorted(best[0, :, j], need[j])) for j in range(matrix.shape[1]) if need[j] > 0)
    steps = 0

    def search(start: int, left: npt.NDArray[np.float64], slots: int, chosen: list[int]) -> list[int] | None:
        nonlocal steps
        if (left <= 0).all():
            return chosen
        if slots == 0:
            return None
        for i in range(start, n - slots + 1):
            steps += 1
            if steps > limit:
                raise TimeoutError
            if (best[i, slots] < left).any():
                return None  # even the best items from here on cannot cover; later starts are worse
            found = search(i + 1, left - matrix[i], slots - 1, [*chosen, i])
            if found is not None:
                return found
        return None

    try:
        for size in range(max(lower, 1), n + 1):
            found = search(0, need, size, [])
            if found is not None:
                return found
    except TimeoutError:
        pass
    total = np.zeros_like(need)
    greedy = []
    for i in range(n):
        greedy.append(i)
        total += matrix[i]
        if (total >= need).all():
            return greedy
    return None
