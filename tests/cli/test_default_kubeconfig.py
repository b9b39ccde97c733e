"""With no source flag, `plan` and `snapshot save` use the cluster kubectl would: $KUBECONFIG (a list,
merged), else ~/.kube/config, else in-cluster; when there is none, they say so and what to give (exit 1)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_support import POLICY, assert_one_clear_error, cli

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario

DEMO_NODES = {"node-a", "node-b", "node-c", "node-d", "node-e", "node-f", "node-gpu"}


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo scenario on a simulated cluster (metrics published), and a kubeconfig for it."""
    with SimulatedCluster(load_demo_scenario()) as sim:
        sim.advance(300)
        yield sim.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")


def planned_nodes(stdout: str) -> set[str]:
    return {node["name"] for node in json.loads(stdout)["nodes"]}


def test_plan_with_no_flags_plans_the_cluster_in_kubeconfig_env(kubeconfig: Path, user_env: dict[str, str]) -> None:
    result = cli("plan", "-o", "json", env={**user_env, "KUBECONFIG": str(kubeconfig)})
    assert result.returncode == 0, result.stderr
    assert planned_nodes(result.stdout) == DEMO_NODES


def test_kubeconfig_env_is_a_list_whose_missing_files_are_skipped_and_the_rest_merged(
    kubeconfig: Path, tmp_path: Path, user_env: dict[str, str]
) -> None:
    # A second file adds a context of its own; the first file's current-context still applies.
    extra = tmp_path / "extra"
    extra.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "elsewhere", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "someone", "user": {"token": "t"}}],
                "contexts": [{"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "someone"}}],
            }
        )
    )
    chain = os.pathsep.join([str(tmp_path / "missing"), str(kubeconfig), str(extra)])
    result = cli("plan", "-o", "json", env={**user_env, "KUBECONFIG": chain})
    assert result.returncode == 0, result.stderr
    assert planned_nodes(result.stdout) == DEMO_NODES
    # The merged file knows both contexts.
    unknown = cli("plan", "--context", "nope", env={**user_env, "KUBECONFIG": chain})
    assert_one_clear_error(unknown, 1, "no context 'nope' in this kubeconfig (contexts: fake, elsewhere)")


def test_without_kubeconfig_env_plan_reads_the_home_kubeconfig(kubeconfig: Path, user_env: dict[str, str]) -> None:
    home_config = Path(user_env["HOME"]) / ".kube" / "config"
    home_config.parent.mkdir()
    home_config.write_text(kubeconfig.read_text())
    result = cli("plan", "-o", "json", env=user_env)
    assert result.returncode == 0, result.stderr
    assert planned_nodes(result.stdout) == DEMO_NODES


def test_snapshot_save_with_no_flags_saves_the_cluster_in_kubeconfig_env(
    kubeconfig: Path, tmp_path: Path, user_env: dict[str, str]
) -> None:
    result = cli("snapshot", "save", str(tmp_path / "cluster.yaml"), env={**user_env, "KUBECONFIG": str(kubeconfig)})
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load((tmp_path / "cluster.yaml").read_text())["kind"] == "List"


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        (["plan"], "to plan without a cluster: --demo or --snapshot PATH"),
        (["snapshot", "save", "out.yaml"], "give --kubeconfig FILE"),
        (["run", "--policy", str(POLICY)], "not running in a cluster"),
        (["extender"], "give --kubeconfig FILE, or --snapshot PATH"),
    ],
    ids=["plan", "snapshot-save", "run", "extender"],
)
def test_with_no_cluster_configuration_anywhere_the_message_says_where_it_looked(
    user_env: dict[str, str], command: list[str], hint: str
) -> None:
    result = cli(*command, env=user_env)
    home_config = Path(user_env["HOME"]) / ".kube" / "config"
    assert_one_clear_error(
        result, 1, f"error: no cluster configuration: $KUBECONFIG is not set, {home_config} does not exist", hint
    )


def test_a_kubeconfig_env_naming_no_existing_file_is_said_so(tmp_path: Path, user_env: dict[str, str]) -> None:
    chain = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    result = cli("plan", env={**user_env, "KUBECONFIG": chain})
    assert_one_clear_error(result, 1, f"none of the files in $KUBECONFIG exists ({chain})")
