"""Koordinator's koord-descheduler DeschedulerConfiguration (descheduler/v1alpha2) → our policy.

Our LowNodeLoad takes Koordinator's argument names, so most fields carry over as they are. What
changes meaning: the anomaly debounce (Koordinator acts after *more than* N hot cycles, we act on
the Nth: N+1 is written), the memory threshold Koordinator adds when none is set (written out),
a resource named only in highThresholds (Koordinator ignores it: dropped), and the pooled budget
and hidden nodeFit reservation (we account per target) — each is said in a comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from descheduler.convert.draft import Conversion, Fields, OutPath, items, mapping
from descheduler.convert.fields import evictor_switches, thresholds
from descheduler.convert.profiles import PluginConfig, Profile, leave_out, read_profiles, unused_configs
from descheduler.policy.errors import join_path

API_VERSION: Final = "descheduler/v1alpha2"
KIND: Final = "DeschedulerConfiguration"
CONVERTED_FROM: Final = "a Koordinator koord-descheduler DeschedulerConfiguration (descheduler/v1alpha2)"
PEER: Final = "koord-descheduler"
LNL: Final = "LowNodeLoad"
MIGRATION: Final = "MigrationController"
EVICTOR: Final = "DefaultEvictor"
DEFAULT_ABNORMALITIES: Final = 5
_KNOWN_PLUGINS: Final = {
    "balance": frozenset({LNL}),
    "evict": frozenset({MIGRATION, EVICTOR}),
    "filter": frozenset({MIGRATION, EVICTOR}),
}
_ARGS: Final[OutPath] = ("strategies", 0, "args")
_PROCESS_SETTINGS: Final = (
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "debuggingConfiguration",
    "enableContentionProfiling",
    "enableProfiling",
)
_LIMITS: Final = {
    "maxNoOfPodsToEvictPerNode": "maxEvictionsPerNode",
    "maxNoOfPodsToEvictPerNamespace": "maxEvictionsPerNamespace",
    "maxNoOfPodsToEvictTotal": "maxEvictionsPerCycle",
}
# LowNodeLoad args whose meaning is ours too.
_SAME_ARGS: Final = ("numberOfNodes", "evictableNamespaces", "podSelectors", "nodeSelector", "resourceWeights")
# MigrationController args → ours under `migration:`, same meaning.
_SAME_MIGRATION: Final = {
    "defaultJobMode": "defaultMode",
    "defaultJobTTL": "ttl",
    "evictBurst": "evictBurst",
    "maxMigratingGlobally": "maxMigratingGlobally",
    "maxMigratingPerNode": "maxMigratingPerNode",
    "maxMigratingPerNamespace": "maxMigratingPerNamespace",
    "objectLimiters": "objectLimiters",
}


def convert_koordinator(raw: Mapping[str, Any]) -> Conversion:
    """A Koordinator DeschedulerConfiguration as our policy document, with comments and every problem."""
    conversion = Conversion(CONVERTED_FROM)
    top = Fields(raw, "", conversion)
    top.ignore("apiVersion", "kind", *_PROCESS_SETTINGS)
    if any(key in raw for key in _PROCESS_SETTINGS):
        conversion.notes.append(
            "process settings (leaderElection, clientConnection, bind addresses) are flags of `descheduler run`, "
            "not policy: not converted"
        )
    interval = top.take("deschedulingInterval")
    if interval is not None:
        conversion.set(("interval",), interval, top.at("deschedulingInterval"))
    dry_run = top.take("dryRun")
    if dry_run is not None:
        conversion.set(("dryRun",), dry_run, top.at("dryRun"))
    conversion.set(("loadSource",), {"type": "nodeMetric"}, comment="Koordinator's LowNodeLoad reads NodeMetric")
    selector = top.take("nodeSelector")
    if selector is not None:
        conversion.set(("nodeSelector",), selector, top.at("nodeSelector"))
    for theirs, ours in _LIMITS.items():
        value = top.take(theirs)
        if value is not None:
            conversion.set(("limits", ours), value, top.at(theirs))
    profiles = read_profiles(conversion, top.take("profiles"), top.at("profiles"), _KNOWN_PLUGINS, True)
    top.unknown()
    conversion.set(("strategies", 0, "name"), LNL)
    _evictor_configs(conversion, profiles)
    _low_node_load(conversion, profiles)
    return conversion


def _running(profiles: list[Profile], name: str) -> list[tuple[Profile, PluginConfig]]:
    """(profile, config) of every profile that enables `name`; a profile without its config gets empty args."""
    return [
        (p, p.configs.get(name) or PluginConfig(name, {}, join_path(p.path, "pluginConfig")))
        for p in profiles
        if name in p.enabled
    ]


def _evictor_configs(conversion: Conversion, profiles: list[Profile]) -> None:
    migration = _running(profiles, MIGRATION)
    for profile, _ in migration[1:]:
        conversion.error(profile.enabled[MIGRATION], f"a second {MIGRATION}: our policy has one `migration`")
    _migration_controller(conversion, migration[0][1] if migration else PluginConfig(MIGRATION, {}, ""))
    evictors = _running(profiles, EVICTOR)
    for profile, _ in evictors[1:]:
        conversion.error(profile.enabled[EVICTOR], f"a second {EVICTOR}: our policy has one `evictor`")
    if evictors:
        config = evictors[0][1]
        fields = Fields(config.args, config.path, conversion)
        fields.ignore("apiVersion", "kind")
        _node_fit_of_evictor(conversion, fields, evictor_switches(fields))
        min_replicas = fields.take("minReplicas")
        if min_replicas is not None:
            conversion.set(
                ("evictor", "minReplicas"),
                max(min_replicas, 1) if isinstance(min_replicas, int) else min_replicas,
                fields.at("minReplicas"),
            )
        fields.unknown()


def _node_fit_of_evictor(conversion: Conversion, fields: Fields, node_fit: Any) -> None:
    if node_fit is not None:
        conversion.comment(
            (*_ARGS, "nodeFit"),
            f"the evictor's nodeFit ({node_fit}, {fields.at('nodeFit')}) is not carried over: here LowNodeLoad's "
            "nodeFit decides whether a move needs a target that fits",
        )


def _migration_controller(conversion: Conversion, config: PluginConfig) -> None:
    fields = Fields(config.args, config.path, conversion)
    fields.ignore("apiVersion", "kind")
    fields.drop(
        "maxConcurrentReconciles", "how many jobs Koordinator's controller reconciles at once; ours has one loop"
    )
    if fields.take("paused") is True:
        conversion.error(fields.at("paused"), "a paused MigrationController moves nothing; set dryRun: true instead")
    if fields.take("dryRun") is True:
        conversion.set(("dryRun",), True, fields.at("dryRun"))
    for theirs, ours in _SAME_MIGRATION.items():
        value = fields.take(theirs)
        if value is not None:
            conversion.set(("migration", ours), value, fields.at(theirs))
    qps = fields.take("evictQPS")
    if qps is not None:
        number = _number(qps)
        if number is None:
            conversion.error(fields.at("evictQPS"), f"must be a number, got {qps!r}")
        else:
            whole = int(number) if number.is_integer() else number
            conversion.set(("migration", "evictQPS"), whole, fields.at("evictQPS"))
    policy = fields.take("evictionPolicy")
    if policy in ("Eviction", "Delete"):
        conversion.set(("migration", "evictionPolicy"), policy, fields.at("evictionPolicy"))
    elif policy is not None:
        conversion.error(fields.at("evictionPolicy"), f"must be Eviction or Delete here, got {policy!r}")
    arbitration = mapping(fields.take("arbitrationArgs"), fields.at("arbitrationArgs"), conversion)
    if arbitration:
        conversion.notes.append(
            f"{fields.at('arbitrationArgs')}: not converted; our jobs are always arbitrated, every cycle"
        )
    if fields.take("skipCheckExpectedReplicas") is True:
        conversion.error(
            fields.at("skipCheckExpectedReplicas"), "no equivalent: our per-workload limits always read replicas"
        )
    _node_fit_of_evictor(conversion, fields, evictor_switches(fields))
    _per_workload(conversion, fields)
    fields.unknown()
    conversion.set(
        ("migration", "cooldown"),
        "10m",
        comment="ours only (Koordinator has none): a moved workload is not moved again, and a source node is "
        "not a target, within it; 0s turns it off",
    )


_PER_WORKLOAD: Final = ("maxMigratingPerWorkload", "maxUnavailablePerWorkload")
# Koordinator's scale for an unset (or 0) per-workload limit, from
# pkg/descheduler/controllers/migration/util/util.go GetMaxUnavailable (GetMaxMigrating is the same).
_KOORD_SCALE: Final = (
    "1 for a workload of fewer than 4 replicas, 2 for 4 to 10, 10% above, the 10% rounded down (11-19 replicas: 1)"
)


def _per_workload(conversion: Conversion, fields: Fields) -> None:
    """maxMigratingPerWorkload / maxUnavailablePerWorkload, as Koordinator resolves them against the replicas."""
    unset = []
    for key in _PER_WORKLOAD:
        value = fields.take(key)
        if value is None or value == 0:
            unset.append(key if value is None else f"{key} 0 (Koordinator reads 0 as unset)")
            continue
        comment = None
        if isinstance(value, str) and value.strip().endswith("%"):
            comment = (
                f"{value} of the replicas: Koordinator rounds it down, and where that comes to 0 it uses its "
                f"default scale ({_KOORD_SCALE}); ours rounds it up"
            )
        conversion.set(("migration", key), value, fields.at(key), comment=comment)
    if unset:
        conversion.comment(
            ("migration",),
            f"{', '.join(unset)} left unset, as in Koordinator: both scale with the workload's replicas. Koordinator: "
            f"{_KOORD_SCALE}; ours, unset, the same except that it rounds the 10% up (11-19 replicas: 2)",
        )


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _low_node_load(conversion: Conversion, profiles: list[Profile]) -> None:
    unused_configs(conversion, profiles, frozenset())
    runs = _running(profiles, LNL)
    leave_out(conversion, profiles, runs[0][0] if runs else None, PEER, LNL)
    if not runs:
        configured = [p.configs[LNL].path for p in profiles if LNL in p.configs]
        hint = (
            f"; {configured[0]} configures it, but Koordinator runs a plugin only where plugins.balance.enabled "
            f"names it ({{name: {LNL}}}), so this configuration does not balance load"
            if configured
            else ""
        )
        conversion.error("profiles", f"no profile enables {LNL} (plugins.balance.enabled): nothing to convert{hint}")
        return
    for profile, _ in runs[1:]:
        conversion.error(profile.enabled[LNL], f"a second {LNL}: our policy has one LowNodeLoad strategy")
    profile, config = runs[0]
    conversion.origins[("strategies", 0)] = config.path
    fields = Fields(config.args, config.path, conversion)
    fields.ignore("apiVersion", "kind")
    if fields.take("paused") is True:
        conversion.error(fields.at("paused"), "a paused LowNodeLoad moves nothing; leave the strategy out instead")
    if fields.take("dryRun") is True:
        conversion.set(
            ("dryRun",),
            True,
            fields.at("dryRun"),
            comment="from LowNodeLoad's dryRun: here it applies to the whole policy",
        )
    for key in _SAME_ARGS:
        value = fields.take(key)
        if value is not None:
            conversion.set((*_ARGS, key), value, fields.at(key))
    _level(conversion, fields, _ARGS, top=True)
    node_fit = fields.take("nodeFit")
    conversion.set(
        (*_ARGS, "nodeFit"),
        True if node_fit is None else node_fit,
        fields.at("nodeFit") if node_fit is not None else None,
    )
    conversion.comment(
        (*_ARGS, "nodeFit"),
        "Koordinator kept every candidate's usage on the first low node it fit, even for pods it never moved, "
        "and pooled the room of all low nodes in one budget; here only planned moves count, each on its own target",
    )
    conversion.set(
        (*_ARGS, "recentPodsLast"),
        "0s",
        comment="ours by default moves pods started within the last hour after every other candidate (1h)",
    )
    conversion.set(
        (*_ARGS, "lookAhead"),
        "0s",
        comment="Koordinator judges a node as it is now; ours by default judges it 10m ahead, at the rate "
        "the cluster's usage rose over the last two 10m spans (10m)",
    )
    conversion.set(
        (*_ARGS, "reliefDepth"),
        0,
        comment="Koordinator stops relieving a hot node just under highThresholds; our default (0.25) goes a "
        "quarter of the way down to lowThresholds",
    )
    expiration = fields.take("nodeMetricExpirationSeconds")
    if expiration is not None:
        conversion.set(
            ("scheduling", "nodeMetricExpirationSeconds"), expiration, fields.at("nodeMetricExpirationSeconds")
        )
    cache_timeout = fields.take("detectorCacheTimeout")
    if cache_timeout is not None:
        conversion.comment(
            (*_ARGS, "anomalyCondition"),
            f"detectorCacheTimeout ({cache_timeout}, {fields.at('detectorCacheTimeout')}) is not carried over: "
            "Koordinator forgets a node's count of hot cycles once the node was not seen hot for that long, and a "
            "node that cools to between the thresholds keeps its count until then; ours counts again from 0 as "
            "soon as the node is not hot",
        )
    pools = items(fields.take("nodePools"), fields.at("nodePools"), conversion)
    for index, raw in enumerate(pools):
        at = join_path(fields.at("nodePools"), index)
        pool = Fields(mapping(raw, at, conversion), at, conversion)
        out: OutPath = (*_ARGS, "nodePools", index)
        for key in ("name", "nodeSelector", "numberOfNodes", "resourceWeights"):
            value = pool.take(key)
            if value is not None:
                conversion.set((*out, key), value, pool.at(key))
        _level(conversion, pool, out, top=False)
        pool.unknown()
    if pools:
        conversion.comment(
            (*_ARGS, "nodePools"),
            "fields a pool leaves out inherit the top-level values, and nodes no pool selects form the pool "
            "'default' with the top-level thresholds",
        )
    fields.unknown()


def _level(conversion: Conversion, fields: Fields, out: OutPath, top: bool) -> None:
    """Thresholds, deviation flag and debounce of the top level or of one node pool."""
    deviation = fields.take("useDeviationThresholds")
    if deviation is not None:
        conversion.set((*out, "useDeviationThresholds"), deviation, fields.at("useDeviationThresholds"))
    low_value, high_value = fields.take("lowThresholds"), fields.take("highThresholds")
    if top or low_value is not None or high_value is not None:
        _thresholds(conversion, fields, out, low_value, high_value)
    for prod in ("prodLowThresholds", "prodHighThresholds"):
        value = fields.take(prod)
        if value is not None:
            conversion.set((*out, prod), thresholds(conversion, value, fields.at(prod), (*out, prod)), fields.at(prod))
    _anomaly(conversion, fields, out, top)


def _thresholds(conversion: Conversion, fields: Fields, out: OutPath, low_value: Any, high_value: Any) -> None:
    low_path, high_path = fields.at("lowThresholds"), fields.at("highThresholds")
    low = thresholds(conversion, low_value, low_path, (*out, "lowThresholds"))
    high = thresholds(conversion, high_value, high_path, (*out, "highThresholds"))
    low_comments: list[str] = []
    high_comments: list[str] = [
        "a node above on any resource is hot. Koordinator pooled the room below these percents over all low nodes "
        "in one budget; here each move must keep its own target <= these percents"
    ]
    ignored = sorted(set(high) - set(low))
    for resource in ignored:
        del high[resource]
        conversion.origins.pop((*out, "highThresholds", resource), None)
    if ignored:
        high_comments.append(
            f"{', '.join(ignored)}: named only in highThresholds, which Koordinator ignores; dropped "
            "(name it in lowThresholds too to act on it)"
        )
    for resource in sorted(set(low) - set(high)):
        conversion.error(
            join_path(low_path, resource),
            f"{resource} is named only in lowThresholds; Koordinator never classifies a node hot by it and we "
            "need both: name it in highThresholds too, or remove it",
        )
    if "memory" not in low and "memory" not in high and (low or high_value is not None):
        low["memory"] = 100
        high["memory"] = 100
        note = (
            "memory 100: Koordinator evaluates memory at 100% when it is not set, written out so the same nodes are "
            "low and hot; remove it from both maps to evaluate only the resources you named"
        )
        low_comments.append(note)
        high_comments.append(note)
    conversion.set((*out, "lowThresholds"), low, low_path)
    conversion.set((*out, "highThresholds"), high, high_path)
    for comment in low_comments:
        conversion.comment((*out, "lowThresholds"), comment)
    for comment in high_comments:
        conversion.comment((*out, "highThresholds"), comment)


def debounce(given: int | None) -> tuple[int, str]:
    """Our consecutiveAbnormalities for Koordinator's, and the comment saying why.

    From pkg/descheduler/framework/plugins/loadaware/low_node_load.go (filterRealAbnormalNodes): with 1
    the detector is skipped and a node is relieved on its first hot cycle; with N > 1 it is relieved
    when it was hot MORE than N cycles in a row, on cycle N + 1. apis/config/v1alpha2/defaults.go
    turns an unset or 0 count into 5.
    """
    if given == 1:
        return 1, (
            "Koordinator's consecutiveAbnormalities 1 skips its anomaly detector and relieves a node on its first "
            "hot cycle; ours, 1, does too"
        )
    count = DEFAULT_ABNORMALITIES if given in (None, 0) else given
    if given is None:
        where = f"unset, Koordinator's default {count}"
    elif given == 0:
        where = f"0, which Koordinator's defaulting turns into {count}"
    else:
        where = f"{count}"
    return count + 1, (
        f"Koordinator's consecutiveAbnormalities ({where}) acts when a node was hot MORE than that many cycles "
        f"in a row, on cycle {count + 1}; ours acts on the Nth, so {count + 1} here: relief starts on the same cycle"
    )


def _anomaly(conversion: Conversion, fields: Fields, out: OutPath, top: bool) -> None:
    raw = fields.take("anomalyCondition")
    if raw is None and not top:
        return  # a pool without its own inherits ours, already converted
    path = fields.at("anomalyCondition")
    condition = Fields(mapping(raw, path, conversion), path, conversion)
    given = condition.take("consecutiveAbnormalities")
    dropped = [key for key in ("timeout", "consecutiveNormalities") if condition.take(key) is not None]
    condition.unknown()
    if given is not None and (not isinstance(given, int) or isinstance(given, bool) or given < 0):
        conversion.error(condition.at("consecutiveAbnormalities"), f"must be a whole number ≥ 0, got {given!r}")
        return
    ours, comment = debounce(given)
    if dropped:
        comment += (
            f". Not carried over: {', '.join(dropped)} (Koordinator keeps a relieved node eligible a few cycles; "
            "ours counts again from 0 once the node is not hot)"
        )
    conversion.set(
        (*out, "anomalyCondition"),
        {"consecutiveAbnormalities": ours},
        condition.at("consecutiveAbnormalities") if given is not None else None,
        comment=comment,
    )
