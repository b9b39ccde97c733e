"""The quality benchmark's own parts on tiny clusters: the hindsight minimum, the metrics read from a
run, the targets' verdict, the picture, and a smoke-sized simulated run of every family with every
contender (no timing)."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.baseline import SpreadScheduler, baseline_policy_text, register_baseline
from benchmarks.quality import (
    HIGH,
    LABELS,
    LIMITS,
    LOW,
    NOT_JUDGED,
    SMOKE_NODES,
    Minimum,
    Need,
    QualitySimulation,
    RunSpec,
    SeenPod,
    coarse,
    contender,
    contenders,
    curves,
    fewest_for_all,
    grouped,
    merge_results,
    move_causes,
    ours_policy,
    plan_runs,
    record,
    record_section,
    removals_needed,
    render_quality,
    run_one,
    run_scenario,
    run_spec,
    save_document,
    scenario_runs,
    shipped,
    summary,
    verdict,
    write_chart,
)
from benchmarks.quality_chart import bucket_means, curves_svg, hot_nodes_svg
from benchmarks.scenarios import build
from descheduler import metrics
from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.traces import trace_scenario, traces_dir
from descheduler.plan_cycle import plan_cycle
from descheduler.simulate.record import CycleRecord
from tests import builders as b

T0 = 1_768_478_400.0
NEEDS_TRACES = pytest.mark.skipif(
    traces_dir() is None, reason="the public traces are not next to the repository (../shared/data/traces)"
)


def _owned(name: str, cpu: str = "2", priority: int | None = None) -> dict[str, Any]:
    return {"name": name, "cpu": cpu, "owner": f"rs-{name}", "priority": priority}


def _need(hour: float, over: tuple[float, ...], usage: dict[str, tuple[float, ...]], fixed: str = "") -> Need:
    return Need(hour, over, usage, frozenset(usage) - set(fixed))


def test_the_minimum_covers_every_cycle_with_one_set_of_pods() -> None:
    # Each cycle alone needs one pod, but a different one: any single pod leaves a cycle over.
    needs = [_need(1, (3, 0), {"a": (4, 0), "b": (1, 0)}), _need(2, (3, 0), {"a": (1, 0), "b": (4, 0)})]
    assert fewest_for_all(needs) == (2, True, None)
    # One pod large at both cycles covers both.
    needs.append(_need(3, (3, 0), {"a": (1, 0), "b": (1, 0), "c": (5, 0)}))
    needs[:2] = [_need(h, (3, 0), {**n.usage, "c": (3, 0)}) for h, n in zip((1, 2), needs[:2], strict=True)]
    assert fewest_for_all(needs) == (1, True, None)


def test_the_minimum_counts_a_pod_gone_at_a_cycle_it_could_not_be_evicted() -> None:
    # c can be evicted at the first cycle only; once gone, its usage is gone at the second too.
    needs = [
        _need(1, (2, 0), {"a": (1, 0), "c": (3, 0)}),
        _need(2, (2, 0), {"a": (1, 0), "b": (1, 0), "c": (3, 0)}, fixed="c"),
    ]
    assert fewest_for_all(needs) == (1, True, None)


def test_the_minimum_needs_every_resource_and_leaves_out_cycles_nothing_covers() -> None:
    needs = [
        _need(1, (4, 4), {"a": (5, 0), "b": (0, 5), "c": (1, 1)}),
        _need(2.5, (9, 0), {"a": (1, 0), "b": (1, 0), "c": (1, 0)}),  # not even all three
        _need(4, (-1, -2), {"a": (5, 5)}),  # not over at all
    ]
    assert fewest_for_all(needs) == (2, True, 2.5)
    assert fewest_for_all([]) == (0, True, None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), min_size=5, max_size=5), min_size=1, max_size=6), st.data())
def test_the_minimum_is_the_smallest_covering_set(usage_rows: list[list[int]], data: st.DataObject) -> None:
    """Against enumeration of every set of the five pods, smallest first."""
    overs = [data.draw(st.integers(1, sum(row) or 1)) for row in usage_rows]
    needs = [
        _need(h, (over,), {f"p{i}": (float(u),) for i, u in enumerate(row)})
        for h, (row, over) in enumerate(zip(usage_rows, overs, strict=True))
    ]
    covered = [(row, over) for row, over in zip(usage_rows, overs, strict=True) if sum(row) >= over]
    expected = next(
        k
        for k in range(6)
        if any(
            all(sum(row[i] for i in chosen) >= over for row, over in covered) for chosen in combinations(range(5), k)
        )
    )
    count, exact, _ = fewest_for_all(needs)
    assert (count, exact) == (expected, True)


def test_removals_needed_reads_hot_nodes_only() -> None:
    # hot: 10 cpu, pods using 3 + 3 + 2 = 8 cpu (80% > 70%): 1 cpu over.
    objects = b.loaded_node("hot", [(_owned("a"), "3"), (_owned("b"), "3"), (_owned("c"), "2")], cpu="10")
    objects += b.loaded_node("cool", [(_owned("d"), "1")], cpu="10")
    needed = removals_needed(b.snapshot(objects), ours_policy(), 1.5)
    assert list(needed) == ["hot"]
    need = needed["hot"]
    assert (need.hour, need.over[0]) == (1.5, 1000.0)
    assert {key.rsplit("/", 1)[-1]: u[0] for key, u in need.usage.items()} == {"a": 3000, "b": 3000, "c": 2000}
    assert need.evictable == frozenset(need.usage)


def test_the_days_minimum_sums_the_nodes() -> None:
    minimum = Minimum()
    minimum.add({"a": _need(0.5, (3, 0), {"x": (4, 0), "y": (1, 0)}), "b": _need(0.5, (1, 0), {"z": (2, 0)})})
    minimum.add({"a": _need(1, (3, 0), {"x": (1, 0), "y": (4, 0)}), "c": _need(1, (5, 0), {"w": (1, 0)})})
    assert minimum.solve() == {"moves": 3, "exact": True, "nodes": 3, "cycles": 2, "unreachable": {"c": 1}}


def _run(evictions: float, hot: float, ratio: float | None = 1.0, ping: int = 0, **more: Any) -> dict[str, Any]:
    return {
        "evictions": evictions,
        "hotNodeMinutes": hot,
        "ratio": ratio,
        "pingPong": ping,
        "limitViolations": 0,
        "failedOrAborted": 0,
        "movedMoreThanOnce": 0,
        "worstP99": 0.9,
        **more,
    }


def test_verdict_names_each_missed_target() -> None:
    scenario = {
        "pods": 1000,
        "runs": {
            "off": _run(0, 1000, None),
            "ours": _run(100, 50),
            "lnuRequests": _run(400, 60),  # more evictions and hotter: dominated
            "koordinator": _run(100, 50),  # the same on both: not dominated
        },
    }
    assert verdict(scenario) == [
        "ours does not dominate koordinator (100 evictions / 50 hot-node-minutes against 100 / 50)"
    ]
    # A tie on day 2 is broken by day 1's evictions, and a tie at nothing evicted and nothing hot is met.
    scenario["runs"]["ours"]["day1Evictions"], scenario["runs"]["koordinator"]["day1Evictions"] = 20, 30
    assert verdict(scenario) == []
    scenario["runs"]["ours"]["day1Evictions"] = 30
    assert len(verdict(scenario)) == 1
    scenario["runs"]["ours"] = scenario["runs"]["koordinator"] = _run(0, 0, None)
    assert verdict(scenario) == []
    # A peer that evicts nothing and leaves all of off's heat cannot be dominated by one that evicts: left out.
    scenario["runs"]["koordinator"] = _run(100, 50)
    scenario["runs"]["ours"], scenario["runs"]["lnuRequests"] = _run(10, 0), _run(0, 1000, None)
    assert verdict(scenario) == []
    scenario["runs"]["lnuRequests"] = _run(0, 900, None)  # cooler than off without evicting: not left out
    assert verdict(scenario)[0].startswith("ours does not dominate lnuRequests")
    scenario["runs"]["lnuRequests"] = _run(400, 60)
    scenario["runs"]["ours"] = _run(100, 200, ratio=2.5, ping=2, movedMoreThanOnce=11, failedOrAborted=1)
    assert verdict(scenario) == [
        "ours does not dominate lnuRequests (100 evictions / 200 hot-node-minutes against 400 / 60)",
        "ours does not dominate koordinator (100 evictions / 200 hot-node-minutes against 100 / 50)",
        "hot-node-minutes 200 > 5% of off's 1000",
        "evictions 2.50× the hindsight minimum > 2×",
        "2 ping-pong > 1% of 100 moves",
        "11 workloads moved more than once > 1% of 1000 pods",
        "1 failed or aborted moves",
    ]
    # With the hot spells and the moves' causes counted, the sentences say where they came from.
    scenario["runs"]["off"]["reactionFloor"] = 40
    causes = {"placed": 3, "ahead": 1, "passing": 4, "lasting": 2}
    scenario["runs"]["ours"] |= {"waitingMinutes": 150, "touchedMinutes": 90, "moveCauses": causes}
    assert verdict(scenario)[2:4] == [
        "hot-node-minutes 200 > 5% of off's 1000 (150 before a cycle could see the node, "
        "90 on nodes ours had moved pods off or onto; reaction floor 40)",
        "evictions 2.50× the hindsight minimum > 2× (3 off nodes below high without a descheduler but hot "
        "from pods moved onto them, 1 before a node crossed high, 4 off nodes that would have been below high "
        "again 10 min later)",
    ]


def test_a_scenario_without_ours_is_not_judged() -> None:
    peers_only = {"name": "x-50", "pods": 100, "runs": {"off": _run(0, 1000, None), "koordinator": _run(9, 90)}}
    judged = {"name": "y-50", "pods": 100, "runs": {"off": _run(0, 1000, None), "ours": _run(10, 20, ratio=3.0)}}
    result = summary([peers_only, judged])
    assert peers_only["missed"] == [NOT_JUDGED] and result["scenarios_missed"] == 2
    assert result["ours_ratio"] == 3.0  # the judged scenario's alone


def test_upstream_rows_are_the_median_over_tie_seeds_with_their_range() -> None:
    runs = {
        "lnuMetrics": _run(10, 300, ratio=1.0, day1Evictions=5),
        "lnuMetrics#2": _run(14, 100, ratio=1.4, day1Evictions=9),
        "lnuMetrics#3": _run(12, 200, ratio=1.2, limitViolations=1, day1Evictions=3),
        "lnuMetrics@60s": _run(99, 1),  # another cycle: not one of its seeds
    }
    row = grouped(runs, "lnuMetrics")
    assert (row["evictions"], row["hotNodeMinutes"], row["ratio"], row["seeds"]) == (12, 200, 1.2, 3)
    assert row["ranges"]["evictions"] == (10, 14) and row["limitViolations"] == 1
    assert (row["day1Evictions"], row["ranges"]["day1Evictions"]) == (5, (3, 9))
    assert grouped(runs, "lnuMetrics@60s") is runs["lnuMetrics@60s"]


def test_upstream_rows_say_how_many_tie_orders_they_are_the_median_of() -> None:
    off = _run(0, 1000, None) | {"minimum": {"moves": 10, "exact": True}, "hotSeries": []}
    runs = {"off": off} | {
        name: _run(evictions, 100, hotSeries=[])
        for name, evictions in [("lnuMetrics", 10), ("lnuMetrics#2", 14), ("lnuRequests", 0), ("lnuMetrics@60s", 30)]
    }
    scenario = {"name": "openb-50", "family": "openb", "nodes": 50, "pods": 170, "seed": 1, "runs": runs}
    text = render_quality({"scenarios": [scenario]})
    assert "| upstream LNU, metrics (2 min, median of 2 tie orders) | 12 (10–14) |" in text
    assert "| upstream LNU, requests (2 min, one tie order) | 0 |" in text
    assert "| upstream LNU, metrics (1 min, one tie order) | 30 |" in text


def test_runs_are_named_by_what_differs_from_the_shipped_contender() -> None:
    assert [spec.name for spec in plan_runs(("koordinator",))] == ["off", "koordinator"]
    assert [spec.name for spec in plan_runs(("ours",))] == ["off", "ours"]
    names = [spec.name for spec in plan_runs(("ours", "lnuMetrics", "koordinator"), uniform=True, sweep=True)]
    assert names[:6] == ["off", "ours", "lnuMetrics", "lnuMetrics#2", "lnuMetrics#3", "koordinator"]
    assert {"lnuMetrics@60s", "lnuMetrics@60s#3", "koordinator@60s"} <= set(names)  # the one-cycle table
    assert {"ours~4%", "ours~32%", "koordinator~0", "lnuMetrics@1800s"} <= set(names)  # the curves
    assert len(names) == len(set(names))  # ours' shipped knob and upstream's shipped schedule run once
    assert RunSpec("lnuMetrics", 60.0, 2).group == "lnuMetrics@60s"


def test_a_run_name_reads_back_as_the_run_it_names() -> None:
    specs = plan_runs(("ours", "lnuRequests", "lnuMetrics", "koordinator"), uniform=True, sweep=True)
    assert [run_spec(spec.name) for spec in specs] == specs
    assert run_spec("lnuMetrics#3") == RunSpec("lnuMetrics", 120.0, 3)
    assert run_spec("ours~8%") == RunSpec("ours", 60.0, None, "8%") and run_spec("ours~3").knob == 3
    with pytest.raises(ValueError, match="'upstream#2': expected a contender \\(off, ours, lnuRequests"):
        run_spec("upstream#2")
    with pytest.raises(ValueError, match="it would be 'lnuMetrics'"):
        run_spec("lnuMetrics#1")  # the first tie seed is the plain name


def test_the_one_cycle_table_and_the_curves_run_at_50_nodes_only() -> None:
    specs = scenario_runs([("bitbrains", 50), ("bitbrains", 300)], ("ours", "lnuMetrics", "koordinator"))
    at_50 = {spec.name for spec in specs[("bitbrains", 50)]}
    at_300 = [spec.name for spec in specs[("bitbrains", 300)]]
    assert {"lnuMetrics@60s", "koordinator@60s", "ours~4%"} <= at_50
    assert at_300 == [spec.name for spec in plan_runs(("ours", "lnuMetrics", "koordinator"))]  # as they ship
    assert [
        spec.name for spec in scenario_runs([("openb", 50)], ("ours",), uniform_sizes=(), sweep_sizes=())[("openb", 50)]
    ] == ["off", "ours"]


def test_curves_hold_each_contenders_knob_on_its_shipped_cycle() -> None:
    runs = {
        "ours": _run(50, 90, base="ours", seconds=60.0, knob=None),
        "ours~3": _run(30, 120, base="ours", seconds=60.0, knob=3),
        "ours~4%": _run(45, 100, base="ours", seconds=60.0, knob="4%"),
        "koordinator": _run(40, 200, base="koordinator", seconds=10.0, knob=None),
        "koordinator~0": _run(80, 100, base="koordinator", seconds=10.0, knob=0),
        "koordinator@60s": _run(20, 400, base="koordinator", seconds=60.0, knob=None),  # not on the curve
        "lnuMetrics": _run(200, 95, base="lnuMetrics", seconds=120.0, knob=None),
        "lnuMetrics#2": _run(210, 80, base="lnuMetrics", seconds=120.0, knob=None),  # a seed: not a point
        "lnuMetrics@600s": _run(60, 150, base="lnuMetrics", seconds=600.0, knob=None),
    }
    lines = curves(runs)
    assert {key: [name for name, _ in points] for key, points in lines.items()} == {
        ("ours", "consecutiveAbnormalities"): ["ours~3", "ours"],  # ours as it ships is on each of its curves
        ("ours", "maxEvictionsPerHour"): ["ours~4%", "ours"],
        ("koordinator", "consecutiveAbnormalities"): ["koordinator", "koordinator~0"],
        ("lnuMetrics", "schedule"): ["lnuMetrics@600s", "lnuMetrics"],
    }
    scenario = {"pods": 10_000, "runs": {"off": _run(0, 10_000, None), **runs}}
    missed = [m for m in verdict(scenario) if m.startswith("no point")]
    # koordinator (40, 200): ours~3 has fewer evictions and hot-node-minutes. lnuMetrics@600s (60, 150):
    # ours (50, 90). Nothing of ours has at most 20 evictions (koordinator@60s is off the curve).
    assert missed == []
    runs["ours~3"]["hotNodeMinutes"] = 250
    runs["ours~4%"]["hotNodeMinutes"] = 250
    assert [m for m in verdict(scenario) if m.startswith("no point")] == [
        "no point of ours' curve has at most 40 evictions and fewer than 200 hot-node-minutes (koordinator)"
    ]
    # A tie on day 2 is won by fewer evictions on day 1 (the load repeats: the cluster was settled then).
    scenario["runs"]["koordinator"] = _run(5, 0, base="koordinator", seconds=10.0, knob=None, day1Evictions=40)
    scenario["runs"]["ours~3"] = _run(5, 0, base="ours", seconds=60.0, knob=3, day1Evictions=50)
    assert [m for m in verdict(scenario) if m.startswith("no point")] == [
        "no point of ours' curve has at most 5 evictions and fewer than 0 hot-node-minutes (koordinator)"
    ]
    scenario["runs"]["ours~3"]["day1Evictions"] = 30
    assert [m for m in verdict(scenario) if m.startswith("no point")] == []


def test_points_of_the_same_evictions_are_in_the_order_of_their_schedule() -> None:
    runs = {
        name: _run(0, 100, base="lnuRequests", seconds=seconds, knob=None)
        for name, seconds in [("lnuRequests@1800s", 1800.0), ("lnuRequests", 120.0), ("lnuRequests@60s", 60.0)]
    }
    [points] = curves(runs).values()
    assert [name for name, _ in points] == ["lnuRequests@60s", "lnuRequests", "lnuRequests@1800s"]


def test_moves_are_split_by_their_source_in_the_off_run() -> None:
    off = [(0.0, frozenset({"a", "b"})), (300.0, frozenset({"a"})), (900.0, frozenset())]
    # a: hot in off at 10 s and still at the next cycle (610 s); b: hot at 10 s, cool by 610 s; c: never
    # hot, moved ahead; a again at 950 s, when off has it cool, after a pod was moved onto it: placed.
    moves = [(10.0, "a", False), (10.0, "b", False), (10.0, "c", False), (950.0, "a", True)]
    assert move_causes(moves, off) == {"placed": 1, "ahead": 1, "passing": 1, "lasting": 1}


def test_the_picture_is_well_formed_svg_with_one_line_and_legend_entry_per_contender(tmp_path: Path) -> None:
    svg = hot_nodes_svg("t", 24, [("off", [(0, 0), (6, 4), (12, 1)]), ("ours", [(0, 0), (6.5, 1), (7, 0)])])
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{ns}polyline")
    assert [line.find(f"{ns}title").text for line in lines] == ["off", "ours"]  # type: ignore[union-attr]
    # Steps: each change is drawn as a horizontal then a vertical segment.
    assert len(lines[0].get("points", "").split()) == 5
    assert {t.text for t in root.findall(f"{ns}text")} >= {"off", "ours", "hour (UTC)"}


@NEEDS_TRACES
def test_hot_samples_are_read_from_the_cluster() -> None:
    loaded = coarse(trace_scenario(nodes=4, seed=2))
    simulation = QualitySimulation(loaded, ours_policy(), 1, stock=False, keep=False)
    simulation.samples = [(0.0, frozenset({"a"})), (60.0, frozenset()), (120.0, frozenset({"a", "b"}))]
    simulation.peaks = [np.array([0.5, 0.9]), np.array([0.6, 0.1]), np.array([0.7, 0.2])]
    simulation.cluster.clock.advance(300.0)  # the run ends 300 s in: the last state holds for 180 s
    assert simulation.hot_at(90.0) == frozenset() and simulation.hot_at(120.0) == {"a", "b"}
    assert simulation.hot_node_minutes() == 1 + 0 + 2 * 3
    assert simulation.hot_series() == [(0.0, 1), (0.017, 0), (0.033, 2)]
    # Read every minute, the held states: node 1 is at 0.9 for one minute of five, then 0.1, 0.2 x3.
    assert simulation.worst_p99() == pytest.approx(np.percentile([0.1, 0.2, 0.2, 0.2, 0.9], 99))
    simulation.close()


@NEEDS_TRACES
def test_only_the_scored_span_is_counted() -> None:
    loaded = coarse(trace_scenario(nodes=4, seed=2))
    simulation = QualitySimulation(loaded, ours_policy(), 1, stock=False, keep=False, scored_from=100.0)
    simulation.samples = [(0.0, frozenset({"a"})), (60.0, frozenset({"a", "b"})), (160.0, frozenset())]
    simulation.peaks = [np.array([0.5, 0.9]), np.array([0.6, 0.1]), np.array([0.7, 0.2])]
    simulation.cluster.clock.advance(300.0)
    # From 100 s: {a, b} until 160 s (2 nodes × 1 min), then none; what came before is not counted.
    assert simulation.hot_node_minutes() == 2
    assert simulation.hot_series() == [(0.0, 2), (0.017, 0)]  # hours from the scored span's start
    moves = [("j1", {}, 50.0, None), ("j2", {}, 100.0, None)]
    assert [name for name, *_ in simulation.scored_moves(moves)] == ["j2"]
    simulation.close()


def _job(pod: str, evicted: float, began: float, replacement: str) -> dict[str, Any]:
    stamp = datetime.fromtimestamp(began + evicted, UTC).isoformat().replace("+00:00", "Z")
    namespace, name = pod.split("/")
    return {
        "spec": {"podRef": {"namespace": namespace, "name": name}},
        "status": {
            "conditions": [{"type": "Evicted", "status": "True", "lastTransitionTime": stamp}],
            "newPodRef": {"uid": replacement},
            "workload": {"uid": f"w-{name}"},
        },
    }


@NEEDS_TRACES
def test_ping_pong_is_a_replacement_on_a_hot_node_or_moved_again_within_the_hour() -> None:
    loaded = coarse(trace_scenario(nodes=4, seed=2))
    simulation = QualitySimulation(loaded, ours_policy(), 1, stock=False, keep=False)
    began = simulation.record.began
    simulation.record.cycles = [CycleRecord(i, 600.0 * i, 0, 0, "", {}, {}, {}) for i in range(1, 20)]
    simulation.samples = [(600.0, frozenset()), (1200.0, frozenset({"hot"}))]
    simulation.seen = {
        "r-a": SeenPod("ns/a2", "hot", "w-a", 610.0, 620.0),  # bound on a node hot at the next cycle
        "r-b": SeenPod("ns/b2", "cool", "w-b", 610.0, 620.0),
        "r-c": SeenPod("ns/c2", "cool", "w-c", 610.0, 620.0),
        "r-b3": SeenPod("ns/b3", "cool", "w-b2", 2420.0, 2430.0),
        "r-c3": SeenPod("ns/c3", "cool", "w-c2", 8000.0, 8030.0),
    }
    simulation.record.jobs = {
        "ja": _job("ns/a", 600.0, began, "r-a"),
        "jb": _job("ns/b", 600.0, began, "r-b"),
        "jc": _job("ns/c", 600.0, began, "r-c"),
        "jb2": _job("ns/b2", 2420.0, began, "r-b3"),  # 30 min after it was placed: the move did not last
        "jc2": _job("ns/c2", 8000.0, began, "r-c3"),  # over two hours later: a later move, not ping-pong
    }
    found = simulation.ping_pong()
    simulation.close()
    assert found == [
        "ja: the replacement ns/a2 landed on hot, hot at the next cycle",
        "jb2: moves ns/b2 again 30 min after jb placed it",
    ]


@NEEDS_TRACES
def test_hot_spells_split_waiting_for_a_cycle_first_spells_and_touched_nodes() -> None:
    loaded = coarse(trace_scenario(nodes=4, seed=2))
    simulation = QualitySimulation(loaded, ours_policy(), 1, stock=False, keep=False)
    began = simulation.record.began
    simulation.record.cycles = [CycleRecord(i, 600.0 * i, 0, 0, "", {}, {}, {}) for i in range(1, 4)]
    # a: hot 300-900 s (cycle at 600: 5 min waiting, 5 after), cool, hot again 1500-1800 (waits for 1800).
    # b: hot from 1500 s to the end at 2100 (waits 300 s for the cycle at 1800), after a move onto it.
    simulation.samples = [
        (0.0, frozenset()),
        (300.0, frozenset({"a"})),
        (900.0, frozenset()),
        (1500.0, frozenset({"a", "b"})),
        (1800.0, frozenset({"b"})),
    ]
    simulation.cluster.clock.advance(2100.0)
    simulation.seen = {"r-x": SeenPod("ns/x2", "b", "w-x", 610.0, 620.0)}
    simulation.record.jobs = {"jx": _job("ns/x", 600.0, began, "r-x")}
    simulation.record.sources = {"jx": "a"}
    spells = simulation.hot_spells()
    moves = simulation.move_sources()
    simulation.close()
    assert moves == [(pytest.approx(600.0), "a", False)]  # b received the replacement, a nothing before
    assert [(s.node, s.start, s.minutes, s.waiting, s.first, s.touched) for s in spells] == [
        ("a", 300.0, 10.0, 5.0, True, False),
        ("a", 1500.0, 5.0, 5.0, False, True),  # relieved at 600 s
        ("b", 1500.0, 10.0, 5.0, True, True),  # received the replacement at 620 s
    ]


@NEEDS_TRACES
@pytest.mark.parametrize("family", ["bitbrains", "bitbrains-diurnal", "genai-memory", "openb"])
def test_a_smoke_sized_run_of_every_contender(family: str, tmp_path: Path) -> None:
    # Each contender as it ships, upstream with its first tie order (the median over orders: its own test).
    scenario = run_scenario(family, 8, 1, hours=1.0, runs=[shipped(base, 1) for base in LABELS])
    assert list(scenario["runs"]) == [c.key for c in contenders()]
    for key, run in scenario["runs"].items():
        assert run["limitViolations"] == 0 and run["orphanReservations"] == 0, (key, run)
        assert 0 <= run["hotNodeMinutes"] <= 60 * scenario["nodes"]
        assert 0 < run["worstP99"] < 5, (key, run["worstP99"])
        # Every contender evicts first: a moved pod's workload is a Ready pod short until its replacement is.
        assert run["unreadyPodSecondsPerMove"] is None or run["unreadyPodSecondsPerMove"] > 0, (key, run)
    assert any(run["unreadyPodSecondsPerMove"] for run in scenario["runs"].values())
    assert scenario["runs"]["off"]["evictions"] == 0
    assert scenario["runs"]["off"]["minimum"]["cycles"] == 6
    scenario["missed"] = verdict(scenario)
    ET.parse(write_chart(scenario, tmp_path))
    assert scenario["name"] in render_quality({"scenarios": [scenario]})


@NEEDS_TRACES
def test_quiet_cycles_not_run_change_nothing_the_run_reports() -> None:
    """Koordinator every 10 s: skipping quiet cycles (nothing planned, its state unchanged, no job in
    flight, nothing published since) gives the same run, with far fewer cycles planned."""
    loaded = build("bitbrains-diurnal", SMOKE_NODES, 1)
    koordinator = contender(RunSpec("koordinator", 10.0))
    cycles = int(2 * 3600 / 10)
    results = {}
    for skip in (False, True):
        before = metrics.sample("descheduler_cycle_duration_seconds_count")
        out = run_one(loaded, replace(koordinator, skip_quiet=skip), cycles)
        results[skip] = (out, metrics.sample("descheduler_cycle_duration_seconds_count") - before)
    (full, planned_full), (skipped, planned_skipped) = results[False], results[True]
    same = ("evictions", "jobs", "hotNodeMinutes", "pingPong", "worstP99", "movedMoreThanOnce")
    assert {k: skipped[k] for k in same} == {k: full[k] for k in same}
    # The picture's points fall at other sample times, their half-hour means are the same.
    assert bucket_means(skipped["hotSeries"], 2, 0.5) == bucket_means(full["hotSeries"], 2, 0.5)
    assert full["evictions"] > 0  # moves happened: busy stretches ran every cycle
    assert planned_full == cycles and planned_skipped < cycles / 3


# --- the older upstream-like baseline (benchmarks/baseline.py) and its stock scheduler -------------


def test_baseline_evicts_by_requests_with_pooled_headroom_lowest_priority_first() -> None:
    # full: 4 pods requesting 2 cpu = 80% > 70% of requests, whatever their usage (tiny here).
    objects = b.loaded_node(
        "full",
        [
            (_owned("a", priority=10), "10m"),
            (_owned("b", priority=0), "10m"),
            (_owned("c", priority=10), "10m"),
            (_owned("d", priority=10), "10m"),
        ],
        cpu="10",
    )
    objects += b.loaded_node("empty", [], cpu="10")
    register_baseline()
    policy = b.policy(baseline_policy_text("10m", LOW, HIGH) + LIMITS + "migration: {defaultMode: EvictDirectly}\n")
    plan, _ = plan_cycle(b.snapshot(objects), policy)
    assert [(m.pod.name, m.source_node, m.target_node, m.mode) for m in plan.migrations] == [
        ("b", "full", None, "EvictDirectly")
    ]
    assert {n.name: n.node_class for n in plan.nodes} == {"full": "high", "empty": "low"}


def test_baseline_stops_when_the_pooled_headroom_is_used_up() -> None:
    # The one low node (45% requested) pools 2.5 cpu below its 70% target; the full node would need
    # six 500m evictions to get to 70%, but eviction stops once the pool is used up: five.
    register_baseline()
    policy = b.policy(baseline_policy_text("60s", LOW, HIGH) + "evictor: {minReplicas: 1}\n")
    objects = b.loaded_node("full", [(_owned(f"p{i}", cpu="500m"), "10m") for i in range(20)], cpu="10")
    objects += b.loaded_node("low", [(_owned("x", cpu="4500m"), "10m")], cpu="10")
    plan, _ = plan_cycle(b.snapshot(objects), policy)
    assert len(plan.migrations) == 5


def test_spread_scheduler_places_by_requests_not_load() -> None:
    store = Store(clock=SimClock(T0), pod_termination_delay=None)
    store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}])
    store.load(
        [b.node("busy", cpu="10"), b.node("idle", cpu="10"), b.pod("big", "busy", cpu="6"), b.pod("new", cpu="1")]
    )
    bindings = SpreadScheduler(store).step(T0)
    assert [(x.pod, x.node) for x in bindings] == [("new", "idle")]


def test_the_curve_chart_is_well_formed_svg_with_a_line_per_contender_and_the_default_filled() -> None:
    svg = curves_svg("t", [("ours", [(10, 50, "1", True), (5, 80, "3", False)]), ("koord", [(20, 60, "5", True)])])
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert [line.find(f"{ns}title").text for line in root.findall(f"{ns}polyline")] == ["ours", "koord"]  # type: ignore[union-attr]
    circles = root.findall(f"{ns}circle")
    assert [c.get("fill") != "#fff" for c in circles] == [True, False, True]
    assert {t.text for t in root.findall(f"{ns}text")} >= {"evictions", "hot-node-minutes", "3"}


def test_points_in_one_place_share_a_label_per_curve_and_curves_are_stacked() -> None:
    ns = "{http://www.w3.org/2000/svg}"
    svg = curves_svg("t", [("ours", [(0, 0, "a", True), (0, 0, "b", False)]), ("koord", [(0, 0, "c", True)])])
    labels = {t.text: (t.get("x"), t.get("y")) for t in ET.fromstring(svg).findall(f"{ns}text")}
    assert "a, b" in labels and "c" in labels and labels["a, b"] != labels["c"]


def test_the_curve_chart_draws_evictions_on_a_log_scale_when_they_span_decades() -> None:
    ns = "{http://www.w3.org/2000/svg}"

    def xs(svg: str) -> list[float]:
        return [float(c.get("cx") or 0) for c in ET.fromstring(svg).findall(f"{ns}circle")]

    points = [(10, 50, "a", True), (100, 40, "b", False), (3242, 30, "c", False)]
    svg = curves_svg("t", [("peer", points)])
    texts = {t.text for t in ET.fromstring(svg).findall(f"{ns}text")}
    assert {"evictions (log scale)", "0", "10", "1,000", "10,000"} <= texts
    a, b, c = xs(svg)
    assert (b - a) / (c - b) == pytest.approx(math.log10(101 / 11) / math.log10(3243 / 101), rel=0.01)
    linear = curves_svg("t", [("peer", [(10, 50, "a", True), (100, 40, "b", False)])])  # one decade: linear
    assert "evictions (log scale)" not in linear


def test_the_picture_averages_each_step_series_over_its_buckets_by_time() -> None:
    # 2 hot nodes for the first 15 min, none until 0.75 h, then 4 to the end of the hour.
    series = [(0.0, 2), (0.25, 0), (0.75, 4)]
    assert bucket_means(series, 1.0, 0.5) == [(0.0, 1.0), (0.5, 2.0)]
    assert bucket_means(series, 1.0, 1.0) == [(0.0, 1.5)]


def test_results_of_several_invocations_merge_by_scenario_with_the_later_run_winning(tmp_path: Path) -> None:
    def scenario(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {"name": "bitbrains-50", "family": "bitbrains", "nodes": 50, "pods": 600, "seed": 1, "hours": 48.0,
                "scoredHours": 24.0, "runs": {k: v | {"hotSeries": [(0.0, 1)]} for k, v in runs.items()}}  # fmt: skip

    off = _run(0, 1000, None) | {"minimum": {"moves": 10, "exact": True}, "reactionFloor": 5}
    first = {"scenarios": [scenario({"off": off, "ours": _run(30, 20), "koordinator": _run(99, 99)})]}
    later = {"scenarios": [scenario({"koordinator": _run(40, 200), "lnuMetrics#2": _run(50, 300)})]}
    merged = merge_results([first, later], tmp_path)
    [result] = merged["scenarios"]
    assert list(result["runs"]) == ["off", "ours", "lnuMetrics#2", "koordinator"]  # LABELS' order
    assert result["runs"]["koordinator"]["evictions"] == 40  # the later document's run
    assert [result["runs"][k]["ratio"] for k in ("ours", "koordinator")] == [3.0, 4.0]
    assert merged["ours_ratio"] == 3.0 and (tmp_path / "quality-bitbrains-50.svg").exists()
    with pytest.raises(ValueError, match="bitbrains-50: no document holds its off and ours runs"):
        merge_results([later], tmp_path)
    redrawn = {"scenarios": [scenario({"ours": _run(30, 20)}) | {"seed": 2}]}
    with pytest.raises(ValueError, match="bitbrains-50: runs of seed 2 over 48 h cannot merge with runs of seed 1"):
        merge_results([first, redrawn], tmp_path)


def test_of_two_runs_of_a_name_the_one_measured_later_wins_whatever_the_order_of_the_documents(
    tmp_path: Path,
) -> None:
    def document(ours: dict[str, Any]) -> dict[str, Any]:
        off = _run(0, 1000, None) | {"minimum": {"moves": 10, "exact": True}, "hotSeries": [(0.0, 1)]}
        return {"scenarios": [{"name": "openb-50", "family": "openb", "nodes": 50, "pods": 170, "seed": 1,
                               "hours": 48.0, "scoredHours": 24.0, "runs": {"off": off, "ours": ours}}]}  # fmt: skip

    again = document(_run(5, 6, measured={"commit": "def5678", "date": "2026-12-01 09:00 UTC"}, hotSeries=[]))
    first = document(_run(3, 4, measured={"commit": "abc1234", "date": "2026-11-30 12:00 UTC"}, hotSeries=[]))
    for order in ([first, again], [again, first]):
        assert merge_results(order, tmp_path)["scenarios"][0]["runs"]["ours"]["evictions"] == 5


def test_a_recorded_merge_is_the_quality_entry_of_the_results_and_renders_with_where_it_came_from(
    tmp_path: Path,
) -> None:
    stamp = {"commit": "abc1234", "date": "2026-11-30 12:00 UTC"}
    off = _run(0, 1000, None) | {"minimum": {"moves": 10, "exact": True}, "hotSeries": [(0.0, 1)]}
    ours = _run(3, 4, day1Evictions=7, unreadyPodSecondsPerMove=None, hotSeries=[(0.0, 0)], jobs={"j": {}})
    document = {"scenarios": [{"name": "openb-50", "family": "openb", "nodes": 50, "pods": 170, "seed": 1,
                               "hours": 48.0, "scoredHours": 24.0,
                               "runs": {"off": off | {"measured": stamp, "wallSeconds": 30.0},
                                        "ours": ours | {"measured": {"commit": "def5678", "date": "2026-12-01 09:00 UTC"},
                                                        "wallSeconds": 90.5}}}]}  # fmt: skip
    results_json, results_md = tmp_path / "results.json", tmp_path / "RESULTS.md"
    results_json.write_text(json.dumps({"benchmarks": {"decode": {"date": "d", "runs": [{"seconds": 1.0}]}}}))
    entry = record(merge_results([document], tmp_path), results_json, results_md)
    assert entry["merged"] == {"runs": 2, "first": stamp["date"], "last": "2026-12-01 09:00 UTC",
                               "commits": ["abc1234", "def5678"]}  # fmt: skip
    stored = json.loads(results_json.read_text())["benchmarks"]
    assert set(stored) == {"decode", "quality"} and stored["quality"]["seconds"] == 120.5
    assert "hotSeries" not in stored["quality"]["runs"][0]["scenarios"][0]["runs"]["ours"]
    text = results_md.read_text()
    assert "Merged from 2 runs saved in benchmarks/quality-runs/, measured 2026-11-30 12:00 UTC to 2026-12-01 " in text
    assert "| openb-50 (170 pods, minimum 10) | ours (LowNodeLoad) (1 min) | 3 | 7 |" in text
    unstamped = json.loads(json.dumps(document).replace('"measured"', '"x"'))
    with pytest.raises(ValueError, match="none of the runs is stamped"):
        record(merge_results([unstamped], tmp_path), results_json, results_md)


def test_a_saved_document_stamps_runs_measured_now_and_merges_back(tmp_path: Path) -> None:
    off = _run(0, 1000, None) | {"minimum": {"moves": 10, "exact": True}, "reactionFloor": 5, "hotSeries": [(0.0, 1)]}
    earlier = {"commit": "abc1234", "date": "2026-11-30 12:00 UTC"}
    document = {"scenarios": [{"name": "openb-50", "family": "openb", "nodes": 50, "pods": 170, "seed": 1,
                               "hours": 48.0, "scoredHours": 24.0,
                               "runs": {"off": off, "ours": _run(3, 4) | {"hotSeries": [], "measured": earlier}}}]}  # fmt: skip
    save_document(document, tmp_path / "runs.json", measured_now=True)
    saved = json.loads((tmp_path / "runs.json").read_text())
    runs = saved["scenarios"][0]["runs"]
    assert runs["ours"]["measured"] == earlier and set(runs["off"]["measured"]) == {"commit", "date"}
    assert merge_results([saved], tmp_path)["scenarios"][0]["runs"]["ours"]["evictions"] == 3


def test_a_constrained_merge_is_a_section_of_its_own_with_its_moves_by_rule(tmp_path: Path) -> None:
    stamp = {"commit": "abc1234", "date": "2026-12-08 00:00 UTC"}
    off = _run(0, 1000, None) | {"minimum": {"moves": 10, "exact": True}, "hotSeries": [(0.0, 1)], "measured": stamp}
    rules = {"evictionsByRule": {"local": 2, "none": 8}, "measured": stamp, "hotSeries": [(0.0, 0)]}
    runs = {
        "off": off,
        "ours": _run(10, 40, stranded=0, backToSource=0, failures={}, **rules),
        "lnuMetrics": _run(12, 90, stranded=1, backToSource=5, failures={}, **rules),
        "lnuMetrics#2": _run(14, 95, stranded=3, backToSource=7, failures={"Failed X": 1}, **rules),
    }
    document = {"scenarios": [{"name": "bitbrains-diurnal-zoned-50", "family": "bitbrains-diurnal-zoned", "nodes": 50,
                               "pods": 600, "seed": 1, "hours": 48.0, "scoredHours": 24.0, "runs": runs}]}  # fmt: skip
    results_json, results_md = tmp_path / "results.json", tmp_path / "RESULTS.md"
    results_json.write_text(json.dumps({"benchmarks": {"decode": {"date": "d", "runs": [{"seconds": 1.0}]}}}))
    record_section(merge_results([document], tmp_path), results_json, results_md)
    stored = json.loads(results_json.read_text())
    assert "quality" not in stored["benchmarks"] and "quality-constrained" in stored["sections"]
    text = results_md.read_text()
    assert "Measured at abc1234 (2026-12-08 00:00 UTC)." in text
    assert (
        "| bitbrains-diurnal-zoned-50 | ours (LowNodeLoad) (1 min) | 10 | local 2, none 8 | 0 | 0 | 0 | 40 | 0 |"
        in text
    )
    # upstream: the median over its tie orders, the range beside it; failed jobs summed
    assert "| 13 (12–14) | local 2, none 8 | Failed X 1 | 2 (1–3) | 6 (5–7) | 92 | 0 |" in text
