"""`kubectl descheduler …`: the real kubectl finds the `kubectl-descheduler` executable on $PATH (the
krew plugin convention) and runs it with the words after its name and the user's environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import ROOT, assert_one_clear_error, cli

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario

KUBECTL = shutil.which("kubectl")
PLUGIN = Path(sys.executable).parent / "kubectl-descheduler"

pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="no kubectl on $PATH: install kubectl to test the plugin"),
    pytest.mark.skipif(not PLUGIN.is_file(), reason=f"no {PLUGIN}: `pip install -e .` installs the plugin"),
]


@pytest.fixture
def plugin_env(user_env: dict[str, str]) -> dict[str, str]:
    """The user's environment with only the plugin's folder (and kubectl's) on $PATH."""
    assert KUBECTL is not None
    return {**user_env, "PATH": os.pathsep.join([str(PLUGIN.parent), str(Path(KUBECTL).parent)])}


def kubectl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=60, check=False, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo scenario on a simulated cluster (metrics published), and a kubeconfig for it."""
    with SimulatedCluster(load_demo_scenario()) as sim:
        sim.advance(300)
        yield sim.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")


def test_kubectl_lists_the_plugin(plugin_env: dict[str, str]) -> None:
    listed = kubectl("plugin", "list", env=plugin_env)
    assert str(PLUGIN) in listed.stdout, listed.stdout + listed.stderr


def test_kubectl_descheduler_plans_the_demo_as_descheduler_does(plugin_env: dict[str, str]) -> None:
    through_kubectl = kubectl("descheduler", "plan", "--demo", "-o", "json", env=plugin_env)
    direct = cli("plan", "--demo", "-o", "json", env=plugin_env)
    assert through_kubectl.returncode == 0, through_kubectl.stderr
    assert through_kubectl.stdout == direct.stdout
    assert '"kind": "Plan"' in through_kubectl.stdout


def test_kubectl_descheduler_plans_the_cluster_of_the_users_kubeconfig(
    kubeconfig: Path, plugin_env: dict[str, str]
) -> None:
    env = {**plugin_env, "KUBECONFIG": str(kubeconfig)}
    through_kubectl = kubectl("descheduler", "plan", "-o", "json", "--now", "2026-01-15T12:00:00Z", env=env)
    direct = cli("plan", "-o", "json", "--now", "2026-01-15T12:00:00Z", env=env)
    assert through_kubectl.returncode == 0, through_kubectl.stderr
    assert through_kubectl.stdout == direct.stdout


def test_help_and_usage_name_the_command_the_user_typed(plugin_env: dict[str, str]) -> None:
    helped = kubectl("descheduler", "plan", "--help", env=plugin_env)
    assert helped.returncode == 0, helped.stderr
    assert "Usage: kubectl descheduler plan" in helped.stdout
    mistaken = kubectl("descheduler", "plan", "--bogus", env=plugin_env)
    assert_one_clear_error(mistaken, 1, "Usage: kubectl descheduler plan", "No such option: --bogus")
