"""Kubernetes label selectors: parsing from API objects and matching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `matchExpressions` entry."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return labels.get(self.key) in self.values
        if self.operator == "NotIn":
            # Kubernetes: NotIn also matches objects that lack the key.
            return labels.get(self.key) not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector. An empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(req.matches(labels) for req in self.match_expressions)

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """The selector `{matchLabels: labels}` (also the shape of `spec.nodeSelector`)."""
        return cls(match_labels=tuple(sorted(labels.items())))

    @classmethod
    def from_dict(cls, raw: Any, where: str = "selector") -> LabelSelector:
        """Parse `{matchLabels, matchExpressions}`; raise ValueError naming the bad field."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where}: expected a label selector object, got {type(raw).__name__}")
        unknown = set(raw) - {"matchLabels", "matchExpressions"}
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: matchLabels, matchExpressions")
        match_labels = raw.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise ValueError(f"{where}.matchLabels: expected a map of strings")
        for key, value in match_labels.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"{where}.matchLabels.{key}: keys and values must be strings")
        expressions = raw.get("matchExpressions") or []
        if not isinstance(expressions, Sequence) or isinstance(expressions, str):
            raise ValueError(f"{where}.matchExpressions: expected a list")
        return cls(
            match_labels=tuple(sorted(match_labels.items())),
            match_expressions=tuple(
                _requirement(item, f"{where}.matchExpressions[{i}]") for i, item in enumerate(expressions)
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [
                {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in self.match_expressions
            ]
        return out

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        for r in self.match_expressions:
            if r.operator == "Exists":
                parts.append(r.key)
            elif r.operator == "DoesNotExist":
                parts.append(f"!{r.key}")
            else:
                parts.append(f"{r.key} {r.operator.lower()} ({','.join(r.values)})")
        return ",".join(parts) or "<all>"


def _requirement(raw: Any, where: str) -> Requirement:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected an object with key, operator, values")
    key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise ValueError(f"{where}.key: required string")
    if operator not in _OPERATORS:
        raise ValueError(f"{where}.operator: {operator!r} is not one of {', '.join(_OPERATORS)}")
    if not isinstance(values, Sequence) or isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where}.values: expected a list of strings")
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"{where}.values: operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"{where}.values: operator {operator} takes no values")
    return Requirement(key=key, operator=operator, values=tuple(values))
