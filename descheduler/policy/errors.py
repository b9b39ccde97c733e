"""PolicyError, and the translation of pydantic's errors into field paths and plain messages."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from descheduler.policy.document import STRATEGY_ARGS, StrategyConfig


class PolicyError(Exception):
    """A policy that cannot be used, with every problem found: (field path, what is allowed)."""

    def __init__(self, source: str, problems: Sequence[tuple[str, str]]) -> None:
        self.source = source
        self.problems: list[tuple[str, str]] = list(problems)
        super().__init__(source, self.problems)

    def __str__(self) -> str:
        lines = [f"policy {self.source} is invalid:"]
        lines += [f"  - {path}: {message}" if path else f"  - {message}" for path, message in self.problems]
        return "\n".join(lines)


def problems_from(error: ValidationError, root: type[BaseModel], raw: Any) -> list[tuple[str, str]]:
    """One (path, message) per pydantic error; `raw` is the input, used to follow `strategies[].name`."""
    return [_problem(detail, root, raw) for detail in error.errors(include_url=False)]


def _problem(detail: ErrorDetails, root: type[BaseModel], raw: Any) -> tuple[str, str]:
    walk = _Walk(root, raw, detail["loc"])
    kind, ctx, value = detail["type"], detail.get("ctx", {}), detail.get("input")
    path = walk.path()
    if kind == "extra_forbidden":
        aliases = _aliases(walk.last_model) if walk.last_model else []
        if not aliases:
            return path, "unknown field"
        key = str(walk.segments[-1]) if walk.segments else ""
        typo = difflib.get_close_matches(key, aliases, n=1, cutoff=0.75)
        hint = f"did you mean {typo[0]}? " if typo else ""
        return path, f"unknown field; {hint}allowed: {', '.join(aliases)}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = str(ctx.get("discriminator", "type")).strip("'")
        tags = ", ".join(_tags(walk.current, tag))
        got = "missing" if kind == "union_tag_not_found" else f"got {ctx.get('tag')!r}"
        return join_path(path, tag), f"must be one of {tags}; {got}"
    return path, _message(kind, detail["msg"], ctx, value)


_TYPE_NAMES = {
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "dict_type": "a map (key: value)",
    "model_type": "a map (key: value)",
    "model_attributes_type": "a map (key: value)",
    "list_type": "a list",
}
_BOUNDS = {
    "greater_than_equal": ("≥", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("≤", "le"),
    "less_than": ("<", "lt"),
}


def _message(kind: str, msg: str, ctx: dict[str, Any], value: Any) -> str:
    if kind == "missing":
        return "required"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}, got {_describe(value)}"
    if kind in _BOUNDS:
        sign, key = _BOUNDS[kind]
        return f"must be {sign} {ctx.get(key)}, got {_describe(value)}"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}, got {_describe(value)}"
    if kind == "invalid_key":
        return f"keys must be strings, got {_describe(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s)"
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list):
        return "a list"
    return repr(value)


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def join_path(path: str, key: str | int) -> str:
    """`path` + one key, as policy errors write field paths: `a.b`, `a[0]`, `a["x.y/z"]`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'  # resource and label names hold dots and slashes


def _aliases(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _tags(annotation: Any, discriminator: str) -> list[str]:
    tags: list[str] = []
    for member in _members(annotation):
        field = member.model_fields.get(discriminator) if _is_model(member) else None
        if field is not None and get_origin(field.annotation) is Literal:
            tags += [str(arg) for arg in get_args(field.annotation)]
    return tags


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _members(annotation: Any) -> list[Any]:
    """The alternatives of a (possibly Annotated, possibly Optional) union, without None."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in get_args(annotation) if arg is not type(None) for m in _members(arg)]
    return [annotation]


class _Walk:
    """Follow an error location through the models to render its path and find the model it ends in."""

    def __init__(self, root: type[BaseModel], raw: Any, loc: tuple[str | int, ...]) -> None:
        self.segments: list[str | int] = []
        self.last_model: type[BaseModel] | None = None
        self.current: Any = root
        data = raw
        for key in loc:
            if key == "[key]":
                continue  # pydantic's marker for "the dict key itself was invalid"
            data = self._step(key, data)

    def path(self) -> str:
        out = ""
        for segment in self.segments:
            out = join_path(out, segment)
        return out

    def _step(self, key: str | int, data: Any) -> Any:
        members = _members(self.current)
        models = [m for m in members if _is_model(m)]
        origin = get_origin(members[0]) if len(members) == 1 else None
        if len(models) > 1 and isinstance(key, str):
            # A tagged union puts the tag in the location; it is not a key the user wrote.
            tagged = [m for m in models if key in _tags(m, "type")]
            if tagged:
                self.current = tagged[0]
                return data
        self.segments.append(key)
        child = data.get(key) if isinstance(data, Mapping) and isinstance(key, str) else None
        if isinstance(key, int) and isinstance(data, list) and 0 <= key < len(data):
            child = data[key]
        if len(models) == 1 and isinstance(key, str):
            self.last_model = models[0]
            self.current = _field_annotation(models[0], key, data)
        elif origin is list and isinstance(key, int):
            self.current = get_args(members[0])[0]
        elif origin is dict:
            self.current = get_args(members[0])[1]
        else:
            self.current = None
        return child


def _field_annotation(model: type[BaseModel], key: str, data: Any) -> Any:
    if model is StrategyConfig and key == "args" and isinstance(data, Mapping):
        return STRATEGY_ARGS.get(str(data.get("name")))
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field.annotation
    return None
