"""Label and field selectors: the query-string grammar and the LabelSelector struct."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, bad_request

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_NOT_EXISTS = re.compile(rf"^!\s*({_KEY})$")
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s*\((.*)\)$")
_EQUALITY = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS = re.compile(rf"^({_KEY})$")
_VALUE_ONLY = re.compile(rf"^{_VALUE}$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause: `key op values`; op is one of = != in notin exists !."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # `!=` and `notin` also match objects that lack the key, as in Kubernetes.
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def _split_terms(text: str) -> list[str]:
    """Split on commas outside parentheses (`a in (x,y),b` is two terms)."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms]


def parse_label_selector(text: str) -> LabelSelector:
    """Parse `?labelSelector=`; raises a 400 ApiError on bad syntax, like the real server."""
    if not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for term in _split_terms(text):
        if m := _NOT_EXISTS.match(term):
            reqs.append(Requirement(m[1], "!"))
        elif m := _SET.match(term):
            values = [v.strip() for v in m[3].split(",")]
            if not all(_VALUE_ONLY.match(v) for v in values):
                raise bad_request(f"unable to parse requirement: invalid label value in {term!r}")
            reqs.append(Requirement(m[1], m[2], frozenset(values)))
        elif m := _EQUALITY.match(term):
            op = "=" if m[2] in ("=", "==") else "!="
            reqs.append(Requirement(m[1], op, frozenset([m[3]])))
        elif m := _EXISTS.match(term):
            reqs.append(Requirement(m[1], "exists"))
        else:
            raise bad_request(f"unable to parse requirement: {term!r}")
    return LabelSelector(tuple(reqs))


_STRUCT_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def label_selector_from_struct(selector: Mapping[str, Any] | None) -> LabelSelector | None:
    """Convert a metav1.LabelSelector; None means "selects nothing" (a nil selector).

    An empty struct `{}` selects everything: that is the policy/v1 PDB meaning too.
    """
    if selector is None:
        return None
    reqs = [Requirement(k, "=", frozenset([str(v)])) for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        op = _STRUCT_OPS.get(str(expr.get("operator")))
        if op is None:
            raise ValueError(f"unknown label selector operator {expr.get('operator')!r}")
        reqs.append(Requirement(str(expr["key"]), op, frozenset(str(v) for v in expr.get("values") or [])))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    path: str
    op: str  # "=" or "!="
    value: str


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, value_of: Callable[[str], str]) -> bool:
        return all((value_of(r.path) == r.value) == (r.op == "=") for r in self.requirements)


_FIELD_TERM = re.compile(r"^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$")


def parse_field_selector(text: str, supported: tuple[str, ...]) -> FieldSelector:
    """Parse `?fieldSelector=`; unsupported fields are a 400, worded as the real server does."""
    if not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for term in _split_terms(text):
        m = _FIELD_TERM.match(term)
        if m is None:
            raise bad_request(f"invalid selector: {text!r}; can't understand {term!r}")
        if m[1] not in supported:
            raise ApiError(400, "BadRequest", f"field label not supported: {m[1]}")
        reqs.append(FieldRequirement(m[1], "=" if m[2] in ("=", "==") else "!=", m[3].strip()))
    return FieldSelector(tuple(reqs))


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a field for selector matching: missing is "", booleans lowercase."""
    cur: Any = obj
    # Plain dict checks: this runs for every field label of every stored object, and ABC
    # isinstance checks against Mapping were the bulk of load time.
    for part in path.split("."):
        if type(cur) is not dict:
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if type(cur) is str:
        return cur
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if type(cur) is dict:
        # `source` on core events is a struct; the real server selects on its component.
        return str(cur.get("component", ""))
    return str(cur)
