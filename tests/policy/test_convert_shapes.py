"""`policy convert` on the shapes the peers' configurations come in: inside a ConfigMap, with other
plugins beside the load-balancing one, in several profiles, upstream's old v1alpha1, the upstream
chart's default, Koordinator with and without its MigrationController defaults.

Each case gives the expected policy fields, comments and list of plugins left out. The inputs are
written here from the peers' documentation and source (cited per case), not copied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from descheduler.convert import ConversionError, convert_input
from descheduler.convert.draft import OutPath

LNL: OutPath = ("strategies", 0, "args")
THRESHOLDS = {
    "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
    "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
}
KOORD_ARGS = {"lowThresholds": {"cpu": 45, "memory": 55}, "highThresholds": {"cpu": 75, "memory": 80}}


def config_map(name: str, data: dict[str, Any], namespace: str = "kube-system") -> dict[str, Any]:
    """A ConfigMap holding each value of `data` as YAML text."""
    text = {
        key: value if isinstance(value, str) else yaml.safe_dump(value, sort_keys=False) for key, value in data.items()
    }
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": text}


def upstream(*profiles: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **top, "profiles": list(profiles)}


def profile(name: str, configs: dict[str, Any], balance: list[str], deschedule: Sequence[str] = ()) -> dict[str, Any]:
    plugins: dict[str, Any] = {"balance": {"enabled": balance}}
    if deschedule:
        plugins["deschedule"] = {"enabled": list(deschedule)}
    config = [
        {"name": plugin, "args": args} if args is not None else {"name": plugin} for plugin, args in configs.items()
    ]
    return {"name": name, "pluginConfig": config, "plugins": plugins}


def koordinator(
    lnl: dict[str, Any] | None = None,
    migration: dict[str, Any] | None = None,
    deschedule: Sequence[str] = (),
) -> dict[str, Any]:
    """Koordinator's shipped configuration (config/manager/descheduler-config.yaml) with LowNodeLoad enabled."""
    plugins: dict[str, Any] = {
        "deschedule": {"disabled": [{"name": "*"}], "enabled": [{"name": n} for n in deschedule]},
        "balance": {"enabled": [{"name": "LowNodeLoad"}]},
        "evict": {"disabled": [{"name": "*"}], "enabled": [{"name": "MigrationController"}]},
    }
    migration_args = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "MigrationControllerArgs",
        "evictionPolicy": "Eviction",
    }
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerConfiguration",
        "deschedulingInterval": "10s",
        "profiles": [
            {
                "name": "koord-descheduler",
                "plugins": plugins,
                "pluginConfig": [
                    {"name": "MigrationController", "args": {**migration_args, **(migration or {})}},
                    {
                        "name": "LowNodeLoad",
                        "args": {
                            "apiVersion": "descheduler/v1alpha2",
                            "kind": "LowNodeLoadArgs",
                            **(lnl or KOORD_ARGS),
                        },
                    },
                ],
            }
        ],
    }


def text(*documents: Any) -> str:
    return yaml.safe_dump_all(documents, sort_keys=False)


# The upstream chart's default deschedulerPolicy (charts/descheduler/values.yaml): one profile
# "default" with DefaultEvictor podProtections, four deschedule plugins and three balance plugins,
# rendered by templates/configmap.yaml into a ConfigMap's data key policy.yaml.
CHART_PROFILE = profile(
    "default",
    {
        "DefaultEvictor": {
            "podProtections": {"defaultDisabled": ["PodsWithLocalStorage"], "extraEnabled": ["PodsWithPVC"]}
        },
        "RemoveDuplicates": None,
        "RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 100, "includingInitContainers": True},
        "RemovePodsViolatingNodeAffinity": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]},
        "RemovePodsViolatingNodeTaints": None,
        "RemovePodsViolatingInterPodAntiAffinity": None,
        "RemovePodsViolatingTopologySpreadConstraint": None,
        "LowNodeUtilization": THRESHOLDS,
    },
    balance=["RemoveDuplicates", "RemovePodsViolatingTopologySpreadConstraint", "LowNodeUtilization"],
    deschedule=[
        "RemovePodsHavingTooManyRestarts",
        "RemovePodsViolatingNodeTaints",
        "RemovePodsViolatingNodeAffinity",
        "RemovePodsViolatingInterPodAntiAffinity",
    ],
)
CHART_RENDERED = text(
    config_map("descheduler", {"policy.yaml": upstream(CHART_PROFILE)}),
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "descheduler", "namespace": "kube-system"}},
)

# The chart's values before v1alpha2 (deschedulerPolicy.strategies, apiVersion descheduler/v1alpha1).
V1ALPHA1_CHART = {
    "apiVersion": "descheduler/v1alpha1",
    "kind": "DeschedulerPolicy",
    "strategies": {
        "RemoveDuplicates": {"enabled": True},
        "RemovePodsViolatingNodeTaints": {"enabled": True},
        "RemovePodsViolatingNodeAffinity": {
            "enabled": True,
            "params": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]},
        },
        "RemovePodsViolatingInterPodAntiAffinity": {"enabled": True},
        "LowNodeUtilization": {"enabled": True, "params": {"nodeResourceUtilizationThresholds": THRESHOLDS}},
    },
}


@dataclass(frozen=True)
class Case:
    input: str
    policy: dict[OutPath, Any]  # our field -> its value
    comments: dict[OutPath, str] = field(default_factory=dict)  # our field -> a comment above it says this
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (input path, plugin), in order
    where: str = ""  # the ConfigMap and data key the header names
    header: list[str] = field(default_factory=list)  # more the header says


CASES: dict[str, Case] = {
    # upstream's kubernetes/base/configmap.yaml shape: the policy under data key policy.yaml.
    "upstream ConfigMap": Case(
        text(
            config_map(
                "descheduler-policy-configmap",
                {"policy.yaml": upstream(profile("p", {"LowNodeUtilization": THRESHOLDS}, ["LowNodeUtilization"]))},
            )
        ),
        {(*LNL, "lowThresholds"): {"cpu": 20, "memory": 20, "pods": 20}, ("evictor", "minReplicas"): 1},
        where="ConfigMap kube-system/descheduler-policy-configmap, data key policy.yaml",
    ),
    # Koordinator's config/manager/descheduler-config.yaml shape: data key koord-descheduler-config.
    "Koordinator ConfigMap": Case(
        text(config_map("descheduler-config", {"koord-descheduler-config": koordinator()}, "koordinator-system")),
        {
            (*LNL, "lowThresholds"): {"cpu": 45, "memory": 55},
            ("interval",): "10s",
            ("migration", "evictionPolicy"): "Eviction",
        },
        where="ConfigMap koordinator-system/descheduler-config, data key koord-descheduler-config",
    ),
    "upstream chart default, rendered": Case(
        CHART_RENDERED,
        {
            ("evictor",): {"evictLocalStoragePods": True, "ignorePvcPods": True, "minReplicas": 1},
            (*LNL, "highThresholds"): {"cpu": 50, "memory": 50, "pods": 50},
            (*LNL, "nodeFit"): False,
        },
        {("evictor", "evictLocalStoragePods"): "PodsWithLocalStorage in defaultDisabled"},
        [
            ("profiles[0].plugins.balance.enabled[0]", "RemoveDuplicates"),
            ("profiles[0].plugins.balance.enabled[1]", "RemovePodsViolatingTopologySpreadConstraint"),
            ("profiles[0].plugins.deschedule.enabled[0]", "RemovePodsHavingTooManyRestarts"),
            ("profiles[0].plugins.deschedule.enabled[1]", "RemovePodsViolatingNodeTaints"),
            ("profiles[0].plugins.deschedule.enabled[2]", "RemovePodsViolatingNodeAffinity"),
            ("profiles[0].plugins.deschedule.enabled[3]", "RemovePodsViolatingInterPodAntiAffinity"),
        ],
        where="ConfigMap kube-system/descheduler, data key policy.yaml",
        header=["with LowNodeUtilization removed from profiles[0].plugins.balance.enabled"],
    ),
    # upstream README's policy with several plugins in one profile.
    "upstream, several plugins in one profile": Case(
        text(
            upstream(
                profile(
                    "ProfileName",
                    {
                        "DefaultEvictor": {"evictSystemCriticalPods": True, "nodeFit": True},
                        "PodLifeTime": {"maxPodLifeTimeSeconds": 86400},
                        "LowNodeUtilization": THRESHOLDS,
                    },
                    ["LowNodeUtilization"],
                    ["PodLifeTime"],
                )
            )
        ),
        {("evictor", "evictSystemCriticalPods"): True, (*LNL, "nodeFit"): True},
        {(*LNL, "nodeFit"): "DefaultEvictor nodeFit (true)"},
        [("profiles[0].plugins.deschedule.enabled[0]", "PodLifeTime")],
    ),
    # Two profiles: the evictor of the one that runs LowNodeUtilization is converted; the other is listed.
    "upstream, several profiles": Case(
        text(
            upstream(
                profile(
                    "cleanup",
                    {"DefaultEvictor": {"evictLocalStoragePods": True}, "RemoveFailedPods": None},
                    [],
                    ["RemoveFailedPods"],
                ),
                profile(
                    "balance",
                    {"DefaultEvictor": {"minReplicas": 3}, "LowNodeUtilization": THRESHOLDS},
                    ["LowNodeUtilization"],
                ),
                profile("pack", {"HighNodeUtilization": {"thresholds": {"cpu": 20}}}, ["HighNodeUtilization"]),
            )
        ),
        {("evictor",): {"minReplicas": 3}, ("strategies", 0, "name"): "LowNodeLoad"},
        {("strategies", 0): "from LowNodeUtilization (profiles[1])"},
        [
            ("profiles[0].plugins.deschedule.enabled[0]", "RemoveFailedPods"),
            ("profiles[2].plugins.balance.enabled[0]", "HighNodeUtilization"),
        ],
        header=[
            "RemoveFailedPods (deschedule; profiles[0] does not run LowNodeUtilization: keep that profile as it is)",
            "HighNodeUtilization (balance; it empties lightly used nodes, the opposite of LowNodeLoad",
        ],
    ),
    "upstream v1alpha1 (the chart's old default), in its ConfigMap": Case(
        text(config_map("descheduler", {"policy.yaml": V1ALPHA1_CHART})),
        {(*LNL, "lowThresholds"): {"cpu": 20, "memory": 20, "pods": 20}, (*LNL, "nodeFit"): False},
        {("strategies", 0): "from LowNodeUtilization (strategies.LowNodeUtilization)"},
        [
            ("strategies.RemoveDuplicates.enabled", "RemoveDuplicates"),
            ("strategies.RemovePodsViolatingNodeTaints.enabled", "RemovePodsViolatingNodeTaints"),
            ("strategies.RemovePodsViolatingNodeAffinity.enabled", "RemovePodsViolatingNodeAffinity"),
            ("strategies.RemovePodsViolatingInterPodAntiAffinity.enabled", "RemovePodsViolatingInterPodAntiAffinity"),
        ],
        where="ConfigMap kube-system/descheduler, data key policy.yaml",
        header=[
            "from an upstream kubernetes-sigs/descheduler DeschedulerPolicy (descheduler/v1alpha1, strategies)",
            "with strategies.LowNodeUtilization.enabled set to false",
        ],
    ),
    # v1alpha1 with the policy-level switches and the strategy's own params (namespaces, nodeFit, thresholdPriority).
    "upstream v1alpha1 with params": Case(
        text(
            {
                "apiVersion": "descheduler/v1alpha1",
                "kind": "DeschedulerPolicy",
                "evictLocalStoragePods": True,
                "ignorePvcPods": True,
                "maxNoOfPodsToEvictPerNode": 4,
                "strategies": {
                    "LowNodeUtilization": {
                        "enabled": True,
                        "params": {
                            "nodeFit": True,
                            "thresholdPriority": 10000,
                            "namespaces": {"exclude": ["kube-system"]},
                            "nodeResourceUtilizationThresholds": {**THRESHOLDS, "numberOfNodes": 2},
                        },
                    },
                    "PodLifeTime": {"enabled": False, "params": {"podLifeTime": {"maxPodLifeTimeSeconds": 60}}},
                },
            }
        ),
        {
            ("evictor",): {
                "evictLocalStoragePods": True,
                "ignorePvcPods": True,
                "minReplicas": 1,
                "priorityThreshold": 10000,
            },
            ("limits", "maxEvictionsPerNode"): 4,
            (*LNL, "nodeFit"): True,
            (*LNL, "numberOfNodes"): 2,
            (*LNL, "evictableNamespaces"): {"exclude": ["kube-system"]},
        },
        {(*LNL, "nodeFit"): "params.nodeFit (true)"},
        header=["strategies.PodLifeTime: not converted, it is not enabled"],
    ),
    "Koordinator, another plugin beside LowNodeLoad": Case(
        text(koordinator(deschedule=["RemovePodsViolatingNodeAffinity"])),
        {(*LNL, "highThresholds"): {"cpu": 75, "memory": 80}},
        left_out=[("profiles[0].plugins.deschedule.enabled[0]", "RemovePodsViolatingNodeAffinity")],
        header=["keep them running in koord-descheduler, which can run beside this one, with LowNodeLoad removed"],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_shape_converts_to_the_expected_policy_comments_and_left_out_list(case: Case) -> None:
    converted = convert_input(case.input, "in.yaml")
    document = yaml.safe_load(converted.text)
    for path, value in case.policy.items():
        assert at(document, path) == value, path
    comments = converted.comments
    for path, says in case.comments.items():
        assert any(says in comment for comment in comments.get(path, [])), (path, comments.get(path))
    assert [(item.path, item.plugin) for item in converted.left_out] == case.left_out
    assert converted.where == case.where
    header = " ".join(line.removeprefix("# ") for line in converted.text.split("\napiVersion:")[0].splitlines())
    for says in [f" in {case.where}: in.yaml." if case.where else "", *case.header]:
        assert says in header, (says, header)


# --- Koordinator's MigrationController defaults and anomaly debounce ------------------------


@pytest.mark.parametrize(
    ("migration", "expected", "says"),
    [
        ({}, {}, "maxMigratingPerWorkload, maxUnavailablePerWorkload left unset, as in Koordinator"),
        ({"maxMigratingPerWorkload": 3}, {"maxMigratingPerWorkload": 3}, "maxUnavailablePerWorkload left unset"),
        ({"maxUnavailablePerWorkload": 2}, {"maxUnavailablePerWorkload": 2}, "maxMigratingPerWorkload left unset"),
        (
            {"maxMigratingPerWorkload": 0, "maxUnavailablePerWorkload": 1},
            {"maxUnavailablePerWorkload": 1},
            "maxMigratingPerWorkload 0 (Koordinator reads 0 as unset) left unset",
        ),
        (
            {"maxMigratingPerWorkload": 1, "maxUnavailablePerWorkload": 1},
            {"maxMigratingPerWorkload": 1, "maxUnavailablePerWorkload": 1},
            None,
        ),
    ],
    ids=["both-unset", "migrating-set", "unavailable-set", "zero-is-unset", "both-set"],
)
def test_koordinators_per_workload_limits_are_written_as_koordinator_resolves_them(
    migration: dict[str, Any], expected: dict[str, Any], says: str | None
) -> None:
    converted = convert_input(text(koordinator(migration=migration)), "k.yaml")
    ours = yaml.safe_load(converted.text)["migration"]
    assert {k: v for k, v in ours.items() if k.endswith("PerWorkload")} == expected
    above = converted.comments.get(("migration",), [])
    if says is None:
        assert not any("PerWorkload" in comment for comment in above)
    else:
        [comment] = [c for c in above if says in c]
        # What Koordinator does when unset (migration/util/util.go GetMaxUnavailable), and where ours differs.
        assert "1 for a workload of fewer than 4 replicas, 2 for 4 to 10, 10% above, the 10% rounded down" in comment
        assert "ours, unset, the same except that it rounds the 10% up (11-19 replicas: 2)" in comment


def test_a_percent_per_workload_limit_says_how_koordinator_rounds_it() -> None:
    converted = convert_input(text(koordinator(migration={"maxUnavailablePerWorkload": "20%"})), "k.yaml")
    assert yaml.safe_load(converted.text)["migration"]["maxUnavailablePerWorkload"] == "20%"
    [comment] = converted.comments[("migration", "maxUnavailablePerWorkload")]
    assert comment.startswith("20% of the replicas: Koordinator rounds it down, and where that comes to 0")


@pytest.mark.parametrize(
    ("theirs", "ours", "says"),
    [
        (None, 6, "(unset, Koordinator's default 5) acts when a node was hot MORE than that many cycles"),
        (0, 6, "(0, which Koordinator's defaulting turns into 5)"),
        (1, 1, "consecutiveAbnormalities 1 skips its anomaly detector and relieves a node on its first hot cycle"),
        (5, 6, "(5) acts when a node was hot MORE than that many cycles in a row, on cycle 6"),
    ],
    ids=["unset", "0", "1", "5"],
)
def test_koordinators_debounce_starts_relief_on_the_cycle_koordinator_does(
    theirs: int | None, ours: int, says: str
) -> None:
    args = dict(KOORD_ARGS)
    if theirs is not None:
        args["anomalyCondition"] = {"consecutiveAbnormalities": theirs}
    converted = convert_input(text(koordinator(lnl=args)), "k.yaml")
    assert at(yaml.safe_load(converted.text), (*LNL, "anomalyCondition")) == {"consecutiveAbnormalities": ours}
    assert any(says in c for c in converted.comments[(*LNL, "anomalyCondition")])


def test_detector_cache_timeout_is_not_dropped_silently() -> None:
    converted = convert_input(text(koordinator(lnl={**KOORD_ARGS, "detectorCacheTimeout": "5m"})), "k.yaml")
    comments = converted.comments[(*LNL, "anomalyCondition")]
    assert any(
        c.startswith(
            "detectorCacheTimeout (5m, profiles[0].pluginConfig[1].args.detectorCacheTimeout) is not carried over"
        )
        for c in comments
    )


# --- upstream podProtections ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("protections", "evictor", "comment"),
    [
        ({"defaultDisabled": ["SystemCriticalPods"]}, {"evictSystemCriticalPods": True}, None),
        (
            {"defaultDisabled": ["FailedBarePods"]},
            {"evictBarePods": False},
            "FailedBarePods in defaultDisabled was not carried over",
        ),
        ({"extraEnabled": ["PodsWithPVC"]}, {"ignorePvcPods": True}, None),
        (
            {
                "extraEnabled": ["PodsWithPVC"],
                "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "local-path"}]}},
            },
            {"ignorePvcPods": True},
            "PodsWithPVC with protectedStorageClasses (local-path): upstream protected only pods whose claims use those",
        ),
    ],
    ids=["system-critical", "failed-bare", "pvc", "pvc-storage-classes"],
)
def test_pod_protections_become_our_evictor_switches(
    protections: dict[str, Any], evictor: dict[str, Any], comment: str | None
) -> None:
    document = upstream(
        profile(
            "p",
            {"DefaultEvictor": {"podProtections": protections}, "LowNodeUtilization": THRESHOLDS},
            ["LowNodeUtilization"],
        )
    )
    converted = convert_input(text(document), "u.yaml")
    ours = yaml.safe_load(converted.text)["evictor"]
    assert {k: v for k, v in ours.items() if k != "minReplicas"} == evictor
    if comment is not None:
        [key] = evictor
        assert any(comment in c for c in converted.comments[("evictor", key)])


@pytest.mark.parametrize(
    ("args", "path", "says"),
    [
        (
            {"evictLocalStoragePods": True, "podProtections": {"extraEnabled": ["PodsWithPVC"]}},
            "profiles[0].pluginConfig[0].args.podProtections",
            "upstream refuses podProtections beside the deprecated evictLocalStoragePods",
        ),
        (
            {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
            "profiles[0].pluginConfig[0].args.podProtections.defaultDisabled[0]",
            "we never move DaemonSet pods",
        ),
        (
            {"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}},
            "profiles[0].pluginConfig[0].args.podProtections.extraEnabled[0]",
            "no equivalent: we move pods with or without a PodDisruptionBudget",
        ),
        (
            {"podProtections": {"extraEnabled": ["PodsWithPvc"]}},
            "profiles[0].pluginConfig[0].args.podProtections.extraEnabled[0]",
            "did you mean PodsWithPVC?",
        ),
    ],
    ids=["mixed-with-deprecated", "daemonset", "without-pdb", "typo"],
)
def test_a_pod_protection_that_cannot_be_carried_over_is_named(args: dict[str, Any], path: str, says: str) -> None:
    document = upstream(
        profile("p", {"DefaultEvictor": args, "LowNodeUtilization": THRESHOLDS}, ["LowNodeUtilization"])
    )
    with pytest.raises(ConversionError) as caught:
        convert_input(text(document), "u.yaml")
    assert any(p == path and says in message for p, message in caught.value.problems), caught.value.problems


# --- which data key, which document ---------------------------------------------------------


def test_several_data_keys_convert_the_first_and_name_the_others() -> None:
    lnu = upstream(profile("p", {"LowNodeUtilization": THRESHOLDS}, ["LowNodeUtilization"]))
    converted = convert_input(text(config_map("cm", {"notes.txt": "hello", "a.yaml": lnu, "b.yaml": lnu})), "cm.yaml")
    assert converted.where == "ConfigMap kube-system/cm, data key a.yaml"
    assert converted.also_found == ("ConfigMap kube-system/cm, data key b.yaml",)
    assert (
        "# Also in the file, not converted: ConfigMap kube-system/cm, data key b.yaml (convert it with --key)"
        in converted.text
    )


def test_key_chooses_the_data_key() -> None:
    lnu = upstream(profile("p", {"LowNodeUtilization": THRESHOLDS}, ["LowNodeUtilization"]))
    converted = convert_input(text(config_map("cm", {"a.yaml": lnu, "b.yaml": lnu})), "cm.yaml", key="b.yaml")
    assert (converted.where, converted.also_found) == ("ConfigMap kube-system/cm, data key b.yaml", ())


@pytest.mark.parametrize(
    ("document", "key", "says"),
    [
        (
            config_map("cm", {"policy.yaml": "not: a policy"}),
            None,
            "no data key of ConfigMap kube-system/cm (policy.yaml) holds an upstream",
        ),
        (
            config_map("cm", {"policy.yaml": "a: b"}),
            "other.yaml",
            "no data key 'other.yaml' in ConfigMap kube-system/cm (policy.yaml)",
        ),
        (
            upstream(profile("p", {"LowNodeUtilization": THRESHOLDS}, ["LowNodeUtilization"])),
            "policy.yaml",
            "--key policy.yaml reads a ConfigMap's data key",
        ),
    ],
    ids=["no-policy-key", "missing-key", "key-without-configmap"],
)
def test_a_configmap_without_a_configuration_says_what_it_holds(document: Any, key: str | None, says: str) -> None:
    with pytest.raises(ConversionError) as caught:
        convert_input(text(document), "cm.yaml", key=key)
    [(_, message)] = caught.value.problems
    assert says in message


def test_koordinators_shipped_configmap_says_lownodeload_is_not_enabled() -> None:
    shipped = koordinator()
    shipped["profiles"][0]["plugins"].pop("balance")  # as config/manager/descheduler-config.yaml ships it
    with pytest.raises(ConversionError) as caught:
        convert_input(text(config_map("descheduler-config", {"koord-descheduler-config": shipped})), "k.yaml")
    [(path, message)] = caught.value.problems
    assert path == "profiles"
    assert "profiles[0].pluginConfig[1].args configures it, but Koordinator runs a plugin only where" in message


# --- helpers --------------------------------------------------------------------------------


def at(document: Any, path: OutPath) -> Any:
    for key in path:
        document = document[key]
    return document
