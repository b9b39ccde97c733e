"""kubernetes-sigs/descheduler's old DeschedulerPolicy (descheduler/v1alpha1, `strategies:`) → our policy.

Read as upstream itself migrates it to v1alpha2 (pkg/api/v1alpha1/strategymigration.go and
conversion.go): each enabled strategy is a profile of its own; LowNodeUtilization's
`params.nodeResourceUtilizationThresholds` are its args, `params.namespaces` its evictableNamespaces;
the policy-level evictor switches and the strategy's `nodeFit` and `thresholdPriority` are its
DefaultEvictor. The rest is converted as a v1alpha2 policy is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from descheduler.convert import upstream
from descheduler.convert.draft import Conversion, Fields, mapping
from descheduler.convert.profiles import STANDALONE_POINTS, OtherPlugin, PluginConfig, Profile
from descheduler.policy.errors import join_path

API_VERSION: Final = "descheduler/v1alpha1"
KIND: Final = "DeschedulerPolicy"
CONVERTED_FROM: Final = "an upstream kubernetes-sigs/descheduler DeschedulerPolicy (descheduler/v1alpha1, strategies)"
# The evictor switches v1alpha1 writes at the top of the policy (DefaultEvictor's args in v1alpha2).
_TOP_EVICTOR: Final = (
    "evictFailedBarePods",
    "evictLocalStoragePods",
    "evictSystemCriticalPods",
    "evictDaemonSetPods",
    "ignorePvcPods",
)
# Where upstream's migration puts each v1alpha1 strategy; all act on their own.
_POINTS: Final = {"LowNodeUtilization": "balance", "HighNodeUtilization": "balance", "RemoveDuplicates": "balance"}
assert set(_POINTS.values()) <= STANDALONE_POINTS


def convert_v1alpha1(raw: Mapping[str, Any]) -> Conversion:
    """An upstream v1alpha1 DeschedulerPolicy as our policy document, with comments and every problem."""
    conversion = Conversion(CONVERTED_FROM)
    top = Fields(raw, "", conversion)
    top.ignore("apiVersion", "kind")
    upstream.policy_level(conversion, top)
    evictor = {key: top.take(key) for key in _TOP_EVICTOR if key in raw}
    strategies = mapping(top.take("strategies"), top.at("strategies"), conversion)
    top.unknown()
    profiles = []
    params_of_lnu: tuple[Fields, Fields] | None = None
    for name, value in strategies.items():
        at = join_path(top.at("strategies"), str(name))
        strategy = Fields(mapping(value, at, conversion), at, conversion)
        enabled = strategy.take("enabled")
        strategy.drop("weight", "strategy weights were never used by upstream")
        params = Fields(
            mapping(strategy.take("params"), strategy.at("params"), conversion), strategy.at("params"), conversion
        )
        if enabled is not True:
            strategy.ignore("params")
            conversion.notes.append(f"{at}: not converted, it is not enabled")
            continue
        if name == upstream.LNU:
            thresholds_at = params.at("nodeResourceUtilizationThresholds")
            args = mapping(params.take("nodeResourceUtilizationThresholds"), thresholds_at, conversion)
            config = PluginConfig(upstream.LNU, args, thresholds_at)
            profiles.append(Profile(at, {upstream.LNU: join_path(at, "enabled")}, {upstream.LNU: config}))
            params_of_lnu = (strategy, params)
        else:
            point = _POINTS.get(str(name), "deschedule")
            other = OtherPlugin(str(name), point, join_path(at, "enabled"))
            profiles.append(Profile(at, {}, {}, (other,)))
            params.ignore(*params.raw)  # its own parameters, left out with it
            params.unknown()
        strategy.unknown()
    evictor_config = PluginConfig(upstream.EVICTOR, evictor, "")
    missing = f"no strategy {upstream.LNU} with enabled: true: nothing to convert"
    removal = f"{join_path(top.at('strategies'), upstream.LNU)}.enabled set to false"
    upstream.convert_profiles(conversion, profiles, evictor_config, missing, removal)
    if params_of_lnu is not None:
        _lnu_params(conversion, *params_of_lnu)
    return conversion


def _lnu_params(conversion: Conversion, strategy: Fields, params: Fields) -> None:
    """LowNodeUtilization's params besides its thresholds: namespaces, and its DefaultEvictor's part."""
    namespaces = params.take("namespaces")
    if namespaces is not None:
        conversion.set(("strategies", 0, "args", "evictableNamespaces"), namespaces, params.at("namespaces"))
    node_fit = params.take("nodeFit")
    if node_fit is not None:
        fit = upstream.node_fit_of(node_fit, params.at("nodeFit"))
        conversion.set(("strategies", 0, "args", "nodeFit"), bool(fit.value), fit.origin)
        conversion.comments[("strategies", 0, "args", "nodeFit")] = [
            fit.comment.replace("DefaultEvictor nodeFit", "params.nodeFit", 1)
        ]
    priority = params.take("thresholdPriority")
    if priority is not None:
        conversion.set(("evictor", "priorityThreshold"), priority, params.at("thresholdPriority"))
    if params.take("thresholdPriorityClassName"):
        conversion.error(
            params.at("thresholdPriorityClassName"),
            "a PriorityClass name cannot be carried over (the file does not say its value); "
            "write the class's value as thresholdPriority",
        )
    params.unknown()
