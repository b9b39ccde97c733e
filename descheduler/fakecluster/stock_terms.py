"""Quantities and selectors on raw Kubernetes objects, for the fake cluster's stock scheduler.

Written apart from the product's own parsers (descheduler.quantity, the scheduling core), so the
simulated kube-scheduler can catch their bugs instead of repeating them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import Any

Raw = Mapping[str, Any]

# --- quantities ---------------------------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


class QuantityError(ValueError):
    """Not a Kubernetes resource.Quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str | int | float) -> Fraction:
    """A resource.Quantity as an exact number: decimal SI (n u m k M G T P E), binary (Ki … Ei), exponents."""
    if isinstance(text, int | float):
        return Fraction(text)
    found = _QUANTITY.match(text.strip())
    if found is None:
        raise QuantityError(f"not a quantity: {text!r}")
    number, suffix = Fraction(found.group(1)), found.group(2)
    if suffix in _BINARY:
        return number * Fraction(1024 ** _BINARY[suffix])
    exponent = int(suffix[1:]) if len(suffix) > 1 else _DECIMAL[suffix]  # "1E3" is 1000, "1E" an exa
    return number * Fraction(10) ** exponent


@lru_cache(maxsize=4096)
def to_units(resource: str, text: str | int | float) -> int:
    """cpu in millicores (MilliValue), anything else in whole units (Value); both round up, as Kubernetes does."""
    value = parse_quantity(text)
    return math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)


# --- selectors ----------------------------------------------------------------------------

# Label-selector matching is a dozen lines; the Kubernetes client library does not offer it.


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector; `None` where a selector is absent matches nothing, `{}` everything."""

    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str, frozenset[str]], ...]

    @classmethod
    def of(cls, raw: Raw | None) -> LabelSelector | None:
        if raw is None:
            return None
        expressions = tuple(
            (e["key"], e["operator"], frozenset(e.get("values") or ())) for e in raw.get("matchExpressions") or ()
        )
        return cls(tuple((raw.get("matchLabels") or {}).items()), expressions)

    @classmethod
    def with_label_keys(
        cls, raw: Raw | None, labels: Mapping[str, str], match: Iterable[str] = (), mismatch: Iterable[str] = ()
    ) -> LabelSelector | None:
        """The selector with `key In (value)` for each `match` key and `key NotIn (value)` for each
        `mismatch` key the carrying pod has (matchLabelKeys / mismatchLabelKeys, as kube-apiserver
        merges them on create); keys the pod lacks are ignored, and a null selector stays null."""
        selector = cls.of(raw)
        if selector is None:
            return None
        added = tuple((key, "In", frozenset({labels[key]})) for key in match if key in labels)
        added += tuple((key, "NotIn", frozenset({labels[key]})) for key in mismatch if key in labels)
        return replace(selector, expressions=selector.expressions + added) if added else selector

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for key, op, values in self.expressions:
            value = labels.get(key)
            if op == "In" and (value is None or value not in values):
                return False
            if op == "NotIn" and value is not None and value in values:
                return False
            if op == "Exists" and value is None:
                return False
            if op == "DoesNotExist" and value is not None:
                return False
        return True


_INT64 = re.compile(r"^[+-]?[0-9]+$")


def _integer(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None."""
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def requirement_matches(op: str, values: Sequence[str], value: str | None) -> bool:
    """A NodeSelectorRequirement against one label value (None: the node has no such label)."""
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        have, want = _integer(value), _integer(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def node_selector_term_matches(term: Raw, name: str, labels: Mapping[str, str]) -> bool:
    """Requirements ANDed; an empty term matches nothing; matchFields knows metadata.name only."""
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    return all(
        requirement_matches(r["operator"], r.get("values") or (), labels.get(r["key"])) for r in expressions
    ) and all(
        requirement_matches(r["operator"], r.get("values") or (), name if r["key"] == "metadata.name" else None)
        for r in fields
    )
