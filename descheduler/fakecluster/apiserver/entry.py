"""A stored object: its encoded JSON plus the few fields list and watch filter on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from .resources import ResourceType
from .selectors import field_value

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def encode(obj: Any) -> bytes:
    return _encoder.encode(obj)


def decode(raw: bytes) -> Any:
    return _decoder.decode(raw)


def object_key(namespace: str, name: str) -> str:
    """The storage key; keys sort like etcd's `/registry/<resource>/<ns>/<name>`, which fixes list order."""
    return f"{namespace}/{name}" if namespace else name


@dataclass(frozen=True, slots=True)
class Entry:
    """Immutable once stored: writes replace entries, so readers need no copy and no lock to encode."""

    key: str
    raw: bytes
    labels: Mapping[str, str]
    fields: tuple[str, ...]  # values of ResourceType.field_labels, in that order
    rv: int

    def decode(self) -> dict[str, Any]:
        obj: dict[str, Any] = decode(self.raw)
        return obj

    def field(self, rt: ResourceType, path: str) -> str:
        return self.fields[rt.field_labels.index(path)]


def make_entry(rt: ResourceType, obj: Mapping[str, Any], rv: int) -> Entry:
    meta = obj["metadata"]
    return Entry(
        key=object_key(meta.get("namespace") or "", meta["name"]),
        raw=encode(obj),
        labels=dict(meta.get("labels") or {}),
        fields=tuple(field_value(obj, path) for path in rt.field_labels),
        rv=rv,
    )
