"""Values both peers write the same way: resource threshold maps, label selectors, evictor switches."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from descheduler.convert.draft import Conversion, Fields, OutPath, mapping
from descheduler.policy.errors import join_path
from descheduler.policy.fields import ResourceName

MEASURED: Final = frozenset({"cpu", "memory", "pods"})
"""Resources a load source measures (pods: the count); the others are compared as Σ requests."""

_RESOURCE_NAME: TypeAdapter[str] = TypeAdapter(ResourceName)


def known_resource(name: Any) -> bool:
    try:
        _RESOURCE_NAME.validate_python(name)
    except ValidationError:
        return False
    return True


def thresholds(conversion: Conversion, value: Any, path: str, out: OutPath) -> dict[str, Any]:
    """A peer's resource → percent map as ours; a resource name we do not know is an error at its key."""
    converted: dict[str, Any] = {}
    for name, percent in mapping(value, path, conversion).items():
        at = join_path(path, str(name))
        if not known_resource(name):
            conversion.error(
                at,
                f"{name!r} is not a resource we know; thresholds take cpu, memory, pods, ephemeral-storage, "
                "hugepages-<size> or a domain-prefixed extended resource such as nvidia.com/gpu",
            )
            continue
        converted[name] = percent
        conversion.origins[(*out, name)] = at
    return converted


def by_requests(resources: Mapping[str, Any]) -> list[str]:
    """The named resources no load source measures: we compare their Σ requests."""
    return sorted(name for name in resources if name not in MEASURED)


# --- label selectors written as text (upstream's policy-level nodeSelector) ----------------------

_REQUIREMENT = re.compile(
    r"^(?:!(?P<absent>[^\s,!=()]+)"
    r"|(?P<key>[^\s,!=()]+)(?:\s*(?P<op>==|=|!=)\s*(?P<value>[^\s,!=()]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)$"
)


def selector_from_text(text: str) -> dict[str, Any]:
    """A Kubernetes label selector string (`a=b,c!=d,e in (f,g),!h`) as a selector object.

    Raises ValueError naming the requirement that is not one.
    """
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for part in re.split(r",(?![^()]*\))", text):
        requirement = part.strip()
        if not requirement:
            continue
        found = _REQUIREMENT.match(requirement)
        if found is None:
            raise ValueError(
                f"{requirement!r} is not a label selector requirement (key=value, key!=value, "
                "key in (a,b), key notin (a,b), key, !key)"
            )
        if found["absent"]:
            expressions.append({"key": found["absent"], "operator": "DoesNotExist"})
        elif found["op"] in ("=", "=="):
            match_labels[found["key"]] = found["value"]
        elif found["op"] == "!=":
            expressions.append({"key": found["key"], "operator": "NotIn", "values": [found["value"]]})
        elif found["set"]:
            values = [v.strip() for v in found["values"].split(",") if v.strip()]
            operator = "In" if found["set"] == "in" else "NotIn"
            expressions.append({"key": found["key"], "operator": operator, "values": values})
        else:
            expressions.append({"key": found["key"], "operator": "Exists"})
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


# --- the evictor's switches (upstream DefaultEvictor; Koordinator DefaultEvictor and MigrationController) ---

_SAME_MEANING: Final = (
    "evictSystemCriticalPods",
    "evictLocalStoragePods",
    "ignorePvcPods",
    "minPodAge",
    "labelSelector",
    "namespaces",
)


def evictor_switches(fields: Fields) -> Any:
    """Carry the evictor switches of these args into `evictor:`; return their `nodeFit` (None: unset)."""
    conversion = fields.conversion
    for key in _SAME_MEANING:
        value = fields.take(key)
        if value is not None:
            conversion.set(("evictor", key), value, fields.at(key))
    if fields.take("evictFailedBarePods") is not None:
        conversion.set(
            ("evictor", "evictBarePods"),
            False,
            fields.at("evictFailedBarePods"),
            comment="evictFailedBarePods was not carried over: it only let failed bare pods be evicted, and we never "
            "move a finished pod (nothing would run elsewhere); running bare pods stay unmovable, as before",
        )
    if fields.take("evictDaemonSetPods") is True:
        conversion.error(fields.at("evictDaemonSetPods"), "we never move DaemonSet pods (they would come back)")
    if fields.take("ignorePodsWithoutPDB") is True:
        conversion.error(fields.at("ignorePodsWithoutPDB"), "no equivalent: we move pods with or without a PDB")
    priority = fields.take("priorityThreshold")
    if priority is not None:
        _priority_threshold(fields, mapping(priority, fields.at("priorityThreshold"), conversion))
    return fields.take("nodeFit")


def _priority_threshold(fields: Fields, priority: Mapping[str, Any]) -> None:
    path = fields.at("priorityThreshold")
    inner = Fields(priority, path, fields.conversion)
    value = inner.take("value")
    if value is not None:
        fields.conversion.set(("evictor", "priorityThreshold"), value, inner.at("value"))
    if inner.take("name") is not None:
        fields.conversion.error(
            inner.at("name"),
            "a PriorityClass name cannot be carried over (the file does not say its value); "
            "write the class's value as priorityThreshold.value",
        )
    inner.unknown()
