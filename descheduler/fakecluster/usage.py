"""Usage models: how much cpu and memory a simulated pod uses at a given instant.

A model is a base (a constant quantity, a fraction of the pod's request, or a repeating series)
times an optional diurnal multiplier, with optional deterministic noise. Pure functions of
(model, request, instant, pod key, seed): the same scenario always produces the same load.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from descheduler.labels import LabelSelector
from descheduler.quantity import QuantityError, to_units

DAY_SECONDS = 86_400
NOISE_BUCKET_SECONDS = 60
MEASURED = ("cpu", "memory")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _check_quantity(value: str) -> str:
    try:
        to_units("memory", value)
    except QuantityError as err:
        raise ValueError(f"expected a quantity such as 500m, 2, 512Mi or 4Gi: {err}") from None
    return value


class Series(_Model):
    """Values stepping every `stepSeconds`, repeating; numbers are fractions of the request, strings quantities."""

    values: list[float | str] = Field(min_length=1)
    step_seconds: int = Field(60, alias="stepSeconds", gt=0)

    @field_validator("values")
    @classmethod
    def _values(cls, values: list[float | str]) -> list[float | str]:
        for value in values:
            if isinstance(value, str):
                _check_quantity(value)
            elif value < 0:
                raise ValueError(f"fractions must be ≥ 0; got {value}")
        return values


class Diurnal(_Model):
    """A multiplier over the day (UTC): `curve` points spread evenly over 24 h, linearly interpolated."""

    curve: list[float] = Field(min_length=1)

    @field_validator("curve")
    @classmethod
    def _curve(cls, curve: list[float]) -> list[float]:
        if any(v < 0 for v in curve):
            raise ValueError("multipliers must be ≥ 0")
        return curve


class UsageModel(_Model):
    """Exactly one of constant, fraction or series; optionally times a diurnal curve, plus noise."""

    constant: str | None = None
    fraction: float | None = Field(None, ge=0)
    series: Series | None = None
    diurnal: Diurnal | None = None
    noise: float = Field(0.0, ge=0, le=1)

    @field_validator("constant")
    @classmethod
    def _constant(cls, value: str | None) -> str | None:
        return None if value is None else _check_quantity(value)

    @model_validator(mode="after")
    def _one_base(self) -> UsageModel:
        given = [name for name in ("constant", "fraction", "series") if getattr(self, name) is not None]
        if len(given) != 1:
            got = ", ".join(given) if given else "none"
            raise ValueError(f"exactly one of constant, fraction, series is required; got {got}")
        return self


class ResourceModels(_Model):
    cpu: UsageModel | None = None
    memory: UsageModel | None = None


class UsageRule(_Model):
    """Pods matching `selector` (and `namespace`, when set) use these models; the first match wins."""

    selector: dict[str, Any] = Field(default_factory=dict)
    namespace: str | None = None
    cpu: UsageModel | None = None
    memory: UsageModel | None = None

    @field_validator("selector")
    @classmethod
    def _selector(cls, raw: dict[str, Any]) -> dict[str, Any]:
        try:
            LabelSelector.from_dict(raw)
        except ValueError as err:
            raise ValueError(str(err)) from None
        return raw

    def label_selector(self) -> LabelSelector:
        return LabelSelector.from_dict(self.selector)


def _default_models() -> ResourceModels:
    return ResourceModels(cpu=UsageModel(fraction=0.5), memory=UsageModel(fraction=0.6))


class UsageSpec(_Model):
    default: ResourceModels = Field(default_factory=_default_models)
    system_overhead: dict[str, str] = Field(
        default_factory=lambda: {"cpu": "200m", "memory": "512Mi"}, alias="systemOverhead"
    )
    pods: list[UsageRule] = Field(default_factory=list)
    _index: _RuleIndex | None = PrivateAttr(default=None)

    def rule_index(self) -> _RuleIndex:
        """The rules with their selectors parsed once, indexed by their first matchLabels pair."""
        if self._index is None:
            self._index = _RuleIndex(self.pods)
        return self._index

    @field_validator("system_overhead")
    @classmethod
    def _overhead(cls, raw: dict[str, str]) -> dict[str, str]:
        for key, value in raw.items():
            if key not in MEASURED:
                raise ValueError(f"only cpu and memory are allowed; got {key!r}")
            _check_quantity(value)
        return raw

    def overhead_units(self) -> dict[str, int]:
        return {k: to_units(k, v) for k, v in self.system_overhead.items()}


def diurnal_factor(curve: Sequence[float], instant: float) -> float:
    """The curve's value at this time of day, interpolated between its evenly spread points."""
    n = len(curve)
    if n == 1:
        return curve[0]
    position = (instant % DAY_SECONDS) / DAY_SECONDS * n
    i = int(position) % n
    j = (i + 1) % n
    frac = position - int(position)
    return curve[i] * (1 - frac) + curve[j] * frac


def _value_units(value: float | str, resource: str, request: int) -> float:
    if isinstance(value, str):
        return float(to_units(resource, value))
    return value * request


def usage_units(
    model: UsageModel,
    resource: str,
    request: int,
    *,
    instant: float,
    elapsed: float,
    key: str,
    seed: int,
) -> int:
    """Usage in integer units (millicores, bytes) of one resource; `elapsed` is seconds since the scenario began."""
    if model.constant is not None:
        base = float(to_units(resource, model.constant))
    elif model.fraction is not None:
        base = model.fraction * request
    else:
        assert model.series is not None
        values = model.series.values
        index = int(max(elapsed, 0) // model.series.step_seconds) % len(values)
        base = _value_units(values[index], resource, request)
    if model.diurnal is not None:
        base *= diurnal_factor(model.diurnal.curve, instant)
    if model.noise:
        bucket = int(instant // NOISE_BUCKET_SECONDS)
        # A string seed hashes the same in every process (random.seed uses sha512 for str).
        rng = random.Random(f"{seed}/{key}/{resource}/{bucket}")
        base *= max(0.0, rng.gauss(1.0, model.noise))
    return max(0, round(base))


def unchanged_until(model: UsageModel, *, instant: float, elapsed: float) -> float:
    """The `elapsed` time (seconds since the scenario began) before which `usage_units` of this model
    gives the value it gives now: the next series step or noise bucket; `elapsed` itself when a
    diurnal curve makes it change continuously; infinity for a constant or a fraction."""
    if model.diurnal is not None and len(model.diurnal.curve) > 1:
        return elapsed
    until = float("inf")
    if model.series is not None:
        step = model.series.step_seconds
        until = (max(elapsed, 0) // step + 1) * step
    if model.noise:
        until = min(until, elapsed + ((instant // NOISE_BUCKET_SECONDS + 1) * NOISE_BUCKET_SECONDS - instant))
    return until


class _RuleIndex:
    """`models_for` without parsing every rule's selector for every pod: a scenario with a rule per
    pod (one trace series each) has thousands. A rule with matchLabels is only tried on pods that
    carry its first pair; the others on every pod; either way in the rules' order."""

    def __init__(self, rules: Sequence[UsageRule]) -> None:
        self.parsed = [(rule, rule.label_selector()) for rule in rules]
        self.by_pair: dict[tuple[str, str], list[int]] = {}
        self.always: list[int] = []
        for i, rule in enumerate(rules):
            match = rule.selector.get("matchLabels") or {}
            if match:
                key = next(iter(match))
                self.by_pair.setdefault((key, str(match[key])), []).append(i)
            else:
                self.always.append(i)

    def candidates(self, labels: Mapping[str, str]) -> list[int]:
        found = list(self.always)
        for pair in labels.items():
            found += self.by_pair.get(pair, ())
        return sorted(found)


def models_for(spec: UsageSpec, namespace: str, labels: Mapping[str, str]) -> dict[str, UsageModel]:
    """The model of each measured resource for a pod: first matching rule per resource, else the default."""
    chosen: dict[str, UsageModel] = {}
    index = spec.rule_index()
    for i in index.candidates(labels):
        rule, selector = index.parsed[i]
        if rule.namespace is not None and rule.namespace != namespace:
            continue
        if not selector.matches(labels):
            continue
        for resource in MEASURED:
            model = getattr(rule, resource)
            if model is not None and resource not in chosen:
                chosen[resource] = model
    for resource in MEASURED:
        default = getattr(spec.default, resource)
        if resource not in chosen and default is not None:
            chosen[resource] = default
    return chosen
