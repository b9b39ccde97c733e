"""`descheduler policy convert`: the peers' example configurations become our policy, field by field,
with a comment on every field whose meaning changes; what cannot be carried over is one error naming
every such field; where the semantics agree, the converted policy plans the moves the peer would."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import strategies
from descheduler.convert import Conversion, ConversionError, convert_document, convert_text
from descheduler.convert.render import render
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import STRATEGY_ARGS, parse_policy
from tests.builders import loaded_node, node, node_metric, pod, snapshot
from tests.cli.cli_support import cli

PEERS = Path(__file__).parent / "peer_configs"
UPSTREAM = PEERS / "upstream-lownodeutilization.yaml"
UPSTREAM_METRICS = PEERS / "upstream-lownodeutilization-metrics.yaml"
KOORD = PEERS / "koordinator-lownodeload.yaml"
KOORD_MIGRATION = PEERS / "koordinator-migration-controller.yaml"
EXAMPLES = sorted(PEERS.glob("*.yaml"))
LNL = ("strategies", 0, "args")


def converted(file: Path) -> dict[str, Any]:
    """Our policy converted from `file`, as the YAML the command writes says it."""
    loaded: dict[str, Any] = yaml.safe_load(convert_text(file.read_text(), file.name))
    return loaded


def conversion(file: Path) -> Conversion:
    return convert_document(yaml.safe_load(file.read_text()))


def at(document: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        document = document[key]
    return document


def problems(document: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConversionError) as caught:
        convert_text(yaml.safe_dump(document), "peer.yaml")
    return caught.value.problems


def upstream_policy(lnu_args: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        **top,
        "profiles": [
            {
                "name": "p",
                "pluginConfig": [{"name": "LowNodeUtilization", "args": lnu_args}],
                "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
            }
        ],
    }


def koordinator_config(lnl_args: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerConfiguration",
        **top,
        "profiles": [
            {
                "name": "koord-descheduler",
                "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
                "pluginConfig": [{"name": "LowNodeLoad", "args": lnl_args}],
            }
        ],
    }


THRESHOLDS = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 50, "memory": 50}}
KOORD_THRESHOLDS = {"lowThresholds": {"cpu": 30, "memory": 40}, "highThresholds": {"cpu": 45, "memory": 55}}


# --- every example ------------------------------------------------------------------------


@pytest.mark.parametrize("file", EXAMPLES, ids=lambda f: f.stem)
def test_every_peer_example_converts_to_a_policy_that_validates(file: Path) -> None:
    text = convert_text(file.read_text(), str(file))
    parse_policy(text, "converted")


@pytest.mark.parametrize(
    ("file", "named"),
    [
        (UPSTREAM, "an upstream kubernetes-sigs/descheduler DeschedulerPolicy (descheduler/v1alpha2)"),
        (KOORD, "a Koordinator koord-descheduler DeschedulerConfiguration (descheduler/v1alpha2)"),
    ],
    ids=["upstream", "koordinator"],
)
def test_the_header_says_what_the_policy_was_converted_from(file: Path, named: str) -> None:
    lines = convert_text(file.read_text(), "in.yaml").splitlines()
    header = " ".join(line.removeprefix("# ") for line in lines[: lines.index("apiVersion: descheduler.dev/v1alpha1")])
    assert header.startswith(f"Converted by `descheduler policy convert` from {named}: in.yaml.")


# --- field by field -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "path", "expected"),
    [
        (UPSTREAM, (*LNL, "lowThresholds"), {"cpu": 20, "memory": 20, "pods": 20}),
        (UPSTREAM, (*LNL, "highThresholds"), {"cpu": 50, "memory": 50, "pods": 50}),
        (UPSTREAM, (*LNL, "nodeFit"), False),
        (UPSTREAM, (*LNL, "podSortKeys"), ["priority", "qos", "name"]),
        (UPSTREAM, ("loadSource",), {"type": "metricsServer"}),
        (UPSTREAM, ("evictor", "minReplicas"), 1),
        (UPSTREAM, ("strategies", 0, "name"), "LowNodeLoad"),
        (UPSTREAM_METRICS, ("loadSource",), {"type": "metricsServer"}),
        (UPSTREAM_METRICS, (*LNL, "nodeFit"), True),
        (UPSTREAM_METRICS, (*LNL, "numberOfNodes"), 1),
        (UPSTREAM_METRICS, (*LNL, "evictableNamespaces"), {"exclude": ["kube-system"]}),
        (
            UPSTREAM_METRICS,
            ("limits",),
            {"maxEvictionsPerNode": 3, "maxEvictionsPerNamespace": 10, "maxEvictionsPerCycle": 20},
        ),
        (
            UPSTREAM_METRICS,
            ("nodeSelector",),
            {
                "matchExpressions": [
                    {"key": "node-role.kubernetes.io/worker", "operator": "Exists"},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a", "zone-b"]},
                ]
            },
        ),
        (
            UPSTREAM_METRICS,
            ("evictor",),
            {
                "evictSystemCriticalPods": False,
                "evictLocalStoragePods": True,
                "ignorePvcPods": True,
                "minPodAge": "10m",
                "labelSelector": {"matchLabels": {"descheduler.dev/movable": "true"}},
                "evictBarePods": False,
                "priorityThreshold": 10000,
                "minReplicas": 2,
            },
        ),
        (KOORD, ("loadSource",), {"type": "nodeMetric"}),
        (KOORD, ("interval",), "60s"),
        (KOORD, ("dryRun",), False),
        (KOORD, (*LNL, "lowThresholds"), {"cpu": 30, "memory": 40}),
        (KOORD, (*LNL, "highThresholds"), {"cpu": 45, "memory": 55}),
        (KOORD, (*LNL, "anomalyCondition"), {"consecutiveAbnormalities": 6}),
        (KOORD, (*LNL, "nodeFit"), True),
        (KOORD, (*LNL, "evictableNamespaces"), {"exclude": ["kube-system", "koordinator-system"]}),
        (KOORD, ("evictor", "namespaces"), {"exclude": ["kube-system", "koordinator-system"]}),
        (KOORD, ("migration", "evictionPolicy"), "Eviction"),
        (KOORD, ("migration", "cooldown"), "10m"),
        (KOORD_MIGRATION, (*LNL, "lowThresholds"), {"cpu": 40, "memory": 100}),
        (KOORD_MIGRATION, (*LNL, "highThresholds"), {"cpu": 65, "memory": 100}),
        (KOORD_MIGRATION, (*LNL, "anomalyCondition"), {"consecutiveAbnormalities": 3}),
        (KOORD_MIGRATION, ("scheduling", "nodeMetricExpirationSeconds"), 300),
        (
            KOORD_MIGRATION,
            ("migration",),
            {
                "defaultMode": "ReservationFirst",
                "ttl": "5m",
                "evictBurst": 1,
                "maxMigratingPerNode": 1,
                "maxMigratingPerNamespace": 3,
                "objectLimiters": {"workload": {"duration": "5m", "maxMigrating": 1}},
                "evictQPS": 10,
                "evictionPolicy": "Eviction",
                "maxMigratingPerWorkload": 1,
                "maxUnavailablePerWorkload": "10%",
                "cooldown": "10m",
            },
        ),
        (
            KOORD_MIGRATION,
            ("evictor",),
            {
                "evictSystemCriticalPods": False,
                "evictLocalStoragePods": False,
                "ignorePvcPods": True,
                "namespaces": {"exclude": ["kube-system"]},
            },
        ),
    ],
    ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else v.stem if isinstance(v, Path) else "",
)
def test_each_peer_field_becomes_ours(file: Path, path: tuple[str | int, ...], expected: Any) -> None:
    assert at(converted(file), path) == expected


# --- comments on every meaning change ------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "path", "says"),
    [
        (UPSTREAM, ("loadSource",), "compared requests; we always compare measured usage"),
        (
            UPSTREAM,
            (*LNL, "lowThresholds"),
            "MEASURED USAGE, where upstream (no metricsUtilization) compared the sum of the pods' requests",
        ),
        (
            UPSTREAM,
            (*LNL, "highThresholds"),
            "each move must keep its own target <= these percents (per-target accounting)",
        ),
        (UPSTREAM, (*LNL, "nodeFit"), "DefaultEvictor nodeFit (unset: false)"),
        (UPSTREAM, (*LNL, "podSortKeys"), "upstream's victim order: lowest priority first"),
        (UPSTREAM, ("evictor", "minReplicas"), "upstream moves pods of single-replica workloads too"),
        (UPSTREAM, ("strategies", 0), "by the raw sum of millicores + bytes + pods"),
        (UPSTREAM, ("migration",), "ours paces moves"),
        (UPSTREAM_METRICS, ("loadSource",), "the same metrics-server usage"),
        (UPSTREAM_METRICS, ("evictor", "evictBarePods"), "evictFailedBarePods was not carried over"),
        (
            UPSTREAM_METRICS,
            ("limits", "maxEvictionsPerNode"),
            "evictionLimits.node and maxNoOfPodsToEvictPerNode, the lower",
        ),
        (KOORD, (*LNL, "anomalyCondition"), "unset, Koordinator's default 5) acts when a node was hot MORE than"),
        (KOORD, (*LNL, "highThresholds"), "Koordinator pooled the room below these percents over all low nodes"),
        (KOORD, (*LNL, "nodeFit"), "even for pods it never moved"),
        (KOORD, ("migration",), "maxMigratingPerWorkload, maxUnavailablePerWorkload left unset, as in Koordinator"),
        (KOORD, ("migration", "cooldown"), "Koordinator has none"),
        (KOORD_MIGRATION, (*LNL, "lowThresholds"), "Koordinator evaluates memory at 100% when it is not set"),
        (KOORD_MIGRATION, (*LNL, "highThresholds"), "Koordinator evaluates memory at 100% when it is not set"),
        (
            KOORD_MIGRATION,
            (*LNL, "anomalyCondition"),
            "(2) acts when a node was hot MORE than that many cycles in a row, on cycle 3",
        ),
    ],
    ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else v.stem if isinstance(v, Path) else "",
)
def test_a_field_whose_meaning_changes_carries_a_comment(file: Path, path: tuple[str | int, ...], says: str) -> None:
    assert any(says in comment for comment in conversion(file).comments.get(path, [])), conversion(file).comments.get(
        path
    )


def test_a_field_whose_meaning_is_the_same_carries_no_comment() -> None:
    comments = conversion(KOORD).comments
    assert (*LNL, "evictableNamespaces") not in comments
    assert (*LNL, "lowThresholds") not in comments  # memory is named, so nothing is added


def test_comments_are_written_above_their_field() -> None:
    document = {"a": 1, "b": {"c": [{"name": "x", "d": {"e": 2}}], "f": {"g": 3}}}
    comments = {("a",): ["on a"], ("b", "c", 0): ["on the item"], ("b", "c", 0, "d"): ["on d"], ("b", "f"): ["on f"]}
    assert render(document, comments, ["header"]) == (
        "# header\n"
        "# on a\n"
        "a: 1\n"
        "b:\n"
        "  c:\n"
        "    # on the item\n"
        "    - name: x\n"
        "      # on d\n"
        "      d: {e: 2}\n"
        "  # on f\n"
        "  f: {g: 3}\n"
    )


# --- meaning changes, converted so behaviour matches --------------------------------------


@pytest.mark.parametrize(("theirs", "ours"), [(None, 6), (0, 6), (1, 1), (2, 3), (5, 6)])
def test_koordinators_more_than_n_debounce_becomes_n_plus_one(theirs: int | None, ours: int) -> None:
    # 0 is defaulted to 5 by Koordinator; 1 skips its detector (acts on the first hot cycle).
    args = dict(KOORD_THRESHOLDS)
    if theirs is not None:
        args["anomalyCondition"] = {"consecutiveAbnormalities": theirs}
    document = yaml.safe_load(convert_text(yaml.safe_dump(koordinator_config(args)), "k.yaml"))
    assert at(document, (*LNL, "anomalyCondition")) == {"consecutiveAbnormalities": ours}


def test_the_converted_debounce_acts_on_the_cycle_koordinator_acts_on() -> None:
    # Koordinator with consecutiveAbnormalities 2 relieves a node on its 3rd hot cycle in a row.
    args = {**KOORD_THRESHOLDS, "anomalyCondition": {"consecutiveAbnormalities": 2}}
    policy = parse_policy(convert_text(yaml.safe_dump(koordinator_config(args)), "k.yaml"))
    objects = [
        node("hot", cpu="10", memory="40Gi"),
        node("cool", cpu="10", memory="40Gi"),
        *(pod(f"h{i}", "hot", cpu="1", memory="1Gi") for i in range(6)),
        node_metric("hot", "6", "6Gi", system=("0", "0"), pods=[(f"h{i}", "1", "1Gi") for i in range(6)]),
        node_metric("cool", "0", "0", system=("0", "0")),
    ]
    state = None
    moved_on = []
    for cycle in (1, 2, 3):
        result, state = plan_cycle(snapshot(objects), policy, state)
        if result.migrations:
            moved_on.append(cycle)
    assert moved_on == [3]


def test_koordinators_implicit_memory_threshold_is_written_out_only_when_memory_is_not_named() -> None:
    named = convert_document(koordinator_config(KOORD_THRESHOLDS))
    unnamed = convert_document(koordinator_config({"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 45}}))
    assert at(named.policy, (*LNL, "highThresholds")) == {"cpu": 45, "memory": 55}
    assert at(unnamed.policy, (*LNL, "highThresholds")) == {"cpu": 45, "memory": 100}
    assert at(unnamed.policy, (*LNL, "lowThresholds")) == {"cpu": 30, "memory": 100}


def test_a_resource_koordinator_ignores_because_only_highthresholds_names_it_is_dropped_with_a_comment() -> None:
    args = {"lowThresholds": {"cpu": 30, "memory": 40}, "highThresholds": {"cpu": 45, "memory": 55, "pods": 80}}
    result = convert_document(koordinator_config(args))
    assert at(result.policy, (*LNL, "highThresholds")) == {"cpu": 45, "memory": 55}
    assert any("pods: named only in highThresholds" in c for c in result.comments[(*LNL, "highThresholds")])
    assert result.errors == []


def test_an_extended_resource_in_metrics_mode_says_its_requests_are_compared() -> None:
    args = {
        "thresholds": {"cpu": 20, "nvidia.com/gpu": 20},
        "targetThresholds": {"cpu": 50, "nvidia.com/gpu": 50},
        "metricsUtilization": {"source": "KubernetesMetrics"},
    }
    result = convert_document(upstream_policy(args))
    assert any("nvidia.com/gpu: no load source measures it" in c for c in result.comments[(*LNL, "lowThresholds")])


def test_upstreams_text_node_selector_becomes_a_selector_object() -> None:
    document = converted_from(upstream_policy(THRESHOLDS, nodeSelector="env=prod,tier!=db,!spot"))
    assert document["nodeSelector"] == {
        "matchLabels": {"env": "prod"},
        "matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    }


def converted_from(document: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(convert_text(yaml.safe_dump(document), "peer.yaml"))
    return loaded


# --- what cannot be carried over: one error naming every field -----------------------------


def test_every_field_that_cannot_be_carried_over_is_named_at_once() -> None:
    document = upstream_policy(
        {**THRESHOLDS, "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "x"}}, "bogus": 1},
        gracePeriodSeconds=30,
    )
    document["profiles"][0]["plugins"]["filter"] = {"enabled": ["MyFilter"]}
    document["profiles"][0]["pluginConfig"].append(
        {"name": "DefaultEvictor", "args": {"evictDaemonSetPods": True, "priorityThreshold": {"name": "high"}}}
    )
    assert sorted(path for path, _ in problems(document)) == sorted(
        [
            "gracePeriodSeconds",
            "profiles[0].plugins.filter.enabled[0]",
            "profiles[0].pluginConfig[1].args.evictDaemonSetPods",
            "profiles[0].pluginConfig[1].args.priorityThreshold.name",
            "profiles[0].pluginConfig[0].args.metricsUtilization.source",
            "profiles[0].pluginConfig[0].args.bogus",
        ]
    )


@pytest.mark.parametrize(
    ("document", "path", "says"),
    [
        (
            upstream_policy({"thresholds": {"cpu": 20, "gpu": 5}, "targetThresholds": {"cpu": 50, "gpu": 9}}),
            "profiles[0].pluginConfig[0].args.thresholds.gpu",
            "'gpu' is not a resource we know",
        ),
        (
            upstream_policy({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 150}}),
            "profiles[0].pluginConfig[0].args.targetThresholds.cpu",
            "must be a percent between 0 and 100, got 150",
        ),
        (
            koordinator_config({**KOORD_THRESHOLDS, "paused": True}),
            "profiles[0].pluginConfig[0].args.paused",
            "a paused LowNodeLoad moves nothing",
        ),
        (
            koordinator_config({"lowThresholds": {"cpu": 30, "pods": 10}, "highThresholds": {"cpu": 45}}),
            "profiles[0].pluginConfig[0].args.lowThresholds.pods",
            "named only in lowThresholds",
        ),
        (
            koordinator_config({**KOORD_THRESHOLDS, "nodePools": [{"name": "default", "nodeSelector": {}}]}),
            "profiles[0].pluginConfig[0].args.nodePools[0].name",
            "'default' is reserved",
        ),
        ({**upstream_policy(THRESHOLDS), "profiles": []}, "profiles", "no profile enables LowNodeUtilization"),
    ],
    ids=[
        "unknown-resource",
        "percent-out-of-range",
        "paused",
        "low-only-resource",
        "reserved-pool-name",
        "no-strategy",
    ],
)
def test_a_field_that_cannot_be_carried_over_is_named_at_its_input_path(
    document: dict[str, Any], path: str, says: str
) -> None:
    found = problems(document)
    assert any(p == path and says in message for p, message in found), found


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}, "no data key of ConfigMap (a) holds"),
        (
            {"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy"},
            "no strategy LowNodeUtilization with enabled: true",
        ),
        ({"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"}, "already our policy"),
        ("just text", "got a str"),
    ],
    ids=["configmap", "upstream-v1alpha1", "ours", "text"],
)
def test_a_document_of_neither_kind_is_refused_saying_what_was_expected(document: Any, says: str) -> None:
    [(_, message)] = problems(document)
    assert says in message


# --- the same moves where the semantics agree -----------------------------------------------


@pytest.fixture
def upstream_baseline() -> Iterator[None]:
    """benchmarks/baseline.py's LowNodeUtilization, registered for one test and removed after it."""
    from benchmarks.baseline import register_baseline

    strategies.registry()
    saved_strategies, saved_args = dict(strategies._REGISTRY), dict(STRATEGY_ARGS)
    register_baseline()
    yield
    strategies._REGISTRY.clear()
    strategies._REGISTRY.update(saved_strategies)
    STRATEGY_ARGS.clear()
    STRATEGY_ARGS.update(saved_args)


def requests_equal_usage_cluster() -> list[dict[str, Any]]:
    """One node at 87.5% cpu by requests and by usage, one empty node with room for all of it."""
    hot = [
        ({"name": f"h{i}", "owner": f"w{i}", "priority": priority, "cpu": "1", "memory": "1Gi"}, "1", "1Gi")
        for i, priority in enumerate([500, 100, 900, 300, 700, 200, 800])
    ]
    return [*loaded_node("hot", hot), *loaded_node("cool", [])]


def test_the_converted_readme_example_moves_the_pods_upstream_would(upstream_baseline: None) -> None:
    ours = parse_policy(convert_text(UPSTREAM.read_text(), "upstream.yaml"))
    # The peer: upstream's LowNodeUtilization with the example's thresholds, everything else held the same.
    peer_document = yaml.safe_load(ours.model_dump_json(by_alias=True))
    lnu = yaml.safe_load(UPSTREAM.read_text())["profiles"][0]["pluginConfig"][0]["args"]
    peer_document["strategies"] = [{"name": "LowNodeUtilization", "args": lnu}]
    peer = parse_policy(yaml.safe_dump(peer_document))
    cluster = snapshot(requests_equal_usage_cluster())
    peer_moves = {m.pod.name for m in plan_cycle(cluster, peer).plan.migrations}
    our_moves = {m.pod.name for m in plan_cycle(cluster, ours).plan.migrations}
    # 7 of 8 cpu, high 50%: three pods must go, the three of lowest priority.
    assert peer_moves == {"h1", "h5", "h3"}
    assert our_moves == peer_moves


# --- the command ---------------------------------------------------------------------------


def test_the_command_writes_the_policy_to_stdout() -> None:
    result = cli("policy", "convert", str(KOORD))
    assert (result.returncode, result.stderr) == (0, "")
    assert yaml.safe_load(result.stdout) == converted(KOORD)


def test_the_command_writes_a_file_that_policy_validate_accepts(tmp_path: Path) -> None:
    out = tmp_path / "policy.yaml"
    result = cli("policy", "convert", str(UPSTREAM), "-o", str(out))
    assert (result.returncode, result.stdout) == (0, "")
    assert f"converted to {out}" in result.stderr
    validated = cli("policy", "validate", str(out))
    assert (validated.returncode, validated.stdout.strip()) == (0, f"{out}: valid")


def test_the_command_lists_every_problem_and_exits_1_without_a_traceback(tmp_path: Path) -> None:
    peer = tmp_path / "peer.yaml"
    peer.write_text(yaml.safe_dump(koordinator_config({**KOORD_THRESHOLDS, "paused": True, "bogus": 1})))
    out = tmp_path / "never.yaml"
    result = cli("policy", "convert", str(peer), "-o", str(out))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {peer}: cannot convert a Koordinator")
    assert "profiles[0].pluginConfig[0].args.paused" in result.stderr
    assert "profiles[0].pluginConfig[0].args.bogus" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("apiVersion: apps/v1\nkind: Deployment\n", "expected an upstream descheduler policy"),
        ("a: [unclosed\n", "not valid YAML"),
        (None, "cannot read the file"),
    ],
    ids=["neither-kind", "not-yaml", "missing-file"],
)
def test_the_command_refuses_a_file_it_cannot_convert_with_one_message(
    tmp_path: Path, content: str | None, says: str
) -> None:
    peer = tmp_path / "peer.yaml"
    if content is not None:
        peer.write_text(content)
    result = cli("policy", "convert", str(peer))
    assert (result.returncode, result.stdout) == (1, "")
    assert "Traceback" not in result.stderr
    assert says in result.stderr


# --- README's ConfigMap example, end to end -------------------------------------------------


def test_the_readme_configmap_example_is_what_the_command_prints(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### Coming from the upstream descheduler or Koordinator") :]
    section = section[: section.index("\n## ")]
    [config_map, policy] = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    [console] = re.findall(r"```console\n(.*?)```", section, re.DOTALL)
    (tmp_path / "descheduler-configmap.yaml").write_text(config_map)
    result = subprocess.run(
        [sys.executable, "-m", "descheduler", "policy", "convert", "descheduler-configmap.yaml", "-o", "policy.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    shown = console.splitlines()
    assert shown[0] == "$ descheduler policy convert descheduler-configmap.yaml -o policy.yaml"
    assert result.stderr.splitlines() == shown[1 : shown.index("$ echo $?")]
    assert str(result.returncode) == shown[-1]
    assert (tmp_path / "policy.yaml").read_text() == policy
