"""A stored object: its encoded JSON plus the few fields list and watch filter on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .resources import ResourceType
from .selectors import field_value

# Set by the server, kept across updates whatever the writer sends (the store's update path).
SYSTEM_METADATA = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")

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
    system: Mapping[str, Any]  # the SYSTEM_METADATA fields the object has
    # `shared()`'s decoded object, made on first use (a list: the dataclass is frozen).
    _shared: list[dict[str, Any]] = field(default_factory=list, compare=False, repr=False)

    def decode(self) -> dict[str, Any]:
        obj: dict[str, Any] = decode(self.raw)
        return obj

    def shared(self) -> dict[str, Any]:
        """The object decoded once and handed to every in-process reader that asks: READ ONLY (a
        reader that changes it corrupts what the next one sees; use `decode()` for a copy)."""
        if not self._shared:
            self._shared.append(decode(self.raw))
        return self._shared[0]

    def field(self, rt: ResourceType, path: str) -> str:
        return self.fields[rt.field_labels.index(path)]


def make_entry(rt: ResourceType, obj: Mapping[str, Any], rv: int, *, share: bool = False) -> Entry:
    """`share`: `obj` is also the entry's `shared()` object, so it is never decoded (the caller gives it
    up: nothing may change it afterwards)."""
    meta = obj["metadata"]
    return Entry(
        key=object_key(meta.get("namespace") or "", meta["name"]),
        raw=encode(obj),
        labels=dict(meta.get("labels") or {}),
        fields=tuple(field_value(obj, path) for path in rt.field_labels),
        rv=rv,
        system={k: meta[k] for k in SYSTEM_METADATA if k in meta},
        _shared=[dict(obj)] if share else [],
    )
