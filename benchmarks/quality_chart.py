"""The quality benchmark's picture per scenario: hot nodes over the simulated day, one line per
contender, as a standalone SVG file (legend inside, no scripts) that RESULTS.md links to."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

from descheduler.simulate.charts import Axis, count_axis

WIDTH, HEIGHT = 820, 320
LEFT, RIGHT, TOP, BOTTOM = 56, 200, 34, 44
# Distinguishable on white and for the common colour-vision deficiencies (Okabe–Ito).
COLOURS = ("#000000", "#0072B2", "#E69F00", "#CC79A7", "#009E73", "#D55E00", "#56B4E9")
DASHES = ("", "", "6 3", "2 3", "8 3 2 3", "4 2", "1 2")


def bucket_means(points: Sequence[tuple[float, float]], hours: float, bucket: float) -> list[tuple[float, float]]:
    """A step series (each value holds until the next point) as its time-weighted mean per `bucket` hours:
    five contenders' minute-by-minute steps drawn over each other cannot be told apart."""
    out: list[tuple[float, float]] = []
    start = 0.0
    while start < hours - 1e-9:
        end = min(start + bucket, hours)
        total = 0.0
        for i, (hour, value) in enumerate(points):
            until = points[i + 1][0] if i + 1 < len(points) else hours
            total += value * max(0.0, min(until, end) - max(hour, start))
        out.append((start, round(total / (end - start), 3)))
        start = end
    return out


def _legend_entry(i: int, label: str, colour: str, dashed: str, font_size: int) -> list[str]:
    """The i-th entry of the legend right of the plot: a stroke of the line's style and its label."""
    ly = TOP + 14 + 20 * i
    lx = WIDTH - RIGHT + 14
    return [
        f'<line x1="{lx}" x2="{lx + 26}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" stroke-width="2.2"{dashed}/>',
        f'<text x="{lx + 32}" y="{ly}" font-size="{font_size}">{html.escape(label)}</text>',
    ]


def _frame(title: str, top: Axis, y: Callable[[float], float]) -> list[str]:
    """The background, the title and the value axis's gridlines and ticks."""
    parts = [
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
        f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    for value, text in top.ticks:
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#e5e5e5"/>'
        )
        parts.append(f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end" font-size="11">{text}</text>')
    return parts


def _svg(title: str, parts: list[str]) -> str:
    body = "".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{html.escape(title)}">{body}</svg>\n'
    )


def hot_nodes_svg(title: str, hours: float, lines: Sequence[tuple[str, Sequence[tuple[float, float]]]]) -> str:
    """`lines`: (label, [(hour, hot nodes)]) per contender, drawn as steps over 0..`hours`."""
    top = count_axis(max([1.0, *(float(v) for _, points in lines for _, v in points)]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(hour: float) -> float:
        return LEFT + plot_w * min(max(hour / hours, 0.0), 1.0)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top.top)

    parts = _frame(title, top, y)
    step = 3 if hours > 12 else 1
    for hour in range(0, int(hours) + 1, step):
        parts.append(
            f'<text x="{x(hour):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" font-size="11">{hour}</text>'
        )
    middle = TOP + plot_h / 2
    parts += [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>',
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">hour (UTC)</text>',
        f'<text x="14" y="{middle}" font-size="12" transform="rotate(-90 14 {middle})" text-anchor="middle">'
        "nodes above high, mean per half hour</text>",
    ]
    for i, (label, points) in enumerate(lines):
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        path: list[str] = []
        last: float | None = None
        for hour, value in points:
            if last is not None:
                path.append(f"{x(hour):.1f},{y(last):.1f}")
            path.append(f"{x(hour):.1f},{y(value):.1f}")
            last = value
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="{2.2 if i == 1 else 1.6}"{dashed} '
            f'points="{" ".join(path)}"><title>{html.escape(label)}</title></polyline>'
        )
        parts += _legend_entry(i, label, colour, dashed, 12)
    return _svg(title, parts)


LABEL_STEP = 11  # pixels between the labels of curves with points in one place
LOG_SPAN = 30  # evictions are drawn on a log scale when the largest is this many times the smallest above 0


def _evictions_axis(values: Sequence[float]) -> tuple[Axis, bool]:
    """Counts from 0, or when they span more than LOG_SPAN (a peer's 1-min point at thousands beside
    ours at tens) powers of ten from 0 on a log scale, labelled 0, 1, 10, 100, 1,000…; and whether
    it is the log scale."""
    largest = max([1.0, *values])
    positive = [v for v in values if v > 0]
    if not positive or largest < LOG_SPAN * min(positive):
        return count_axis(largest), False
    decades = math.ceil(math.log10(largest))
    return Axis(10.0**decades, ((0.0, "0"), *((10.0**k, f"{10**k:,}") for k in range(decades + 1)))), True


def curves_svg(title: str, lines: Sequence[tuple[str, Sequence[tuple[float, float, str, bool]]]]) -> str:
    """`lines`: (label, [(evictions, hot-node-minutes, the knob's value, shipped default)]) per contender,
    each a polyline through its points in order of evictions, every point labelled with the knob's value
    and the shipped default drawn filled."""
    xs = [float(p[0]) for _, points in lines for p in points]
    ys = [float(p[1]) for _, points in lines for p in points]
    right, logarithmic = _evictions_axis(xs)
    top = count_axis(max([1.0, *ys]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(value: float) -> float:
        if logarithmic:
            return LEFT + plot_w * math.log10(1 + value) / math.log10(1 + right.top)
        return LEFT + plot_w * value / right.top

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top.top)

    parts = _frame(title, top, y)
    for value, text in right.ticks:
        parts.append(
            f'<text x="{x(value):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" font-size="11">{text}</text>'
        )
    middle = TOP + plot_h / 2
    parts += [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>',
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">evictions'
        f"{' (log scale)' if logarithmic else ''}</text>",
        f'<text x="14" y="{middle}" font-size="12" transform="rotate(-90 14 {middle})" text-anchor="middle">'
        "hot-node-minutes</text>",
    ]
    stacked: dict[tuple[int, int], int] = {}  # labels drawn so far at a place (to the pixel)
    for i, (label, points) in enumerate(lines):
        colour, dash = COLOURS[(i + 1) % len(COLOURS)], DASHES[(i + 1) % len(DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{x(float(e)):.1f},{y(float(h)):.1f}" for e, h, _, _ in points)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.8"{dashed} points="{path}">'
            f"<title>{html.escape(label)}</title></polyline>"
        )
        knobs: dict[tuple[int, int], list[str]] = {}  # this curve's knob values by place
        for e, h, knob, default in points:
            fill = colour if default else "#fff"
            tip = html.escape(f"{label} {knob}: {e:g} evictions, {h:.0f} hot-node-minutes")
            parts.append(
                f'<circle cx="{x(float(e)):.1f}" cy="{y(float(h)):.1f}" r="{5 if default else 3.5}" '
                f'fill="{fill}" stroke="{colour}" stroke-width="1.5"><title>{tip}</title></circle>'
            )
            knobs.setdefault((round(x(float(e))), round(y(float(h)))), []).append(knob)
        # One label per place and curve (every setting at 0 / 0 on a quiet day reads "0, 1, 2"); another
        # curve's label at the same place goes on the next line, upwards (downwards near the top).
        for (px, py), values in knobs.items():
            n = stacked.get((px, py), 0)
            stacked[(px, py)] = n + 1
            ty = py - 6 - LABEL_STEP * n
            if ty < TOP + 4:
                ty = py + 16 + LABEL_STEP * n
            parts.append(
                f'<text x="{px + 6}" y="{ty}" font-size="10" fill="{colour}">{html.escape(", ".join(values))}</text>'
            )
        parts += _legend_entry(i, label, colour, dashed, 10)
    return _svg(title, parts)
