"""`descheduler simulate --demo quota`: team-a borrows 8 cpu, team-b (min 8) scales to 8 pods two
minutes in and 4 of them wait. With QuotaReclaim every waiting pod runs, after exactly the 4
evictions needed, and the borrower's replacements stay Pending while team-b is below its min; without
it the 4 wait to the end. The report carries each quota's used, min and max over time."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quota_reclaim import run_scenario, without_reclaim
from descheduler.policy import load_policy
from descheduler.simulate.cli import QUOTA_POLICY
from tests.simulate.conftest import simulate
from tests.simulate.test_report_charts import ROUND_COUNT_STEPS, _assert_round_ticks, _chromium, _parse, needs_chromium

CORES = 1000  # millicores
CYCLES = 10  # the CLI's default


@pytest.fixture(scope="module")
def on(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, str]:
    """The quota demo with its policy (QuotaReclaim), through the CLI: report.json, its directory, stdout."""
    return simulate(tmp_path_factory, "--demo", "quota")


@pytest.fixture(scope="module")
def off() -> dict[str, Any]:
    """The same scenario and cycles with the same policy minus QuotaReclaim."""
    return run_scenario(without_reclaim(load_policy(QUOTA_POLICY)), CYCLES)


def _at(series: list[list[float]], seconds: float) -> float:
    """The value a change-point series holds at `seconds`."""
    held = series[0][1]
    for t, value in series:
        if t > seconds:
            break
        held = value
    return held


def test_with_quota_reclaim_every_waiting_pod_runs_after_the_evictions_needed(
    on: tuple[dict[str, Any], Path, str],
) -> None:
    report, _, _ = on
    assert report["cycles"] == CYCLES
    waited = report["quotaWaits"]["team-b"]
    assert (waited["pods"], waited["running"], waited["stillPending"]) == (8, 8, 0)
    assert report["evictions"] == report["movesMade"] == 4  # 4 cpu short, pods of 1 cpu
    assert all(move["pod"].startswith("team-a/") for move in report["moves"])
    assert report["quotas"]["team-b"]["used"]["cpu"][-1][1] == 8 * CORES


def test_without_quota_reclaim_the_waiting_pods_are_still_pending_at_the_end(off: dict[str, Any]) -> None:
    waited = off["quotaWaits"]["team-b"]
    assert (waited["pods"], waited["running"], waited["stillPending"]) == (8, 4, 4)
    assert off["evictions"] == 0
    assert min(waited["pendingFor"]) >= 4 * 60  # from the scale at 2 min to the end
    assert {v for _, v in off["quotas"]["team-a"]["used"]["cpu"]} == {12 * CORES}  # nothing taken back


def test_the_report_carries_each_quotas_used_min_and_max_over_time(on: tuple[dict[str, Any], Path, str]) -> None:
    report, _, _ = on
    quotas = report["quotas"]
    assert report["quotaUnits"]["cpu"] == "millicores" and report["quotaUnits"]["memory"] == "bytes"
    assert {name: (q["min"]["cpu"], q["max"]["cpu"]) for name, q in quotas.items()} == {
        "team-a": (4 * CORES, 16 * CORES),
        "team-b": (8 * CORES, 16 * CORES),
    }
    assert quotas["team-b"]["min"]["memory"] == 32 * 1024**3
    a, b = quotas["team-a"]["used"]["cpu"], quotas["team-b"]["used"]["cpu"]
    for series in (a, b):
        times = [t for t, _ in series]
        assert times[0] == 0 and times == sorted(times)
    assert (a[0][1], a[-1][1]) == (12 * CORES, 8 * CORES)
    assert (b[0][1], _at(b, 119), _at(b, 121)) == (0, 0, 4 * CORES)  # the scale event at 2 min: 4 start at once
    assert a[-1][0] == b[-1][0] > 60 * 6  # both held to the last sample
    first, last = report["perCycle"][0]["quotaUsed"], report["perCycle"][-1]["quotaUsed"]
    assert (first["team-a"]["cpu"], first["team-b"]["cpu"]) == (12 * CORES, 0)
    assert (last["team-a"]["cpu"], last["team-b"]["cpu"]) == (8 * CORES, 8 * CORES)


def test_the_borrowers_replacements_never_run_while_the_waiting_group_is_below_min(
    on: tuple[dict[str, Any], Path, str],
) -> None:
    report, _, _ = on
    replacements = [w for w in report["podWaits"] if w["quota"] == "team-a"]
    assert len(replacements) == 4  # one per victim: the check below is not empty
    b = report["quotas"]["team-b"]["used"]["cpu"]
    minimum = report["quotas"]["team-b"]["min"]["cpu"]
    for wait in replacements:
        assert wait["running"] is None or _at(b, wait["running"]) >= minimum, wait
    a = report["quotas"]["team-a"]["used"]["cpu"]
    for (_, before), (t, after) in itertools.pairwise(a):
        assert after <= before or _at(b, t) >= minimum, f"team-a grew to {after} at {t}s with team-b below min"


def test_the_summary_prints_each_quotas_used_and_waits(on: tuple[dict[str, Any], Path, str]) -> None:
    _, _, stdout = on
    text = " ".join(stdout.split())  # rich wraps lines to the terminal
    assert "quota team-a: used (first → last cycle, of min/max) cpu 12 → 8 of 4/16" in text
    assert "quota team-b: used (first → last cycle, of min/max) cpu 0 → 8 of 8/16" in text
    assert "8 pod(s) were Pending, 8 ran" in text
    assert "4 pod(s) were Pending, 4 still Pending at the end" in text  # team-a's replacements


def test_the_page_has_a_quota_chart_per_resource_and_the_waits(on: tuple[dict[str, Any], Path, str]) -> None:
    report, directory, _ = on
    page = (directory / "report.html").read_text()
    assert 'id="quota-cpu-chart"' in page and 'id="quota-memory-chart"' in page
    assert "Pods that were Pending" in page
    for wait in report["podWaits"]:
        assert f"<td>{wait['pod']}</td>" in page


def test_a_scenario_file_and_a_demo_together_are_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "descheduler", "simulate", "some.yaml", "--demo", "quota", "--report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "give a scenario file or --demo quota, not both" in result.stderr
    assert "Traceback" not in result.stderr


@needs_chromium
def test_chromium_shows_the_quota_charts_with_whole_number_ticks(
    on: tuple[dict[str, Any], Path, str], tmp_path: Path
) -> None:
    _, directory, _ = on
    page = _parse(_chromium(tmp_path, directory / "report.html", "--dump-dom"))
    _assert_round_ticks(page.ticks["quota-cpu-chart"], "", ROUND_COUNT_STEPS, 16)  # max 16 cores
    _assert_round_ticks(page.ticks["quota-memory-chart"], "", ROUND_COUNT_STEPS, 64)  # max 64 GiB
    assert page.texts["h1"] == "descheduler simulate: quota"
