"""Our policy document as YAML text, with each field's comments above it.

Written by hand rather than by a comment-preserving YAML library: the document is plain maps,
lists and scalars, each scalar and small map is dumped by PyYAML, and the caller re-loads the
text to check it says what the document does.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any, Final

import yaml

from descheduler.convert.draft import OutPath

_WIDTH: Final = 110
_TOP_ORDER: Final = (
    "apiVersion",
    "kind",
    "interval",
    "dryRun",
    "loadSource",
    "nodeSelector",
    "evictor",
    "limits",
    "scheduling",
    "strategies",
    "migration",
)


def render(document: Mapping[str, Any], comments: Mapping[OutPath, list[str]], header: list[str]) -> str:
    """The document as YAML; `header` lines open it, `comments[path]` go above the field at `path`."""
    lines = [line for text in header for line in _comment_lines(text, 0)]
    ordered = {key: document[key] for key in (*_TOP_ORDER, *document) if key in document}
    _mapping(ordered, (), 0, comments, lines)
    return "\n".join(lines) + "\n"


def _mapping(
    values: Mapping[str, Any], path: OutPath, indent: int, comments: Mapping[OutPath, list[str]], lines: list[str]
) -> None:
    pad = " " * indent
    for key, value in values.items():
        here = (*path, key)
        for text in comments.get(here, ()):
            lines += _comment_lines(text, indent)
        name = _flow(key)
        if _inline(value, here, comments):
            lines.append(f"{pad}{name}: {_flow(value)}")
        elif isinstance(value, Mapping):
            lines.append(f"{pad}{name}:")
            _mapping(value, here, indent + 2, comments, lines)
        else:
            lines.append(f"{pad}{name}:")
            _sequence(value, here, indent + 2, comments, lines)


def _sequence(
    values: list[Any], path: OutPath, indent: int, comments: Mapping[OutPath, list[str]], lines: list[str]
) -> None:
    pad = " " * indent
    for index, value in enumerate(values):
        here = (*path, index)
        for text in comments.get(here, ()):
            lines += _comment_lines(text, indent)
        if _inline(value, here, comments) or not isinstance(value, Mapping):
            lines.append(f"{pad}- {_flow(value)}")
            continue
        item: list[str] = []
        _mapping(value, here, indent + 2, comments, item)
        first = next(i for i, line in enumerate(item) if not line.lstrip().startswith("#"))
        item[first] = f"{pad}- {item[first][indent + 2 :]}"
        lines += item


def _inline(value: Any, path: OutPath, comments: Mapping[OutPath, list[str]]) -> bool:
    """Scalars, and maps or lists of scalars without comments inside, go on one line."""
    if isinstance(value, Mapping | list):
        inner = value.values() if isinstance(value, Mapping) else value
        nested = any(isinstance(v, Mapping | list) and v for v in inner)
        commented = any(len(p) > len(path) and p[: len(path)] == path for p in comments)
        return not nested and not commented
    return True


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _comment_lines(text: str, indent: int) -> list[str]:
    prefix = " " * indent + "# "
    # Names hold hyphens and paths run long: wrap only at spaces, so each stays whole (and searchable).
    wrapped = textwrap.wrap(
        text,
        width=_WIDTH,
        initial_indent=prefix,
        subsequent_indent=prefix,
        break_on_hyphens=False,
        break_long_words=False,
    )
    return wrapped or [prefix.rstrip()]
