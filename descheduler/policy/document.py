"""The DeschedulerPolicy document and the registry of strategy argument models."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any, Final, Literal, Self

from pydantic import (
    BaseModel,
    Field,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    SerializeAsAny,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from descheduler.durations import format_duration, parse_duration
from descheduler.policy.crossfield import INVALID, PartialInput, Problem, cross_field_rules
from descheduler.policy.evictor import EvictorArgs
from descheduler.policy.fields import PolicyModel, PositiveDuration, Selector, problem
from descheduler.policy.limits import Limits
from descheduler.policy.loadsource import LoadSource, MetricsServerSource
from descheduler.policy.lownodeload import LowNodeLoadArgs
from descheduler.policy.migration import MigrationArgs
from descheduler.policy.quotareclaim import QuotaReclaimArgs
from descheduler.policy.scheduling import SchedulingArgs

API_VERSION: Final = "descheduler.dev/v1alpha1"
KIND: Final = "DeschedulerPolicy"

FILE_CONTEXT: Final[dict[str, Any]] = {"file": True}
"""Validation context of a policy read from text: only camelCase keys are accepted."""

STRATEGY_ARGS: dict[str, type[BaseModel]] = {
    "LowNodeLoad": LowNodeLoadArgs,
    "QuotaReclaim": QuotaReclaimArgs,
}
"""Strategy name → the model that validates its `args`. Plugins add theirs with register_strategy_args."""


def register_strategy_args(name: str, model: type[BaseModel]) -> None:
    """Let a strategy plugin validate its own `args`; re-registering a name replaces its model."""
    if not name:
        raise ValueError("a strategy name must not be empty")
    STRATEGY_ARGS[name] = model


def _known_strategies() -> str:
    return ", ".join(sorted(STRATEGY_ARGS))


class _UncheckedArgs(BaseModel):
    """Placeholder args of a strategy whose name was rejected (never reaches a caller)."""


class StrategyConfig(PolicyModel):
    """One `strategies[]` entry; `args` is validated by the model registered for `name`."""

    name: str
    args: SerializeAsAny[BaseModel] = Field(default_factory=dict, validate_default=True)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in STRATEGY_ARGS:
            raise problem(f"unknown strategy {name!r}; known strategies: {_known_strategies()}")
        return name

    @field_validator("args", mode="plain")
    @classmethod
    def _args_for_name(cls, value: Any, info: ValidationInfo) -> BaseModel:
        model = STRATEGY_ARGS.get(info.data.get("name", ""))
        if model is None:
            # The name is already reported as unknown; there is nothing to check args against.
            return _UncheckedArgs()
        if isinstance(value, model):
            return value
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise problem(f"must be an object with the {info.data['name']} arguments, got {type(value).__name__}")
        # A ValidationError raised here keeps its locations, prefixed with "args".
        from_file = bool(info.context and info.context.get("file"))
        return model.model_validate(value, strict=True, by_name=not from_file, context=info.context)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """One alternative per registered strategy, told apart by `name`."""
        alternatives: list[JsonSchemaValue] = []
        for name, model in sorted(STRATEGY_ARGS.items()):
            args_schema = handler(model.__pydantic_core_schema__)
            required = ["name", "args"] if _has_required_fields(model) else ["name"]
            alternatives.append(
                {
                    "type": "object",
                    "title": name,
                    "additionalProperties": False,
                    "required": required,
                    "properties": {"name": {"const": name}, "args": args_schema},
                }
            )
        return {"oneOf": alternatives, "description": "a strategy by name, with its arguments"}


def _has_required_fields(model: type[BaseModel]) -> bool:
    return any(field.is_required() for field in model.model_fields.values())


def _require_api_version_and_kind(schema: dict[str, Any]) -> None:
    # Python code may omit them, but a policy file must say what it is.
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind"})


class Policy(PolicyModel, json_schema_extra=_require_api_version_and_kind):
    """A DeschedulerPolicy: the whole configuration of the controller, `plan` and the extender."""

    api_version: Literal["descheduler.dev/v1alpha1"] = API_VERSION
    kind: Literal["DeschedulerPolicy"] = KIND
    interval: PositiveDuration = Field(default=timedelta(seconds=60), description="time between cycles")
    dry_run: bool = Field(default=False, description="plan and report only; move nothing")
    load_source: LoadSource = Field(default_factory=lambda: MetricsServerSource(type="metricsServer"))
    node_selector: Selector | None = Field(default=None, description="which nodes the descheduler considers at all")
    evictor: EvictorArgs = Field(default_factory=EvictorArgs)
    limits: Limits = Field(default_factory=Limits)
    scheduling: SchedulingArgs = Field(default_factory=SchedulingArgs)
    strategies: list[StrategyConfig] = Field(default_factory=list)
    migration: MigrationArgs = Field(default_factory=MigrationArgs)

    @model_validator(mode="wrap")
    @classmethod
    def _cross_field_rules(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return cross_field_rules(data, handler, _policy_rules)

    def strategy_args(self, name: str) -> BaseModel | None:
        """The validated args of the strategy with this name, or None when it is not configured."""
        return next((s.args for s in self.strategies if s.name == name), None)


def _policy_rules(policy: PartialInput) -> Iterator[Problem]:
    yield from _unique_strategy_names(policy)
    yield from _hourly_budget_sees_an_hour(policy)


def _unique_strategy_names(policy: PartialInput) -> Iterator[Problem]:
    first: dict[str, int] = {}
    strategies = policy.items("strategies")
    for index in range(len(strategies) if strategies is not INVALID else 0):
        name = policy.value("strategies", index, "name")
        if not isinstance(name, str):
            continue  # already reported as invalid
        if name in first:
            yield ("strategies", index, "name"), f"duplicate strategy {name!r} (also strategies[{first[name]}])", name
        first.setdefault(name, index)


def _hourly_budget_sees_an_hour(policy: PartialInput) -> Iterator[Problem]:
    """maxEvictionsPerHour counts the evictions of the PodMigrationJobs still kept: they must be kept an hour."""
    per_hour = policy.value("limits", "maxEvictionsPerHour")
    retention = policy.value("migration", "jobRetention", default=timedelta(hours=1))
    if per_hour is None or per_hour is INVALID or retention is INVALID:
        return
    try:
        kept = parse_duration(retention)
    except (TypeError, ValueError):
        return  # reported where it was parsed
    if kept < timedelta(hours=1):
        yield (
            ("migration", "jobRetention"),
            f"maxEvictionsPerHour counts the evictions of the jobs kept over the last hour: jobRetention must be "
            f"at least 1h (is {format_duration(kept)})",
            retention,
        )
