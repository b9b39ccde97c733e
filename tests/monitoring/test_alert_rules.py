"""The shipped alerts, checked by promtool: the rules parse (`promtool check rules`), and each
alert fires on the series that mean trouble and stays quiet on the ones that do not
(`promtool test rules`, on series written here and the rules exactly as shipped)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.shipped import alerts, rule_groups
from tests.prometheus_server import HOW_TO_GET, find_binary

LABELS = 'namespace="descheduler-system", job="descheduler-metrics"'
WHERE = {"namespace": "descheduler-system", "job": "descheduler-metrics"}


@pytest.fixture(scope="module")
def promtool() -> str:
    binary = find_binary("promtool")
    if binary is None:
        pytest.skip(HOW_TO_GET.replace("prometheus binary", "promtool binary"))
    return binary


@pytest.fixture
def rule_file(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    return path


def expected(alertname: str, **labels: str) -> dict[str, Any]:
    """The alert as Prometheus would send it: its labels, and its annotations with $labels filled in."""
    rule = next(r for r in alerts() if r["alert"] == alertname)
    all_labels = {**rule.get("labels", {}), **WHERE, **labels}
    fill = lambda text: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: all_labels.get(m.group(1), ""), text)  # noqa: E731
    return {"exp_labels": all_labels, "exp_annotations": {k: fill(v) for k, v in rule["annotations"].items()}}


def run_promtool_test(promtool: str, rule_file: Path, cases: list[dict[str, Any]]) -> None:
    tests = rule_file.with_name("tests.yaml")
    tests.write_text(
        yaml.safe_dump({"rule_files": [rule_file.name], "evaluation_interval": "1m", "tests": cases}, sort_keys=False)
    )
    done = subprocess.run(
        [promtool, "test", "rules", tests.name], cwd=rule_file.parent, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def case(series: dict[str, str], alertname: str, at: str, fired: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [{"eval_time": at, "alertname": alertname, "exp_alerts": fired}],
    }


def test_promtool_check_rules_accepts_the_shipped_rules(promtool: str, rule_file: Path) -> None:
    done = subprocess.run([promtool, "check", "rules", str(rule_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout


def test_the_alerts_an_operator_needs_are_shipped_each_saying_what_to_do() -> None:
    assert {r["alert"] for r in alerts()} == {
        "DeschedulerNoCycle",
        "DeschedulerLoadSourceFailing",
        "DeschedulerMigrationsFailing",
        "DeschedulerReplacementPending",
        "DeschedulerHotNodesNotRelieved",
        "DeschedulerPolicyRejected",
        "DeschedulerExtenderLeaseNotRenewed",
        "DeschedulerExtenderBindsRefused",
        "DeschedulerMovesWithoutReservation",
    }
    for rule in alerts():
        assert set(rule["annotations"]) == {"summary", "description", "runbook"}, rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert "for" in rule, rule["alert"]


def test_no_cycle_fires_three_intervals_after_the_leader_stopped_planning(promtool: str, rule_file: Path) -> None:
    series = {
        # The leader plans every minute for 5 minutes, then stops; the standby never plans.
        f'descheduler_last_cycle_timestamp_seconds{{{LABELS}, pod="leader"}}': "0+60x5 300x30",
        f'descheduler_last_cycle_timestamp_seconds{{{LABELS}, pod="standby"}}': "0x35",
        f'descheduler_cycle_interval_seconds{{{LABELS}, pod="leader"}}': "60x35",
        f'descheduler_cycle_interval_seconds{{{LABELS}, pod="standby"}}': "60x35",
    }
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(series, "DeschedulerNoCycle", "5m", []),  # planning: quiet
            case(series, "DeschedulerNoCycle", "10m", []),  # 3 intervals passed at 8m; pending for 5m
            case(series, "DeschedulerNoCycle", "14m", [expected("DeschedulerNoCycle")]),
        ],
    )


def test_load_source_failing_fires_on_errors_that_persist_not_on_a_blip(promtool: str, rule_file: Path) -> None:
    down = {f'descheduler_load_source_errors_total{{{LABELS}, pod="leader", source="prometheus"}}': "0+1x30"}
    blip = {f'descheduler_load_source_errors_total{{{LABELS}, pod="leader", source="metricsServer"}}': "0 0 0 1x30"}
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(down, "DeschedulerLoadSourceFailing", "5m", []),
            case(
                down,
                "DeschedulerLoadSourceFailing",
                "15m",
                [expected("DeschedulerLoadSourceFailing", source="prometheus")],
            ),
            case(blip, "DeschedulerLoadSourceFailing", "8m", []),
            case(blip, "DeschedulerLoadSourceFailing", "20m", []),
        ],
    )


def test_migrations_failing_fires_above_a_quarter_and_at_least_three_jobs(promtool: str, rule_file: Path) -> None:
    def jobs(failed: str, succeeded: str) -> dict[str, str]:
        return {
            f'descheduler_migrations_total{{{LABELS}, pod="leader", strategy="LowNodeLoad", result="failed"}}': failed,
            f'descheduler_migrations_total{{{LABELS}, pod="leader", strategy="LowNodeLoad", result="aborted"}}': "0x60",
            f'descheduler_migrations_total{{{LABELS}, pod="leader", strategy="LowNodeLoad", result="succeeded"}}': succeeded,
        }

    half = jobs(failed="0+1x60", succeeded="0+1x60")
    tenth = jobs(failed="0+1x60", succeeded="0+9x60")
    one_of_one = jobs(failed="0 1x60", succeeded="0x60")
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(half, "DeschedulerMigrationsFailing", "10m", []),  # pending: 15 minutes needed
            case(half, "DeschedulerMigrationsFailing", "40m", [expected("DeschedulerMigrationsFailing")]),
            case(tenth, "DeschedulerMigrationsFailing", "40m", []),
            case(one_of_one, "DeschedulerMigrationsFailing", "40m", []),
        ],
    )


def test_migrations_failing_counts_replacements_elsewhere_as_failures(promtool: str, rule_file: Path) -> None:
    elsewhere = {
        f'descheduler_migrations_total{{{LABELS}, pod="leader", strategy="LowNodeLoad", result="elsewhere"}}': "0+1x60",
        f'descheduler_migrations_total{{{LABELS}, pod="leader", strategy="LowNodeLoad", result="succeeded"}}': "0+1x60",
    }
    run_promtool_test(
        promtool,
        rule_file,
        [case(elsewhere, "DeschedulerMigrationsFailing", "40m", [expected("DeschedulerMigrationsFailing")])],
    )


def test_replacement_pending_fires_once_a_replacement_waits_over_a_minute(promtool: str, rule_file: Path) -> None:
    # The leader's cycle (every minute) sees the replacement Pending 20 s, 80 s, 140 s after the
    # eviction; then it is bound. The standby reports 0.
    stranded = {
        f'descheduler_replacement_pending_seconds{{{LABELS}, pod="leader"}}': "0 20 80 140 0x10",
        f'descheduler_replacement_pending_seconds{{{LABELS}, pod="standby"}}': "0x14",
    }
    prompt = {f'descheduler_replacement_pending_seconds{{{LABELS}, pod="leader"}}': "0 20 0 15 0x10"}
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(stranded, "DeschedulerReplacementPending", "1m", []),
            case(stranded, "DeschedulerReplacementPending", "2m", [expected("DeschedulerReplacementPending")]),
            case(stranded, "DeschedulerReplacementPending", "3m", [expected("DeschedulerReplacementPending")]),
            case(stranded, "DeschedulerReplacementPending", "5m", []),  # bound: over
            case(prompt, "DeschedulerReplacementPending", "3m", []),
        ],
    )


def test_hot_nodes_not_relieved_fires_after_ten_hot_cycles_unless_in_dry_run(promtool: str, rule_file: Path) -> None:
    def hot(dry_run: str) -> dict[str, str]:
        return {
            f'descheduler_pool_hot_streak_cycles{{{LABELS}, pod="leader", pool="gpu"}}': "0+1x40",
            f'descheduler_pool_hot_streak_cycles{{{LABELS}, pod="leader", pool="default"}}': "0x40",
            f'descheduler_dry_run{{{LABELS}, pod="leader"}}': dry_run,
        }

    run_promtool_test(
        promtool,
        rule_file,
        [
            case(hot("0x40"), "DeschedulerHotNodesNotRelieved", "12m", []),  # 10 cycles at 10m; pending 5m
            case(
                hot("0x40"),
                "DeschedulerHotNodesNotRelieved",
                "20m",
                [expected("DeschedulerHotNodesNotRelieved", pool="gpu")],
            ),
            case(hot("1x40"), "DeschedulerHotNodesNotRelieved", "20m", []),
        ],
    )


def test_policy_rejected_fires_while_the_file_stays_invalid(promtool: str, rule_file: Path) -> None:
    rejected = {
        f'descheduler_policy_rejected{{{LABELS}, pod="leader"}}': "0 0 1x10",
        f'descheduler_policy_rejected{{{LABELS}, pod="standby"}}': "0 0 1x10",
    }
    fixed = {f'descheduler_policy_rejected{{{LABELS}, pod="leader"}}': "0 1 0x10"}
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(rejected, "DeschedulerPolicyRejected", "2m", []),
            case(rejected, "DeschedulerPolicyRejected", "5m", [expected("DeschedulerPolicyRejected")]),
            case(fixed, "DeschedulerPolicyRejected", "5m", []),
        ],
    )


EXTENDER = 'namespace="descheduler-system", job="descheduler-extender"'


def _extender(pod: str, renewed: str, forbidden: str, ok: str) -> dict[str, str]:
    """One extender replica's series: the last successful renewal's time, and renewals by result."""
    return {
        f'descheduler_extender_lease_renewed_timestamp_seconds{{{EXTENDER}, pod="{pod}"}}': renewed,
        f'descheduler_extender_lease_renewals_total{{{EXTENDER}, pod="{pod}", result="forbidden"}}': forbidden,
        f'descheduler_extender_lease_renewals_total{{{EXTENDER}, pod="{pod}", result="ok"}}': ok,
    }


def test_extender_lease_not_renewed_fires_while_every_replica_is_refused(promtool: str, rule_file: Path) -> None:
    # Renewals every 5 s: 12 a minute. Refused from the start (no RoleBinding): never stamped.
    refused = {**_extender("a", "0x10", "0+12x10", "0x10"), **_extender("b", "0x10", "0+12x10", "0x10")}
    # One replica renews (the Lease stays fresh) while the other is refused.
    one_renews = {**_extender("a", "0+60x10", "0x10", "0+12x10"), **_extender("b", "0x10", "0+12x10", "0x10")}
    # Renewing, with one failed attempt (a blip): the stamp stays fresh.
    blip = _extender("a", "0+60x10", "0 1x10", "0+12x10")
    # Refused for 3 minutes, then the RoleBinding was made.
    fixed = _extender("a", "0 0 0 0 240+60x6", "0+12x3 36x6", "0x3 12+12x6")
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(refused, "DeschedulerExtenderLeaseNotRenewed", "1m", []),  # pending for 1m
            case(
                refused,
                "DeschedulerExtenderLeaseNotRenewed",
                "3m",
                [expected("DeschedulerExtenderLeaseNotRenewed", job="descheduler-extender")],
            ),
            case(one_renews, "DeschedulerExtenderLeaseNotRenewed", "5m", []),
            case(blip, "DeschedulerExtenderLeaseNotRenewed", "5m", []),
            case(fixed, "DeschedulerExtenderLeaseNotRenewed", "8m", []),
        ],
    )


def test_extender_binds_refused_fires_on_a_refusal_and_ends_ten_minutes_after_the_last(
    promtool: str, rule_file: Path
) -> None:
    refused = 'descheduler_extender_binds_refused_total{%s, pod="a", reason="%s"}'
    taint = {refused % (EXTENDER, "TaintNotTolerated"): "0 0 1 1x20"}  # one refused bind at 2m
    gone = {refused % (EXTENDER, "BindPodNotFound"): "0 0 1 2 3x20"}  # pods deleted while scheduled
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(taint, "DeschedulerExtenderBindsRefused", "1m", []),
            case(
                taint,
                "DeschedulerExtenderBindsRefused",
                "3m",
                [expected("DeschedulerExtenderBindsRefused", job="descheduler-extender", reason="TaintNotTolerated")],
            ),
            case(taint, "DeschedulerExtenderBindsRefused", "15m", []),
            case(gone, "DeschedulerExtenderBindsRefused", "5m", []),
        ],
    )


def test_moves_without_reservation_fires_on_fallbacks_where_a_scheduler_is_meant_to_run(
    promtool: str, rule_file: Path
) -> None:
    series = 'descheduler_moves_without_reservation_total{%s, cause="%s"}'
    moves = "0 0 1 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2"
    seen = {f"descheduler_reservation_scheduler{{{LABELS}}}": "1 0x25"}  # the Lease went stale at 1m
    extender = {f'descheduler_extender_lease_renewals_total{{{EXTENDER}, pod="a", result="forbidden"}}': "0+12x25"}
    fallback = {series % (LABELS, "absent"): moves, **seen}
    alone = {series % (LABELS, "absent"): moves, f"descheduler_reservation_scheduler{{{LABELS}}}": "0x25"}
    chosen = {series % (LABELS, "unserved"): "0+3x25", series % (LABELS, "policy"): "0+3x25", **seen}
    run_promtool_test(
        promtool,
        rule_file,
        [
            case(fallback, "DeschedulerMovesWithoutReservation", "4m", []),  # pending for 5m
            case(
                fallback, "DeschedulerMovesWithoutReservation", "8m", [expected("DeschedulerMovesWithoutReservation")]
            ),
            case(fallback, "DeschedulerMovesWithoutReservation", "25m", []),  # none for 15m
            case(chosen, "DeschedulerMovesWithoutReservation", "20m", []),
            # deploy/base alone: no extender ever, so moving without a Reservation is the way.
            case(alone, "DeschedulerMovesWithoutReservation", "8m", []),
            # An extender is scraped (it cannot write the Lease, so the controller never saw it).
            case(
                {**alone, **extender},
                "DeschedulerMovesWithoutReservation",
                "8m",
                [expected("DeschedulerMovesWithoutReservation")],
            ),
        ],
    )
