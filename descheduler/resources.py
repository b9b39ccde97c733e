"""Resource vectors: an immutable mapping of resource name to integer units."""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from descheduler.quantity import format_units, to_units


class Resources(Mapping[str, int]):
    """Immutable resource vector in integer units; a missing resource is 0."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        self._items: dict[str, int] = {k: v for k, v in dict(items).items() if v}

    @classmethod
    def adopt(cls, items: dict[str, int]) -> Resources:
        """Wrap a fresh dict that holds no zeros, without copying it (the decoder's hot path);
        the caller must not keep or change the dict."""
        vector = cls.__new__(cls)
        vector._items = items
        return vector

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> Resources:
        """From an API `ResourceList` ({"cpu": "500m", "memory": "1Gi"}); raises QuantityError."""
        if not raw:
            return EMPTY
        return cls({name: to_units(name, value) for name, value in raw.items()})

    def __getitem__(self, key: str) -> int:
        return self._items.get(key, 0)

    def as_dict(self) -> dict[str, int]:
        """The underlying dict, for hot loops; callers must not modify it."""
        return self._items

    # Direct views of the dict: the Mapping mixins would go through __getitem__ per key (hot path).
    def items(self) -> ItemsView[str, int]:
        return self._items.items()

    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def values(self) -> ValuesView[int]:
        return self._items.values()

    def get(self, key: str, default: int | None = 0) -> int | None:  # type: ignore[override]
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __add__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._items)
        for k, v in other.items():
            out[k] = out.get(k, 0) + v
        return Resources(out)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._items)
        for k, v in other.items():
            out[k] = out.get(k, 0) - v
        return Resources(out)

    def max(self, other: Mapping[str, int]) -> Resources:
        """Per-resource maximum."""
        out = dict(self._items)
        for k, v in other.items():
            if v > out.get(k, 0):
                out[k] = v
        return Resources(out)

    def floor(self) -> Resources:
        """Negative entries clamped to 0."""
        return Resources({k: v for k, v in self._items.items() if v > 0})

    def to_quantities(self) -> dict[str, str]:
        """Back to an API-style ResourceList of strings, sorted by name."""
        return {k: format_units(k, v) for k, v in sorted(self._items.items())}

    def __repr__(self) -> str:
        return f"Resources({self.to_quantities()})"


EMPTY = Resources()


def total(vectors: Iterable[Mapping[str, int]]) -> Resources:
    """Sum of many vectors."""
    out: dict[str, int] = {}
    for vector in vectors:
        for k, v in vector.items():
            out[k] = out.get(k, 0) + v
    return Resources(out)
