"""Where node and pod load comes from (`loadSource:`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from descheduler.policy.fields import PolicyModel, PositiveDuration, problem


class MetricsServerSource(PolicyModel):
    """metrics.k8s.io NodeMetrics and PodMetrics (metrics-server)."""

    type: Literal["metricsServer"]


class NodeMetricSource(PolicyModel):
    """Koordinator's slo.koordinator.sh/v1alpha1 NodeMetric objects (system usage and aggregates)."""

    type: Literal["nodeMetric"]


# `$window` is replaced by the source's window (a Prometheus duration such as 5m) before the query runs.
DEFAULT_NODE_CPU = 'sum by (instance) (1 - rate(node_cpu_seconds_total{mode="idle"}[$window]))'
DEFAULT_NODE_MEMORY = "sum by (instance) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)"
DEFAULT_POD_CPU = (
    'sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!="", container!="POD"}[$window]))'
)
DEFAULT_POD_MEMORY = 'sum by (namespace, pod) (container_memory_working_set_bytes{container!="", container!="POD"})'


class PrometheusQueries(PolicyModel):
    """PromQL for each measurement; `$window` in a query is replaced by the source's window.

    Node queries return one series per node, the node name in the source's `nodeLabel`; pod
    queries return one series per pod labelled `namespace` and `pod`. CPU in cores, memory in bytes.
    """

    node_cpu: str = Field(default=DEFAULT_NODE_CPU, min_length=1, description="busy cores per node")
    node_memory: str = Field(default=DEFAULT_NODE_MEMORY, min_length=1, description="used bytes per node")
    pod_cpu: str = Field(default=DEFAULT_POD_CPU, min_length=1, description="cores per pod")
    pod_memory: str = Field(default=DEFAULT_POD_MEMORY, min_length=1, description="working-set bytes per pod")


class PrometheusSource(PolicyModel):
    """Node and pod usage from a Prometheus server (node_exporter and cAdvisor metrics)."""

    type: Literal["prometheus"]
    address: str = Field(description="base URL of the Prometheus HTTP API, e.g. http://prometheus.monitoring:9090")
    bearer_token_file: str | None = Field(default=None, min_length=1, description="file holding a bearer token")
    timeout: PositiveDuration = Field(default=timedelta(seconds=10), description="per-query timeout")
    queries: PrometheusQueries = Field(default_factory=PrometheusQueries)
    node_label: str = Field(
        default="instance",
        min_length=1,
        description="label holding the node name in node query results (kube-prometheus sets instance to it)",
    )
    window: PositiveDuration = Field(default=timedelta(minutes=5), description="rate and quantile window")
    percentile: float | None = Field(
        default=None,
        description="when set (0 < p ≤ 1): quantile_over_time(p, query[window:]), not the instant value",
    )

    @field_validator("address")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise problem(f"must be an http:// or https:// URL with a host, got {value!r}")
        return value

    @field_validator("percentile")
    @classmethod
    def _fraction(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value <= 1:
            raise problem(f"must be a fraction in (0, 1], e.g. 0.95, got {value:g}")
        return value


LoadSource = Annotated[
    MetricsServerSource | NodeMetricSource | PrometheusSource,
    Field(discriminator="type"),
]
"""One of the load sources, chosen by `type`."""
