"""The policy file contract: models, strict validation, error paths, default, examples and schema."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from descheduler.durations import format_duration, parse_duration
from descheduler.labels import LabelSelector
from descheduler.policy import (
    STRATEGY_ARGS,
    LowNodeLoadArgs,
    MigrationArgs,
    NamespaceFilter,
    Policy,
    PolicyError,
    PrometheusSource,
    QuotaReclaimArgs,
    StrategyConfig,
    default_policy,
    load_policy,
    parse_policy,
    policy_schema,
    register_strategy_args,
)
from descheduler.policy.default import DEFAULT_POLICY_YAML

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "config" / "examples").glob("*.yaml"))


def minimal() -> dict[str, Any]:
    """A valid policy with one LowNodeLoad strategy, as the dict a YAML file would load to."""
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "DeschedulerPolicy",
        "strategies": [
            {
                "name": "LowNodeLoad",
                "args": {
                    "lowThresholds": {"cpu": 40, "memory": 50},
                    "highThresholds": {"cpu": 70, "memory": 80},
                },
            }
        ],
    }


def lnl(doc: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = doc["strategies"][0]["args"]
    return args


def parse(doc: dict[str, Any]) -> Policy:
    return parse_policy(yaml.safe_dump(doc), "test.yaml")


def problems(doc: dict[str, Any] | str) -> list[tuple[str, str]]:
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc)
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "test.yaml")
    return caught.value.problems


def paths(doc: dict[str, Any] | str) -> list[str]:
    return [path for path, _ in problems(doc)]


def set_at(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of doc with value at a dotted path ("strategies.0.args.foo"), creating maps on the way."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


# --- the shipped files --------------------------------------------------------------------------


def test_package_default_is_identical_to_config_policy_yaml() -> None:
    on_disk = (ROOT / "config" / "policy.yaml").read_text(encoding="utf-8")
    assert on_disk == DEFAULT_POLICY_YAML, (
        "config/policy.yaml and descheduler/policy/default.py differ; edit config/policy.yaml and "
        "copy it into DEFAULT_POLICY_YAML"
    )


def test_default_policy_is_the_parsed_config_policy_yaml() -> None:
    assert default_policy() == load_policy(ROOT / "config" / "policy.yaml")


def test_default_policy_has_the_documented_limits_and_one_lownodeload() -> None:
    policy = default_policy()
    assert policy.limits.max_evictions_per_cycle == 10
    assert policy.limits.max_evictions_per_node == 2
    assert [s.name for s in policy.strategies] == ["LowNodeLoad"]


def test_schema_file_matches_the_models() -> None:
    on_disk = (ROOT / "config" / "policy.schema.json").read_text(encoding="utf-8")
    assert on_disk == json.dumps(policy_schema(), indent=2, sort_keys=True) + "\n", (
        "config/policy.schema.json is stale; regenerate it with "
        "`.venv/bin/python -m descheduler.policy > config/policy.schema.json`"
    )


def test_schema_offers_both_builtin_strategies_by_name() -> None:
    alternatives = policy_schema()["$defs"]["StrategyConfig"]["oneOf"]
    assert {alt["properties"]["name"]["const"] for alt in alternatives} == {"LowNodeLoad", "QuotaReclaim"}


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates(example: Path) -> None:
    assert load_policy(example).strategies


# --- unknown fields -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected_path", "an_allowed_name"),
    [
        ("dryrun", "dryrun", "dryRun"),
        ("evictor.evictBarePod", "evictor.evictBarePod", "evictBarePods"),
        ("strategies.0.args.lowThreshold", "strategies[0].args.lowThreshold", "lowThresholds"),
        ("strategies.0.surprise", "strategies[0].surprise", "args"),
        ("migration.objectLimiters.workload.max", "migration.objectLimiters.workload.max", "maxMigrating"),
        ("scheduling.aggregated.duration", "scheduling.aggregated.duration", "usageAggregatedDuration"),
    ],
)
def test_unknown_field_is_rejected_with_its_path_and_the_allowed_names(
    path: str, expected_path: str, an_allowed_name: str
) -> None:
    [(where, message)] = problems(set_at(minimal(), path, 1))
    assert where == expected_path
    assert message.startswith("unknown field; ")
    assert an_allowed_name in message.split("allowed: ", 1)[1]


@pytest.mark.parametrize(
    ("path", "suggested"),
    [
        ("dryrun", "dryRun"),
        ("evictor.evictBarePod", "evictBarePods"),
        ("strategies.0.args.highTreshold", "highThresholds"),
        ("strategies.0.args.lowThreshold", "lowThresholds"),
    ],
)
def test_a_typo_suggests_the_nearest_field(path: str, suggested: str) -> None:
    [(_, message)] = problems(set_at(minimal(), path, 1))
    assert message.startswith(f"unknown field; did you mean {suggested}? allowed: ")


def test_a_field_near_no_allowed_name_gets_no_suggestion() -> None:
    [(_, message)] = problems(set_at(minimal(), "strategies.0.surprise", 1))
    assert message.startswith("unknown field; allowed: ")


@pytest.mark.parametrize(
    ("path", "expected_path", "camel_case"),
    [("dry_run", "dry_run", "dryRun"), ("strategies.0.args.node_fit", "strategies[0].args.node_fit", "nodeFit")],
)
def test_a_file_must_use_camel_case_keys(path: str, expected_path: str, camel_case: str) -> None:
    [(where, message)] = problems(set_at(minimal(), path, True))
    assert where == expected_path
    assert message.startswith(f"unknown field; did you mean {camel_case}? allowed: ")


def test_python_code_may_use_snake_case_names() -> None:
    args = LowNodeLoadArgs(low_thresholds={"cpu": 10}, high_thresholds={"cpu": 20}, node_fit=False)
    assert Policy(strategies=[StrategyConfig(name="LowNodeLoad", args=args)]).strategy_args("LowNodeLoad") is args


def test_unknown_field_in_a_node_pool_is_rejected_with_its_path() -> None:
    doc = set_at(minimal(), "strategies.0.args.nodePools", [{"name": "a", "nodeSelector": {}, "lowThreshold": {}}])
    [(where, message)] = problems(doc)
    assert where == "strategies[0].args.nodePools[0].lowThreshold"
    assert "highThresholds" in message


def test_unknown_field_in_a_prometheus_source_names_the_source_fields() -> None:
    doc = set_at(minimal(), "loadSource", {"type": "prometheus", "address": "http://p:9090", "adress": "x"})
    [(where, message)] = problems(doc)
    assert where == "loadSource.adress"
    assert "address" in message and "bearerTokenFile" in message


# --- thresholds -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [120, -1, 100.5])
@pytest.mark.parametrize(
    ("path", "expected_path"),
    [
        ("strategies.0.args.highThresholds.cpu", "strategies[0].args.highThresholds.cpu"),
        ("scheduling.usageThresholds.memory", "scheduling.usageThresholds.memory"),
    ],
)
def test_percent_outside_0_to_100_is_rejected(path: str, expected_path: str, value: float) -> None:
    assert (expected_path, f"must be a percent between 0 and 100, got {value:g}") in problems(
        set_at(minimal(), path, value)
    )


@pytest.mark.parametrize(("value", "described"), [("80", "string '80'"), (True, "boolean true")])
def test_percent_must_be_a_number(value: Any, described: str) -> None:
    [(where, message)] = problems(set_at(minimal(), "strategies.0.args.lowThresholds.cpu", value))
    assert where == "strategies[0].args.lowThresholds.cpu"
    assert message == f"must be a number, got {described}"


def test_integer_field_rejects_a_string_number() -> None:
    [(where, message)] = problems(set_at(minimal(), "limits.maxEvictionsPerNode", "5"))
    assert (where, message) == ("limits.maxEvictionsPerNode", "must be a whole number, got string '5'")


@pytest.mark.parametrize("value", ["5", "150%", "-1%", 2.5, -1])
def test_cycle_limit_is_a_count_or_a_percent(value: Any) -> None:
    [(where, message)] = problems(set_at(minimal(), "limits.maxEvictionsPerCycle", value))
    assert where == "limits.maxEvictionsPerCycle"
    assert message.startswith('must be a whole number ≥ 0 or a percent string such as "10%" (0–100%), got ')


def test_cycle_limit_percent_is_a_share_of_nodes_rounded_up() -> None:
    limits = parse_policy(yaml.safe_dump(set_at(minimal(), "limits.maxEvictionsPerCycle", "5%"))).limits
    assert limits.max_evictions_per_cycle == "5%"
    assert [limits.per_cycle_for(n) for n in (0, 1, 20, 21, 300)] == [0, 1, 1, 2, 15]


def test_low_above_high_is_rejected() -> None:
    [(where, message)] = problems(set_at(minimal(), "strategies.0.args.lowThresholds.cpu", 75))
    assert where == "strategies[0].args.lowThresholds.cpu"
    assert message == "lowThresholds.cpu (75) must be ≤ highThresholds.cpu (70)"


def test_low_equal_to_high_is_allowed() -> None:
    parse(set_at(minimal(), "strategies.0.args.lowThresholds.cpu", 70))


@pytest.mark.parametrize(
    ("args", "expected_path", "present_in", "missing_from"),
    [
        (
            {"lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70, "memory": 80}},
            "strategies[0].args.highThresholds.memory",
            "highThresholds",
            "lowThresholds",
        ),
        (
            {"lowThresholds": {"cpu": 40, "memory": 50}, "highThresholds": {"cpu": 70}},
            "strategies[0].args.lowThresholds.memory",
            "lowThresholds",
            "highThresholds",
        ),
        (
            {
                "lowThresholds": {"cpu": 40},
                "highThresholds": {"cpu": 70},
                "prodLowThresholds": {"cpu": 30},
                "prodHighThresholds": {"cpu": 60, "nvidia.com/gpu": 50},
            },
            'strategies[0].args.prodHighThresholds["nvidia.com/gpu"]',
            "prodHighThresholds",
            "prodLowThresholds",
        ),
        (
            {"lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70}, "prodLowThresholds": {"cpu": 30}},
            "strategies[0].args.prodLowThresholds.cpu",
            "prodLowThresholds",
            "prodHighThresholds",
        ),
    ],
)
def test_resource_named_in_only_one_of_a_threshold_pair_is_rejected(
    args: dict[str, Any], expected_path: str, present_in: str, missing_from: str
) -> None:
    [(where, message)] = problems(set_at(minimal(), "strategies.0.args", args))
    assert where == expected_path
    assert f"is in {present_in} but not in {missing_from}" in message


def test_prod_high_above_high_is_rejected() -> None:
    args = {
        "lowThresholds": {"cpu": 40},
        "highThresholds": {"cpu": 70},
        "prodLowThresholds": {"cpu": 30},
        "prodHighThresholds": {"cpu": 75},
    }
    [(where, message)] = problems(set_at(minimal(), "strategies.0.args", args))
    assert where == "strategies[0].args.prodHighThresholds.cpu"
    assert message == "prodHighThresholds.cpu (75) must be ≤ highThresholds.cpu (70)"


def test_prod_low_above_prod_high_is_rejected() -> None:
    args = {
        "lowThresholds": {"cpu": 40},
        "highThresholds": {"cpu": 70},
        "prodLowThresholds": {"cpu": 65},
        "prodHighThresholds": {"cpu": 60},
    }
    assert paths(set_at(minimal(), "strategies.0.args", args)) == ["strategies[0].args.prodLowThresholds.cpu"]


def test_deviation_thresholds_are_offsets_so_low_may_exceed_high() -> None:
    args = {"useDeviationThresholds": True, "lowThresholds": {"cpu": 20}, "highThresholds": {"cpu": 10}}
    policy = parse(set_at(minimal(), "strategies.0.args", args))
    assert policy.strategy_args("LowNodeLoad") == LowNodeLoadArgs(
        use_deviation_thresholds=True, low_thresholds={"cpu": 20}, high_thresholds={"cpu": 10}
    )


def test_empty_threshold_maps_are_rejected() -> None:
    args: dict[str, Any] = {"lowThresholds": {}, "highThresholds": {}}
    assert paths(set_at(minimal(), "strategies.0.args", args)) == [
        "strategies[0].args.lowThresholds",
        "strategies[0].args.highThresholds",
    ]


@pytest.mark.parametrize("name", ["cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi"])
def test_kubernetes_resource_names_are_accepted(name: str) -> None:
    args = {"lowThresholds": {name: 10}, "highThresholds": {name: 20}}
    parse(set_at(minimal(), "strategies.0.args", args))


@pytest.mark.parametrize("name", ["gpu", "CPU", "nvidia.com/", "/gpu", "a b"])
def test_invalid_resource_names_are_rejected(name: str) -> None:
    args = {"lowThresholds": {"cpu": 10, name: 10}, "highThresholds": {"cpu": 20, name: 20}}
    found = problems(set_at(minimal(), "strategies.0.args", args))
    assert len(found) == 2
    assert all("not a Kubernetes resource name" in message for _, message in found)


# --- document-level rules -------------------------------------------------------------------------


def test_malformed_yaml_reports_line_and_column() -> None:
    text = "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\nlimits: {maxEvictionsPerCycle: 3\n"
    [(where, message)] = problems(text)
    assert re.fullmatch(r"line \d+, column \d+", where)
    assert message.startswith("not valid YAML")


def test_yaml_error_points_at_the_offending_line() -> None:
    text = "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\ninterval: 60s\n  dryRun: true\n"
    [(where, _)] = problems(text)
    assert where.startswith("line 4,")


def test_duplicate_yaml_key_is_rejected_not_overwritten() -> None:
    text = "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\ndryRun: true\ndryRun: false\n"
    [(where, message)] = problems(text)
    assert where.startswith("line 4,")
    assert "duplicate key 'dryRun'" in message


@pytest.mark.parametrize(("key", "value"), [("apiVersion", "descheduler/v1"), ("apiVersion", "v1"), ("kind", "Policy")])
def test_wrong_api_version_or_kind_is_rejected(key: str, value: str) -> None:
    [(where, message)] = problems(set_at(minimal(), key, value))
    assert where == key
    assert message.startswith("must be 'D" if key == "kind" else "must be 'descheduler.dev/v1alpha1'")


def test_a_file_must_state_api_version_and_kind() -> None:
    assert problems({"dryRun": True}) == [("apiVersion", "required"), ("kind", "required")]


@pytest.mark.parametrize(("text", "got"), [("", "an empty document"), ("- a\n", "a list"), ("42", "a int")])
def test_a_document_that_is_not_a_map_is_rejected(text: str, got: str) -> None:
    [(_, message)] = problems(text)
    assert message.endswith(f"got {got}")


def test_json_text_is_accepted() -> None:
    assert parse_policy(json.dumps(minimal())) == parse(minimal())


def test_unknown_strategy_name_lists_the_known_names() -> None:
    doc = set_at(minimal(), "strategies", [{"name": "HighNodeLoad", "args": {}}])
    assert problems(doc) == [
        ("strategies[0].name", "unknown strategy 'HighNodeLoad'; known strategies: LowNodeLoad, QuotaReclaim")
    ]


def test_duplicate_strategy_names_are_rejected() -> None:
    doc = minimal()
    doc["strategies"].append(copy.deepcopy(doc["strategies"][0]))
    [(where, message)] = problems(doc)
    assert where == "strategies[1].name"
    assert "duplicate strategy 'LowNodeLoad'" in message


def test_lownodeload_without_args_reports_the_required_thresholds() -> None:
    doc = set_at(minimal(), "strategies", [{"name": "LowNodeLoad"}])
    assert problems(doc) == [
        ("strategies[0].args.lowThresholds", "required"),
        ("strategies[0].args.highThresholds", "required"),
    ]


def test_quotareclaim_without_args_takes_the_documented_defaults() -> None:
    policy = parse(set_at(minimal(), "strategies", [{"name": "QuotaReclaim"}]))
    assert policy.strategy_args("QuotaReclaim") == QuotaReclaimArgs()
    assert QuotaReclaimArgs().pending_grace_seconds == 60
    assert QuotaReclaimArgs().lender_floor == "Strict"


def test_strategy_args_returns_none_for_a_strategy_not_configured() -> None:
    assert parse(minimal()).strategy_args("QuotaReclaim") is None


def test_unknown_load_source_type_lists_the_known_types() -> None:
    assert problems(set_at(minimal(), "loadSource", {"type": "file"})) == [
        ("loadSource.type", "must be one of metricsServer, nodeMetric, prometheus; got 'file'")
    ]


def test_all_problems_are_reported_at_once() -> None:
    doc = set_at(minimal(), "interval", "soon")
    doc = set_at(doc, "strategies.0.args.highThresholds.cpu", 120)
    doc = set_at(doc, "migration.evictBurst", 0)
    assert paths(doc) == ["interval", "strategies[0].args.highThresholds.cpu", "migration.evictBurst"]


def test_policy_error_message_lists_every_problem_one_per_line() -> None:
    error = PolicyError("p.yaml", [("interval", "must be > 0"), ("kind", "required")])
    assert str(error) == "policy p.yaml is invalid:\n  - interval: must be > 0\n  - kind: required"


def test_missing_file_is_a_policy_error_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError) as caught:
        load_policy(missing)
    assert caught.value.source == str(missing)
    assert str(missing) in str(caught.value)


def test_models_are_immutable() -> None:
    with pytest.raises(ValidationError):
        default_policy().dry_run = True  # type: ignore[misc]


# --- durations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("60s", timedelta(seconds=60)),
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(minutes=90)),
        ("0.1s", timedelta(milliseconds=100)),
        ("250us", timedelta(microseconds=250)),
        ("0", timedelta(0)),
        ("-2m", timedelta(minutes=-2)),
        (90, timedelta(seconds=90)),
    ],
)
def test_parse_duration(text: str | int, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "1d", "m", "5m3", "1h 30m", "abc", True, 10**20, "9999999999999h"])
def test_parse_duration_rejects(text: Any) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(seconds=60), "1m"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(seconds=1, milliseconds=500), "1.5s"),
        (timedelta(0), "0s"),
        (timedelta(days=2), "48h"),
    ],
)
def test_format_duration_is_go_style_and_reads_back(value: timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value


@pytest.mark.parametrize(("value", "expected"), [("90s", timedelta(seconds=90)), (30, timedelta(seconds=30))])
def test_duration_fields_take_go_strings_or_whole_seconds(value: Any, expected: timedelta) -> None:
    assert parse(set_at(minimal(), "interval", value)).interval == expected


@pytest.mark.parametrize("value", [0, "0s", "-1m", 1.5, True])
def test_interval_must_be_a_positive_duration(value: Any) -> None:
    assert paths(set_at(minimal(), "interval", value)) == ["interval"]


# --- namespaces and selectors ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [{"include": ["a"], "exclude": ["b"]}, {}])
def test_namespace_filter_needs_exactly_one_of_include_or_exclude(value: dict[str, Any]) -> None:
    assert problems(set_at(minimal(), "evictor.namespaces", value)) == [
        ("evictor.namespaces", "set exactly one of include or exclude")
    ]


@pytest.mark.parametrize(
    ("namespace_filter", "namespace", "allowed"),
    [
        (NamespaceFilter(include=["a", "b"]), "a", True),
        (NamespaceFilter(include=["a", "b"]), "c", False),
        (NamespaceFilter(exclude=["kube-system"]), "kube-system", False),
        (NamespaceFilter(exclude=["kube-system"]), "default", True),
    ],
)
def test_namespace_filter_allows(namespace_filter: NamespaceFilter, namespace: str, allowed: bool) -> None:
    assert namespace_filter.allows(namespace) is allowed


def test_plain_label_map_is_shorthand_for_match_labels() -> None:
    short = parse(set_at(minimal(), "nodeSelector", {"pool": "a"})).node_selector
    full = parse(set_at(minimal(), "nodeSelector", {"matchLabels": {"pool": "a"}})).node_selector
    assert short == full == LabelSelector.from_labels({"pool": "a"})


def test_selector_mixing_both_forms_is_rejected() -> None:
    [(where, message)] = problems(set_at(minimal(), "nodeSelector", {"matchLabels": {"a": "b"}, "pool": "x"}))
    assert where == "nodeSelector"
    assert "not both" in message


def test_selector_error_points_into_the_selector() -> None:
    selector = {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}
    [(where, message)] = problems(set_at(minimal(), "evictor.labelSelector", selector))
    assert where == "evictor.labelSelector.matchExpressions[0].operator"
    assert "In, NotIn, Exists, DoesNotExist" in message


def test_selector_is_serialised_as_a_selector_object() -> None:
    policy = parse(set_at(minimal(), "nodeSelector", {"pool": "a"}))
    assert policy.model_dump(by_alias=True, mode="json")["nodeSelector"] == {"matchLabels": {"pool": "a"}}


# --- node pools -----------------------------------------------------------------------------------


def pools_doc() -> dict[str, Any]:
    args = {
        "lowThresholds": {"cpu": 40, "memory": 50},
        "highThresholds": {"cpu": 70, "memory": 80},
        "prodLowThresholds": {"cpu": 30, "memory": 40},
        "prodHighThresholds": {"cpu": 60, "memory": 70},
        "numberOfNodes": 2,
        "anomalyCondition": {"consecutiveAbnormalities": 3},
        "nodePools": [
            {
                "name": "gpu",
                "nodeSelector": {"gpu": "true"},
                "highThresholds": {"cpu": 60, "memory": 75},
                "resourceWeights": {"cpu": 2, "memory": 1},
            },
            {
                "name": "batch",
                "nodeSelector": {"tier": "batch"},
                "prodLowThresholds": {},
                "prodHighThresholds": {},
            },
        ],
    }
    return set_at(minimal(), "strategies.0.args", args)


def effective_pools(doc: dict[str, Any]) -> dict[str, Any]:
    args = parse(doc).strategy_args("LowNodeLoad")
    assert isinstance(args, LowNodeLoadArgs)
    return {pool.name: pool for pool in args.effective_pools()}


def test_node_pool_inherits_the_fields_it_leaves_out() -> None:
    gpu = effective_pools(pools_doc())["gpu"]
    assert gpu.high_thresholds == {"cpu": 60, "memory": 75}
    assert gpu.low_thresholds == {"cpu": 40, "memory": 50}
    assert gpu.prod_high_thresholds == {"cpu": 60, "memory": 70}
    assert gpu.number_of_nodes == 2
    assert gpu.anomaly_condition.consecutive_abnormalities == 3
    assert gpu.resource_weights == {"cpu": 2, "memory": 1}
    assert gpu.node_selector == LabelSelector.from_labels({"gpu": "true"})


def test_pools_come_in_order_then_the_default_pool_of_remaining_nodes() -> None:
    pools = effective_pools(pools_doc())
    assert list(pools) == ["gpu", "batch", "default"]
    assert pools["default"].node_selector is None
    assert pools["default"].high_thresholds == {"cpu": 70, "memory": 80}


def test_resource_weights_default_to_one_per_threshold_resource() -> None:
    assert effective_pools(pools_doc())["default"].resource_weights == {"cpu": 1, "memory": 1}


def test_empty_prod_thresholds_turn_the_prod_pass_off_in_a_pool() -> None:
    batch = effective_pools(pools_doc())["batch"]
    assert batch.prod_low_thresholds is None and batch.prod_high_thresholds is None


def test_pool_threshold_rules_apply_to_the_resolved_pool() -> None:
    # The pool lowers high to 45 but inherits low 50 for memory: low > high inside the pool only.
    doc = set_at(pools_doc(), "strategies.0.args.nodePools.0.highThresholds", {"cpu": 60, "memory": 45})
    where = "strategies[0].args.nodePools[0].highThresholds.memory"
    assert problems(doc) == [
        (where, "lowThresholds.memory (inherited) (50) must be ≤ highThresholds.memory (45)"),
        (where, "prodHighThresholds.memory (inherited) (70) must be ≤ highThresholds.memory (45)"),
    ]


def test_a_rule_broken_only_by_inherited_values_is_reported_once_at_the_top_level() -> None:
    doc = set_at(pools_doc(), "strategies.0.args.lowThresholds.cpu", 75)
    del lnl(doc)["nodePools"][0]  # keep only the pool that overrides no thresholds
    assert paths(doc) == ["strategies[0].args.lowThresholds.cpu"]


def test_pool_percent_error_has_the_pool_path() -> None:
    doc = set_at(pools_doc(), "strategies.0.args.nodePools.1.highThresholds", {"cpu": 60, "memory": 101})
    assert paths(doc) == ["strategies[0].args.nodePools[1].highThresholds.memory"]


@pytest.mark.parametrize("where", ["strategies.0.args", "strategies.0.args.nodePools.1"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-0.1, "must be ≥ 0.0, got -0.1"),
        (1.5, "must be ≤ 1.0, got 1.5"),
        ("half", "must be a number, got string 'half'"),
    ],
)
def test_relief_depth_is_a_share_from_0_to_1(where: str, value: Any, message: str) -> None:
    path = where.replace("strategies.0", "strategies[0]").replace("nodePools.1", "nodePools[1]") + ".reliefDepth"
    assert problems(set_at(pools_doc(), f"{where}.reliefDepth", value)) == [(path, message)]


def test_relief_depth_defaults_to_a_quarter_and_a_pool_inherits_or_overrides_it() -> None:
    doc = set_at(pools_doc(), "strategies.0.args.nodePools.1.reliefDepth", 0.75)
    args = parse(doc).strategy_args("LowNodeLoad")
    assert isinstance(args, LowNodeLoadArgs)
    assert [pool.relief_depth for pool in args.effective_pools()] == [0.25, 0.75, 0.25]


def test_recent_pods_last_is_a_duration_defaulting_to_an_hour() -> None:
    args = parse(pools_doc()).strategy_args("LowNodeLoad")
    assert isinstance(args, LowNodeLoadArgs)
    assert args.recent_pods_last == timedelta(hours=1)
    found = problems(set_at(pools_doc(), "strategies.0.args.recentPodsLast", "soon"))
    assert [path for path, _ in found] == ["strategies[0].args.recentPodsLast"]


def test_target_ceiling_is_high_or_goal() -> None:
    args = parse(set_at(pools_doc(), "strategies.0.args.targetCeiling", "goal")).strategy_args("LowNodeLoad")
    assert isinstance(args, LowNodeLoadArgs) and args.target_ceiling == "goal"
    found = problems(set_at(pools_doc(), "strategies.0.args.targetCeiling", "low"))
    assert [path for path, _ in found] == ["strategies[0].args.targetCeiling"]


def test_look_ahead_is_a_duration_defaulting_to_10m_on_the_clusters_rise() -> None:
    args = parse(pools_doc()).strategy_args("LowNodeLoad")
    assert isinstance(args, LowNodeLoadArgs)
    assert (args.look_ahead, args.look_ahead_basis) == (timedelta(minutes=10), "cluster")
    off = parse(set_at(pools_doc(), "strategies.0.args.lookAhead", "0s")).strategy_args("LowNodeLoad")
    assert isinstance(off, LowNodeLoadArgs) and off.look_ahead == timedelta(0)
    found = problems(set_at(pools_doc(), "strategies.0.args.lookAhead", "-5m"))
    assert [path for path, _ in found] == ["strategies[0].args.lookAhead"]
    found = problems(set_at(pools_doc(), "strategies.0.args.lookAheadBasis", "node"))
    assert [path for path, _ in found] == ["strategies[0].args.lookAheadBasis"]


def test_pool_names_must_be_unique_and_not_default() -> None:
    doc = set_at(pools_doc(), "strategies.0.args.nodePools.1.name", "gpu")
    assert paths(doc) == ["strategies[0].args.nodePools[1].name"]
    doc = set_at(pools_doc(), "strategies.0.args.nodePools.1.name", "default")
    assert paths(doc) == ["strategies[0].args.nodePools[1].name"]


def test_pod_sort_keys_default_to_all_eight_in_the_documented_order() -> None:
    args = parse(minimal()).strategy_args("LowNodeLoad")
    assert isinstance(args, LowNodeLoadArgs)
    assert args.pod_sort_keys == [
        "priorityClass",
        "priority",
        "qos",
        "deletionCost",
        "evictionCost",
        "usageFit",
        "age",
        "name",
    ]


def test_pod_sort_keys_must_not_repeat() -> None:
    doc = set_at(minimal(), "strategies.0.args.podSortKeys", ["age", "name", "age"])
    assert paths(doc) == ["strategies[0].args.podSortKeys[2]"]


# --- other sections -------------------------------------------------------------------------------


@pytest.mark.parametrize(("replicas", "limit"), [(1, 1), (3, 1), (4, 2), (10, 2), (11, 2), (25, 3), (100, 10)])
def test_max_migrating_per_workload_default_scales_with_replicas(replicas: int, limit: int) -> None:
    assert MigrationArgs().max_migrating_for(replicas) == limit


@pytest.mark.parametrize(("value", "replicas", "limit"), [("10%", 25, 3), ("50%", 3, 2), (4, 100, 4), ("0%", 10, 0)])
def test_max_migrating_per_workload_takes_counts_and_percents(value: int | str, replicas: int, limit: int) -> None:
    doc = set_at(minimal(), "migration.maxMigratingPerWorkload", value)
    assert parse(doc).migration.max_migrating_for(replicas) == limit


@pytest.mark.parametrize("value", ["10", "150%", -1, 1.5])
def test_max_migrating_per_workload_rejects_other_values(value: Any) -> None:
    assert paths(set_at(minimal(), "migration.maxMigratingPerWorkload", value)) == ["migration.maxMigratingPerWorkload"]


def test_prometheus_source_has_documented_defaults() -> None:
    doc = set_at(minimal(), "loadSource", {"type": "prometheus", "address": "http://prometheus:9090"})
    source = parse(doc).load_source
    assert isinstance(source, PrometheusSource)
    assert source.timeout == timedelta(seconds=10) and source.window == timedelta(minutes=5)
    assert "container_memory_working_set_bytes" in source.queries.pod_memory
    assert "node_memory_MemAvailable_bytes" in source.queries.node_memory


@pytest.mark.parametrize(("field", "value"), [("address", "prometheus:9090"), ("percentile", 0), ("percentile", 1.5)])
def test_prometheus_source_rejects_bad_values(field: str, value: Any) -> None:
    source = {"type": "prometheus", "address": "http://prometheus:9090", field: value}
    assert paths(set_at(minimal(), "loadSource", source)) == [f"loadSource.{field}"]


def test_scheduling_weights_need_one_above_zero() -> None:
    assert paths(set_at(minimal(), "scheduling.resourceWeights", {"cpu": 0, "memory": 0})) == [
        "scheduling.resourceWeights"
    ]


@pytest.mark.parametrize("value", [0, 101])
def test_estimated_scaling_factor_is_between_1_and_100(value: int) -> None:
    assert paths(set_at(minimal(), "scheduling.estimatedScalingFactors.cpu", value)) == [
        "scheduling.estimatedScalingFactors.cpu"
    ]


# --- the strategy registry ------------------------------------------------------------------------


class _EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    volume: int = 1


@pytest.fixture
def echo_registered() -> Iterator[None]:
    register_strategy_args("Echo", _EchoArgs)
    yield
    del STRATEGY_ARGS["Echo"]


@pytest.mark.usefixtures("echo_registered")
def test_a_plugin_can_register_its_args_model() -> None:
    policy = parse(set_at(minimal(), "strategies", [{"name": "Echo", "args": {"volume": 3}}]))
    assert policy.strategy_args("Echo") == _EchoArgs(volume=3)
    assert paths(set_at(minimal(), "strategies", [{"name": "Echo", "args": {"loud": True}}])) == [
        "strategies[0].args.loud"
    ]


# --- round trip -----------------------------------------------------------------------------------

percent = st.integers(min_value=0, max_value=100).map(float)
resources = st.lists(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), min_size=1, unique=True)


@st.composite
def valid_policies(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(resources)
    low = {r: draw(percent) for r in names}
    high = {r: draw(st.floats(min_value=low[r], max_value=100)) for r in names}
    doc = set_at(minimal(), "strategies.0.args", {"lowThresholds": low, "highThresholds": high})
    if draw(st.booleans()):
        prod_high = {r: draw(st.floats(min_value=0, max_value=high[r])) for r in names}
        prod_low = {r: draw(st.floats(min_value=0, max_value=prod_high[r])) for r in names}
        doc = set_at(doc, "strategies.0.args.prodLowThresholds", prod_low)
        doc = set_at(doc, "strategies.0.args.prodHighThresholds", prod_high)
    doc = set_at(doc, "interval", draw(st.integers(min_value=1, max_value=10**6)))
    doc = set_at(doc, "scheduling.usageThresholds", {r: draw(percent) for r in names})
    doc = set_at(doc, "limits.maxEvictionsPerNode", draw(st.none() | st.integers(min_value=0, max_value=50)))
    return doc


@settings(max_examples=60, deadline=None)
@given(valid_policies())
def test_a_valid_policy_round_trips_through_its_dump(doc: dict[str, Any]) -> None:
    policy = parse(doc)
    dumped = policy.model_dump(by_alias=True, mode="json")
    assert parse_policy(yaml.safe_dump(dumped)) == policy
    assert parse_policy(json.dumps(dumped)) == policy
