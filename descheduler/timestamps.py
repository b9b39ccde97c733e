"""RFC 3339 time as the Kubernetes API writes it: one parser and the three ways we write a time.

- `format_seconds`: metav1.Time (creationTimestamp, lastTimestamp, conditions' lastTransitionTime):
  whole seconds, any fraction dropped — "2026-01-15T12:00:00Z".
- `format_micro`: metav1.MicroTime (Lease acquireTime/renewTime, events.k8s.io eventTime): always
  six fraction digits — "2026-01-15T12:00:00.000000Z".
- `format_time`: our own documents (the plan's `now`, snapshot annotations, migration objects' times):
  the fraction only when there is one, so nothing is lost and whole seconds read as metav1.Time does.

Every formatter writes UTC with a `Z`. The fake API server (descheduler.fakecluster.apiserver.clock)
keeps its own copy on purpose: a test world that shared this code would agree with us by construction.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_micro", "format_seconds", "format_time", "parse_time"]


def parse_time(text: str, *, zone_required: bool = False) -> datetime:
    """RFC 3339, with or without a fraction, `Z` or an offset; a time without one is read as UTC
    unless `zone_required`.

    Raises ValueError for anything else; callers word the error for their input.
    """
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo:
        return parsed
    if zone_required:
        raise ValueError(f"{text!r} has no time zone")
    return parsed.replace(tzinfo=UTC)


def format_seconds(moment: datetime) -> str:
    """metav1.Time: UTC, whole seconds (a fraction is dropped, not rounded), `Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro(moment: datetime) -> str:
    """metav1.MicroTime: UTC, always six fraction digits, `Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_time(moment: datetime) -> str:
    """UTC with a `Z`, with microseconds only when there are some (a whole second reads as metav1.Time)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
