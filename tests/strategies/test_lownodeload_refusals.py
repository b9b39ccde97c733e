"""LowNodeLoad's skips carry the refusal that kept each pod: its code (the rule) and its words.

The words are asserted rule by rule in test_lownodeload.py; here, that each rule has its own code,
that the words are those of the code, and that the budget's refusals pass through unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.plan import Plan, Skip
from tests.builders import lnl_policy, loaded_node, migration_job, pdb, plan

COOL = loaded_node("cool", [])
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def skipped(result: tuple[Plan, Any]) -> dict[str, Skip]:
    return {s.pod.name: s for s in result.plan.skipped}


def over_on_memory_only() -> list[dict[str, Any]]:
    # hot is over on memory only (26Gi of 32Gi > 75%); idle uses no memory.
    return [*loaded_node("hot", [("idle", "1", "0"), ("m1", "1", "3Gi"), ("m2", "1", "23Gi")]), *COOL]


@pytest.mark.parametrize(
    ("objects", "policy", "pod", "code"),
    [
        (
            over_on_memory_only(),
            lnl_policy({"cpu": 40, "memory": 40}, {"cpu": 60, "memory": 75}, podSortKeys=["name"]),
            "idle",
            "NotOverResources",
        ),
        (
            [*loaded_node("hot", [("a", "2"), ("b", "3")]), *loaded_node("cool", [("x", "3")])],
            lnl_policy(podSortKeys=["name"]),
            "a",
            "NoCoolLowNode",
        ),
        (
            [*loaded_node("hot", [("a", "1"), ("b", "4")]), *loaded_node("tainted", [], taints=[TAINT])],
            lnl_policy(),
            "a",
            "NoFeasibleLowNode",
        ),
        (
            [
                *loaded_node("hot", [("a", "1"), ("b", "2"), ("c", "3")]),
                *COOL,
                *loaded_node("cool2", []),
                migration_job("job-a", "a", "cool"),
            ],
            lnl_policy(),
            "a",
            "MigrationInProgress",
        ),
    ],
)
def test_each_rule_of_the_strategy_has_its_code(objects: list[Any], policy: str, pod: str, code: str) -> None:
    skip = skipped(plan(objects, policy))[pod]
    assert skip.code == code
    assert skip.reason == str(skip.refusal)


def test_no_feasible_low_node_wraps_the_scheduling_cores_summary() -> None:
    objects = [*loaded_node("hot", [("a", "1"), ("b", "4")]), *loaded_node("tainted", [], taints=[TAINT])]
    skip = skipped(plan(objects, lnl_policy()))["a"]
    assert skip.refusal.brief == "no feasible low node"
    assert skip.reason.startswith("no feasible low node: 0/1 nodes fit: ")


def test_a_budget_refusal_is_the_skip_as_the_budget_said_it() -> None:
    # hot: 7 pods of 1 cpu, excess 2.2 cpu; the PDB allows one disruption: p0 moves, p1 is refused.
    objects = [
        *loaded_node("hot", [(f"p{i}", "1") for i in range(7)]),
        *[o for i in range(3) for o in loaded_node(f"cool{i}", [])],
        pdb("web-pdb", {"app": "web"}, allowed=1),
    ]
    skip = skipped(plan(objects, lnl_policy(podSortKeys=["name"])))["p1"]
    assert skip.code == "PodDisruptionBudget"
    assert skip.reason == "PodDisruptionBudget web-pdb allows no more disruptions (1 allowed)"
