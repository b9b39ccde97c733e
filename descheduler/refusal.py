"""Refusals as data: why a pod may not move, may not go to a node, or must wait.

A refusal is a code (the rule that said no), the subject it is about (a resource, a node, a
PodDisruptionBudget, a workload) and the facts behind it (the figures and names the words need).
Each code is defined once, with its words, by the module that holds its rule (`define`); the text
is made here, only when someone reads it (`str(refusal)`), never where the rule is checked. Code
that groups, counts or branches on refusals looks at `code` and `subject`, never at the text.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from descheduler.quantity import format_units

Fact = int | float | str


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """One "no": `code` names the rule; `scope` (optional) names the object of a group it is about,
    e.g. one pod of a gang, and is printed before the text."""

    code: str
    subject: str = ""
    facts: Mapping[str, Fact] = msgspec.field(default_factory=dict)
    scope: str = ""

    def __str__(self) -> str:
        return render(self)

    @property
    def brief(self) -> str:
        """The words without the figures, equal for every refusal of the same code and subject:
        what summaries count ("7 insufficient cpu")."""
        definition = _definition(self.code)
        return _fill(definition.brief, self) if definition.brief is not None else render(self)

    def within(self, scope: str) -> Refusal:
        """The same refusal said of one member of a group ("ns/pod: …")."""
        return msgspec.structs.replace(self, scope=scope)


Words = str | Callable[[Refusal], str]


@dataclass(frozen=True, slots=True)
class Definition:
    code: str
    text: Words
    brief: str | None


_DEFINITIONS: dict[str, Definition] = {}


def define(code: str, text: Words, brief: str | None = None) -> str:
    """Register a code with its words and return it. `text` is a template over `subject` and the
    facts (format spec `units`: a quantity of the refusal's resource, the `resource` fact or else
    the subject; `s`: whole seconds), or a function for words a template cannot say."""
    if code in _DEFINITIONS and _DEFINITIONS[code] != Definition(code, text, brief):
        raise ValueError(f"refusal code {code} is defined twice")
    _DEFINITIONS[code] = Definition(code, text, brief)
    return code


def defined(code: str) -> bool:
    return code in _DEFINITIONS


def _definition(code: str) -> Definition:
    found = _DEFINITIONS.get(code)
    if found is None:
        raise KeyError(f"refusal code {code} is not defined")
    return found


def render(refusal: Refusal) -> str:
    """The text a person reads: in the plan, the log, the Event and the job's status."""
    definition = _definition(refusal.code)
    words = definition.text
    text = words(refusal) if callable(words) else _fill(words, refusal)
    return f"{refusal.scope}: {text}" if refusal.scope else text


class _Formatter(string.Formatter):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__()
        self.refusal = refusal

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "units":
            resource = str(self.refusal.facts.get("resource", self.refusal.subject))
            return format_units(resource, int(value))
        if format_spec == "s":
            return f"{float(value):.0f}s"
        formatted: str = super().format_field(value, format_spec)
        return formatted


def _fill(template: str, refusal: Refusal) -> str:
    return _Formatter(refusal).format(template, subject=refusal.subject, **refusal.facts)
