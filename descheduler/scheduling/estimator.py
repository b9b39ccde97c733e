"""The load estimator (scheduling-core.md §4): what a pod will use before metrics show it."""

from __future__ import annotations

from collections.abc import Mapping

from descheduler.model import Pod
from descheduler.resources import Resources

DEFAULT_CPU_MILLI = 250
DEFAULT_MEMORY_BYTES = 200 * 2**20


def estimate(requests: Mapping[str, int], limits: Mapping[str, int], factors: Mapping[str, int]) -> Resources:
    """round(q × factor / 100) per resource with a factor; q = limit if above request, else request."""
    out: dict[str, int] = {}
    for name, factor in factors.items():
        request, limit = requests.get(name, 0), limits.get(name, 0)
        quantity = limit if limit > request else request
        if quantity == 0:
            if name == "cpu":
                out[name] = DEFAULT_CPU_MILLI
            elif name == "memory":
                out[name] = DEFAULT_MEMORY_BYTES
            continue
        value = (quantity * factor + 50) // 100
        out[name] = min(value, limit) if limit else value
    return Resources(out)


def estimate_pod(pod: Pod, factors: Mapping[str, int]) -> Resources:
    return estimate(pod.requests, pod.limits, factors)
