"""The benchmark runner: its table writer, and one benchmark end to end on a tiny cluster (no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.run import BENCHMARKS, SCALING_NODES, Benchmark, Metric, _scaling_extra, metric_row, pooled, render

ROOT = Path(__file__).resolve().parents[2]


def test_samples_of_every_run_are_pooled() -> None:
    runs = [{"a": [1.0, 2.0], "b": 5}, {"a": 3.0}, {"c": "text"}]
    assert pooled(runs, "a") == [1.0, 2.0, 3.0]
    assert pooled(runs, "b") == [5.0]
    assert pooled(runs, "c") == []


def test_a_row_shows_median_spread_target_and_verdict() -> None:
    limit = Metric("seconds", "decode", "s", ("<=", 5.0))
    assert metric_row(limit, [4.0, 6.0, 4.5]) == ["decode", "4.50 s", "4.00–6.00", "≤ 5.00 s", "met"]
    assert metric_row(limit, [6.0, 7.0])[4] == "**missed**"
    rate = Metric("rate", "events", "/s", (">=", 20_000.0), 0)
    assert metric_row(rate, [19_000.0, 25_000.0, 26_000.0])[1:] == ["25,000 /s", "19,000–26,000", "≥ 20,000 /s", "met"]
    assert metric_row(Metric("x", "untargeted", ""), [1.0])[3:] == ["—", "—"]
    assert metric_row(limit, [])[1] == "—"


def test_results_render_with_machine_summary_and_one_table_per_benchmark() -> None:
    bench = Benchmark("demo", "A demo", 3, (Metric("seconds", "time", "s", ("<=", 1.0)),), dict, "A note.")
    results = {
        "machine": {"cores": 2, "python": "3.11.7", "platform": "Linux", "date": "today", "load": [1.0], "commit": "x"},
        "benchmarks": {"demo": {"date": "today", "runs": [{"seconds": 0.5}, {"seconds": [1.5, 0.7]}]}},
    }
    text = render(results, [bench, BENCHMARKS[0]])
    assert "2 cores, Python 3.11.7" in text
    assert "| A demo: time | 0.70 s | ≤ 1.00 s | met |" in text
    assert "### A demo (`demo`)" in text and "2 run(s)" in text and "3 sample(s)" in text and "A note." in text
    assert BENCHMARKS[0].title not in text  # not run: no section


def test_every_benchmark_has_a_distinct_name_and_the_targets_of_testing_md() -> None:
    names = [b.name for b in BENCHMARKS]
    assert len(set(names)) == len(names)
    targets = {(b.name, m.key): m.target for b in BENCHMARKS for m in b.metrics if m.target}
    assert targets[("decode", "seconds")] == ("<=", 5.0)
    assert targets[("planning-5000", "cycle_seconds")] == ("<=", 1.0)
    assert targets[("planning-5000", "best_node_ms")] == ("<=", 2.0)
    assert targets[("extender", "http_all_p99_ms")] == ("<=", 10.0)
    assert targets[("extender", "http_all_pods_per_server_cpu_second")] == (">=", 1000.0)
    assert targets[("extender", "http_refresh_p99_ms")] == ("<=", 10.0)
    for name, seconds, mib in (("snapshot", 10.0, 1024.0), ("snapshot-15000", 30.0, 2048.0)):
        for step in ("save", "load"):
            assert targets[(name, f"{step}_json_cpu_seconds")] == ("<=", seconds)
            assert targets[(name, f"{step}_json_gz_peak_rss_mib")] == ("<=", mib)
    assert targets[("watch", "events_per_second")] == (">=", 50_000.0)
    assert targets[("decode-15000", "seconds")] == ("<=", 15.0)
    assert targets[("decode-15000", "peak_rss_mib")] == ("<=", 2048.0)
    assert targets[("planning-15000", "cycle_cpu_seconds")] == ("<=", 3.0)


def test_the_scaling_table_shows_each_size_and_the_growth_exponent_from_the_one_before() -> None:
    run: dict[str, float] = {}
    for nodes in SCALING_NODES:
        run |= {
            f"cycle_cpu_seconds_{nodes}": nodes / 5000,  # linear
            f"extender_pods_per_cpu_second_{nodes}": 5_000_000 / nodes,  # time per pod linear in names
            f"extender_p99_ms_{nodes}": 1.0,
            f"planning_rss_mib_{nodes}": 100.0,
            f"extender_rss_mib_{nodes}": 200.0,
        }
    run["cycle_cpu_seconds_15000"] = 3 * 3 * 1.0  # 3× the nodes, 9× the time: quadratic
    text = _scaling_extra([run])
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[0] for row in rows] == ["| 500", "| 1,000", "| 5,000", "| 15,000"]
    assert rows[0].split(" | ")[3] == "—"
    assert rows[1].split(" | ")[3] == "1.00" and rows[3].split(" | ")[3] == "2.00"
    assert rows[2].split(" | ")[6] == "1.00" and rows[2].endswith("100 / 200 |")


def test_the_runner_writes_results_for_a_named_benchmark(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_NODES": "30", "BENCH_PODS": "600", "BENCH_CYCLES": "1"}
    output = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, "benchmarks/run.py", "planning-5000", "--runs", "1", "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stored = json.loads((tmp_path / "results.json").read_text())
    run = stored["benchmarks"]["planning-5000"]["runs"][0]
    assert len(run["cycle_seconds"]) == 1 and len(run["best_node_ms"]) > 0 and run["peak_rss_mib"] > 0
    text = output.read_text()
    assert "### Planning cycle at 5,000 nodes" in text and "| one cycle from the cache" in text


def test_the_pinned_planning_benchmark_has_candidates_that_fit_nowhere(tmp_path: Path) -> None:
    """planning-5000-pinned measures the cycle where every candidate is refused by every node; the
    same cluster unpinned plans moves, so it is the pin that stops them."""
    env = {**os.environ, "BENCH_NODES": "200", "BENCH_PODS": "6000"}
    runs = {}
    for name in ("planning-5000-pinned", "planning-5000"):
        output = tmp_path / name / "RESULTS.md"
        done = subprocess.run(
            [sys.executable, "benchmarks/run.py", name, "--runs", "1", "--output", str(output)],
            cwd=ROOT,
            env={**env, "BENCH_CYCLES": "1"} if name == "planning-5000" else env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        runs[name] = json.loads((output.parent / "results.json").read_text())["benchmarks"][name]["runs"][0]
    assert runs["planning-5000-pinned"]["moves"] == 0 and runs["planning-5000-pinned"]["skipped"] > 0
    assert runs["planning-5000"]["moves"] > 0


def test_a_failed_run_keeps_the_last_measurement_with_the_failure_beside_it(tmp_path: Path) -> None:
    before = {"date": "2026-01-01 00:00 UTC", "runs": [{"cycle_seconds": [0.5]}], "seconds": 9.0}
    (tmp_path / "results.json").write_text(json.dumps({"benchmarks": {"planning-5000": before}}))
    output = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, "benchmarks/run.py", "planning-5000", "--runs", "1", "--output", str(output)],
        cwd=ROOT,
        env={**os.environ, "BENCH_NODES": "not a number"},  # the child fails at once
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    kept = json.loads((tmp_path / "results.json").read_text())["benchmarks"]["planning-5000"]
    assert kept["runs"] == before["runs"] and kept["date"] == before["date"]
    assert kept["error"].startswith("the run of ") and "failed" in kept["error"]
    assert "**Failed**: the run of" in output.read_text()


def test_the_snapshot_and_extender_children_give_every_row_of_their_tables(tmp_path: Path) -> None:
    """A tiny cluster through the real children (no timing asserted): each metric key is measured."""
    env = {**os.environ, "BENCH_NODES": "30", "BENCH_PODS": "600", "BENCH_REQUESTS": "20"}
    output = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, "benchmarks/run.py", "snapshot", "extender", "--runs", "1", "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stored = json.loads((tmp_path / "results.json").read_text())["benchmarks"]
    for bench in (b for b in BENCHMARKS if b.name in ("snapshot", "extender")):
        assert "error" not in stored[bench.name], stored[bench.name]["error"]
        run = stored[bench.name]["runs"][0]
        assert [m.key for m in bench.metrics if m.key not in run] == []
