"""How planned moves are carried out and paced (migration.md §1, §4–5)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Literal

from pydantic import Field

from descheduler.policy.fields import Duration, IntOrPercent, NonNegativeInt, PolicyModel, PositiveDuration, scaled


class ObjectLimiter(PolicyModel):
    """A token bucket: at most `maxMigrating` moves per object within `duration`."""

    duration: PositiveDuration = timedelta(minutes=5)
    max_migrating: int = Field(default=1, ge=1)


class ObjectLimiters(PolicyModel):
    workload: ObjectLimiter = Field(default_factory=ObjectLimiter)


class ReservationSchedulerArgs(PolicyModel):
    """Whether moves wait for a reservation-aware scheduler (the extender's Lease, migration.md §3)."""

    expect: Literal["Required", "Preferred", "Absent"] = Field(
        default="Preferred",
        description=(
            "Required: never evict without a Reservation (jobs wait); Preferred: wait `grace`, then move "
            "without one; Absent: never make a Reservation"
        ),
    )
    grace: PositiveDuration = Field(
        default=timedelta(seconds=30),
        description="Preferred: how long to wait for the scheduler after the controller starts or loses its Lease",
    )


class MigrationArgs(PolicyModel):
    """PodMigrationJob defaults and arbitration limits (unset = no limit)."""

    default_mode: Literal["ReservationFirst", "EvictDirectly"] = "ReservationFirst"
    ttl: PositiveDuration = Field(default=timedelta(minutes=5), description="a job not done by then is aborted")
    eviction_policy: Literal["Eviction", "Delete"] = Field(
        default="Eviction", description="Eviction respects PodDisruptionBudgets; Delete does not"
    )
    job_retention: Duration = Field(default=timedelta(hours=1), description="completed jobs are deleted after this")
    max_migrating_globally: NonNegativeInt | None = None
    max_migrating_per_node: NonNegativeInt | None = 2
    max_migrating_per_namespace: NonNegativeInt | None = None
    max_migrating_per_workload: IntOrPercent | None = Field(
        default=None,
        description="count or percent of replicas; unset: 1 for ≤ 3 replicas, 2 for 4–10, 10% above",
    )
    max_unavailable_per_workload: IntOrPercent | None = Field(
        default=None, description="not Ready or migrating; unset: the same scale as maxMigratingPerWorkload"
    )
    object_limiters: ObjectLimiters = Field(default_factory=ObjectLimiters)
    evict_qps: float = Field(default=10.0, gt=0, alias="evictQPS")
    evict_burst: int = Field(default=1, ge=1)
    reservation_scheduler: ReservationSchedulerArgs = Field(default_factory=ReservationSchedulerArgs)
    steer_off_source: bool = Field(
        default=True,
        description="while a node has moves in flight without a Reservation, it carries a PreferNoSchedule taint",
    )
    cooldown: Duration = Field(
        default=timedelta(minutes=10),
        description="a moved workload is not moved again, and a source node is not a target, within this",
    )

    def max_migrating_for(self, replicas: int) -> int:
        """Jobs allowed in flight at once for a workload with this many replicas."""
        return workload_limit(self.max_migrating_per_workload, replicas)

    def max_unavailable_for(self, replicas: int) -> int:
        """Pods of a workload with this many replicas that may be unavailable at once."""
        return workload_limit(self.max_unavailable_per_workload, replicas)


def workload_limit(value: int | str | None, replicas: int) -> int:
    """Resolve a per-workload limit; percents round up, as Kubernetes does for maxSurge."""
    if value is None:
        if replicas <= 3:
            return 1
        return 2 if replicas <= 10 else math.ceil(replicas / 10)
    return scaled(value, replicas)
