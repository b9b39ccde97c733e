"""`descheduler simulate` on the built-in demo: the hot nodes end under their thresholds within a
few cycles, with no ping-pong, no limit exceeded and no orphan Reservation; the report is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_the_demo_relieves_its_hot_nodes_safely(demo: tuple[dict[str, Any], Path, str]) -> None:
    report, _, _ = demo
    assert report["cycles"] == 10
    assert report["hotNodes"][0] == 2  # node-a and node-b at the afternoon peak
    assert report["hotNodes"][-1] == 0
    assert report["pingPong"] == 0
    assert report["limitViolations"] == 0
    assert report["orphanReservations"] == 0
    assert report["migrations"].get("Succeeded", 0) >= 2
    assert report["evictions"] == report["movesMade"] >= report["minimumMoves"] >= 2
    for move in report["moves"]:
        assert move["from"] in ("node-a", "node-b") and move["reason"].startswith(f"node {move['from']} ")
        if move["phase"] == "Succeeded":
            assert move["to"] not in ("node-a", "node-b")


def test_the_report_is_written_for_people_too(demo: tuple[dict[str, Any], Path, str]) -> None:
    report, directory, stdout = demo
    html = (directory / "report.html").read_text()
    assert html.count("<svg") == 2 and "node-a" in html and "Moves" in html
    assert "moves made" in stdout and str(directory / "report.html") in stdout.replace("\n", "")
    per_cycle = report["perCycle"]
    assert [c["cycle"] for c in per_cycle] == list(range(1, 11))
    assert set(per_cycle[0]["usage"]) == {"node-a", "node-b", "node-c", "node-d", "node-e", "node-f", "node-gpu"}
