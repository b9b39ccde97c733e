"""kubernetes-sigs/descheduler's DeschedulerPolicy (descheduler/v1alpha2) → our policy.

LowNodeUtilization becomes LowNodeLoad, DefaultEvictor our `evictor`, the policy-level eviction
caps our `limits`. Where the meaning changes (requests vs usage, pooled vs per-target headroom,
victim and source order) the field carries a comment; what cannot be carried over is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from descheduler.convert.draft import Conversion, Fields, OutPath, items, mapping
from descheduler.convert.fields import by_requests, evictor_switches, selector_from_text, thresholds
from descheduler.convert.profiles import PluginConfig, Profile, read_profiles, unused_configs
from descheduler.policy.errors import join_path

API_VERSION: Final = "descheduler/v1alpha2"
KIND: Final = "DeschedulerPolicy"
CONVERTED_FROM: Final = "an upstream kubernetes-sigs/descheduler DeschedulerPolicy (descheduler/v1alpha2)"
LNU: Final = "LowNodeUtilization"
EVICTOR: Final = "DefaultEvictor"
_KNOWN_PLUGINS: Final = {
    "balance": frozenset({LNU}),
    "filter": frozenset({EVICTOR}),
    "preEvictionFilter": frozenset({EVICTOR}),
}
_ARGS: Final[OutPath] = ("strategies", 0, "args")
_LIMITS: Final = {
    "maxNoOfPodsToEvictPerNode": "maxEvictionsPerNode",
    "maxNoOfPodsToEvictPerNamespace": "maxEvictionsPerNamespace",
    "maxNoOfPodsToEvictTotal": "maxEvictionsPerCycle",
}


def convert_upstream(raw: Mapping[str, Any]) -> Conversion:
    """An upstream DeschedulerPolicy as our policy document, with comments and every problem."""
    conversion = Conversion(CONVERTED_FROM)
    top = Fields(raw, "", conversion)
    top.ignore("apiVersion", "kind", "evictionFailureEventNotification", "metricsCollector")
    conversion.notes.append(
        "interval: upstream's is a command-line flag (--descheduling-interval), not part of its policy; "
        "ours runs every 60s: set interval to yours"
    )
    for theirs, ours in _LIMITS.items():
        value = top.take(theirs)
        if value is not None:
            conversion.set(("limits", ours), value, top.at(theirs))
    selector = top.take("nodeSelector")
    if selector is not None:
        _node_selector(conversion, selector, top.at("nodeSelector"))
    _prometheus(conversion, top)
    profiles = read_profiles(conversion, top.take("profiles"), top.at("profiles"), _KNOWN_PLUGINS, False)
    top.unknown()
    conversion.set(("strategies", 0, "name"), "LowNodeLoad")
    node_fit = _evictor(conversion, profiles)
    _low_node_utilization(conversion, profiles)
    conversion.set((*_ARGS, "nodeFit"), bool(node_fit.value), node_fit.origin, comment=node_fit.comment)
    _pacing(conversion)
    return conversion


def _node_selector(conversion: Conversion, value: Any, path: str) -> None:
    if not isinstance(value, str):
        conversion.error(path, f"must be a label selector string (a=b,c in (d,e)), got {type(value).__name__}")
        return
    try:
        selector = selector_from_text(value)
    except ValueError as err:
        conversion.error(path, str(err))
        return
    conversion.set(("nodeSelector",), selector, path)


def _prometheus(conversion: Conversion, top: Fields) -> None:
    cannot = (
        "our Prometheus load source needs per-node and per-pod cpu and memory queries; upstream's single "
        "node-utilization query cannot be carried over (use loadSource {type: prometheus} with queries by hand)"
    )
    if top.take("prometheus") is not None:
        conversion.error(top.at("prometheus"), cannot)
    for index, provider in enumerate(items(top.take("metricsProviders"), top.at("metricsProviders"), conversion)):
        at = join_path(top.at("metricsProviders"), index)
        fields = Fields(mapping(provider, at, conversion), at, conversion)
        source = fields.take("source")
        if source == "Prometheus":
            fields.ignore("prometheus")
            conversion.error(fields.at("source"), cannot)
        elif source != "KubernetesMetrics":
            conversion.error(fields.at("source"), f"must be KubernetesMetrics or Prometheus, got {source!r}")
        fields.unknown()


def _configured(profiles: list[Profile], name: str) -> list[tuple[Profile, PluginConfig | None]]:
    """Each profile that runs plugin `name`, with its pluginConfig; a config of a plugin not run is a note."""
    found = []
    for profile in profiles:
        config = profile.configs.get(name)
        if name in profile.enabled or name == EVICTOR:  # DefaultEvictor runs unless replaced
            found.append((profile, config))
    return found


@dataclass(frozen=True, slots=True)
class _NodeFit:
    value: Any
    origin: str | None
    comment: str


def _evictor(conversion: Conversion, profiles: list[Profile]) -> _NodeFit:
    """DefaultEvictor's args as our `evictor`; its nodeFit is LowNodeLoad's here."""
    configs = [config for _, config in _configured(profiles, EVICTOR) if config is not None]
    for extra in configs[1:]:
        if extra.args != configs[0].args:
            conversion.error(
                extra.path,
                f"our policy has one evictor for every strategy; these args differ from {configs[0].path}",
            )
    args = configs[0] if configs else PluginConfig(EVICTOR, {}, "")
    fields = Fields(args.args, args.path, conversion)
    fields.ignore("apiVersion", "kind")
    node_fit = evictor_switches(fields)
    _min_replicas(conversion, fields)
    fields.unknown()
    given = "unset: false" if node_fit is None else str(node_fit).lower()
    return _NodeFit(
        node_fit,
        fields.at("nodeFit") if node_fit is not None else None,
        (
            f"DefaultEvictor nodeFit ({given}). Upstream: evict only "
            "pods that fit on some other node by requests, and the stock scheduler places the replacement. "
            "Here true: each move gets a target that fits and stays <= highThresholds, reserved before the "
            "eviction; false: the target must still stay <= highThresholds, but the pod is evicted directly "
            "as upstream did"
        ),
    )


def _min_replicas(conversion: Conversion, fields: Fields) -> None:
    value = fields.take("minReplicas")
    if value is None or value in (0, 1):
        conversion.set(
            ("evictor", "minReplicas"),
            1,
            fields.at("minReplicas") if value is not None else None,
            comment=f"DefaultEvictor minReplicas {'unset' if value is None else value}: upstream moves pods of "
            "single-replica workloads too; 1 keeps that (our default, 2, would not)",
        )
    else:
        conversion.set(
            ("evictor", "minReplicas"),
            value,
            fields.at("minReplicas"),
            comment="a workload's replicas are its controller's spec.replicas when known "
            "(upstream counted the pods sharing the owner)",
        )


def _low_node_utilization(conversion: Conversion, profiles: list[Profile]) -> None:
    runs = _configured(profiles, LNU)
    unused_configs(conversion, profiles, frozenset({EVICTOR}))
    if not runs:
        conversion.error("profiles", f"no profile enables {LNU} (plugins.balance.enabled): nothing to convert")
        return
    for profile, _ in runs[1:]:
        conversion.error(profile.enabled[LNU], f"a second {LNU}: our policy has one LowNodeLoad strategy")
    profile, config = runs[0]
    if config is None:
        conversion.error(profile.enabled[LNU], f"{LNU} is enabled without pluginConfig args (thresholds are required)")
        return
    conversion.origins[("strategies", 0)] = config.path
    conversion.comment(
        ("strategies", 0),
        (
            f"from {LNU} ({profile.path}). Hot nodes are relieved hottest first by the mean of their "
            "percents (upstream: by the raw sum of millicores + bytes + pods, so memory decided), and a pod "
            "that uses none of the resources its node is hot on is not moved (upstream moved it)"
        ),
    )
    _lnu_args(conversion, Fields(config.args, config.path, conversion))


def _lnu_args(conversion: Conversion, fields: Fields) -> None:
    fields.ignore("apiVersion", "kind")
    measured = _metrics_utilization(conversion, fields)
    low = thresholds(conversion, fields.take("thresholds"), fields.at("thresholds"), (*_ARGS, "lowThresholds"))
    high = thresholds(
        conversion, fields.take("targetThresholds"), fields.at("targetThresholds"), (*_ARGS, "highThresholds")
    )
    basis = (
        "measured usage (metrics-server), as upstream's metricsUtilization"
        if measured
        else (
            "MEASURED USAGE, where upstream (no metricsUtilization) compared the sum of the pods' requests; "
            "pods that use less than they request make fewer nodes hot"
        )
    )
    extended = by_requests({**low, **high})
    requests_note = (
        f"; {', '.join(extended)}: no load source measures it, so its requests are compared"
        if extended and measured
        else ""
    )
    conversion.set(
        (*_ARGS, "lowThresholds"),
        low,
        fields.at("thresholds"),
        comment=f"upstream thresholds: percent of allocatable, now of {basis}. Low: at or below on every "
        f"resource named, as upstream{requests_note}",
    )
    conversion.set(
        (*_ARGS, "highThresholds"),
        high,
        fields.at("targetThresholds"),
        comment="upstream targetThresholds: hot when above on any resource named, as upstream. Upstream pooled "
        "the room below these percents over all low nodes and never checked a single target; here each move "
        "must keep its own target <= these percents (per-target accounting)",
    )
    deviation = fields.take("useDeviationThresholds")
    if deviation is not None:
        conversion.set((*_ARGS, "useDeviationThresholds"), deviation, fields.at("useDeviationThresholds"))
        if deviation is True:
            conversion.comment(
                (*_ARGS, "useDeviationThresholds"),
                "offsets from the mean usage percent of the pool's nodes that have a fresh metric "
                "(upstream: the mean of the requests percents of every node it evaluated)",
            )
    for key in ("numberOfNodes", "evictableNamespaces"):
        value = fields.take(key)
        if value is not None:
            conversion.set((*_ARGS, key), value, fields.at(key))
    _eviction_limits(conversion, fields)
    conversion.set(
        (*_ARGS, "recentPodsLast"),
        "0s",
        comment="ours by default moves pods started within the last hour after every other candidate (1h)",
    )
    conversion.set(
        (*_ARGS, "lookAhead"),
        "0s",
        comment="the upstream descheduler judges a node as it is now; ours by default judges it 10m ahead, at the rate "
        "the cluster's usage rose over the last two 10m spans (10m)",
    )
    conversion.set(
        (*_ARGS, "reliefDepth"),
        0,
        comment="upstream stops evicting from a hot node once it is under targetThresholds; our default (0.25) "
        "goes a quarter of the way down to lowThresholds",
    )
    conversion.set(
        (*_ARGS, "podSortKeys"),
        ["priority", "qos", "name"],
        comment="upstream's victim order: lowest priority first, then BestEffort, Burstable, Guaranteed; the "
        "name makes it total (upstream's sort is not stable). Our default order also weighs priority "
        "classes, deletion and eviction cost and how well a pod's usage covers the excess",
    )
    fields.unknown()


def _metrics_utilization(conversion: Conversion, fields: Fields) -> bool:
    """Whether upstream measured usage (metrics-server) rather than requests; sets our loadSource."""
    value = fields.take("metricsUtilization")
    path = fields.at("metricsUtilization")
    inner = Fields(mapping(value, path, conversion), path, conversion)
    source = inner.take("source")
    measured = inner.take("metricsServer") is True or source == "KubernetesMetrics"
    if source == "Prometheus":
        inner.ignore("prometheus")
        conversion.error(
            inner.at("source"),
            "upstream's Prometheus query gives one utilization per node; our Prometheus load source needs "
            "per-node and per-pod cpu and memory queries, which cannot be derived from it",
        )
    elif source not in (None, "KubernetesMetrics"):
        conversion.error(inner.at("source"), f"must be KubernetesMetrics or Prometheus, got {source!r}")
    inner.unknown()
    comment = (
        "upstream's metricsUtilization: the same metrics-server usage"
        if measured
        else "upstream had no metricsUtilization and compared requests; we always compare measured usage "
        "(metrics-server here; nodeMetric or prometheus also work)"
    )
    conversion.set(("loadSource",), {"type": "metricsServer"}, path if value is not None else None, comment=comment)
    return measured


def _eviction_limits(conversion: Conversion, fields: Fields) -> None:
    limits = Fields(
        mapping(fields.take("evictionLimits"), fields.at("evictionLimits"), conversion),
        fields.at("evictionLimits"),
        conversion,
    )
    node = limits.take("node")
    limits.unknown()
    if node is None:
        return
    policy_level = conversion.get(("limits", "maxEvictionsPerNode"))
    lower = node if not isinstance(policy_level, int) or not isinstance(node, int) else min(node, policy_level)
    both = " and maxNoOfPodsToEvictPerNode, the lower" if policy_level is not None else ""
    conversion.set(
        ("limits", "maxEvictionsPerNode"),
        lower,
        limits.at("node") if lower == node else conversion.origins.get(("limits", "maxEvictionsPerNode")),
        comment=f"{LNU}'s evictionLimits.node{both}; here it caps every strategy's moves per node and cycle",
    )


def _pacing(conversion: Conversion) -> None:
    """Upstream evicts at once; our migration defaults pace moves. Kept, and said."""
    conversion.set(("migration", "maxMigratingPerNode"), 2)
    conversion.set(("migration", "objectLimiters"), {"workload": {"duration": "5m", "maxMigrating": 1}})
    conversion.set(("migration", "cooldown"), "10m")
    conversion.comment(
        ("migration",),
        "upstream evicts everything it picked at once and forgets it; ours paces moves (our defaults, written "
        "out): at most 2 in flight per node, 1 per workload per 5 minutes, and a moved workload or a source "
        "node is left alone for 10m",
    )
