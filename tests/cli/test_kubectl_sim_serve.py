"""The real kubectl against `descheduler sim serve`: what a user pointing kubectl at the demo sees is
what a real cluster shows (the server-side columns, ready pods, node versions, heartbeat times)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from descheduler.fakecluster.nodes import KUBELET_VERSION


def _kubectl_binary() -> str | None:
    """kubectl from the envtest folder ($KUBEBUILDER_ASSETS, as setup-envtest fills it), else from $PATH."""
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and (Path(assets) / "kubectl").is_file():
        return str(Path(assets) / "kubectl")
    return shutil.which("kubectl")


KUBECTL = _kubectl_binary()

pytestmark = pytest.mark.skipif(
    KUBECTL is None,
    reason="no kubectl: put one on $PATH (https://kubernetes.io/docs/tasks/tools/) or in $KUBEBUILDER_ASSETS "
    "(`setup-envtest use -p path` fetches it with the control plane)",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`descheduler sim serve` of the demo, and the environment for a kubectl that talks to it."""
    home = tmp_path_factory.mktemp("kubectl")
    kubeconfig = home / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "descheduler", "sim", "serve", "--port", "0", "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while not kubeconfig.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert kubeconfig.exists(), proc.stderr.read() if proc.poll() is not None and proc.stderr else "no kubeconfig"
        yield {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home)}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=15)


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "--cache-dir", str(Path(env["HOME"]) / "cache"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        input=stdin,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def table(text: str) -> list[list[str]]:
    """kubectl's printed table: cells are separated by two spaces or more (headers hold single spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def test_get_deployments_prints_ready_up_to_date_and_available(served: dict[str, str]) -> None:
    # The deployment controller reports its replica sets' status a tick after they do.
    deadline = time.monotonic() + 20
    while True:
        rows = table(kubectl(served, "get", "deployments", "-n", "shop"))
        web = next(r for r in rows if r[0] == "web")
        if web[1] == "6/6" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert web[1:4] == ["6/6", "6", "6"]
    wide = table(kubectl(served, "get", "deployments", "-n", "shop", "-o", "wide"))
    assert wide[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert next(r for r in wide if r[0] == "web")[-3:] == ["web", "example.com/web:1", "app=web"]


def test_get_pdb_prints_min_available_max_unavailable_and_allowed_disruptions(served: dict[str, str]) -> None:
    rows = table(kubectl(served, "get", "pdb", "-n", "shop"))
    assert rows[0] == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    web = next(r for r in rows if r[0] == "web")
    assert web[1:3] == ["4", "N/A"]
    assert web[3].isdigit()


def test_get_events_prints_last_seen_type_reason_object_and_message(served: dict[str, str]) -> None:
    event = (
        "apiVersion: v1\nkind: Event\nmetadata: {name: web.evicted, namespace: shop}\n"
        "involvedObject: {kind: Pod, name: web-1, namespace: shop}\n"
        "reason: Evicted\nmessage: moved off a hot node\ntype: Normal\ncount: 1\n"
    )
    kubectl(served, "create", "--validate=false", "-f", "-", stdin=event)
    rows = table(kubectl(served, "get", "events", "-n", "shop"))
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert ["Normal", "Evicted", "pod/web-1", "moved off a hot node"] in [r[1:] for r in rows[1:]]


def test_running_pods_print_their_containers_ready(served: dict[str, str]) -> None:
    rows = table(kubectl(served, "get", "pods", "-A"))
    running = [r for r in rows[1:] if r[3] == "Running"]
    assert running
    for row in running:
        ready, total = row[2].split("/")
        assert ready == total != "0", row


def test_nodes_print_their_kubelet_version_and_system_info(served: dict[str, str]) -> None:
    rows = table(kubectl(served, "get", "nodes", "-o", "wide"))
    assert rows[0][:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    for row in rows[1:]:
        assert row[4] == KUBELET_VERSION
        assert "<unknown>" not in row, row


def test_describe_node_shows_heartbeats_of_the_simulated_clock(served: dict[str, str]) -> None:
    described = kubectl(served, "describe", "node", "node-a")
    conditions = described.split("Conditions:")[1].split("Addresses:")[0]
    assert "0001" not in conditions
    ready = next(line for line in conditions.splitlines() if line.strip().startswith("Ready "))
    assert "KubeletReady" in ready
    assert re.search(r"\w{3}, \d{2} \w{3} 20\d\d \d\d:\d\d:\d\d \+0000", ready), ready
    assert f"Kubelet Version:            {KUBELET_VERSION}" in described
