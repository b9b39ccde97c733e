"""How many moves one planning cycle may hold (the policy's `limits`)."""

from __future__ import annotations

from descheduler.policy.fields import NonNegativeInt, PolicyModel


class Limits(PolicyModel):
    """How many moves one cycle may plan: unset = no limit, 0 = no moves."""

    max_evictions_per_cycle: NonNegativeInt | None = None
    max_evictions_per_node: NonNegativeInt | None = None
    max_evictions_per_namespace: NonNegativeInt | None = None
