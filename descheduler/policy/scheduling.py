"""Arguments of the load-aware scheduling core (scheduling-core.md §3–5), shared with the extender."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from descheduler.policy.fields import (
    Duration,
    PolicyModel,
    ResourceName,
    Thresholds,
    Weights,
    problem,
    resource_map_schema,
)


def _check_factor(value: int) -> int:
    if not 1 <= value <= 100:
        raise problem(f"must be a percent between 1 and 100, got {value}")
    return value


ScalingFactor = Annotated[int, AfterValidator(_check_factor)]


class AggregatedArgs(PolicyModel):
    """Filter on a percentile of usage instead of the instant value, when the load source has one."""

    usage_thresholds: Thresholds = Field(default_factory=dict, description="percent of allocatable per resource")
    usage_aggregation_type: Literal["avg", "p50", "p90", "p95", "p99"] = "p95"
    usage_aggregated_duration: Duration | None = Field(
        default=None, description="which aggregation window to use; unset = the longest the source reports"
    )


class SchedulingArgs(PolicyModel):
    """Load filter, estimator and score arguments, Koordinator LoadAwareScheduling-compatible."""

    usage_thresholds: Thresholds = Field(
        default_factory=lambda: {"cpu": 65.0, "memory": 95.0},
        description="reject a node whose estimated usage after placement exceeds this percent (0 = no check)",
    )
    prod_usage_thresholds: Thresholds | None = Field(
        default=None, description="for prod-class pods: the same check on the summed usage of prod pods"
    )
    aggregated: AggregatedArgs | None = None
    node_metric_expiration_seconds: int = Field(default=180, gt=0, description="a node metric older than this is stale")
    filter_expired_node_metrics: bool = True
    enable_schedule_when_node_metrics_expired: bool = False
    estimated_scaling_factors: Annotated[
        dict[ResourceName, ScalingFactor],
        resource_map_schema({"type": "integer", "minimum": 1, "maximum": 100}),
    ] = Field(
        default_factory=lambda: {"cpu": 85, "memory": 70},
        description="estimated usage of a new pod = percent of its limit (or request)",
    )
    resource_weights: Weights = Field(default_factory=lambda: {"cpu": 1, "memory": 1})
    dominant_resource_weight: int = Field(default=0, ge=0)
