"""The load estimator (scheduling-core.md §4): what a pod will use before metrics show it.

The rule is written once, over matrices (`estimate_matrix`: one row per pod, as the node table
builds it for every pod of a snapshot); `estimate` applies it to one pod's resource maps.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from descheduler.model import Pod
from descheduler.resources import Resources

DEFAULT_CPU_MILLI = 250
DEFAULT_MEMORY_BYTES = 200 * 2**20
_DEFAULTS = {"cpu": DEFAULT_CPU_MILLI, "memory": DEFAULT_MEMORY_BYTES}

IntArray = npt.NDArray[np.int64]


def estimate_matrix(
    requests: IntArray, limits: IntArray, factors: Mapping[str, int], column: Mapping[str, int]
) -> IntArray:
    """Per row and per resource with a factor: round(q × factor / 100), capped at the limit, where
    q = limit if above request, else request; a pod with q = 0 estimates 250m cpu and 200Mi memory.
    `column` names the matrices' columns; resources without a factor estimate 0."""
    out = np.zeros_like(requests)
    for name, factor in factors.items():
        col = column.get(name)
        if col is None:
            continue
        request, limit = requests[:, col], limits[:, col]
        quantity = np.where(limit > request, limit, request)
        value = (quantity * factor + 50) // 100
        value = np.where(limit > 0, np.minimum(value, limit), value)
        out[:, col] = np.where(quantity == 0, _DEFAULTS.get(name, 0), value)
    return out


def estimate(requests: Mapping[str, int], limits: Mapping[str, int], factors: Mapping[str, int]) -> Resources:
    """`estimate_matrix` for one pod: the resources with a factor that it requests or limits, and
    cpu and memory (which have a default) always."""
    names = [name for name in factors if requests.get(name, 0) or limits.get(name, 0) or name in _DEFAULTS]
    column = {name: i for i, name in enumerate(names)}
    row = [[requests.get(name, 0) for name in names]], [[limits.get(name, 0) for name in names]]
    values = estimate_matrix(np.array(row[0], dtype=np.int64), np.array(row[1], dtype=np.int64), factors, column)
    return Resources({name: int(values[0, i]) for i, name in enumerate(names)})


def estimate_pod(pod: Pod, factors: Mapping[str, int]) -> Resources:
    return estimate(pod.requests, pod.limits, factors)
