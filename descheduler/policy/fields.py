"""Field types shared by the policy models: percents, resource names, durations, selectors."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Annotated, Any, NoReturn

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from descheduler.durations import format_duration, parse_duration
from descheduler.labels import LabelSelector

Loc = tuple[str | int, ...]


class PolicyModel(BaseModel):
    """Base of every policy model: camelCase keys, unknown keys rejected, immutable, strict types."""

    # strict: a quoted "80" is a typo for a number, and `true` is not 1.
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        strict=True,
    )


def problem(message: str) -> PydanticCustomError:
    """A validation error whose message is shown to the user as is."""
    # The message goes through the context so braces in it are never read as a template.
    return PydanticCustomError("policy", "{reason}", {"reason": message})


def raise_problems(title: str, problems: Iterable[tuple[Loc, str, Any]]) -> NoReturn:
    """Raise every (loc, message, input) at once, with locs relative to the model being validated."""
    details = [InitErrorDetails(type=problem(msg), loc=loc, input=value) for loc, msg, value in problems]
    raise ValidationError.from_exception_data(title, details)


# --- numbers -------------------------------------------------------------------------------------


def _check_percent(value: float) -> float:
    if not 0 <= value <= 100:
        raise problem(f"must be a percent between 0 and 100, got {value:g}")
    return value


Percent = Annotated[float, AfterValidator(_check_percent)]
NonNegativeInt = Annotated[int, Field(ge=0)]


# --- resource names ------------------------------------------------------------------------------

_NATIVE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", "storage")
_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_QUALIFIED = re.compile(
    rf"^(?P<prefix>{_DNS_LABEL}(?:\.{_DNS_LABEL})*)/(?P<name>[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
)
_HUGEPAGES = re.compile(r"^hugepages-[0-9]+(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


def _check_resource_name(name: str) -> str:
    if name in _NATIVE_RESOURCES or _HUGEPAGES.match(name):
        return name
    qualified = _QUALIFIED.match(name)
    if qualified and len(qualified["prefix"]) <= 253 and len(qualified["name"]) <= 63:
        return name
    raise problem(
        f"{name!r} is not a Kubernetes resource name; use cpu, memory, pods, ephemeral-storage, "
        "hugepages-<size> or a domain-prefixed extended resource such as nvidia.com/gpu"
    )


# The same rule as _check_resource_name, in a regex dialect JSON schema tools understand.
_RESOURCE_NAME_PATTERN = (
    r"^(cpu|memory|pods|ephemeral-storage|storage|hugepages-[0-9]+[A-Za-z]*"
    rf"|{_DNS_LABEL}(\.{_DNS_LABEL})*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
).replace("(?:", "(")
ResourceName = Annotated[str, AfterValidator(_check_resource_name)]


def resource_map_schema(values: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": _RESOURCE_NAME_PATTERN},
            "additionalProperties": values,
        }
    )


_PERCENT_SCHEMA = {"type": "number", "minimum": 0, "maximum": 100}
Thresholds = Annotated[dict[ResourceName, Percent], resource_map_schema(_PERCENT_SCHEMA)]
"""Resource name → percent of allocatable (0–100)."""


def _check_not_empty(thresholds: dict[str, float]) -> dict[str, float]:
    if not thresholds:
        raise problem("must name at least one resource, e.g. {cpu: 70, memory: 80}")
    return thresholds


RequiredThresholds = Annotated[Thresholds, AfterValidator(_check_not_empty)]
"""Thresholds that name at least one resource."""


def _check_weights(weights: dict[str, int]) -> dict[str, int]:
    if not any(weights.values()):
        raise problem("at least one weight must be greater than 0")
    return weights


Weights = Annotated[
    dict[ResourceName, NonNegativeInt],
    AfterValidator(_check_weights),
    resource_map_schema({"type": "integer", "minimum": 0}),
]
"""Resource name → integer weight ≥ 0, at least one > 0."""


# --- durations -----------------------------------------------------------------------------------

_DURATION_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": r"^[+-]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$"},
        {"type": "integer"},
    ],
    "description": "Go duration (60s, 5m, 1h30m, 500ms) or whole seconds",
}


def _duration(minimum: timedelta, inclusive: bool) -> Any:
    def validate(value: Any) -> timedelta:
        if isinstance(value, float):
            raise problem(f"must be a duration like 90s or 1.5m, or whole seconds; got {value:g}")
        try:
            parsed = parse_duration(value)
        except ValueError as err:
            raise problem(f"must be {str(err).removeprefix('expected ')}") from None
        if parsed < minimum or (not inclusive and parsed == minimum):
            bound = "at least" if inclusive else "greater than"
            raise problem(f"must be {bound} {format_duration(minimum)}, got {format_duration(parsed)}")
        return parsed

    return PlainValidator(validate)


_DURATION_OUT = PlainSerializer(format_duration, return_type=str)
Duration = Annotated[timedelta, _duration(timedelta(0), True), _DURATION_OUT, WithJsonSchema(_DURATION_SCHEMA)]
"""A duration ≥ 0."""
PositiveDuration = Annotated[timedelta, _duration(timedelta(0), False), _DURATION_OUT, WithJsonSchema(_DURATION_SCHEMA)]
"""A duration > 0."""


# --- label selectors -----------------------------------------------------------------------------

_SELECTOR_KEYS = frozenset({"matchLabels", "matchExpressions"})
_LABEL_MAP_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_SELECTOR_SCHEMA: dict[str, Any] = {
    "description": (
        "A Kubernetes label selector {matchLabels, matchExpressions}; a plain map {label: value} "
        "is shorthand for matchLabels. An empty selector matches everything."
    ),
    "anyOf": [
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "matchLabels": _LABEL_MAP_SCHEMA,
                "matchExpressions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["key", "operator"],
                        "properties": {
                            "key": {"type": "string", "minLength": 1},
                            "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                            "values": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
        _LABEL_MAP_SCHEMA,
    ],
}


def _subpath_loc(subpath: str) -> Loc:
    """Turn labels.py's ".matchExpressions[0].operator" into a loc tuple."""
    if subpath.startswith(".matchLabels."):
        # Label keys contain dots and slashes: keep the key whole.
        return ("matchLabels", subpath.removeprefix(".matchLabels."))
    return tuple(m[1] or int(m[2]) for m in re.finditer(r"\.(\w+)|\[(\d+)\]", subpath))


def _parse_selector(value: Any) -> LabelSelector:
    if isinstance(value, LabelSelector):
        return value
    if not isinstance(value, Mapping):
        raise problem(f"must be a label selector object, got {type(value).__name__}")
    keys = set(value)
    if keys and not keys <= _SELECTOR_KEYS:
        if keys & _SELECTOR_KEYS:
            raise problem(
                "use either {matchLabels, matchExpressions} or a plain map of label: value, not both; "
                f"got keys {', '.join(sorted(map(str, keys)))}"
            )
        bad = sorted(str(k) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str))
        if bad:
            raise problem(
                "must be {matchLabels, matchExpressions} or a map of label keys to string values; "
                f"not a string value: {', '.join(bad)}"
            )
        return LabelSelector.from_labels(value)
    try:
        return LabelSelector.from_dict(value, where="")
    except ValueError as err:
        subpath, _, message = str(err).partition(": ")
        raise_problems("LabelSelector", [(_subpath_loc(subpath), message, value)])


Selector = Annotated[
    LabelSelector,
    PlainValidator(_parse_selector),
    PlainSerializer(lambda s: s.to_dict(), return_type=dict[str, Any]),
    WithJsonSchema(_SELECTOR_SCHEMA),
]
"""A descheduler.labels.LabelSelector, written as a selector object or a plain label map."""


# --- int or percent ------------------------------------------------------------------------------

_PERCENT_TEXT = re.compile(r"^(\d{1,3})%$")


def _parse_int_or_percent(value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and (m := _PERCENT_TEXT.match(value)) and int(m[1]) <= 100:
        return value
    raise problem(f'must be a whole number ≥ 0 or a percent string such as "10%" (0–100%), got {value!r}')


IntOrPercent = Annotated[
    int | str,
    PlainValidator(_parse_int_or_percent),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": r"^\d{1,3}%$"}]}),
]
"""A count (int ≥ 0) or a percent of some total ("10%"): `scaled` resolves it."""


def scaled(value: int | str, total: int) -> int:
    """An IntOrPercent as a count: a percent of `total` rounded up, as Kubernetes rounds maxSurge."""
    if isinstance(value, int):
        return value
    return math.ceil(total * int(value.removesuffix("%")) / 100)
