from __future__ import annotations

import pytest

from descheduler.quantity import QuantityError, format_units, to_units
from descheduler.resources import Resources


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [
        ("cpu", "100m", 100),
        ("cpu", "1", 1000),
        ("cpu", "1.5", 1500),
        ("cpu", 2, 2000),
        ("cpu", "250000n", 1),  # nanocores round up to a millicore, like MilliValue()
        ("cpu", "0.1m", 1),
        ("cpu", "1e3", 1_000_000),
        ("memory", "1Gi", 2**30),
        ("memory", "1G", 10**9),
        ("memory", "128974848", 128974848),
        ("memory", "129e6", 129_000_000),
        ("memory", "123Mi", 123 * 2**20),
        ("memory", "1.5Ki", 1536),
        ("memory", "100m", 1),  # 0.1 byte rounds up
        ("nvidia.com/gpu", "2", 2),
        ("pods", "110", 110),
    ],
)
def test_quantity_parses_into_integer_units(resource: str, text: str | int, units: int) -> None:
    assert to_units(resource, text) == units


@pytest.mark.parametrize("text", ["12x", "", "1.2.3", "Gi", "--1", "1 Gi", "one"])
def test_malformed_quantity_is_rejected_with_examples(text: str) -> None:
    with pytest.raises(QuantityError, match="not a valid quantity"):
        to_units("cpu", text)


def test_negative_quantity_is_rejected() -> None:
    with pytest.raises(QuantityError, match="negative"):
        to_units("memory", "-1Gi")


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 3 * 2**30, "3Gi"), ("pods", 4, "4")],
)
def test_units_format_back_to_compact_quantities(resource: str, units: int, text: str) -> None:
    assert format_units(resource, units) == text


def test_resources_add_subtract_and_drop_zero_entries() -> None:
    a = Resources.parse({"cpu": "1", "memory": "1Gi"})
    b = Resources.parse({"cpu": "1"})
    assert a + b == {"cpu": 2000, "memory": 2**30}
    assert (a - b) == {"memory": 2**30}
    assert "cpu" not in (a - b)
    assert (b - a).floor() == {}
    assert a.max(Resources({"cpu": 5000})) == {"cpu": 5000, "memory": 2**30}
