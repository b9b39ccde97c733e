"""Cross-field rules judged on whatever did validate, so one pass reports every problem of a policy.

pydantic runs a model's "after" validators only when all its fields parsed; a rule written with
`cross_field_rules` also runs when some did not, on the raw input, and leaves out what it cannot judge:
a value reported invalid (or inside one) reads as INVALID, and a rule that needs it says nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, TypeVar, get_args

from pydantic import BaseModel, ModelWrapValidatorHandler, ValidationError
from pydantic.alias_generators import to_snake
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

from descheduler.policy.fields import Loc, problem


class Invalid(Enum):
    INVALID = "invalid"


INVALID: Final = Invalid.INVALID
"""A value already reported as invalid: no rule judges it again."""

_PYDANTIC_ERROR_TYPES = frozenset(get_args(ErrorType))
_KEY_MARKER = "[key]"  # pydantic's last location segment when a dict key itself was invalid

Problem = tuple[Loc, str, Any]
Rules = Callable[["PartialInput"], Iterable[Problem]]
ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Entries:
    """A map's entries whose keys are valid (a value may be INVALID); `complete` is False when a key was not."""

    values: dict[str, Any]
    complete: bool


class PartialInput:
    """A model's input as far as it validated: values by path of YAML keys, INVALID where a problem lies.

    Over a validated model (no problems) the values are its attributes; over raw input they are the
    input as written, which for a value that passed strict validation is what the model would hold.
    """

    def __init__(self, data: Any, failed: Iterable[Loc] = ()) -> None:
        self._data = data
        self._failed = [tuple(loc) for loc in failed]

    def value(self, *path: str | int, default: Any = None) -> Any:
        """The value at `path`; INVALID if a problem was reported at, above or inside it; `default` if absent."""
        found, value, loc = self._resolve(path)
        if found is None:
            return INVALID
        if self._problem_at_or_inside(loc):
            return INVALID
        return value if found else default

    def items(self, *path: str | int, default: Sequence[Any] = ()) -> list[Any] | Invalid:
        """A list's items (each INVALID if it failed as a whole); INVALID if the list itself did."""
        found, value, loc = self._resolve(path)
        if found is None or self._problem_above_or_at(loc):
            return INVALID
        if not found or value is None:
            return list(default)
        if not _is_list(value):
            return INVALID
        return [INVALID if self._problem_above_or_at((*loc, i)) else item for i, item in enumerate(value)]

    def entries(self, *path: str | int) -> Entries | Invalid | None:
        """A map's entries; INVALID if the map itself is, None if it is absent or null."""
        found, value, loc = self._resolve(path)
        if found is None or self._problem_above_or_at(loc):
            return INVALID
        if not found or value is None:
            return None
        if not isinstance(value, Mapping):
            return INVALID
        bad_keys = {
            f[-2] for f in self._failed if len(f) == len(loc) + 2 and f[: len(loc)] == loc and f[-1] == _KEY_MARKER
        }
        values = {
            key: INVALID if self._problem_at_or_inside((*loc, key)) else item
            for key, item in value.items()
            if key not in bad_keys and isinstance(key, str)
        }
        return Entries(values, complete=len(values) == len(value))

    def _resolve(self, path: Sequence[str | int]) -> tuple[bool | None, Any, Loc]:
        """(found, value, location as pydantic reports it); found is None when the path leads into a non-container."""
        node: Any = self._data
        loc: Loc = ()
        for key in path:
            if node is None:
                return False, None, (*loc, key)
            if isinstance(key, int):
                if not _is_list(node):
                    return None, None, loc
                if not 0 <= key < len(node):
                    return False, None, (*loc, key)
                node, loc = node[key], (*loc, key)
            elif isinstance(node, BaseModel):
                name = _field_name(type(node), key)
                node, loc = getattr(node, name), (*loc, key)
            elif isinstance(node, Mapping):
                # Python callers may use field names; pydantic reports a problem under the key used.
                used = key if key in node else to_snake(key)
                if used not in node:
                    return False, None, (*loc, key)
                node, loc = node[used], (*loc, used)
            else:
                return None, None, loc
        return True, node, loc

    def _problem_above_or_at(self, loc: Loc) -> bool:
        return any(loc[: len(f)] == f for f in self._failed)

    def _problem_at_or_inside(self, loc: Loc) -> bool:
        return any(loc[: len(f)] == f or f[: len(loc)] == loc for f in self._failed)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _field_name(model: type[BaseModel], key: str) -> str:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return name
    raise KeyError(f"{model.__name__} has no field {key!r}")


def cross_field_rules(data: Any, handler: ModelWrapValidatorHandler[ModelT], rules: Rules) -> ModelT:
    """Validate with `handler`, then judge `rules`, also when some fields failed; raise every problem at once."""
    try:
        model = handler(data)
    except ValidationError as err:
        details = err.errors(include_url=False)
        failed = [detail["loc"] for detail in details]
        if () in failed:
            raise  # the input is not even a map of fields: nothing to judge
        extra = list(rules(PartialInput(data, failed)))
        if not extra:
            raise
        raise ValidationError.from_exception_data(
            err.title, [*map(_reraisable, details), *map(_as_detail, extra)]
        ) from None
    found = list(rules(PartialInput(model)))
    if found:
        raise ValidationError.from_exception_data(type(model).__name__, list(map(_as_detail, found)))
    return model


def _as_detail(found: Problem) -> InitErrorDetails:
    loc, message, value = found
    return InitErrorDetails(type=problem(message), loc=loc, input=value)


def _reraisable(detail: ErrorDetails) -> InitErrorDetails:
    """The same error again, for a ValidationError that also carries the rules' problems."""
    kind, loc, value = detail["type"], detail["loc"], detail["input"]
    if kind not in _PYDANTIC_ERROR_TYPES:
        # Ours (problem()) and plugins' custom errors: the same type and message.
        custom = PydanticCustomError(kind, "{reason}", {"reason": detail["msg"]})
        return InitErrorDetails(type=custom, loc=loc, input=value)
    ctx = detail.get("ctx")
    if ctx is None:
        return InitErrorDetails(type=kind, loc=loc, input=value)
    return InitErrorDetails(type=kind, loc=loc, input=value, ctx=ctx)
