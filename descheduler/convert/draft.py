"""What a conversion builds: our policy document, the comments on its fields, and the input's problems.

Paths into our document are tuples (`("strategies", 0, "args", "lowThresholds")`); paths into the
peer's document are strings as our policy errors write them (`profiles[0].pluginConfig[1].args`).
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from descheduler.policy.errors import join_path

OutPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A plugin of the input that is not converted: where it is enabled, and what to do about it."""

    path: str
    plugin: str
    advice: str

    def line(self) -> str:
        return f"{self.path}: {self.plugin} ({self.advice})"


def out_path_text(path: OutPath) -> str:
    text = ""
    for key in path:
        text = join_path(text, key)
    return text


@dataclass
class Conversion:
    """A peer configuration converted: our policy document (plain data), comments and problems.

    `comments[path]`: lines written above that field of the output; `notes`: lines of the header.
    `errors`: (input path, message) for every field that cannot be carried over.
    `origins[path]`: the input path a field of the output came from, so a problem the policy
    validation finds in the output is reported at the field the user wrote.
    `left_out`: plugins not converted; `left_out_how`: what to do with them (keep them running in
    the peer, beside us).
    """

    converted_from: str
    policy: dict[str, Any] = field(default_factory=dict)
    comments: dict[OutPath, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    origins: dict[OutPath, str] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)
    left_out_how: str = ""

    def set(self, path: OutPath, value: Any, origin: str | None = None, comment: str | None = None) -> None:
        """Set a field of our document (creating the maps above it), with where it came from."""
        parent: Any = self.policy
        for key, following in itertools.pairwise(path):
            _make_room(parent, key, [] if isinstance(following, int) else {})
            parent = parent[key]
        _make_room(parent, path[-1], None)
        parent[path[-1]] = value
        if origin is not None:
            self.origins[path] = origin
        if comment is not None:
            self.comment(path, comment)

    def get(self, path: OutPath) -> Any:
        value: Any = self.policy
        for key in path:
            in_map = isinstance(value, dict) and key in value
            in_list = isinstance(value, list) and isinstance(key, int) and key < len(value)
            if not (in_map or in_list):
                return None
            value = value[key]
        return value

    def comment(self, path: OutPath, text: str) -> None:
        self.comments.setdefault(path, []).append(text)

    def error(self, path: str, message: str) -> None:
        self.errors.append((path, message))

    def origin_of(self, path: OutPath) -> str | None:
        """The input path of this output field, or of the nearest field above it that has one."""
        for end in range(len(path), 0, -1):
            found = self.origins.get(path[:end])
            if found is not None:
                return found
        return None


def _make_room(parent: Any, key: str | int, empty: Any) -> None:
    """Create `parent[key]` (as `empty`; list items as maps) when it is not there yet."""
    if isinstance(parent, list) and isinstance(key, int):
        while len(parent) <= key:
            parent.append({})
    elif isinstance(parent, dict) and key not in parent:
        parent[key] = empty


class Fields:
    """The keys of one input map, read one by one; `unknown()` reports every key nobody read."""

    def __init__(self, raw: Mapping[str, Any], path: str, conversion: Conversion) -> None:
        self.raw = raw
        self.path = path
        self.conversion = conversion
        self.read: set[str] = set()

    def at(self, key: str | int) -> str:
        return join_path(self.path, key)

    def take(self, key: str) -> Any:
        """The value of `key` (None when absent), marked as read."""
        self.read.add(key)
        return self.raw.get(key)

    def ignore(self, *keys: str) -> None:
        """Keys of the document's structure that say nothing about what moves (apiVersion, kind, names)."""
        self.read.update(keys)

    def drop(self, key: str, why: str) -> None:
        """A key that is not carried over because it changes nothing that moves; the header says so."""
        self.read.add(key)
        if key in self.raw:
            self.conversion.notes.append(f"{self.at(key)}: not carried over ({why})")

    def unknown(self, meaning: str = "") -> None:
        """Every key not read is an error: it would be lost, and it may change what moves."""
        for key in self.raw:
            if key in self.read:
                continue
            typo = nearest(key, self.read)
            if typo:
                self.conversion.error(self.at(str(key)), f"unknown field{typo}")
            else:
                why = f": {meaning}" if meaning else ""
                self.conversion.error(self.at(str(key)), f"no equivalent in our policy{why}")


def nearest(key: Any, known: Iterable[str]) -> str:
    """`; did you mean X?` for a key close to a known one (a typo), else an empty string."""
    found = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.75)
    return f"; did you mean {found[0]}?" if found else ""


def mapping(value: Any, path: str, conversion: Conversion, what: str = "a map (key: value)") -> Mapping[str, Any]:
    """`value` as a map; anything else is reported and read as empty."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    conversion.error(path, f"must be {what}, got {type(value).__name__}")
    return {}


def items(value: Any, path: str, conversion: Conversion) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    conversion.error(path, f"must be a list, got {type(value).__name__}")
    return []


def plain_names(values: Iterable[Any]) -> str:
    return ", ".join(sorted(str(v) for v in values))
