"""descheduler.timestamps: RFC 3339 as the Kubernetes API reads and writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from descheduler.timestamps import format_micro, format_seconds, format_time, parse_time

WHOLE = datetime(2026, 1, 15, 12, 0, 5, tzinfo=UTC)
FRACTION = datetime(2026, 1, 15, 12, 0, 5, 250000, tzinfo=UTC)
BERLIN = timezone(timedelta(hours=1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-15T12:00:05Z", WHOLE),
        ("2026-01-15T12:00:05.250000Z", FRACTION),
        ("2026-01-15T12:00:05.25Z", FRACTION),
        ("2026-01-15T13:00:05+01:00", WHOLE),
        ("2026-01-15T12:00:05", WHOLE),
    ],
)
def test_parse_time_reads_rfc3339_with_or_without_fraction_and_offset(text: str, expected: datetime) -> None:
    parsed = parse_time(text)
    assert parsed == expected and parsed.tzinfo is not None


def test_parse_time_refuses_what_is_not_a_time() -> None:
    with pytest.raises(ValueError):
        parse_time("yesterday")


@pytest.mark.parametrize(
    ("moment", "seconds", "micro", "exact"),
    [
        (WHOLE, "2026-01-15T12:00:05Z", "2026-01-15T12:00:05.000000Z", "2026-01-15T12:00:05Z"),
        (FRACTION, "2026-01-15T12:00:05Z", "2026-01-15T12:00:05.250000Z", "2026-01-15T12:00:05.250000Z"),
        (WHOLE.astimezone(BERLIN), "2026-01-15T12:00:05Z", "2026-01-15T12:00:05.000000Z", "2026-01-15T12:00:05Z"),
    ],
)
def test_each_format_writes_utc_with_z_at_its_precision(moment: datetime, seconds: str, micro: str, exact: str) -> None:
    assert (format_seconds(moment), format_micro(moment), format_time(moment)) == (seconds, micro, exact)


def test_metav1_time_drops_the_fraction_rather_than_rounding() -> None:
    assert format_seconds(WHOLE.replace(microsecond=999999)) == "2026-01-15T12:00:05Z"


@pytest.mark.parametrize("moment", [WHOLE, FRACTION])
def test_what_format_time_writes_parses_back_unchanged(moment: datetime) -> None:
    assert parse_time(format_time(moment)) == moment


def test_a_time_without_a_zone_is_refused_when_a_zone_is_required() -> None:
    with pytest.raises(ValueError, match="no time zone"):
        parse_time("2026-01-15T12:00:00", zone_required=True)
