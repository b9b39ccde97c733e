"""The policy file (the DeschedulerPolicy ConfigMap): models, strict validation, default and schema.

Public surface: parse_policy, load_policy, default_policy, policy_schema, PolicyError, the models,
and the strategy-args registry (STRATEGY_ARGS, register_strategy_args).
`python -m descheduler.policy` prints the JSON schema (config/policy.schema.json).
"""

from descheduler.policy.document import (
    API_VERSION,
    KIND,
    STRATEGY_ARGS,
    Policy,
    StrategyConfig,
    register_strategy_args,
)
from descheduler.policy.errors import PolicyError
from descheduler.policy.evictor import EvictorArgs, NamespaceFilter
from descheduler.policy.limits import Limits
from descheduler.policy.loading import default_policy, load_policy, parse_policy, policy_schema, schema_text
from descheduler.policy.loadsource import (
    LoadSource,
    MetricsServerSource,
    NodeMetricSource,
    PrometheusQueries,
    PrometheusSource,
)
from descheduler.policy.lownodeload import (
    DEFAULT_POD_SORT_KEYS,
    DEFAULT_POOL_NAME,
    DEFAULT_RELIEF_DEPTH,
    AnomalyCondition,
    LowNodeLoadArgs,
    NodePool,
    PodSelector,
    PodSortKey,
    PoolArgs,
)
from descheduler.policy.migration import (
    MigrationArgs,
    ObjectLimiter,
    ObjectLimiters,
    ReservationSchedulerArgs,
    workload_limit,
)
from descheduler.policy.quotareclaim import QuotaReclaimArgs
from descheduler.policy.scheduling import AggregatedArgs, SchedulingArgs

__all__ = [
    "API_VERSION",
    "DEFAULT_POD_SORT_KEYS",
    "DEFAULT_POOL_NAME",
    "DEFAULT_RELIEF_DEPTH",
    "KIND",
    "STRATEGY_ARGS",
    "AggregatedArgs",
    "AnomalyCondition",
    "EvictorArgs",
    "Limits",
    "LoadSource",
    "LowNodeLoadArgs",
    "MetricsServerSource",
    "MigrationArgs",
    "NamespaceFilter",
    "NodeMetricSource",
    "NodePool",
    "ObjectLimiter",
    "ObjectLimiters",
    "PodSelector",
    "PodSortKey",
    "Policy",
    "PolicyError",
    "PoolArgs",
    "PrometheusQueries",
    "PrometheusSource",
    "QuotaReclaimArgs",
    "ReservationSchedulerArgs",
    "SchedulingArgs",
    "StrategyConfig",
    "default_policy",
    "load_policy",
    "parse_policy",
    "policy_schema",
    "register_strategy_args",
    "schema_text",
    "workload_limit",
]
