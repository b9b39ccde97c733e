"""Arguments of the LowNodeLoad strategy (lownodeload.md §1), Koordinator-compatible names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import Field, ModelWrapValidatorHandler, field_validator, model_validator

from descheduler.labels import LabelSelector
from descheduler.policy.crossfield import INVALID, Entries, Invalid, PartialInput, Problem, cross_field_rules
from descheduler.policy.evictor import NamespaceFilter
from descheduler.policy.fields import (
    Duration,
    Loc,
    NonNegativeInt,
    PolicyModel,
    RequiredThresholds,
    Selector,
    Thresholds,
    Weights,
    problem,
)

PodSortKey = Literal["priorityClass", "priority", "qos", "deletionCost", "evictionCost", "usageFit", "age", "name"]
DEFAULT_POD_SORT_KEYS: tuple[PodSortKey, ...] = get_args(PodSortKey)
DEFAULT_POOL_NAME = "default"
LookAheadBasis = Literal["cluster", "pods"]
# How far below its high threshold a hot node is relieved, as a share of the gap down to its low
# threshold, on the resources it is over on: 0 stops just under high (Koordinator, upstream). 0.25
# was chosen on benchmarks/quality.py's four scenario families (benchmarks/RESULTS.md).
DEFAULT_RELIEF_DEPTH = 0.25
ReliefDepth = Annotated[float, Field(ge=0, le=1)]


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
    relief_depth: ReliefDepth | None = None

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
    relief_depth: float

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
    look_ahead: Duration = Field(
        default=timedelta(minutes=10),
        description="judge a node by its usage this far ahead, at the rate its usage has been rising (lookAheadBasis)",
    )
    look_ahead_basis: LookAheadBasis = Field(
        default="cluster",
        description="whose rise lookAhead extends: the cluster's (each node in proportion to its usage) or its pods'",
    )
    recent_pods_last: Duration = Field(
        default=timedelta(hours=1),
        description="pods started less than this ago are moved after every other candidate (0s: off)",
    )
    relief_depth: ReliefDepth = Field(
        default=DEFAULT_RELIEF_DEPTH,
        description="relieve a hot node this share of the way from its high threshold down to its low one",
    )
    target_ceiling: Literal["high", "goal"] = Field(
        default="high",
        description="how full a move may make its target: up to its high threshold, or up to the relief goal",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _consistent(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return cross_field_rules(data, handler, _lownodeload_rules)

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
            relief_depth=pick("relief_depth"),
        )


def _lownodeload_rules(args: PartialInput) -> Iterator[Problem]:
    """lownodeload.md §1 rules across fields, on what validated."""
    yield from _duplicates(args.items("podSortKeys"), ("podSortKeys",), "sort key")
    yield from _duplicates(_names(args, "nodePools"), ("nodePools",), "pool name", suffix="name")
    yield from _duplicates(_names(args, "podSelectors"), ("podSelectors",), "selector name", suffix="name")
    top = _Level.read(args, ())
    yield from _threshold_problems(top, top, ())
    pools = args.items("nodePools")
    for index, pool in enumerate(pools if pools is not INVALID else ()):
        if pool is not INVALID:
            own = _Level.read(args, ("nodePools", index))
            yield from _threshold_problems(own, own.resolved(top), ("nodePools", index))


def _names(args: PartialInput, field: str) -> list[Any] | Invalid:
    """The `name` of each item of a list of named objects, INVALID where it failed."""
    items = args.items(field)
    return INVALID if items is INVALID else [args.value(field, index, "name") for index in range(len(items))]


def _duplicates(values: Sequence[Any] | Invalid, loc: Loc, what: str, suffix: str | None = None) -> Iterator[Problem]:
    first: dict[str, int] = {}
    for index, value in enumerate(values if values is not INVALID else ()):
        if not isinstance(value, str):
            continue  # already reported as invalid
        if value in first:
            where = (*loc, index, suffix) if suffix else (*loc, index)
            yield where, f"duplicate {what} {value!r} (first at index {first[value]})", value
        first.setdefault(value, index)


# The YAML keys of the threshold maps, in the order problems are reported.
_LOW, _HIGH, _PROD_LOW, _PROD_HIGH = "lowThresholds", "highThresholds", "prodLowThresholds", "prodHighThresholds"
_THRESHOLD_MAPS = (_LOW, _HIGH, _PROD_LOW, _PROD_HIGH)
_ThresholdMap = Entries | Invalid | None


@dataclass(frozen=True, slots=True)
class _Level:
    """The threshold maps and deviation flag of the top level or of one node pool, INVALID where they failed.

    `maps` holds what this level sets itself (None: not set); after `resolved`, what applies to its nodes.
    """

    maps: dict[str, _ThresholdMap]
    deviation: bool | Invalid | None
    is_pool: bool

    @classmethod
    def read(cls, args: PartialInput, loc: Loc) -> _Level:
        maps = {key: args.entries(*loc, key) for key in _THRESHOLD_MAPS}
        default = None if loc else False  # a pool inherits the top level's
        return cls(maps, args.value(*loc, "useDeviationThresholds", default=default), is_pool=bool(loc))

    def resolved(self, top: _Level) -> _Level:
        """A pool's own values over the top level's, as LowNodeLoadArgs._resolve does."""
        maps = {key: top.maps[key] if own is None else own for key, own in self.maps.items()}
        for key in (_PROD_LOW, _PROD_HIGH):
            prod = maps[key]
            if isinstance(prod, Entries) and not prod.values and prod.complete:
                maps[key] = None  # `{}` turns the prod pass off
        return _Level(maps, top.deviation if self.deviation is None else self.deviation, self.is_pool)


def _threshold_problems(owner: _Level, pool: _Level, loc: Loc) -> list[Problem]:
    """lownodeload.md §1 rules on one resolved pool, reported at the fields `owner` itself sets.

    For a node pool, a rule broken only by inherited values is the top level's problem, reported there once.
    A rule is not judged on a map, key or value that is already reported invalid.
    """

    def own(field: str) -> bool:
        return not owner.is_pool or owner.maps[field] is not None

    def label(field: str) -> str:
        return " (inherited)" if owner.is_pool and not own(field) else ""

    problems: list[Problem] = []

    def report(fields: tuple[str, str], resource: str, message: str) -> None:
        # Report at the first of the involved fields this level sets itself.
        for field in fields:
            if own(field):
                found = pool.maps[field]
                value = found.values.get(resource) if isinstance(found, Entries) else None
                problems.append(((*loc, field, resource), message, value))
                return

    def values(field: str) -> Entries | None:
        found = pool.maps[field]
        return found if isinstance(found, Entries) else None

    for a, b in ((_LOW, _HIGH), (_PROD_LOW, _PROD_HIGH)):
        if INVALID in (pool.maps[a], pool.maps[b]):
            continue
        a_map, b_map = values(a), values(b)
        if (a_map and not a_map.complete) or (b_map and not b_map.complete):
            continue  # a resource name is wrong: which one was meant is anyone's guess
        a_keys, b_keys = set(a_map.values if a_map else ()), set(b_map.values if b_map else ())
        for resource in sorted(a_keys ^ b_keys):
            present, missing = (a, b) if resource in a_keys else (b, a)
            message = (
                f"{resource} is in {present}{label(present)} but not in {missing}{label(missing)}; "
                "name each resource in both"
            )
            report((present, missing), resource, message)
    if pool.deviation is not False:
        return problems  # offsets from the mean (or unknown): low and high are not ordered against each other
    for lower, upper in ((_LOW, _HIGH), (_PROD_LOW, _PROD_HIGH), (_PROD_HIGH, _HIGH)):
        lower_map, upper_map = values(lower), values(upper)
        if lower_map is None or upper_map is None:
            continue
        for resource in sorted(set(lower_map.values) & set(upper_map.values)):
            low, high = lower_map.values[resource], upper_map.values[resource]
            if low is not INVALID and high is not INVALID and low > high:
                message = (
                    f"{lower}.{resource}{label(lower)} ({low:g}) must be ≤ {upper}.{resource}{label(upper)} ({high:g})"
                )
                report((lower, upper), resource, message)
    return problems
