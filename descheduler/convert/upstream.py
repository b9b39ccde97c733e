"""kubernetes-sigs/descheduler's DeschedulerPolicy (descheduler/v1alpha2) → our policy.

LowNodeUtilization becomes LowNodeLoad, DefaultEvictor our `evictor`, the policy-level eviction
caps our `limits`. Where the meaning changes (requests vs usage, pooled vs per-target headroom,
victim and source order) the field carries a comment; what cannot be carried over is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from descheduler.convert.draft import Conversion, Fields, OutPath, items, mapping, nearest
from descheduler.convert.fields import by_requests, evictor_switches, selector_from_text, thresholds
from descheduler.convert.profiles import PluginConfig, Profile, leave_out, read_profiles, unused_configs
from descheduler.policy.errors import join_path

API_VERSION: Final = "descheduler/v1alpha2"
KIND: Final = "DeschedulerPolicy"
CONVERTED_FROM: Final = "an upstream kubernetes-sigs/descheduler DeschedulerPolicy (descheduler/v1alpha2)"
PEER: Final = "the upstream descheduler"
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
    top.ignore("apiVersion", "kind")
    top.drop("evictionFailureEventNotification", "an Event when an eviction fails; ours records every failed move")
    top.drop("metricsCollector", "how upstream collects metrics; our loadSource is written below")
    policy_level(conversion, top)
    _prometheus(conversion, top)
    profiles = read_profiles(conversion, top.take("profiles"), top.at("profiles"), _KNOWN_PLUGINS, False)
    top.unknown()
    convert_profiles(conversion, profiles)
    return conversion


def policy_level(conversion: Conversion, top: Fields) -> None:
    """The interval note, the eviction caps and the node selector: the same in v1alpha1 and v1alpha2."""
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


def convert_profiles(
    conversion: Conversion,
    profiles: list[Profile],
    evictor: PluginConfig | None = None,
    missing: str = "",
    removal: str = "",
) -> None:
    """The profile that runs LowNodeUtilization, with its DefaultEvictor; every other plugin is left out.

    `evictor`: the DefaultEvictor args when they are not in the profile (v1alpha1 writes them at the top).
    `missing`: what to say when no profile runs LowNodeUtilization; `removal`: how to stop upstream
    running it (see `leave_out`).
    """
    conversion.set(("strategies", 0, "name"), "LowNodeLoad")
    chosen = _lnu_profile(conversion, profiles, missing)
    leave_out(conversion, profiles, chosen[0] if chosen else None, PEER, LNU, removal)
    unused_configs(conversion, profiles, frozenset({EVICTOR}))
    if evictor is None and chosen is not None:
        evictor = chosen[0].configs.get(EVICTOR)
    node_fit = _evictor(conversion, evictor)
    if chosen is not None:
        _low_node_utilization(conversion, *chosen)
    conversion.set((*_ARGS, "nodeFit"), bool(node_fit.value), node_fit.origin, comment=node_fit.comment)
    _pacing(conversion)


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


def _lnu_profile(conversion: Conversion, profiles: list[Profile], missing: str) -> tuple[Profile, PluginConfig] | None:
    """The one profile that runs LowNodeUtilization, with its args; none, or a second, is an error."""
    runs = [profile for profile in profiles if LNU in profile.enabled]
    if not runs:
        conversion.error(
            "profiles", missing or f"no profile enables {LNU} (plugins.balance.enabled): nothing to convert"
        )
        return None
    for profile in runs[1:]:
        conversion.error(profile.enabled[LNU], f"a second {LNU}: our policy has one LowNodeLoad strategy")
    config = runs[0].configs.get(LNU)
    if config is None:
        conversion.error(runs[0].enabled[LNU], f"{LNU} is enabled without pluginConfig args (thresholds are required)")
        return None
    return runs[0], config


@dataclass(frozen=True, slots=True)
class NodeFit:
    value: Any
    origin: str | None
    comment: str


def _evictor(conversion: Conversion, config: PluginConfig | None) -> NodeFit:
    """DefaultEvictor's args as our `evictor`; its nodeFit is LowNodeLoad's here."""
    args = config if config is not None else PluginConfig(EVICTOR, {}, "")
    fields = Fields(args.args, args.path, conversion)
    fields.ignore("apiVersion", "kind")
    legacy = [key for key in _LEGACY_SWITCHES if fields.raw.get(key) is True]
    node_fit = evictor_switches(fields)
    _pod_protections(conversion, fields, legacy)
    _min_replicas(conversion, fields)
    fields.unknown()
    return node_fit_of(node_fit, fields.at("nodeFit") if node_fit is not None else None)


def node_fit_of(value: Any, origin: str | None) -> NodeFit:
    given = "unset: false" if value is None else str(value).lower()
    return NodeFit(
        value,
        origin,
        (
            f"DefaultEvictor nodeFit ({given}). Upstream: evict only "
            "pods that fit on some other node by requests, and the stock scheduler places the replacement. "
            "Here true: each move gets a target that fits and stays <= highThresholds, reserved before the "
            "eviction; false: the target must still stay <= highThresholds, but the pod is evicted directly "
            "as upstream did"
        ),
    )


# The deprecated DefaultEvictor booleans podProtections replaces (defaultevictor/types.go).
_LEGACY_SWITCHES: Final = (
    "evictLocalStoragePods",
    "evictDaemonSetPods",
    "evictSystemCriticalPods",
    "ignorePvcPods",
    "evictFailedBarePods",
    "ignorePodsWithoutPDB",
)


def _pod_protections(conversion: Conversion, fields: Fields, legacy: list[str]) -> None:
    """Upstream's podProtections (kubernetes-sigs/descheduler pkg/framework/plugins/defaultevictor/types.go).

    Four protections are on by default (PodsWithLocalStorage, SystemCriticalPods, FailedBarePods,
    DaemonSetPods), `defaultDisabled` turns them off; `extraEnabled` adds PodsWithPVC, PodsWithoutPDB,
    PodsWithResourceClaims or PodsWithPDBBlockingSingleReplicaOwner.
    """
    path = fields.at("podProtections")
    value = fields.take("podProtections")
    if value is None:
        return
    protections = Fields(mapping(value, path, conversion), path, conversion)
    disabled = items(protections.take("defaultDisabled"), protections.at("defaultDisabled"), conversion)
    extra = items(protections.take("extraEnabled"), protections.at("extraEnabled"), conversion)
    config = mapping(protections.take("config"), protections.at("config"), conversion)
    protections.unknown()
    if legacy and (disabled or extra):
        # Upstream refuses the mix (defaultevictor/validation.go), so no upstream runs such a policy.
        conversion.error(
            path,
            f"upstream refuses podProtections beside the deprecated {', '.join(legacy)} "
            '("cannot use Deprecated fields alongside PodProtections"): keep one of the two',
        )
        return
    for index, name in enumerate(disabled):
        _default_disabled(conversion, str(name), join_path(protections.at("defaultDisabled"), index))
    for index, name in enumerate(extra):
        _extra_enabled(conversion, str(name), join_path(protections.at("extraEnabled"), index), config)
    if config and "PodsWithPVC" not in [str(name) for name in extra]:
        conversion.notes.append(f"{protections.at('config')}: not carried over (PodsWithPVC is not enabled)")


_DEFAULT_PROTECTIONS: Final = ("PodsWithLocalStorage", "SystemCriticalPods", "FailedBarePods", "DaemonSetPods")
_EXTRA_PROTECTIONS: Final = (
    "PodsWithPVC",
    "PodsWithoutPDB",
    "PodsWithResourceClaims",
    "PodsWithPDBBlockingSingleReplicaOwner",
)


def _default_disabled(conversion: Conversion, name: str, at: str) -> None:
    if name == "PodsWithLocalStorage":
        conversion.set(("evictor", "evictLocalStoragePods"), True, at, comment=f"{name} in defaultDisabled")
    elif name == "SystemCriticalPods":
        conversion.set(("evictor", "evictSystemCriticalPods"), True, at, comment=f"{name} in defaultDisabled")
    elif name == "FailedBarePods":
        conversion.set(
            ("evictor", "evictBarePods"),
            False,
            at,
            comment="FailedBarePods in defaultDisabled was not carried over: it only let failed bare pods be "
            "evicted, and we never move a finished pod (nothing would run elsewhere); running bare pods stay "
            "unmovable, as before",
        )
    elif name == "DaemonSetPods":
        conversion.error(at, "we never move DaemonSet pods (they would come back); remove DaemonSetPods")
    else:
        _unknown_protection(conversion, name, at, "a default", _DEFAULT_PROTECTIONS)


def _extra_enabled(conversion: Conversion, name: str, at: str, config: Mapping[str, Any]) -> None:
    if name == "PodsWithPVC":
        comment = None
        pvc = mapping(config.get("PodsWithPVC"), f"{at}.config.PodsWithPVC", conversion)
        if pvc.get("protectedStorageClasses"):
            classes = ", ".join(
                str(c.get("name")) if isinstance(c, Mapping) else str(c) for c in pvc["protectedStorageClasses"]
            )
            comment = (
                f"PodsWithPVC with protectedStorageClasses ({classes}): upstream protected only pods whose claims "
                "use those classes; ours protects every pod with a PersistentVolumeClaim (fewer pods move)"
            )
        conversion.set(("evictor", "ignorePvcPods"), True, at, comment=comment)
    elif name == "PodsWithoutPDB":
        conversion.error(at, "no equivalent: we move pods with or without a PodDisruptionBudget")
    elif name == "PodsWithResourceClaims":
        conversion.error(at, "no equivalent: our evictor has no switch for pods with ResourceClaims")
    elif name == "PodsWithPDBBlockingSingleReplicaOwner":
        conversion.error(at, "no equivalent: we never evict past a PodDisruptionBudget")
    else:
        _unknown_protection(conversion, name, at, "an extra", _EXTRA_PROTECTIONS)


def _unknown_protection(conversion: Conversion, name: str, at: str, kind: str, known: Sequence[str]) -> None:
    conversion.error(at, f"{name!r} is not {kind} protection upstream knows ({', '.join(known)}){nearest(name, known)}")


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


def _low_node_utilization(conversion: Conversion, profile: Profile, config: PluginConfig) -> None:
    conversion.origins[("strategies", 0)] = config.path
    conversion.comment(
        ("strategies", 0),
        (
            f"from {LNU} ({profile.path}). Hot nodes are relieved hottest first by the mean of their "
            "percents (upstream: by the raw sum of millicores + bytes + pods, so memory decided), and a pod "
            "that uses none of the resources its node is hot on is not moved (upstream moved it)"
        ),
    )
    lnu_args(conversion, Fields(config.args, config.path, conversion))


def lnu_args(conversion: Conversion, fields: Fields) -> None:
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
