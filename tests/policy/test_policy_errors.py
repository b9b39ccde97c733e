"""Every problem of a policy at once: cross-field rules are judged on the fields that did validate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from descheduler.controller.reload import PolicyFile
from descheduler.policy import LowNodeLoadArgs, PolicyError, parse_policy

HEADER = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"}
ISSUE_ARGS = {"lowThresholds": {"cpu": 45}, "highThresholds": {"cpu": 170, "memory": 80}, "highTreshold": 3}
ISSUE_PROBLEMS = [
    ("strategies[0].args.highThresholds.cpu", "must be a percent between 0 and 100, got 170"),
    ("strategies[0].args.highTreshold", "unknown field"),
    ("strategies[0].args.highThresholds.memory", "memory is in highThresholds but not in lowThresholds"),
]


def lownodeload(args: dict[str, Any], **policy: Any) -> dict[str, Any]:
    return {**HEADER, **policy, "strategies": [{"name": "LowNodeLoad", "args": args}]}


def problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(yaml.safe_dump(doc, sort_keys=False), "test.yaml")
    return caught.value.problems


def assert_reported(found: list[tuple[str, str]], expected: list[tuple[str, str]]) -> None:
    """Each expected (path, message start) is reported, and nothing else."""
    assert len(found) == len(expected), found
    for path, start in expected:
        assert any(p == path and m.startswith(start) for p, m in found), (path, start, found)


def test_the_issue_case_reports_the_bad_percent_the_unknown_field_and_the_one_sided_resource() -> None:
    assert_reported(problems(lownodeload(ISSUE_ARGS)), ISSUE_PROBLEMS)


def test_a_reloaded_configmap_reports_every_problem_too(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text(yaml.safe_dump(lownodeload({"lowThresholds": {"cpu": 45}, "highThresholds": {"cpu": 70}})))
    seen: list[PolicyError] = []
    watched = PolicyFile(file, on_error=seen.append)
    file.write_text(yaml.safe_dump(lownodeload(ISSUE_ARGS)))
    assert watched.check() is None
    [error] = seen
    assert_reported(error.problems, ISSUE_PROBLEMS)


def test_python_callers_get_the_cross_field_problem_beside_the_field_error() -> None:
    with pytest.raises(ValidationError) as caught:
        LowNodeLoadArgs(low_thresholds={"cpu": 45}, high_thresholds={"cpu": 170, "memory": 80}, node_fit="yes")
    locs = [error["loc"] for error in caught.value.errors()]
    assert locs == [("high_thresholds", "cpu"), ("node_fit",), ("highThresholds", "memory")]


LNL = "strategies[0].args"

# (policy, every problem expected: (path, start of the message))
CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "low above high beside an unknown field": (
        lownodeload({"lowThresholds": {"cpu": 80}, "highThresholds": {"cpu": 70}, "nodeFitt": True}),
        [(f"{LNL}.nodeFitt", "unknown field"), (f"{LNL}.lowThresholds.cpu", "lowThresholds.cpu (80) must be ≤")],
    ),
    "no order rule on a resource whose value is invalid": (
        lownodeload({"lowThresholds": {"cpu": 80, "memory": 90}, "highThresholds": {"cpu": 170, "memory": 80}}),
        [
            (f"{LNL}.highThresholds.cpu", "must be a percent"),
            (f"{LNL}.lowThresholds.memory", "lowThresholds.memory (90) must be ≤ highThresholds.memory (80)"),
        ],
    ),
    "a misspelt resource name leaves the pair's membership unjudged": (
        lownodeload({"lowThresholds": {"cpuu": 40, "memory": 90}, "highThresholds": {"cpu": 70, "memory": 80}}),
        [
            (f"{LNL}.lowThresholds.cpuu", "'cpuu' is not a Kubernetes resource name"),
            (f"{LNL}.lowThresholds.memory", "lowThresholds.memory (90) must be ≤"),
        ],
    ),
    "a one-sided resource with an invalid value is still one-sided": (
        lownodeload({"lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70, "memory": 101}}),
        [
            (f"{LNL}.highThresholds.memory", "must be a percent"),
            (f"{LNL}.highThresholds.memory", "memory is in highThresholds but not in lowThresholds"),
        ],
    ),
    "a threshold map that is not a map is judged by no rule": (
        lownodeload({"lowThresholds": {"cpu": 40, "memory": 50}, "highThresholds": "70"}),
        [(f"{LNL}.highThresholds", "must be a map")],
    ),
    "an invalid deviation flag leaves the order unjudged but not membership": (
        lownodeload(
            {"lowThresholds": {"cpu": 80}, "highThresholds": {"cpu": 70, "memory": 80}, "useDeviationThresholds": 1}
        ),
        [
            (f"{LNL}.useDeviationThresholds", "must be true or false"),
            (f"{LNL}.highThresholds.memory", "memory is in highThresholds but not in lowThresholds"),
        ],
    ),
    "prod thresholds beside an invalid field": (
        lownodeload(
            {
                "lowThresholds": {"cpu": 40},
                "highThresholds": {"cpu": 70},
                "prodLowThresholds": {"cpu": 95},
                "prodHighThresholds": {"cpu": 90},
                "numberOfNodes": -1,
            }
        ),
        [
            (f"{LNL}.numberOfNodes", "must be ≥ 0"),
            (f"{LNL}.prodLowThresholds.cpu", "prodLowThresholds.cpu (95) must be ≤ prodHighThresholds.cpu (90)"),
            (f"{LNL}.prodHighThresholds.cpu", "prodHighThresholds.cpu (90) must be ≤ highThresholds.cpu (70)"),
        ],
    ),
    "duplicate sort keys beside an unknown one": (
        lownodeload(
            {"lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70}, "podSortKeys": ["age", "bogus", "age"]}
        ),
        [(f"{LNL}.podSortKeys[1]", "must be 'priorityClass'"), (f"{LNL}.podSortKeys[2]", "duplicate sort key 'age'")],
    ),
    "pool rules beside an unknown field in the pool": (
        lownodeload(
            {
                "lowThresholds": {"cpu": 40, "memory": 50},
                "highThresholds": {"cpu": 70, "memory": 80},
                "nodePools": [
                    {"name": "gpu", "nodeSelector": {"gpu": "true"}, "highThresholds": {"cpu": 30}, "colour": "red"},
                    {"name": "gpu", "nodeSelector": {}},
                ],
            }
        ),
        [
            (f"{LNL}.nodePools[0].colour", "unknown field"),
            (f"{LNL}.nodePools[1].name", "duplicate pool name 'gpu'"),
            (f"{LNL}.nodePools[0].highThresholds.cpu", "lowThresholds.cpu (inherited) (40) must be ≤"),
            (f"{LNL}.nodePools[0].highThresholds.memory", "memory is in lowThresholds (inherited) but not in"),
        ],
    ),
    "a pool inherits no rule from an invalid top-level value": (
        lownodeload(
            {
                "lowThresholds": {"cpu": 40},
                "highThresholds": {"cpu": 170},
                "nodePools": [{"name": "gpu", "nodeSelector": {}, "lowThresholds": {"cpu": 90}}],
            }
        ),
        [(f"{LNL}.highThresholds.cpu", "must be a percent")],
    ),
    "duplicate pod selector names beside an invalid selector": (
        lownodeload(
            {
                "lowThresholds": {"cpu": 40},
                "highThresholds": {"cpu": 70},
                "podSelectors": [{"name": "a", "selector": {}}, {"name": "a", "selector": []}],
            }
        ),
        [(f"{LNL}.podSelectors[1].selector", "must be a label selector"), (f"{LNL}.podSelectors[1].name", "duplicate")],
    ),
    "namespace filter with both lists, one invalid": (
        {**HEADER, "evictor": {"namespaces": {"include": "a", "exclude": ["b"]}}},
        [
            ("evictor.namespaces.include", "must be a list"),
            ("evictor.namespaces", "set exactly one of include or exclude"),
        ],
    ),
    "namespace filter with a misspelt key sets neither": (
        {**HEADER, "evictor": {"namespaces": {"includes": ["a"]}, "minReplicas": 0}},
        [
            ("evictor.minReplicas", "must be ≥ 1"),
            ("evictor.namespaces.includes", "unknown field"),
            ("evictor.namespaces", "set exactly one of include or exclude"),
        ],
    ),
    "a namespace filter that is not a map is judged by no rule": (
        {**HEADER, "evictor": {"namespaces": ["a"]}},
        [("evictor.namespaces", "must be a map")],
    ),
    "lownodeload's namespace filter beside its thresholds": (
        lownodeload({"lowThresholds": {"cpu": 80}, "highThresholds": {"cpu": 70}, "evictableNamespaces": {}}),
        [
            (f"{LNL}.evictableNamespaces", "set exactly one of include or exclude"),
            (f"{LNL}.lowThresholds.cpu", "lowThresholds.cpu (80) must be ≤"),
        ],
    ),
    "duplicate strategies beside invalid args, scheduling, limits and migration": (
        {
            **HEADER,
            "scheduling": {"usageThresholds": {"cpu": 120}},
            "limits": {"maxEvictionsPerCycle": -1},
            "migration": {"evictBurst": 0},
            "strategies": [
                {"name": "LowNodeLoad", "args": {"lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70}}},
                {"name": "QuotaReclaim", "args": {"lenderFloor": "Loose"}},
                {"name": "LowNodeLoad", "args": {"lowThresholds": {"cpu": 40}}},
                {"name": "QuotaReclaim"},
            ],
        },
        [
            ("scheduling.usageThresholds.cpu", "must be a percent"),
            ("limits.maxEvictionsPerCycle", "must be a whole number ≥ 0 or a percent"),
            ("strategies[1].args.lenderFloor", "must be 'Strict'"),
            ("strategies[2].args.highThresholds", "required"),
            ("migration.evictBurst", "must be ≥ 1"),
            ("strategies[2].name", "duplicate strategy 'LowNodeLoad' (also strategies[0])"),
            ("strategies[3].name", "duplicate strategy 'QuotaReclaim' (also strategies[1])"),
        ],
    ),
    "an unknown strategy name is no duplicate of anything": (
        {**HEADER, "interval": "soon", "strategies": [{"name": "Nope"}, {"name": "Nope"}]},
        [
            ("interval", "must be a duration"),
            ("strategies[0].name", "unknown strategy 'Nope'"),
            ("strategies[1].name", "unknown strategy 'Nope'"),
        ],
    ),
}


@pytest.mark.parametrize(("doc", "expected"), CASES.values(), ids=CASES.keys())
def test_every_rule_that_can_be_judged_is_reported(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_reported(problems(doc), expected)


# --- errors that point at the fix ------------------------------------------------------------

PEER_FILES = {
    "upstream v1alpha2": (
        {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": []},
        "this is an upstream kubernetes-sigs/descheduler policy (descheduler/v1alpha2), not our policy",
    ),
    "upstream v1alpha1": (
        {"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy", "strategies": {}},
        "this is an upstream kubernetes-sigs/descheduler policy (descheduler/v1alpha1), not our policy",
    ),
    "Koordinator": (
        {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration", "profiles": []},
        "this is a Koordinator koord-descheduler configuration, not our policy",
    ),
    "a ConfigMap": (
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"policy.yaml": "x"}},
        "this is a ConfigMap, not a policy: give the policy it holds",
    ),
}


@pytest.mark.parametrize(("doc", "says"), PEER_FILES.values(), ids=PEER_FILES.keys())
def test_validating_a_peers_file_says_what_it_is_and_names_policy_convert(doc: dict[str, Any], says: str) -> None:
    [(path, message)] = problems(doc)
    assert path == ""
    assert message.startswith(says)
    assert "`descheduler policy convert test.yaml`" in message


@pytest.mark.parametrize(
    "content",
    [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"\xff\xfe\x00\x00binary", b"apiVersion: x\n\x00\x00"],
    ids=["png", "not-utf8", "nul-bytes"],
)
def test_a_binary_file_is_not_a_text_file(tmp_path: Path, content: bytes) -> None:
    from descheduler.policy import load_policy

    file = tmp_path / "policy.yaml"
    file.write_bytes(content)
    with pytest.raises(PolicyError) as caught:
        load_policy(file)
    [(_, message)] = caught.value.problems
    assert message.startswith("not a text file")


def test_an_unknown_key_inside_evictable_namespaces_is_named() -> None:
    namespaces = {"exclude": ["a"], "includ": ["b"]}
    args = {"lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70}, "evictableNamespaces": namespaces}
    [(path, message)] = problems(lownodeload(args))
    assert path == "strategies[0].args.evictableNamespaces.includ"
    assert message.startswith("unknown field; did you mean include? allowed: include, exclude")
