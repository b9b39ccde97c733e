"""Kubernetes resource quantities, parsed into integer units.

cpu becomes millicores, memory-like resources bytes, everything else a count; fractions round
up, as the API server's MilliValue()/Value() do.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=65536)
def parse_quantity(text: str | int | float) -> Decimal:
    """Parse a quantity ("100m", "1.5Gi", "2e3", 4) into an exact Decimal."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int):
        return Decimal(text)
    if isinstance(text, float):
        return Decimal(repr(text))
    match = _QUANTITY.match(text.strip())
    if not match:
        raise QuantityError(f"{text!r} is not a valid quantity (examples: 500m, 2, 1.5Gi, 100M, 1e3)")
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"{text!r} is not a valid quantity") from exc
    if exponent:
        return value.scaleb(int(exponent[1:]))
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    return value * _DECIMAL[suffix or ""]


def _ceil(value: Decimal) -> int:
    whole = int(value)
    return whole + 1 if value > whole else whole


def unit_scale(resource: str) -> int:
    """How many integer units one whole quantity of this resource is (1000 for cpu)."""
    return 1000 if resource == CPU else 1


@lru_cache(maxsize=65536)
def to_units(resource: str, text: str | int | float) -> int:
    """Integer units of a resource: millicores for cpu, bytes for memory, counts otherwise."""
    value = parse_quantity(text)
    if value < 0:
        raise QuantityError(f"{text!r} is negative; quantities must be ≥ 0")
    return _ceil(value * unit_scale(resource))


def format_units(resource: str, units: int) -> str:
    """A compact quantity string for integer units ("1200m", "3Gi", "4")."""
    if resource == CPU:
        return f"{units // 1000}" if units % 1000 == 0 else f"{units}m"
    if resource in _BYTE_RESOURCES or resource.startswith("hugepages-"):
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units and units % size == 0:
                return f"{units // size}{suffix}"
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20)):
            if units >= size:
                return f"{units / size:.1f}{suffix}"
        return str(units)
    return str(units)
