"""`descheduler plan --kubeconfig` and `descheduler snapshot save` against a simulated cluster, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from kube_support import node, pod

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario
from descheduler.kube import KubeClient
from descheduler.kube.live import REDACTED, _redact_env, _redacted_pod_spec, save_snapshot
from descheduler.policy import default_policy
from descheduler.snapshot import SNAPSHOT_TIME_ANNOTATION, load_snapshot

NODE_METRIC_POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
loadSource: {type: nodeMetric}
strategies:
  - name: LowNodeLoad
    args:
      lowThresholds: {cpu: 30, memory: 30}
      highThresholds: {cpu: 60, memory: 60}
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "descheduler", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimulatedCluster, Path, str]]:
    """The demo scenario on a simulated cluster, five minutes in (metrics published), and its kubeconfig."""
    with SimulatedCluster(load_demo_scenario()) as sim:
        sim.advance(300)
        config = sim.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")
        now = datetime.fromtimestamp(sim.now, UTC).isoformat().replace("+00:00", "Z")
        yield sim, config, now


@pytest.mark.parametrize("load_source", ["metricsServer", "nodeMetric"])
def test_plan_on_the_cluster_equals_plan_on_its_saved_snapshot(
    cluster: tuple[SimulatedCluster, Path, str], tmp_path: Path, load_source: str
) -> None:
    _, config, now = cluster
    policy: list[str] = []
    if load_source == "nodeMetric":
        (tmp_path / "policy.yaml").write_text(NODE_METRIC_POLICY)
        policy = ["--policy", str(tmp_path / "policy.yaml")]
    live = run("plan", "--kubeconfig", str(config), "--context", "fake", "--now", now, "-o", "json", *policy)
    assert live.returncode == 0, live.stderr
    saved = run("snapshot", "save", str(tmp_path / "cluster.yaml"), "--kubeconfig", str(config), *policy)
    assert saved.returncode == 0, saved.stderr
    replay = run("plan", "--snapshot", str(tmp_path / "cluster.yaml"), "--now", now, "-o", "json", *policy)
    assert replay.returncode == 0, replay.stderr
    live_plan, replayed_plan = json.loads(live.stdout), json.loads(replay.stdout)
    assert live_plan["migrations"], "the demo cluster has hot nodes: the comparison must cover real moves"
    assert live_plan == replayed_plan


def test_a_saved_snapshot_is_a_list_stamped_with_the_time_it_was_read(
    cluster: tuple[SimulatedCluster, Path, str], tmp_path: Path
) -> None:
    _, config, _ = cluster
    path = tmp_path / "cluster.json"
    result = run("snapshot", "save", str(path), "--kubeconfig", str(config))
    assert result.returncode == 0, result.stderr
    document = json.loads(path.read_text())
    assert document["kind"] == "List"
    stamp = document["metadata"]["annotations"][SNAPSHOT_TIME_ANNOTATION]
    kinds = {item["kind"] for item in document["items"]}
    assert {"Node", "Pod", "Namespace", "ReplicaSet", "NodeMetrics", "PodMetrics"} <= kinds
    assert all(item.get("apiVersion") for item in document["items"])
    # Replayed without --now, the snapshot is evaluated at the moment it was read.
    assert load_snapshot(path).now == datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert f"{path}: " in result.stderr and "Pod" in result.stderr


def test_plan_exits_2_when_the_cluster_does_not_answer(tmp_path: Path) -> None:
    server = FakeApiServer()  # never started: nothing listens on its port
    server._port = _free_port()
    config = server.write_kubeconfig(tmp_path / "config")
    result = run("plan", "--kubeconfig", str(config), "-o", "json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "cannot reach the cluster" in result.stderr and "does not answer" in result.stderr


def test_plan_exits_2_and_plans_nothing_when_the_load_source_fails(
    cluster: tuple[SimulatedCluster, Path, str],
) -> None:
    sim, config, now = cluster
    sim.server.faults.fail_next(1000, path="^/apis/metrics.k8s.io/", status=503, message="metrics-server is down")
    try:
        result = run("plan", "--kubeconfig", str(config), "--now", now, "-o", "json")
    finally:
        sim.server.faults.clear()
    assert result.returncode == 2
    assert result.stdout == ""
    assert "metrics.k8s.io is unavailable (503" in result.stderr


def test_plan_exits_2_at_once_when_listing_is_forbidden(cluster: tuple[SimulatedCluster, Path, str]) -> None:
    sim, config, now = cluster
    message = 'pods is forbidden: User "system:serviceaccount:x:y" cannot list resource "pods"'
    sim.server.faults.fail_next(1000, path="^/api/v1/pods$", status=403, message=message)
    try:
        started = time.monotonic()
        result = run("plan", "--kubeconfig", str(config), "--now", now)
        elapsed = time.monotonic() - started
    finally:
        sim.server.faults.clear()
    assert result.returncode == 2 and result.stdout == ""
    assert "refused to list: pods: GET /api/v1/pods: 403 Forbidden: pods is forbidden" in result.stderr
    assert elapsed < 30  # not the 60 s sync timeout


def test_plan_names_an_unknown_context(cluster: tuple[SimulatedCluster, Path, str]) -> None:
    _, config, _ = cluster
    result = run("plan", "--kubeconfig", str(config), "--context", "prod")
    assert result.returncode == 1
    assert "no context 'prod' in this kubeconfig (contexts: fake)" in result.stderr


def test_plan_takes_one_source_only(cluster: tuple[SimulatedCluster, Path, str]) -> None:
    _, config, _ = cluster
    result = run("plan", "--demo", "--kubeconfig", str(config))
    assert result.returncode == 1
    assert "give exactly one of --snapshot PATH, --demo, or --kubeconfig" in result.stderr


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- what the file holds


def _pod_with_secrets() -> dict[str, Any]:
    manifest = pod("app", node="n1")
    manifest["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": '{"env": "PASSWORD=hunter2"}',
        "descheduler.alpha.kubernetes.io/evict": "true",
    }
    manifest["spec"]["containers"][0]["env"] = [
        {"name": "PASSWORD", "value": "hunter2"},
        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    ]
    return manifest


def test_saved_snapshot_redacts_env_values_and_the_last_applied_manifest(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        server.store.load([node("n1"), _pod_with_secrets(), pod("orphan", node="gone")])
        kube = KubeClient(server.configuration(), qps=0, burst=0)
        try:
            saved = save_snapshot(kube, default_policy(), tmp_path / "s.yaml", datetime(2026, 1, 15, tzinfo=UTC))
        finally:
            kube.close()
    text = (tmp_path / "s.yaml").read_text()
    assert "hunter2" not in text
    items = yaml.safe_load(text)["items"]
    [app] = [i for i in items if i["kind"] == "Pod"]
    assert app["spec"]["containers"][0]["env"] == [
        {"name": "PASSWORD", "value": REDACTED},
        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    ]
    assert app["metadata"]["annotations"] == {"descheduler.alpha.kubernetes.io/evict": "true"}
    # The pod on a node that does not exist is left out (the file must load), and said so.
    assert saved.counts["Pod"] == 1
    assert saved.warnings == ("1 pod(s) bound to nodes that do not exist (e.g. default/orphan on gone): left out",)
    assert [p.name for p in load_snapshot(tmp_path / "s.yaml").pods] == ["app"]


def _pod_with_shared_env(name: str, node_name: str) -> dict[str, Any]:
    """A pod of one workload (the containers' text is the same for every replica) with env values
    in all three container lists, and its node."""
    manifest = pod(name, node=node_name)
    spec = manifest["spec"]
    spec["containers"][0]["env"] = [{"name": "TOKEN", "value": "a&b"}, {"name": "MODE", "value": "x"}]
    spec["initContainers"] = [{"name": "init", "image": "busybox", "env": [{"name": "INIT", "value": "1"}]}]
    spec["ephemeralContainers"] = [{"name": "debug", "image": "busybox", "env": [{"name": "DBG", "value": "y"}]}]
    spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    return manifest


def test_a_saved_pod_spec_is_the_api_s_spec_with_every_env_value_redacted(tmp_path: Path) -> None:
    """Byte for byte what decoding the whole spec, redacting it and encoding it again gives, so the
    files equal those written before container lists were redacted once per distinct text."""
    manifests = [_pod_with_shared_env(f"app-{i}", f"n{i % 2}") for i in range(3)]
    with FakeApiServer() as server:
        server.store.load([node("n0"), node("n1"), *manifests])
        kube = KubeClient(server.configuration(), qps=0, burst=0)
        try:
            listed = msgspec.json.decode(kube.request("GET", "/api/v1/pods"))["items"]
            save_snapshot(kube, default_policy(), tmp_path / "s.json", datetime(2026, 1, 15, tzinfo=UTC))
        finally:
            kube.close()
    lines = (tmp_path / "s.json").read_bytes().splitlines()[1:-1]
    written = {
        o.metadata.name: bytes(o.spec)
        for o in (msgspec.json.decode(line.rstrip(b","), type=_WrittenObject) for line in lines)
        if o.kind == "Pod"
    }
    assert b"a&b" not in (tmp_path / "s.json").read_bytes()
    assert len(written) == len(listed) == 3
    for served in listed:
        name, spec = served["metadata"]["name"], served["spec"]
        for group in ("containers", "initContainers", "ephemeralContainers"):
            for env in spec[group][0]["env"]:
                env["value"] = REDACTED
        assert written[name] == msgspec.json.encode(spec)


class _WrittenMeta(msgspec.Struct):
    name: str = ""


class _WrittenObject(msgspec.Struct):
    kind: str
    metadata: _WrittenMeta
    spec: msgspec.Raw = msgspec.Raw(b"")


@pytest.mark.parametrize(
    "containers",
    [
        [{"name": "a", "env": [{"name": "X", "value": "s"}, {"name": "Y", "valueFrom": {}}, {"name": "Z"}]}],
        [{"name": "a", "env": []}, {"name": "b", "env": [{"name": "X", "value": None}]}],
        [{"name": "a", "env": None}],  # not a list: read as plain data
        [{"name": "a", "env": ["X=s"]}],
        ["not a container"],
        {"not": "a list"},
    ],
)
def test_container_env_values_are_redacted_as_plain_data_would_be(containers: Any) -> None:
    _assert_redacted_as_plain_data({"containers": containers, "nodeName": "n1"})


@pytest.mark.parametrize(
    "containers",
    [
        # "env": inside a string value is escaped, so it is never taken for the key
        [{"name": "a", "args": ['"env":[{"value":"x"}]', "env"], "env": [{"name": "X", "value": "s"}]}],
        # the key inside another field: more "env": texts than env lists, so each container is decoded
        [{"name": "a", "resources": {"env": [{"value": "keep"}]}, "env": [{"name": "X", "value": "s"}]}],
        [{"name": "a"}, {"name": "b", "env": [{"name": "X", "value": "s"}]}, {"name": "c", "env": []}],
    ],
)
def test_only_the_env_lists_are_replaced_in_the_api_s_text(containers: Any) -> None:
    """The env lists are replaced where they stand; everything else passes byte for byte."""
    _assert_redacted_as_plain_data({"containers": containers})


@pytest.mark.parametrize(
    "spec",
    [
        # the groups in either order, one env list the same text in both
        {
            "initContainers": [{"name": "i", "env": [{"name": "X", "value": "s"}]}],
            "containers": [{"name": "a", "env": [{"name": "Y", "value": "t"}]}, {"name": "b", "env": []}],
            "ephemeralContainers": [{"name": "e", "env": [{"name": "X", "value": "s"}]}],
        },
        {
            "containers": [{"name": "a", "env": [{"name": "Y", "value": "t"}]}],
            "initContainers": [{"name": "i", "env": [{"name": "X", "value": "s"}]}],
        },
        # an env list that is not a list of objects, and specs not of a pod's shape: as plain data
        {"containers": [{"name": "a", "env": None}, {"name": "b", "env": [{"name": "X", "value": "s"}]}]},
        {"containers": [{"name": "a", "env": ["X=s"]}], "nodeName": 7},
        {"containers": "none", "nodeName": "n1"},
        ["not", "a", "spec"],
        None,
    ],
)
def test_pod_specs_of_every_shape_lose_their_env_values_and_keep_their_node(spec: Any) -> None:
    _assert_redacted_as_plain_data(spec)


def _assert_redacted_as_plain_data(spec: Any) -> None:
    text = msgspec.json.encode(spec)
    expected = msgspec.json.decode(text)
    _redact_env(expected)
    got, node = _redacted_pod_spec(text)
    assert bytes(got) == msgspec.json.encode(expected)
    wanted = spec.get("nodeName") if isinstance(spec, dict) else None
    assert node == (wanted if isinstance(wanted, str) else "")


def test_a_spaced_container_list_keeps_its_spaces_and_loses_its_env_values() -> None:
    text = b'{"containers": [ {"name": "a", "image": "x",  "env":[{"name":"X","value":"s"}] } ]}'
    got, _ = _redacted_pod_spec(text)
    redacted = b'"env":[{"name":"X","value":"' + REDACTED.encode() + b'"}]'
    assert bytes(got) == b'{"containers": [ {"name": "a", "image": "x",  ' + redacted + b" } ]}"


def test_an_env_key_spaced_from_its_colon_is_still_redacted() -> None:
    got, node = _redacted_pod_spec(b'{"nodeName":"n1","containers":[{"name":"a","env" : [{"name":"X","value":"s"}]}]}')
    assert msgspec.json.decode(got) == {
        "nodeName": "n1",
        "containers": [{"name": "a", "env": [{"name": "X", "value": REDACTED}]}],
    }
    assert node == "n1"


@pytest.mark.parametrize("suffix", ["json", "yaml"])
@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"])
def test_saved_workloads_carry_no_env_values_of_their_pod_templates(tmp_path: Path, kind: str, suffix: str) -> None:
    """A workload's pod template holds the same env values its pods do: they are redacted alike."""
    template = _pod_with_shared_env("template", "n1")
    template["spec"].pop("nodeName", None)
    template["spec"]["containers"][0]["env"].append({"name": "PASSWORD", "value": "hunter2"})
    workload = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": "default", "uid": f"{kind}-web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    with FakeApiServer() as server:
        server.store.load([node("n1"), workload])
        kube = KubeClient(server.configuration(), qps=0, burst=0)
        try:
            saved = save_snapshot(kube, default_policy(), tmp_path / f"s.{suffix}", datetime(2026, 1, 15, tzinfo=UTC))
        finally:
            kube.close()
    assert saved.counts[kind] == 1
    text = (tmp_path / f"s.{suffix}").read_text()
    assert "hunter2" not in text and "a&b" not in text
    [item] = [i for i in (yaml.safe_load(text) if suffix == "yaml" else json.loads(text))["items"] if i["kind"] == kind]
    spec = item["spec"]["template"]["spec"]
    assert spec["containers"][0]["env"] == [
        {"name": "TOKEN", "value": REDACTED},
        {"name": "MODE", "value": REDACTED},
        {"name": "PASSWORD", "value": REDACTED},
    ]
    assert spec["initContainers"][0]["env"] == [{"name": "INIT", "value": REDACTED}]
    assert spec["ephemeralContainers"][0]["env"] == [{"name": "DBG", "value": REDACTED}]
    assert item["spec"]["replicas"] == 2 and item["spec"]["selector"] == {"matchLabels": {"app": "web"}}


# ---------------------------------------------------------------- the scheduler Lease and landings

LEASE_PATH = "^/apis/coordination.k8s.io/v1/namespaces/descheduler-system/leases/descheduler-scheduler$"


def _plans(config: Path, now: str, path: Path, *flags: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """`plan --kubeconfig`, `snapshot save` then `plan --snapshot` of it: the two plans and save's stderr."""
    live = run("plan", "--kubeconfig", str(config), "--context", "fake", "--now", now, "-o", "json", *flags)
    assert live.returncode == 0, live.stderr
    saved = run("snapshot", "save", str(path), "--kubeconfig", str(config), *flags)
    assert saved.returncode == 0, saved.stderr
    replay = run("plan", "--snapshot", str(path), "--now", now, "-o", "json")
    assert replay.returncode == 0, replay.stderr
    return json.loads(live.stdout), json.loads(replay.stdout), saved.stderr


def test_moves_on_the_cluster_land_as_its_scheduler_lease_says(
    cluster: tuple[SimulatedCluster, Path, str], tmp_path: Path
) -> None:
    """The simulated scheduler renews the Lease and serves the demo's pods: every move gets a Reservation."""
    _, config, now = cluster
    live, replayed, _ = _plans(config, now, tmp_path / "cluster.json.gz")
    assert live["migrations"] and {m["mode"] for m in live["migrations"]} == {"ReservationFirst"}
    assert {m.get("landing") for m in live["migrations"]} == {"Reservation"}
    assert live == replayed


def test_a_scheduler_lease_that_does_not_exist_sends_moves_steered(
    cluster: tuple[SimulatedCluster, Path, str], tmp_path: Path
) -> None:
    _, config, now = cluster
    live, replayed, _ = _plans(config, now, tmp_path / "cluster.json", "--scheduler-lease", "descheduler-system/nope")
    assert {m.get("landing") for m in live["migrations"]} == {"Steered"}
    assert any("no Lease descheduler-system/nope" in w for w in live["warnings"]), live["warnings"]
    assert live == replayed
    document = json.loads((tmp_path / "cluster.json").read_text())
    assert document["metadata"]["annotations"]["descheduler.dev/scheduler-lease"] == "descheduler-system/nope"
    assert "Lease" not in {item["kind"] for item in document["items"]}


def test_a_saved_snapshot_holds_the_scheduler_lease_and_names_it(
    cluster: tuple[SimulatedCluster, Path, str], tmp_path: Path
) -> None:
    _, config, _ = cluster
    path = tmp_path / "cluster.json"
    result = run("snapshot", "save", str(path), "--kubeconfig", str(config))
    assert result.returncode == 0, result.stderr
    document = json.loads(path.read_text())
    assert document["metadata"]["annotations"]["descheduler.dev/scheduler-lease"] == (
        "descheduler-system/descheduler-scheduler"
    )
    [lease] = [item for item in document["items"] if item["kind"] == "Lease"]
    assert lease["apiVersion"] == "coordination.k8s.io/v1"
    assert (lease["metadata"]["namespace"], lease["metadata"]["name"]) == (
        "descheduler-system",
        "descheduler-scheduler",
    )
    assert "managedFields" not in lease["metadata"] and lease["spec"]["renewTime"]
    assert "1 Lease" in result.stderr


def test_a_forbidden_scheduler_lease_leaves_landings_out_with_a_warning(
    cluster: tuple[SimulatedCluster, Path, str], tmp_path: Path
) -> None:
    sim, config, now = cluster
    message = 'leases.coordination.k8s.io "descheduler-scheduler" is forbidden: User "u" cannot get resource "leases"'
    sim.server.faults.fail_next(1000, path=LEASE_PATH, status=403, message=message)
    try:
        live, replayed, saved = _plans(config, now, tmp_path / "cluster.yaml")
    finally:
        sim.server.faults.clear()
    assert live["migrations"] and {m.get("landing") for m in live["migrations"]} == {None}
    [warning] = [w for w in live["warnings"] if "scheduler Lease" in w]
    assert warning.startswith("cannot read the scheduler Lease descheduler-system/descheduler-scheduler: GET ")
    assert "403 Forbidden" in warning and "left out" in warning
    assert "warning: cannot read the scheduler Lease" in saved
    assert live == replayed  # the file records why, and the replayed plan says so too


def test_plan_names_a_malformed_scheduler_lease(cluster: tuple[SimulatedCluster, Path, str]) -> None:
    _, config, _ = cluster
    result = run("plan", "--kubeconfig", str(config), "--scheduler-lease", "a/b/c")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "--scheduler-lease" in result.stderr and "expected NAMESPACE/NAME" in result.stderr
