"""Who can drive the extender, on the real control plane (issue 64).

- As deploy/overlays/with-scheduler runs it (the scheduler's sidecar), its verbs listen on loopback
  only: the kernel's table of listening sockets shows the verb port bound to 127.0.0.1 and nothing
  else, and its health port answers no verb. Started on every address without TLS, it refuses to run.
- A bind that no kube-scheduler filter would make is refused, whoever sends it, and the pod stays
  unbound: a taint it does not tolerate, a nodeSelector or required node affinity the node does not
  match, a cordoned node, a schedulerName the extender does not serve, a pod already bound. The pod
  and the node are read from the real API server at the bind.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import installed
import pytest
from controlplane import ControlPlane
from moves_support import (
    LOAD_AWARE_SCHEDULER,
    OurProcess,
    cordon,
    create_test_nodes,
    delete_quietly,
    extender_process,
    wait_until,
)
from realcluster_support import create, merge_patch
from test_moves import SLACK, STARTUP, Components, started_components

from descheduler.kube import KubeClient
from tests.deploy.deploy_support import find, rendered

OVERLAY = installed.OVERLAY


@pytest.fixture(scope="module")
def components(
    control_plane: ControlPlane, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Components]:
    with started_components(control_plane, kube, tmp_path_factory.mktemp("exposure")) as started:
        yield started


def _listening(port: int) -> set[str]:
    """The local addresses with a TCP socket listening on `port` (/proc/net/tcp and tcp6, state 0A)."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port and len(address) == width:
                found.add(_address(address))
    return found


def _address(hexed: str) -> str:
    raw = bytes.fromhex(hexed)
    if len(raw) == 4:
        return ".".join(str(b) for b in reversed(raw))
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]  # each 32-bit word in host (little-endian) order
    return ":".join(b"".join(words)[i : i + 2].hex() for i in range(0, 16, 2))


def _post(port: int, verb: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", f"/{verb}", json.dumps(body), {"Content-Type": "application/json"})
        reply = connection.getresponse()
        text = reply.read()
        return reply.status, json.loads(text) if text.startswith(b"{") else {"text": text.decode()}
    finally:
        connection.close()


def test_the_shipped_sidecar_serves_its_verbs_on_loopback_only(components: Components, tmp_path: Path) -> None:
    sidecar = next(
        c
        for c in find(rendered(OVERLAY), "Deployment", LOAD_AWARE_SCHEDULER)["spec"]["template"]["spec"]["containers"]
        if c["name"] == "extender"
    )
    args = list(sidecar["args"])
    assert args[args.index("--host") + 1] == "127.0.0.1"
    # The module's extender runs with the shipped --host; its verb port is bound to loopback alone.
    port = components.extender.port
    assert _listening(port) == {"127.0.0.1"}, _listening(port)
    # The shipped arguments with every address instead: refused before it connects to anything.
    args[args.index("--host") + 1] = "0.0.0.0"
    args[args.index("--policy") + 1] = str(components.workdir / "extender-policy.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "descheduler", *args, "--kubeconfig", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "--tls-cert-file" in said and "127.0.0.1" in said and "Traceback" not in said, said


@pytest.fixture
def sidecar_with_health_port(components: Components) -> Iterator[OurProcess]:
    """A second extender as the overlay runs it: verbs on loopback, health and metrics on their own port."""
    assert components.control_plane.certs is not None
    token = installed.token_kubeconfig(
        components.control_plane.kubeconfig,
        components.control_plane.certs.ca,
        components.workdir / "extender-health.kubeconfig",
        installed.EXTENDER,
    )
    policy = components.workdir / "extender-policy.yaml"
    process = extender_process(components.workdir, token, policy, installed.NAMESPACE, "extender-health", health=True)
    process.start()
    try:
        yield process
    finally:
        process.stop()


def test_the_health_port_answers_probes_and_metrics_and_no_verb(sidecar_with_health_port: OurProcess) -> None:
    process = sidecar_with_health_port
    assert process.health_port is not None
    health = process.health_port
    wait_until(lambda: _get(health, "/readyz") == 200, SLACK * STARTUP, "the health port's /readyz", process.tail)
    assert _get(health, "/healthz") == 200 and _get(health, "/metrics") == 200
    status, _ = _post(health, "bind", {"PodName": "p", "PodNamespace": "default", "PodUID": "", "Node": "n"})
    assert status == 404
    assert _listening(process.port) == {"127.0.0.1"}


def _get(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        reply = connection.getresponse()
        reply.read()
        return reply.status
    except OSError:
        return 0
    finally:
        connection.close()


def _pending_pod(name: str, scheduler: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            **spec,
        },
    }


def test_a_bind_no_filter_would_make_is_refused_and_the_pod_stays_unbound(
    components: Components, kube: KubeClient, namespace: str
) -> None:
    run = uuid.uuid4().hex[:5]
    tainted, cordoned, open_node = f"sec-tainted-{run}", f"sec-cordoned-{run}", f"sec-open-{run}"
    nodes = [tainted, cordoned, open_node]
    create_test_nodes(kube, nodes, run, cpu="4", memory="8Gi")
    merge_patch(
        kube,
        f"/api/v1/nodes/{tainted}",
        {"spec": {"taints": [{"key": "dedicated", "value": "secure", "effect": "NoSchedule"}]}},
    )
    cordon(kube, [cordoned])
    pods = f"/api/v1/namespaces/{namespace}/pods"
    host = "kubernetes.io/hostname"
    try:
        # Each pod can only go where it may not: kube-scheduler leaves it Pending.
        cases = {
            "victim": (LOAD_AWARE_SCHEDULER, {"nodeSelector": {host: tainted}}, tainted, "TaintNotTolerated",
                       "taint dedicated=secure:NoSchedule not tolerated"),
            "pinned": (LOAD_AWARE_SCHEDULER, {"nodeSelector": {host: tainted}}, open_node, "NodeAffinity",
                       f"nodeSelector {host}={tainted} does not match"),
            "affine": (LOAD_AWARE_SCHEDULER, {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": host, "operator": "In", "values": [cordoned]}]}]}}}},
                       open_node, "NodeAffinity", "required node affinity does not match"),
            "parked": (LOAD_AWARE_SCHEDULER, {"nodeSelector": {host: cordoned}}, cordoned, "BindNodeUnschedulable",
                       f"node {cordoned} is cordoned"),
            "stranger": ("no-such-scheduler", {}, open_node, "BindSchedulerNameNotServed",
                         "has schedulerName no-such-scheduler, which this extender does not serve"),
        }  # fmt: skip
        uids = {}
        for name, (scheduler, spec, _, _, _) in cases.items():
            uids[name] = create(kube, pods, _pending_pod(name, scheduler, spec))["metadata"]["uid"]
        for name, (_, _, node, reason, words) in cases.items():
            before = components.extender.metric("descheduler_extender_binds_refused_total", reason=reason) or 0.0
            body = {"PodName": name, "PodNamespace": namespace, "PodUID": uids[name], "Node": node}
            status, answer = _post(components.extender.port, "bind", body)
            assert status == 200 and words in answer["Error"], (name, answer)
            after = components.extender.metric("descheduler_extender_binds_refused_total", reason=reason)
            assert after == before + 1, (name, before, after)
        for name in cases:
            assert not kube.get_json(f"{pods}/{name}")["spec"].get("nodeName"), f"{name} was bound"
        warnings = [line for line in components.extender.text().splitlines() if "refused to bind pod" in line]
        assert len(warnings) >= len(cases)
        # A pod bound already (here by the real API's binding, as kube-scheduler would) is not bound again.
        create(kube, pods, _pending_pod("settled", "no-such-scheduler", {}))
        create(kube, f"{pods}/settled/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "settled"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": open_node},
        })  # fmt: skip
        status, answer = _post(
            components.extender.port,
            "bind",
            {"PodName": "settled", "PodNamespace": namespace, "PodUID": "", "Node": tainted},
        )
        assert f"is already bound to node {open_node}" in answer["Error"], answer
        assert kube.get_json(f"{pods}/settled")["spec"]["nodeName"] == open_node
    finally:
        for name in ("victim", "pinned", "affine", "parked", "stranger", "settled"):
            delete_quietly(kube, f"{pods}/{name}", {"gracePeriodSeconds": 0})
        for node in nodes:
            delete_quietly(kube, f"/api/v1/nodes/{node}")
