"""Arguments of the LowNodeLoad strategy (lownodeload.md §1), Koordinator-compatible names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self, get_args

from pydantic import Field, field_validator, model_validator

from descheduler.labels import LabelSelector
from descheduler.policy.evictor import NamespaceFilter
from descheduler.policy.fields import (
    Loc,
    NonNegativeInt,
    PolicyModel,
    RequiredThresholds,
    Selector,
    Thresholds,
    Weights,
    problem,
    raise_problems,
)

PodSortKey = Literal["priorityClass", "priority", "qos", "deletionCost", "evictionCost", "usageFit", "age", "name"]
DEFAULT_POD_SORT_KEYS: tuple[PodSortKey, ...] = get_args(PodSortKey)
DEFAULT_POOL_NAME = "default"


class AnomalyCondition(PolicyModel):
    """Debounce: a node must be hot this many consecutive cycles before it is relieved."""

    consecutive_abnormalities: int = Field(default=1, ge=1)


class PodSelector(PolicyModel):
    name: str = Field(min_length=1)
    selector: Selector


class NodePool(PolicyModel):
    """Nodes selected by `nodeSelector`, with their own thresholds; fields left out inherit the top level."""

    name: str = Field(min_length=1)
    node_selector: Selector
    low_thresholds: RequiredThresholds | None = None
    high_thresholds: RequiredThresholds | None = None
    use_deviation_thresholds: bool | None = None
    # `{}` for both turns the prod pass off in this pool; left out inherits it.
    prod_low_thresholds: Thresholds | None = None
    prod_high_thresholds: Thresholds | None = None
    resource_weights: Weights | None = None
    anomaly_condition: AnomalyCondition | None = None
    number_of_nodes: NonNegativeInt | None = None

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name == DEFAULT_POOL_NAME:
            raise problem(f"{DEFAULT_POOL_NAME!r} is reserved for the pool of nodes no other pool selects")
        return name


@dataclass(frozen=True, slots=True)
class PoolArgs:
    """One node pool's fully resolved arguments; node_selector None means "every remaining node"."""

    name: str
    node_selector: LabelSelector | None
    low_thresholds: Mapping[str, float]
    high_thresholds: Mapping[str, float]
    use_deviation_thresholds: bool
    prod_low_thresholds: Mapping[str, float] | None  # None: no prod pass
    prod_high_thresholds: Mapping[str, float] | None
    resource_weights: Mapping[str, int]
    anomaly_condition: AnomalyCondition
    number_of_nodes: int

    @property
    def has_prod_thresholds(self) -> bool:
        return self.prod_high_thresholds is not None


class LowNodeLoadArgs(PolicyModel):
    """Move load off nodes above highThresholds onto nodes below lowThresholds."""

    low_thresholds: RequiredThresholds = Field(
        description="percent of allocatable; at or below on every resource = low"
    )
    high_thresholds: RequiredThresholds = Field(description="percent of allocatable; above on any resource = high")
    use_deviation_thresholds: bool = Field(
        default=False, description="thresholds are offsets below/above the pool's mean usage percent"
    )
    prod_low_thresholds: Thresholds | None = None
    prod_high_thresholds: Thresholds | None = None
    number_of_nodes: NonNegativeInt = Field(default=0, description="act only when more nodes than this are low")
    evictable_namespaces: NamespaceFilter | None = None
    pod_selectors: list[PodSelector] = Field(default_factory=list, description="a candidate must match one")
    node_selector: Selector | None = None
    node_fit: bool = Field(default=True, description="a candidate must have a feasible target that stays cool")
    resource_weights: Weights | None = Field(default=None, description="default: 1 for each threshold resource")
    anomaly_condition: AnomalyCondition = Field(default_factory=AnomalyCondition)
    node_pools: list[NodePool] = Field(default_factory=list, description="a node belongs to the first that selects it")
    pod_sort_keys: list[PodSortKey] = Field(default_factory=lambda: list(DEFAULT_POD_SORT_KEYS))
    victim_selection: Literal["greedy", "minimal"] = "greedy"

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems = list(_duplicates(self.pod_sort_keys, ("podSortKeys",), "sort key"))
        problems += _duplicates([p.name for p in self.node_pools], ("nodePools",), "pool name", suffix="name")
        problems += _duplicates([p.name for p in self.pod_selectors], ("podSelectors",), "selector name", suffix="name")
        problems += _threshold_problems(self, self._top_level_pool(), ())
        for index, pool in enumerate(self.node_pools):
            problems += _threshold_problems(pool, self._resolve(pool), ("nodePools", index))
        if problems:
            raise_problems(type(self).__name__, problems)
        return self

    def effective_pools(self) -> list[PoolArgs]:
        """Each node pool resolved against the top level, then the "default" pool of remaining nodes."""
        return [self._resolve(pool) for pool in self.node_pools] + [self._top_level_pool()]

    def _top_level_pool(self) -> PoolArgs:
        return self._resolve(None)

    def _resolve(self, pool: NodePool | None) -> PoolArgs:
        def pick(name: str) -> Any:
            own = getattr(pool, name, None)
            return getattr(self, name) if own is None else own

        high: dict[str, float] = pick("high_thresholds")
        prod_low: dict[str, float] | None = pick("prod_low_thresholds") or None
        prod_high: dict[str, float] | None = pick("prod_high_thresholds") or None
        weights: dict[str, int] | None = pick("resource_weights")
        if weights is None:
            weights = dict.fromkeys(sorted({*high, *(prod_high or {})}), 1)
        return PoolArgs(
            name=pool.name if pool else DEFAULT_POOL_NAME,
            node_selector=pool.node_selector if pool else None,
            low_thresholds=pick("low_thresholds"),
            high_thresholds=high,
            use_deviation_thresholds=pick("use_deviation_thresholds"),
            prod_low_thresholds=prod_low,
            prod_high_thresholds=prod_high,
            resource_weights=weights,
            anomaly_condition=pick("anomaly_condition"),
            number_of_nodes=pick("number_of_nodes"),
        )


def _duplicates(
    values: Sequence[str], loc: Loc, what: str, suffix: str | None = None
) -> Iterator[tuple[Loc, str, Any]]:
    first: dict[str, int] = {}
    for index, value in enumerate(values):
        if value in first:
            where = (*loc, index, suffix) if suffix else (*loc, index)
            yield where, f"duplicate {what} {value!r} (first at index {first[value]})", value
        first.setdefault(value, index)


# (field attribute, YAML key) of the threshold maps, in the order problems are reported.
_LOW, _HIGH = ("low_thresholds", "lowThresholds"), ("high_thresholds", "highThresholds")
_PROD_LOW, _PROD_HIGH = (
    ("prod_low_thresholds", "prodLowThresholds"),
    ("prod_high_thresholds", "prodHighThresholds"),
)


def _threshold_problems(owner: LowNodeLoadArgs | NodePool, pool: PoolArgs, loc: Loc) -> list[tuple[Loc, str, Any]]:
    """lownodeload.md §1 rules on one resolved pool, reported at the fields `owner` itself sets.

    For a node pool, a rule broken only by inherited values is the top level's problem, reported there once.
    """
    is_pool = isinstance(owner, NodePool)
    values = {
        _LOW: pool.low_thresholds,
        _HIGH: pool.high_thresholds,
        _PROD_LOW: pool.prod_low_thresholds,
        _PROD_HIGH: pool.prod_high_thresholds,
    }

    def own(field: tuple[str, str]) -> bool:
        return not is_pool or getattr(owner, field[0]) is not None

    def label(field: tuple[str, str]) -> str:
        return " (inherited)" if is_pool and not own(field) else ""

    problems: list[tuple[Loc, str, Any]] = []

    def report(fields: tuple[tuple[str, str], ...], resource: str, message: str) -> None:
        # Report at the first of the involved fields this level sets itself.
        for field in fields:
            if own(field):
                problems.append(((*loc, field[1], resource), message, values[field]))
                return

    for a, b in ((_LOW, _HIGH), (_PROD_LOW, _PROD_HIGH)):
        a_map, b_map = values[a] or {}, values[b] or {}
        for resource in sorted(set(a_map) ^ set(b_map)):
            present, missing = (a, b) if resource in a_map else (b, a)
            message = (
                f"{resource} is in {present[1]}{label(present)} but not in {missing[1]}{label(missing)}; "
                "name each resource in both"
            )
            report((present, missing), resource, message)
    if pool.use_deviation_thresholds:
        return problems  # offsets from the mean: low and high are not ordered against each other
    for lower, upper in ((_LOW, _HIGH), (_PROD_LOW, _PROD_HIGH), (_PROD_HIGH, _HIGH)):
        lower_map, upper_map = values[lower] or {}, values[upper] or {}
        for resource in sorted(set(lower_map) & set(upper_map)):
            if lower_map[resource] > upper_map[resource]:
                message = (
                    f"{lower[1]}.{resource}{label(lower)} ({lower_map[resource]:g}) must be ≤ "
                    f"{upper[1]}.{resource}{label(upper)} ({upper_map[resource]:g})"
                )
                report((lower, upper), resource, message)
    return problems
