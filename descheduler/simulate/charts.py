"""The simulation report as one self-contained HTML page: inline SVG charts, no scripts, no downloads."""

from __future__ import annotations

import html
from typing import Any

WIDTH, HEIGHT, PAD = 760, 300, 48
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
HOT = ("#d62728", "#ff7f0e")


def _x(i: int, n: int) -> float:
    return PAD + (WIDTH - 2 * PAD) * (i / max(1, n - 1))


def _y(value: float, top: float) -> float:
    return HEIGHT - PAD - (HEIGHT - 2 * PAD) * (value / top)


def load_chart(per_cycle: list[dict[str, Any]], high: float | None) -> str:
    """One line per node: its usage ratio of the threshold resource at each cycle."""
    nodes = sorted({name for c in per_cycle for name in c["usage"]})
    n = len(per_cycle)
    values = [v for c in per_cycle for v in c["usage"].values()]
    top = max([1.0, *(v * 1.1 for v in values)])
    ever_hot = {name for c in per_cycle for name, cls in c["classes"].items() if cls == "high"}
    parts = [_axes(n, top, "usage of allocatable")]
    if high is not None:
        y = _y(high, top)
        parts.append(
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d62728" stroke-dasharray="6 4"/>'
            f'<text x="{WIDTH - PAD}" y="{y - 4:.1f}" text-anchor="end" font-size="11" fill="#d62728">'
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
            f"{_x(i, n):.1f},{_y(c['usage'][name], top):.1f}" for i, c in enumerate(per_cycle) if name in c["usage"]
        )
        width = 2.5 if name in ever_hot else 1.5
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="{width}" points="{points}"/>')
        legend.append(f'<span style="color:{colour}">&#9632; {html.escape(name)}</span>')
    return _svg(parts) + '<div class="legend">' + " ".join(legend) + "</div>"


def bar_chart(per_cycle: list[dict[str, Any]], series: list[tuple[str, str, str]]) -> str:
    """Grouped bars per cycle: (key in each cycle's dict, label, colour)."""
    n = len(per_cycle)
    top = max([1.0, *(float(c.get(key, 0)) for c in per_cycle for key, _, _ in series)])
    parts = [_axes(n, top, "count", integer=True)]
    slot = (WIDTH - 2 * PAD) / max(1, n)
    width = max(1.0, slot * 0.8 / len(series))
    for i, c in enumerate(per_cycle):
        for j, (key, _, colour) in enumerate(series):
            value = float(c.get(key, 0))
            x = PAD + slot * i + slot * 0.1 + width * j
            y = _y(value, top)
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{HEIGHT - PAD - y:.1f}" fill="{colour}">'
                f"<title>cycle {c['cycle']}: {value:g}</title></rect>"
            )
    legend = " ".join(f'<span style="color:{colour}">&#9632; {label}</span>' for _, label, colour in series)
    return _svg(parts) + f'<div class="legend">{legend}</div>'


def _axes(n: int, top: float, label: str, integer: bool = False) -> str:
    out = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#333"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#333"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" text-anchor="middle" font-size="12">cycle</text>',
        f'<text x="14" y="{HEIGHT / 2}" font-size="12" transform="rotate(-90 14 {HEIGHT / 2})" '
        f'text-anchor="middle">{label}</text>',
    ]
    for k in range(5):
        value = top * k / 4
        y = _y(value, top)
        text = f"{value:.0f}" if integer else f"{value:.0%}"
        out.append(f'<text x="{PAD - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{text}</text>')
        out.append(f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
    step = max(1, n // 10)
    for i in range(0, n, step):
        out.append(
            f'<text x="{_x(i, n):.1f}" y="{HEIGHT - PAD + 16}" text-anchor="middle" font-size="11">{i + 1}</text>'
        )
    return "".join(out)


def _svg(parts: list[str]) -> str:
    body = "".join(parts)
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img">{body}</svg>'


def render_html(report: dict[str, Any], title: str) -> str:
    per_cycle = report["perCycle"]
    highs = [h for c in per_cycle for h in c.get("high", {}).values()]
    high = sorted(highs)[len(highs) // 2] if highs else None
    counts = [dict(c, hot=n) for c, n in zip(per_cycle, report["hotNodes"], strict=True)]
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
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in facts)
    moves = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(m.get(k) or ''))}</td>" for k in MOVE_COLUMNS) + "</tr>"
        for m in report.get("moves", [])
    )
    header = "".join(f"<th>{k}</th>" for k in MOVE_COLUMNS)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 900px; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; font-size: 13px; }}
.legend {{ font-size: 12px; margin: 4px 0 1.5em {PAD}px; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<table>{rows}</table>
<h2>Node load per cycle</h2>
{load_chart(per_cycle, high)}
<h2>Hot nodes and moves per cycle</h2>
{bar_chart(counts, [("hot", "hot nodes", "#d62728"), ("submitted", "moves started", "#1f77b4")])}
<h2>Moves</h2>
<table><tr>{header}</tr>{moves}</table>
</body></html>
"""


MOVE_COLUMNS = ("job", "pod", "from", "to", "phase", "reason", "outcome")


def _first(values: list[int]) -> str:
    return str(values[0]) if values else "-"


def _last(values: list[int]) -> str:
    return str(values[-1]) if values else "-"


def _none(value: Any) -> str:
    return "-" if value is None else str(value)
