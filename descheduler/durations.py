"""Go-style durations ("60s", "5m", "1h30m", "500ms") as used in Kubernetes configuration files."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["format_duration", "parse_duration"]

# Nanoseconds per unit; the same units as Go's time.ParseDuration.
_UNIT_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_ALLOWED = "a duration such as 60s, 5m, 1h30m or 500ms (units ns, us, ms, s, m, h), or whole seconds"


def parse_duration(value: str | int | timedelta) -> timedelta:
    """Parse a Go duration string or whole seconds; raise ValueError saying what is allowed.

    Resolution is one microsecond (timedelta's); finer parts are truncated.
    """
    if isinstance(value, timedelta):
        return value
    # bool is an int subclass, but `true` is never a duration someone meant.
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"expected {_ALLOWED}; got {type(value).__name__} {value!r}")
    try:
        if isinstance(value, int):
            return timedelta(seconds=value)
        return timedelta(microseconds=_parse_go(value) // 1000)
    except OverflowError:
        raise ValueError(f"expected a duration below {timedelta.max.days} days; got {value!r}") from None


def _parse_go(text: str) -> int:
    """Nanoseconds of a Go duration string (sign allowed, "0" allowed without a unit)."""
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    if body[:1] in ("+", "-"):
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise ValueError(f"expected {_ALLOWED}; got {text!r}")
    total, pos = 0, 0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        number, unit = match.groups()
        whole, _, frac = number.partition(".")
        scale = _UNIT_NS[unit]
        # Integer arithmetic so "0.1s" is exactly 100ms, not 99.999…ms.
        total += int(whole or "0") * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
        pos = match.end()
    if pos != len(body):
        hint = f" (add a unit, e.g. {body}s)" if body.isdigit() else ""
        raise ValueError(f"expected {_ALLOWED}; got {text!r}{hint}")
    return sign * total


def format_duration(value: timedelta) -> str:
    """Format as a compact Go duration that parse_duration reads back exactly ("1h30m", "500ms", "0s")."""
    micros = value // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    if micros < 1_000_000:
        return f"{sign}{micros // 1000}ms" if micros % 1000 == 0 else f"{sign}{micros}us"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, frac = divmod(rest, 1_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if seconds or frac:
        out += f"{seconds}.{frac:06d}".rstrip("0") + "s" if frac else f"{seconds}s"
    return out
