"""The simulation report reads right: whole-number ticks for counts, round percent ticks for load,
the scenario's name in the title, node names that never wrap — checked in code and in headless Chromium."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from descheduler.simulate.charts import count_axis, nice_step, percent_axis, render_html, scenario_name

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not found: apt-get install -y chromium (or set CHROMIUM to its path)"
)
ROUND_COUNT_STEPS = {m * 10**k for m in (1, 2, 5) for k in range(4)}
ROUND_PERCENT_STEPS = {10, 20, 25, 50, 100, 200, 250, 500}


def _report(hot: list[int], submitted: list[int], peak: float = 0.98) -> dict[str, Any]:
    """A small handmade report: two nodes, `peak` usage on the hot one at the first cycle."""
    per_cycle = [
        {
            "cycle": i + 1,
            "planned": s,
            "submitted": s,
            "usage": {"node-a": peak - 0.05 * i, "node-b": 0.3},
            "classes": {"node-a": "high" if h else "normal", "node-b": "low"},
            "high": {"node-a": 0.7, "node-b": 0.7},
        }
        for i, (h, s) in enumerate(zip(hot, submitted, strict=True))
    ]
    move = {
        "job": "web-7d9f5-bcx7d-976290ce32",
        "pod": "shop/web-7d9f5-bcx7d",
        "from": "node-a",
        "to": "node-b",
        "phase": "Succeeded",
        "reason": "node node-a cpu 98% > high 70%",
        "outcome": "Succeeded replacement shop/web-7d9f5-mcrcp is Ready on node node-b",
    }
    return {
        "cycles": len(per_cycle),
        "hotNodes": hot,
        "movesMade": sum(submitted),
        "minimumMoves": 1,
        "evictions": sum(submitted),
        "migrations": {"Succeeded": sum(submitted)},
        "pingPong": 0,
        "limitViolations": 0,
        "orphanReservations": 0,
        "perCycle": per_cycle,
        "moves": [move] * sum(submitted),
        "scenario": "/work/somewhere/scenarios/demo.yaml",
        "policy": "built-in default",
    }


class _Page(HTMLParser):
    """The y-axis tick labels of each chart (by the svg's id), the <h1> and <title> texts of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ticks: dict[str, list[str]] = {}
        self.texts: dict[str, str] = {}
        self._svg = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "svg":
            self._svg = attributes.get("id") or ""
        elif tag == "text" and attributes.get("class") == "y-tick":
            self._in = "tick"
            self.ticks.setdefault(self._svg, []).append("")
        elif tag in ("h1", "title") and tag not in self.texts:
            self._in = tag
            self.texts[tag] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("text", "h1", "title"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "tick":
            self.ticks[self._svg][-1] += data.strip()
        elif self._in is not None:
            self.texts[self._in] += data.strip()


def _parse(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    return parsed


def _assert_round_ticks(labels: list[str], unit: str, steps: set[int], at_least: float) -> None:
    """Labels 0, s, 2s, … (with `unit`) for one round step s, at most six, the last at or above `at_least`."""
    assert labels and all(re.fullmatch(rf"\d+{unit}", label) for label in labels), labels
    values = [int(label.removesuffix(unit)) for label in labels]
    gaps = {b - a for a, b in itertools.pairwise(values)}
    assert values[0] == 0 and len(gaps) == 1 and gaps <= steps, values
    assert len(values) <= 6 and values[-1] >= at_least, values


@pytest.mark.parametrize(
    ("top", "ticks"),
    [
        (0, [0, 1]),
        (1, [0, 1]),
        (3, [0, 1, 2, 3]),
        (5, [0, 1, 2, 3, 4, 5]),
        (6, [0, 2, 4, 6]),
        (7, [0, 2, 4, 6, 8]),
        (12, [0, 5, 10, 15]),
        (40, [0, 10, 20, 30, 40]),
        (130, [0, 50, 100, 150]),
    ],
)
def test_count_ticks_are_whole_numbers_up_to_a_tick_above_the_top(top: int, ticks: list[int]) -> None:
    axis = count_axis(top)
    assert [value for value, _ in axis.ticks] == ticks
    assert [label for _, label in axis.ticks] == [str(t) for t in ticks]
    assert axis.top == ticks[-1]


@pytest.mark.parametrize(
    ("top", "labels"),
    [
        (0.3, ["0%", "20%", "40%", "60%", "80%", "100%"]),
        (0.9824, ["0%", "20%", "40%", "60%", "80%", "100%"]),
        (1.0, ["0%", "20%", "40%", "60%", "80%", "100%"]),
        (1.05, ["0%", "25%", "50%", "75%", "100%", "125%"]),
        (1.1, ["0%", "25%", "50%", "75%", "100%", "125%"]),
        (1.6, ["0%", "50%", "100%", "150%", "200%"]),
        (3.2, ["0%", "100%", "200%", "300%", "400%"]),
    ],
)
def test_load_ticks_are_round_percentages_up_to_a_tick_above_the_top(top: float, labels: list[str]) -> None:
    axis = percent_axis(top)
    assert [label for _, label in axis.ticks] == labels
    assert axis.top == pytest.approx(int(labels[-1][:-1]) / 100) and axis.top >= top


@pytest.mark.parametrize(("top", "step"), [(1, 1), (5, 1), (6, 2), (11, 5), (100, 20), (105, 25), (251, 100)])
def test_nice_step_is_the_smallest_round_step_within_five_intervals(top: int, step: int) -> None:
    assert nice_step(top, (1, 2, 2.5, 5)) == step


def test_the_count_chart_labels_its_gridlines_with_whole_numbers_only() -> None:
    # The report's first bug: counts up to 3 gave gridlines at 0, 0.75, 1.5, 2.25, 3 labelled 0, 1, 2, 2, 3.
    page = _parse(render_html(_report(hot=[2, 1, 0], submitted=[3, 1, 0])))
    assert page.ticks["count-chart"] == ["0", "1", "2", "3"]


def test_the_load_chart_labels_its_gridlines_with_round_percentages() -> None:
    page = _parse(render_html(_report(hot=[2, 1, 0], submitted=[3, 1, 0], peak=1.07)))
    assert page.ticks["load-chart"] == ["0%", "25%", "50%", "75%", "100%", "125%"]


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("/work/main/descheduler/fakecluster/scenarios/demo.yaml", "demo"),
        ("scenarios/skewed.yml", "skewed"),
        ("x", "x"),
    ],
)
def test_a_scenario_is_named_by_its_file_stem(source: str, name: str) -> None:
    assert scenario_name(source) == name


def test_the_page_is_titled_by_the_scenario_name_not_its_path() -> None:
    page = render_html(_report(hot=[1], submitted=[1]), "descheduler simulate: /work/somewhere/scenarios/demo.yaml")
    parsed = _parse(page)
    assert parsed.texts == {"title": "descheduler simulate: demo", "h1": "descheduler simulate: demo"}
    assert "/work/somewhere" not in page


def test_the_moves_table_keeps_names_on_one_line_and_scrolls_instead() -> None:
    page = render_html(_report(hot=[1], submitted=[1]))
    assert re.search(r"\.moves td\.name[^{]*\{[^}]*white-space:\s*nowrap", page)
    assert re.search(r"\.scroll \{[^}]*overflow-x:\s*auto", page)
    for value in ("node-a", "node-b", "shop/web-7d9f5-bcx7d"):
        assert f'<td class="name">{value}</td>' in page


# In the browser: the page as Chromium parsed and laid it out.

# Appended to a copy of the page: finds the moves table by its header and marks every name cell (job, pod,
# from, to, phase) whose text the browser laid out on more than one line.
WRAP_PROBE = """<script>
const names = ['job', 'pod', 'from', 'to', 'phase'];
const table = [...document.querySelectorAll('table')].find(t => t.rows[0].cells[0].textContent === 'job');
const columns = [...table.rows[0].cells].flatMap((c, i) => names.includes(c.textContent) ? [i] : []);
const cells = [...table.rows].slice(1).flatMap(row => columns.map(i => row.cells[i]));
const wrapped = cells.filter(td => {
  const range = document.createRange(); range.selectNodeContents(td);
  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
}).map(td => td.textContent);
document.body.setAttribute('data-name-cells', String(cells.length));
document.body.setAttribute('data-wrapped-names', wrapped.join(' '));
</script>"""


def _chromium(tmp_path: Path, page: Path, *args: str, width: int = 1000, height: int = 2400) -> str:
    assert CHROMIUM is not None
    result = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            f"--window-size={width},{height}",
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@needs_chromium
def test_chromium_shows_whole_number_count_ticks_and_round_load_ticks(
    demo: tuple[dict[str, Any], Path, str], tmp_path: Path
) -> None:
    report, directory, _ = demo
    page = _parse(_chromium(tmp_path, directory / "report.html", "--dump-dom"))
    highest_count = max([*report["hotNodes"], *(c["submitted"] for c in report["perCycle"])])
    highest_load = max(v for c in report["perCycle"] for v in c["usage"].values())
    _assert_round_ticks(page.ticks["count-chart"], "", ROUND_COUNT_STEPS, highest_count)
    _assert_round_ticks(page.ticks["load-chart"], "%", ROUND_PERCENT_STEPS, max(100, highest_load * 100))
    assert page.texts["h1"] == page.texts["title"] == "descheduler simulate: demo"


@needs_chromium
def test_chromium_lays_out_the_moves_table_without_wrapping_names(
    demo: tuple[dict[str, Any], Path, str], tmp_path: Path
) -> None:
    report, directory, _ = demo
    probed = tmp_path / "probed.html"
    probed.write_text((directory / "report.html").read_text().replace("</body>", WRAP_PROBE + "</body>"))
    dom = _chromium(tmp_path, probed, "--dump-dom", width=700)  # narrower than the table: it must scroll
    assert f'data-name-cells="{5 * len(report["moves"])}"' in dom
    assert 'data-wrapped-names=""' in dom, re.findall(r'data-wrapped-names="[^"]*"', dom)


@needs_chromium
def test_chromium_renders_the_report_to_a_full_screenshot(
    demo: tuple[dict[str, Any], Path, str], tmp_path: Path
) -> None:
    _, directory, _ = demo
    png = tmp_path / "report.png"
    _chromium(tmp_path, directory / "report.html", f"--screenshot={png}", width=1000, height=1800)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1000, 1800)  # IHDR: the window's size
    assert len(data) > 30_000  # text, two charts and tables; a blank page is a few KB
