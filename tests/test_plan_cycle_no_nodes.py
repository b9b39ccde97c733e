"""A plan with no node to plan on says so in its warnings, in every output format and in the controller's log."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from descheduler.controller import cycle
from descheduler.controller.cycle import PlanningLoop
from descheduler.plan import Plan
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import Policy
from descheduler.report import render
from descheduler.snapshot import Snapshot, load_snapshot
from tests.builders import NOW, lnl_policy, loaded_node, node, plan, pod, policy, snapshot

NO_NODES = "the snapshot has no nodes: nothing to plan"


def with_policy_node_selector(policy_yaml: str, selector: dict[str, Any]) -> str:
    doc = yaml.safe_load(policy_yaml)
    doc["nodeSelector"] = selector
    return yaml.safe_dump(doc, sort_keys=False)


def warnings_in_json(p: Plan) -> list[str]:
    warnings: list[str] = json.loads(render(p, "json"))["warnings"]
    return warnings


def table_text(p: Plan) -> str:
    return " ".join(render(p, "table").split())  # the table wraps long lines to the terminal's width


def test_an_empty_list_snapshot_warns_that_there_is_nothing_to_plan(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    result, _ = plan_cycle(load_snapshot(str(path), now=NOW), policy(lnl_policy()))
    assert result.migrations == ()
    assert warnings_in_json(result) == [NO_NODES]
    assert f"warning: {NO_NODES}" in table_text(result)


def test_pods_without_nodes_warn_that_there_is_nothing_to_plan_and_count_the_pods() -> None:
    # A pod bound to a node the snapshot lacks is an input error; these are pending.
    result, _ = plan([pod("a"), pod("b"), pod("c")], lnl_policy())
    expected = f"{NO_NODES} (3 pod(s), none on a node)"
    assert warnings_in_json(result) == [expected]
    assert f"warning: {expected}" in table_text(result)


def test_a_policy_node_selector_that_matches_no_node_names_the_selector_and_the_node_count() -> None:
    objs = [*loaded_node("hot", [("a", "7")]), *loaded_node("cool", [])]
    result, _ = plan(objs, with_policy_node_selector(lnl_policy(), {"role": "worker"}))
    expected = "nodeSelector role=worker matches none of the 2 nodes: nothing to plan"
    assert warnings_in_json(result) == [expected]
    assert f"warning: {expected}" in table_text(result)


def test_a_lownodeload_node_selector_that_matches_no_node_is_a_warning_of_the_strategy() -> None:
    objs = [*loaded_node("hot", [("a", "7")]), *loaded_node("cool", [])]
    result, _ = plan(objs, lnl_policy(nodeSelector={"role": "worker"}))
    expected = "LowNodeLoad: nodeSelector role=worker matches none of the 2 nodes: nothing to plan"
    assert warnings_in_json(result) == [expected]
    assert f"warning: {expected}" in table_text(result)


def test_a_lownodeload_node_selector_names_the_nodes_the_policy_selector_left() -> None:
    objs = [*loaded_node("hot", [("a", "7")], labels={"zone": "a"}), node("cool", labels={"zone": "b"})]
    policy_yaml = with_policy_node_selector(lnl_policy(nodeSelector={"role": "worker"}), {"zone": "a"})
    result, _ = plan(objs, policy_yaml)
    assert warnings_in_json(result) == [
        "LowNodeLoad: nodeSelector role=worker matches none of the 1 nodes the policy's nodeSelector selects: "
        "nothing to plan"
    ]


def test_no_nodes_gives_one_warning_not_one_per_node_pool() -> None:
    pools = [{"name": "gpu", "nodeSelector": {"gpu": "true"}}]
    result, _ = plan([], lnl_policy(nodePools=pools))
    assert result.warnings == (NO_NODES,)


def test_nodes_that_match_warn_of_nothing() -> None:
    objs = [*loaded_node("hot", [("a", "7")], labels={"role": "worker"}), *loaded_node("cool", [])]
    result, _ = plan(objs, with_policy_node_selector(lnl_policy(), {"role": "worker"}))
    assert not any("matches none" in w or "no nodes" in w for w in result.warnings)


@pytest.mark.parametrize("output", ["table", "json", "yaml", "markdown"])
def test_every_output_format_carries_the_no_nodes_warning(output: str) -> None:
    result, _ = plan([], lnl_policy())
    assert NO_NODES in " ".join(render(result, output).split())  # type: ignore[arg-type]


def test_plan_command_on_an_empty_list_prints_the_warning_in_table_and_json(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    command = [sys.executable, "-m", "descheduler", "plan", "--snapshot", str(path)]
    table = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    as_json = subprocess.run([*command, "-o", "json"], capture_output=True, text=True, timeout=120, check=False)
    assert table.returncode == 0 and as_json.returncode == 0, table.stderr + as_json.stderr
    assert f"warning: {NO_NODES}" in " ".join(table.stdout.split())
    assert json.loads(as_json.stdout)["warnings"] == [NO_NODES]


class _EmptySource:
    def not_ready(self) -> str | None:
        return None

    def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
        return snapshot([], now)


class _Mover:
    def submit(self, plan: Plan, snapshot: Snapshot) -> list[str]:
        return []


class _Log:
    """Stands in for the cycle module's logger: structlog caches a logger on first use, so a
    capture configured after another test logged would see nothing."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, level: str) -> Any:
        return lambda event, **fields: self.lines.append((event, fields))


def test_the_controller_logs_the_no_nodes_warning_each_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    log = _Log()
    monkeypatch.setattr(cycle, "log", log)
    loop = PlanningLoop(_EmptySource(), _Mover(), lambda: policy(lnl_policy()), lambda: NOW)
    loop.run_cycle()
    warnings = [fields["warning"] for event, fields in log.lines if event == "plan warning"]
    assert warnings == [NO_NODES]
