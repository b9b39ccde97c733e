"""How many moves one planning cycle may hold (the policy's `limits`)."""

from __future__ import annotations

from pydantic import Field

from descheduler.policy.fields import IntOrPercent, NonNegativeInt, PolicyModel, scaled


class Limits(PolicyModel):
    """How many moves one cycle may plan: unset = no limit, 0 = no moves."""

    max_evictions_per_cycle: IntOrPercent | None = Field(
        default=None,
        description='a count, or a percent of the nodes the policy considers ("5%", rounded up), so the cap '
        "grows with the cluster",
    )
    max_evictions_per_node: NonNegativeInt | None = None
    max_evictions_per_namespace: NonNegativeInt | None = None
    max_evictions_per_hour: IntOrPercent | None = Field(
        default=None,
        description="a churn budget: evictions over any hour, a count or a percent of the nodes the policy "
        'considers ("4%", rounded up); the evictions of the last hour are read from the PodMigrationJobs '
        "still kept (migration.jobRetention, at least 1h), and a cycle plans at most what is left",
    )

    @property
    def never_moves(self) -> bool:
        """maxEvictionsPerCycle or maxEvictionsPerHour allows no move whatever the cluster's size (0, or a
        percent of 0)."""
        return self.per_cycle_for(1) == 0 or self.per_hour_for(1) == 0

    def per_cycle_for(self, nodes: int) -> int | None:
        """maxEvictionsPerCycle as a count, in a cycle that considers `nodes` nodes."""
        cap = self.max_evictions_per_cycle
        return None if cap is None else scaled(cap, nodes)

    def per_hour_for(self, nodes: int) -> int | None:
        """maxEvictionsPerHour as a count, in a cycle that considers `nodes` nodes."""
        cap = self.max_evictions_per_hour
        return None if cap is None else scaled(cap, nodes)
