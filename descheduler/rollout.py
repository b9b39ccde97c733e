"""Make-before-break moves (migration.md §3): what a Deployment's strategy promises a rollout
does. Pure (`descheduler.eligibility.moves_first` says which pods the policy moves this way).

A rollout of a Deployment with one replica whose strategy resolves to maxSurge ≥ 1 and
maxUnavailable 0 starts the new pod first and removes the old one only once the new one is
available (kube-controller-manager's rolling update), so the workload keeps a Ready pod throughout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

# The template label a make-before-break move sets to the moved pod's UID: the rollout's new pod
# carries it, and the Reservation's owner matches by it (the new ReplicaSet does not exist yet).
LABEL_REPLACES: Final = "descheduler.dev/replaces"
_DEFAULT_FENCEPOST: Final = "25%"


def _resolve(value: Any, replicas: int, *, round_up: bool) -> int | None:
    """An IntOrString of a rolling update as a count (None when it is neither)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        share = replicas * int(value[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return None


def fenceposts(strategy: Mapping[str, Any] | None, replicas: int) -> tuple[int, int] | None:
    """(maxSurge, maxUnavailable) of a Deployment's `spec.strategy` at `replicas`, resolved as the
    Deployment controller does (ResolveFenceposts: surge rounds up, unavailable down, and both 0
    means unavailable 1); None for Recreate or a value that is not a count or a percent."""
    strategy = strategy or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate") or {}
    surge = _resolve(rolling.get("maxSurge", _DEFAULT_FENCEPOST), replicas, round_up=True)
    unavailable = _resolve(rolling.get("maxUnavailable", _DEFAULT_FENCEPOST), replicas, round_up=False)
    if surge is None or unavailable is None:
        return None
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def starts_first(strategy: Mapping[str, Any] | None, replicas: int, paused: bool) -> bool:
    """Whether a rollout of this Deployment starts a new pod before it removes an old one and never
    has fewer available pods than replicas (maxSurge ≥ 1, maxUnavailable 0, not paused)."""
    resolved = fenceposts(strategy, replicas)
    return not paused and resolved is not None and resolved[0] >= 1 and resolved[1] == 0
