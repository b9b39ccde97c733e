"""The simulation report as one self-contained HTML page: inline SVG charts, no scripts, no downloads."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

WIDTH, HEIGHT = 760, 270
LEFT, RIGHT, TOP, BOTTOM = 56, 24, 16, 44
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
HOT = ("#d62728", "#ff7f0e")
# A step is one of these times a power of ten; at most MAX_INTERVALS steps keep ~6 labels on an axis.
COUNT_STEPS = (1, 2, 5)
PERCENT_STEPS = (1, 2, 2.5, 5)
MAX_INTERVALS = 5


@dataclass(frozen=True, slots=True)
class Axis:
    """A y axis: its top (in the plotted unit) and its labelled ticks from 0 up to the top."""

    top: float
    ticks: tuple[tuple[float, str], ...]


def nice_step(top: float, mantissas: Sequence[float], max_intervals: int = MAX_INTERVALS) -> int:
    """The smallest whole step (a mantissa times a power of ten) that reaches `top` in `max_intervals` steps."""
    scale = 1
    while True:
        for step in (mantissa * scale for mantissa in mantissas):
            if float(step).is_integer() and top <= step * max_intervals:
                return int(step)
        scale *= 10


def count_axis(top: float) -> Axis:
    """Whole-number ticks for counts: gridlines only at integers, the top rounded up to a tick."""
    step = nice_step(max(1.0, top), COUNT_STEPS)
    last = max(1, math.ceil(top / step)) * step
    return Axis(float(last), tuple((float(v), str(v)) for v in range(0, last + 1, step)))


def percent_axis(top: float) -> Axis:
    """Round percent ticks for a ratio axis (0/20/40…%, 0/25/50…%), never below 100% at the top."""
    top_percent = max(100, math.ceil(round(top * 100, 6)))
    step = nice_step(top_percent, PERCENT_STEPS)
    last = math.ceil(top_percent / step) * step
    return Axis(last / 100, tuple((v / 100, f"{v}%") for v in range(0, last + 1, step)))


def scenario_name(source: str) -> str:
    """A scenario as a reader knows it: its file's stem, not the path it was read from."""
    return PurePath(source).stem or source


def _x(i: int, n: int) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * (i / max(1, n - 1))


def _y(value: float, top: float) -> float:
    return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * (value / top)


def load_chart(per_cycle: list[dict[str, Any]], high: float | None) -> str:
    """One line per node: its usage ratio of the threshold resource at each cycle."""
    nodes = sorted({name for c in per_cycle for name in c["usage"]})
    n = len(per_cycle)
    axis = percent_axis(max([0.0, *(v for c in per_cycle for v in c["usage"].values())]))
    ever_hot = {name for c in per_cycle for name, cls in c["classes"].items() if cls == "high"}
    parts = [_axes(axis, "usage of allocatable"), _cycle_labels([_x(i, n) for i in range(n)])]
    if high is not None:
        y = _y(high, axis.top)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#d62728" stroke-dasharray="6 4"/>'
            f'<text x="{WIDTH - RIGHT}" y="{y - 4:.1f}" text-anchor="end" font-size="11" fill="#d62728">'
            f"high {high:.0%}</text>"
        )
    hot_i = cool_i = 0
    legend = []
    for name in nodes:
        if name in ever_hot:
            colour, hot_i = HOT[hot_i % len(HOT)], hot_i + 1
        else:
            colour, cool_i = PALETTE[cool_i % len(PALETTE)], cool_i + 1
        points = " ".join(
            f"{_x(i, n):.1f},{_y(c['usage'][name], axis.top):.1f}"
            for i, c in enumerate(per_cycle)
            if name in c["usage"]
        )
        width = 2.5 if name in ever_hot else 1.5
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="{width}" points="{points}"/>')
        legend.append(_legend_entry(name, colour))
    return _svg("load-chart", parts) + '<div class="legend">' + " ".join(legend) + "</div>"


def bar_chart(per_cycle: list[dict[str, Any]], series: list[tuple[str, str, str]]) -> str:
    """Grouped bars per cycle: (key in each cycle's dict, label, colour)."""
    n = len(per_cycle)
    axis = count_axis(max([0.0, *(float(c.get(key, 0)) for c in per_cycle for key, _, _ in series)]))
    slot = (WIDTH - LEFT - RIGHT) / max(1, n)
    parts = [_axes(axis, "count"), _cycle_labels([LEFT + slot * (i + 0.5) for i in range(n)])]
    width = max(1.0, slot * 0.8 / len(series))
    for i, c in enumerate(per_cycle):
        for j, (key, label, colour) in enumerate(series):
            value = float(c.get(key, 0))
            x = LEFT + slot * i + slot * 0.1 + width * j
            y = _y(value, axis.top)
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{HEIGHT - BOTTOM - y:.1f}" fill="{colour}">'
                f"<title>cycle {c['cycle']}: {html.escape(label)} {value:g}</title></rect>"
            )
    legend = " ".join(_legend_entry(label, colour) for _, label, colour in series)
    return _svg("count-chart", parts) + f'<div class="legend">{legend}</div>'


GIB = 1024**3
QUOTA_RESOURCES = ("cpu", "memory")  # charted when a quota names them; in this order


def format_amount(resource: str, units: float) -> str:
    """A quota figure as people write it: cpu in cores (from millicores), memory in Gi (from bytes)."""
    if resource == "cpu":
        return f"{units / 1000:g}"
    if resource == "memory":
        return f"{units / GIB:.3g}Gi"
    return f"{units:g}"


def _display(resource: str, units: float) -> float:
    return units / 1000 if resource == "cpu" else units / GIB if resource == "memory" else units


def quota_chart(quotas: dict[str, Any], resource: str, end: float) -> str:
    """One resource of every quota over simulated time: used as a step line (solid), min dashed, max dotted."""
    unit = {"cpu": "cores", "memory": "GiB"}.get(resource, "units")
    values = [
        _display(resource, v)
        for q in quotas.values()
        for v in [
            *(point[1] for point in q["used"].get(resource, [])),
            *(q[key][resource] for key in ("min", "max") if resource in q[key]),
        ]
    ]
    axis = count_axis(max([0.0, *values]))
    end = max(end, 1.0)

    def x(seconds: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * min(seconds, end) / end

    parts = [_axes(axis, f"{resource} ({unit})", "simulated minutes"), _minute_labels(end, x)]
    legend = []
    for i, (name, quota) in enumerate(sorted(quotas.items())):
        colour = PALETTE[i % len(PALETTE)]
        for key, dash in (("min", "6 4"), ("max", "2 3")):
            if resource in quota[key]:
                y = _y(_display(resource, quota[key][resource]), axis.top)
                parts.append(
                    f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" '
                    f'stroke-dasharray="{dash}"><title>{html.escape(name)} {key} '
                    f"{format_amount(resource, quota[key][resource])}</title></line>"
                )
        points: list[str] = []
        for t, v in quota["used"].get(resource, []):
            y = _y(_display(resource, v), axis.top)
            if points:
                points.append(f"{x(t):.1f},{points[-1].split(',')[1]}")  # a step: hold until the change
            points.append(f"{x(t):.1f},{y:.1f}")
        if points:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2.5" points="{" ".join(points)}">'
                f"<title>{html.escape(name)} used</title></polyline>"
            )
        legend.append(_legend_entry(name, colour))
    legend.append("<span>solid: used · dashed: min · dotted: max</span>")
    return _svg(f"quota-{resource}-chart", parts) + '<div class="legend">' + " ".join(legend) + "</div>"


def _minute_labels(end: float, x: Any) -> str:
    minutes = end / 60
    step = nice_step(max(1.0, minutes), COUNT_STEPS, max_intervals=10)
    return "".join(
        f'<text x="{x(m * 60):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">{m}</text>'
        for m in range(0, math.floor(minutes) + 1, step)
    )


def quota_lines(report: dict[str, Any]) -> list[str]:
    """Per ElasticQuota: used of min/max at the first and the last cycle; its pods that were Pending, how
    long they took to run, and how many still wait at the end."""
    lines = []
    per_cycle = report["perCycle"]
    waits = report.get("quotaWaits", {})
    for name, quota in report.get("quotas", {}).items():
        shown = []
        for resource in (r for r in QUOTA_RESOURCES if r in quota["min"] or r in quota["max"]):
            first, last = (
                cycle.get("quotaUsed", {}).get(name, {}).get(resource, 0)
                for cycle in ((per_cycle[0], per_cycle[-1]) if per_cycle else ({}, {}))
            )
            bounds = "/".join(
                format_amount(resource, quota[key][resource]) if resource in quota[key] else "-"
                for key in ("min", "max")
            )
            shown.append(f"{resource} {format_amount(resource, first)} → {format_amount(resource, last)} of {bounds}")
        line = f"quota {name}: used (first → last cycle, of min/max) " + ", ".join(shown)
        waited = waits.get(name)
        if waited:
            line += f"; {waited['pods']} pod(s) were Pending"
            if waited["running"]:
                line += (
                    f", {waited['running']} ran {waited['min']:g}–{waited['max']:g} s after creation "
                    f"(median {waited['median']:g} s)"
                )
            if waited["stillPending"]:
                line += f", {waited['stillPending']} still Pending at the end (up to {max(waited['pendingFor']):g} s)"
        lines.append(line)
    return lines


def _waits_table(report: dict[str, Any]) -> str:
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(value))}</td>"
            for value in (
                w["pod"],
                w["quota"] or "-",
                f"{w['created']:g}",
                f"{w['seconds']:g}" if w["seconds"] is not None else w["state"],
            )
        )
        + "</tr>"
        for w in report.get("podWaits", [])
    )
    header = "".join(f"<th>{k}</th>" for k in ("pod", "quota", "created (s)", "to Running (s)"))
    return f'<div class="scroll"><table class="moves"><tr>{header}</tr>{rows}</table></div>'


def _quota_section(report: dict[str, Any]) -> str:
    """The quotas' used, min and max over time and the waits of pods that were Pending; empty without quotas."""
    quotas = report.get("quotas") or {}
    if not quotas:
        return ""
    end = max((point[0] for q in quotas.values() for series in q["used"].values() for point in series), default=0.0)
    named = [r for r in QUOTA_RESOURCES if any(r in q["min"] or r in q["max"] for q in quotas.values())]
    charts = "".join(f"<h3>{resource}</h3>{quota_chart(quotas, resource, end)}" for resource in named)
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in quota_lines(report))
    return (
        f"<h2>Quotas: used, min and max over time</h2><ul>{lines}</ul>{charts}"
        f"<h2>Pods that were Pending: seconds from creation to Running</h2>{_waits_table(report)}"
    )


def _legend_entry(label: str, colour: str) -> str:
    # The swatch carries the colour; the name stays dark, so pale series are still readable.
    return f'<span><span style="color:{colour}">&#9632;</span> {html.escape(label)}</span>'


def _axes(axis: Axis, label: str, x_label: str = "cycle") -> str:
    middle = TOP + (HEIGHT - TOP - BOTTOM) / 2
    out = []
    for value, text in axis.ticks:
        y = _y(value, axis.top)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(
            f'<text class="y-tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{text}</text>'
        )
    out += [
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">{x_label}</text>',
        f'<text x="14" y="{middle}" font-size="12" transform="rotate(-90 14 {middle})" '
        f'text-anchor="middle">{label}</text>',
    ]
    return "".join(out)


def _cycle_labels(xs: list[float]) -> str:
    step = max(1, math.ceil(len(xs) / 10))  # at most ten cycle numbers under the axis
    return "".join(
        f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">{i + 1}</text>'
        for i, x in enumerate(xs)
        if i % step == 0
    )


def _svg(chart_id: str, parts: list[str]) -> str:
    body = "".join(parts)
    return (
        f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img">{body}</svg>'
    )


def render_html(report: dict[str, Any], title: str = "descheduler simulate") -> str:
    """The report page; a report that names its scenario is titled by the scenario's name, not its path."""
    if report.get("scenario"):
        title = f"descheduler simulate: {scenario_name(str(report['scenario']))}"
    per_cycle = report["perCycle"]
    highs = [h for c in per_cycle for h in c.get("high", {}).values()]
    high = sorted(highs)[len(highs) // 2] if highs else None
    counts = [dict(c, hot=n) for c, n in zip(per_cycle, report["hotNodes"], strict=True)]
    load = (
        load_chart(per_cycle, high)
        if any(c["usage"] for c in per_cycle)
        else "<p>no node load: the policy has no load-aware strategy</p>"
    )
    facts = [
        ("cycles", report["cycles"]),
        ("hot nodes, first → last cycle", f"{_first(report['hotNodes'])} → {_last(report['hotNodes'])}"),
        ("moves made / minimum needed", f"{report['movesMade']} / {_none(report['minimumMoves'])}"),
        ("evictions", report["evictions"]),
        ("jobs by phase", ", ".join(f"{k} {v}" for k, v in report["migrations"].items()) or "none"),
        ("ping-pong", report["pingPong"]),
        ("limit violations", report["limitViolations"]),
        ("orphan Reservations", report["orphanReservations"]),
    ]
    if report.get("policy"):
        facts.append(("policy", report["policy"]))
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in facts)
    moves = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"name" if k in NAME_COLUMNS else "text"}">{html.escape(str(m.get(k) or ""))}</td>'
            for k in MOVE_COLUMNS
        )
        + "</tr>"
        for m in report.get("moves", [])
    )
    header = "".join(f"<th>{k}</th>" for k in MOVE_COLUMNS)
    moves_table = (
        f'<div class="scroll"><table class="moves"><tr>{header}</tr>{moves}</table></div>' if moves else "<p>none</p>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 960px; }}
h1 {{ font-size: 1.6em; overflow-wrap: anywhere; }}
h2 {{ margin-bottom: 0.3em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; font-size: 13px; }}
.scroll {{ overflow-x: auto; }}
.moves td.name, .moves th {{ white-space: nowrap; }}
.moves td.text {{ min-width: 10em; }}
svg {{ display: block; max-width: 100%; height: auto; }}
.legend {{ font-size: 12px; margin: 4px 0 1.5em {LEFT}px; }}
.legend > span {{ margin-right: 0.8em; white-space: nowrap; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<table>{rows}</table>
<h2>Node load per cycle</h2>
{load}
<h2>Hot nodes and moves per cycle</h2>
{bar_chart(counts, [("hot", "hot nodes", "#d62728"), ("submitted", "moves started", "#1f77b4")])}
<h2>Moves</h2>
{moves_table}
{_quota_section(report)}
</body></html>
"""


MOVE_COLUMNS = ("job", "pod", "from", "to", "phase", "reason", "outcome")
NAME_COLUMNS = frozenset({"job", "pod", "from", "to", "phase"})


def _first(values: list[int]) -> str:
    return str(values[0]) if values else "-"


def _last(values: list[int]) -> str:
    return str(values[-1]) if values else "-"


def _none(value: Any) -> str:
    return "-" if value is None else str(value)
