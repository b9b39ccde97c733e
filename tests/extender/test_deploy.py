"""deploy/overlays/with-scheduler: a second kube-scheduler with the extender as its sidecar on loopback;
deploy/overlays/extender-mtls: the extender alone, reached over mutual TLS.

The KubeSchedulerConfiguration is checked against the field names of kubescheduler.config.k8s.io/v1
(kubernetes/kubernetes staging/src/k8s.io/kube-scheduler/config/v1/types.go, json tags), since
kube-scheduler decodes it strictly; the extender's RBAC against the calls its code makes.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from descheduler.cli import app
from descheduler.extender.server import DEFAULT_PORT
from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE
from tests.deploy.deploy_support import DEPLOY, find, rendered
from tests.deploy.rbac import KUBE_SCHEDULER_ROLES, grants_for, rbac_covers, unused_permissions

OVERLAY = DEPLOY / "overlays" / "with-scheduler"
MTLS = DEPLOY / "overlays" / "extender-mtls"
NAMESPACE = "descheduler-system"
SCHEDULER = "load-aware-scheduler"

# KubeSchedulerConfiguration v1 json fields (types.go): the top level, a profile, an extender.
CONFIGURATION_FIELDS = {
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "healthzBindAddress",
    "metricsBindAddress", "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive",
}  # fmt: skip
PROFILE_FIELDS = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
EXTENDER_FIELDS = {
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
    "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
}  # fmt: skip
LEADER_ELECTION_FIELDS = {
    "leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock", "resourceName",
    "resourceNamespace",
}  # fmt: skip


def _objects() -> tuple[dict[str, Any], ...]:
    return rendered(OVERLAY)


def _configuration() -> dict[str, Any]:
    configmap = find(_objects(), "ConfigMap", f"{SCHEDULER}-config")
    config: dict[str, Any] = yaml.safe_load(configmap["data"]["config.yaml"])
    return config


def _container(deployment: str, name: str, objects: tuple[dict[str, Any], ...] | None = None) -> dict[str, Any]:
    pod = find(objects or _objects(), "Deployment", deployment)["spec"]["template"]["spec"]
    container: dict[str, Any] = next(c for c in pod["containers"] if c["name"] == name)
    return container


def _extender_params(container: dict[str, Any]) -> dict[str, Any]:
    """The container's `descheduler extender` flags, parsed as the CLI parses them."""
    args = container["args"]
    assert args[0] == "extender"
    command: Any = typer.main.get_command(app)
    params: dict[str, Any] = command.commands["extender"].make_context("extender", list(args[1:])).params
    return params


def test_the_overlay_is_the_base_plus_the_scheduler_side() -> None:
    kinds = {(o["kind"], o["metadata"]["name"]) for o in _objects()}
    assert {("Deployment", "descheduler"), ("ConfigMap", "descheduler-policy")} <= kinds
    assert {
        ("Deployment", SCHEDULER),
        ("ConfigMap", f"{SCHEDULER}-config"),
        ("Service", "descheduler-extender"),
    } <= kinds
    assert ("Deployment", "descheduler-extender") not in kinds  # the extender is the scheduler's sidecar
    spec = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    assert "../../base" in spec["resources"]


def test_the_scheduler_is_the_pinned_upstream_image_reading_the_configuration() -> None:
    container = _container(SCHEDULER, "kube-scheduler")
    assert re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v1\.31\.\d+", container["image"])
    [config_flag] = [a for a in container["command"] if a.startswith("--config=")]
    path = config_flag.removeprefix("--config=")
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert posixpath.dirname(path) == mount["mountPath"] and posixpath.basename(path) == "config.yaml"
    pod = find(_objects(), "Deployment", SCHEDULER)["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == f"{SCHEDULER}-config"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}


def test_the_configuration_is_valid_kubescheduler_config_v1() -> None:
    config = _configuration()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert set(config) <= CONFIGURATION_FIELDS
    assert set(config["leaderElection"]) <= LEADER_ELECTION_FIELDS
    for profile in config["profiles"]:
        assert set(profile) <= PROFILE_FIELDS
    for extender in config["extenders"]:
        assert set(extender) <= EXTENDER_FIELDS


def test_the_profile_calls_its_own_sidecar_on_loopback() -> None:
    config = _configuration()
    assert [p["schedulerName"] for p in config["profiles"]] == [SCHEDULER]
    [extender] = config["extenders"]
    params = _extender_params(_container(SCHEDULER, "extender"))
    assert params["host"] == "127.0.0.1" and not params["insecure_listen"]
    assert extender["urlPrefix"] == f"http://127.0.0.1:{params['port']}"
    # The server answers POST <prefix>/filter, /prioritize and /bind; it holds a node cache.
    verbs = (extender["filterVerb"], extender["prioritizeVerb"], extender["bindVerb"])
    assert verbs == ("filter", "prioritize", "bind")
    # Not ignorable: skipped, it would let replacements land, and be bound, with no Reservation taken.
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is False
    assert isinstance(extender["weight"], int) and extender["weight"] > 0
    assert "preemptVerb" not in extender and "managedResources" not in extender


def test_only_health_and_metrics_are_exposed_beyond_the_pod() -> None:
    container = _container(SCHEDULER, "extender")
    params = _extender_params(container)
    port, health = int(params["port"]), int(params["health_port"])
    assert port == DEFAULT_PORT and health not in (0, port)
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": health}
    service = find(_objects(), "Service", "descheduler-extender")
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(health, "metrics")]
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": SCHEDULER}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    # The same policy as the descheduler: the base's ConfigMap, mounted where --policy points.
    policy = Path(params["policy"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == "policy")
    assert str(policy.parent) == mount["mountPath"]
    pod = find(_objects(), "Deployment", SCHEDULER)["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "policy")
    configmap = find(_objects(), "ConfigMap", volume["configMap"]["name"])
    assert policy.name in configmap["data"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["image"] == _container("descheduler", "descheduler")["image"]


def test_the_extender_renews_the_lease_the_controller_reads_and_announces_the_profile_that_calls_it() -> None:
    command: Any = typer.main.get_command(app)
    extender = _extender_params(_container(SCHEDULER, "extender"))
    controller_args = _container("descheduler", "descheduler")["args"]
    assert controller_args[0] == "run"
    controller = command.commands["run"].make_context("run", list(controller_args[1:]))
    lease = f"{SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}"
    assert extender["scheduler_lease"] == controller.params["scheduler_lease"] == lease
    profiles = [p["schedulerName"] for p in _configuration()["profiles"]]
    assert extender["scheduler_names"] == profiles == [SCHEDULER]


def test_the_scheduler_account_has_the_upstream_roles_and_its_own_lease() -> None:
    objects = _objects()
    bound = {
        (b["kind"], b["metadata"].get("namespace", ""), b["roleRef"]["kind"], b["roleRef"]["name"])
        for b in objects
        if b["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and {"kind": "ServiceAccount", "name": SCHEDULER, "namespace": NAMESPACE} in b["subjects"]
    }
    assert bound == {
        ("ClusterRoleBinding", "", "ClusterRole", "system:kube-scheduler"),
        ("ClusterRoleBinding", "", "ClusterRole", "system:volume-scheduler"),
        ("RoleBinding", "kube-system", "Role", "extension-apiserver-authentication-reader"),
        ("RoleBinding", NAMESPACE, "Role", f"{SCHEDULER}-leader-election"),
        # The extender's roles: it runs in the scheduler's pod, under the scheduler's account.
        ("ClusterRoleBinding", "", "ClusterRole", "descheduler-extender"),
        ("RoleBinding", NAMESPACE, "Role", "descheduler-extender-lease"),
    }
    election = _configuration()["leaderElection"]
    assert election["leaderElect"] is True and election["resourceLock"] == "leases"
    role = find(objects, "Role", f"{SCHEDULER}-leader-election")
    assert role["metadata"]["namespace"] == election["resourceNamespace"]
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named and all(r["resourceNames"] == [election["resourceName"]] for r in named)
    pod = find(objects, "Deployment", SCHEDULER)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SCHEDULER


@pytest.fixture(scope="module")
def extender_accesses(tmp_path_factory: pytest.TempPathFactory) -> set[Any]:
    from tests.deploy.exercises import extender_scheduler_side, extender_source

    return extender_source(tmp_path_factory.mktemp("extender-rbac")) | extender_scheduler_side(
        tmp_path_factory.mktemp("extender-scheduler-side")
    )


@pytest.mark.parametrize(
    ("overlay", "account"), [(OVERLAY, SCHEDULER), (MTLS, "descheduler-extender")], ids=["sidecar", "mtls"]
)
def test_the_extender_account_may_make_every_call_the_extender_makes_and_no_other(
    extender_accesses: set[Any], overlay: Path, account: str
) -> None:
    grants = grants_for(rendered(overlay), NAMESPACE, account, outside=KUBE_SCHEDULER_ROLES)
    assert rbac_covers(grants, extender_accesses) == []
    assert [str(p) for p in unused_permissions(grants, extender_accesses)] == []
    # Writes: Reservation status, pods/binding, and its own Lease in its own namespace only.
    writes = {
        (resource, verb, g.namespace or "", names)
        for g in grants
        if not g.default
        for verb in set(g.rule.verbs) - {"get", "list", "watch"}
        for resource in g.rule.resources
        for names in [",".join(g.rule.resource_names)]
    }
    assert writes == {
        ("reservations/status", "update", "", ""),
        ("pods/binding", "create", "", ""),
        ("leases", "create", NAMESPACE, ""),
        ("leases", "update", NAMESPACE, "descheduler-scheduler"),
    }


def test_the_mtls_extender_serves_https_with_client_certificates_from_the_secret_and_only_the_scheduler_reaches_it() -> (
    None
):
    objects = rendered(MTLS)
    container = _container("descheduler-extender", "extender", objects)
    params = _extender_params(container)
    assert params["host"] == "0.0.0.0" and not params["insecure_listen"]
    tls = next(m for m in container["volumeMounts"] if m["name"] == "tls")["mountPath"]
    assert (params["tls_cert_file"], params["tls_private_key_file"], params["client_ca_file"]) == (
        Path(f"{tls}/tls.crt"),
        Path(f"{tls}/tls.key"),
        Path(f"{tls}/ca.crt"),
    )
    pod = find(objects, "Deployment", "descheduler-extender")["spec"]["template"]["spec"]
    assert next(v for v in pod["volumes"] if v["name"] == "tls")["secret"]["secretName"] == "descheduler-extender-tls"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": int(params["port"]), "metrics": int(params["health_port"])}
    assert container["readinessProbe"]["httpGet"]["port"] == "metrics"
    policy = find(objects, "NetworkPolicy", "descheduler-extender")["spec"]
    assert policy["podSelector"]["matchLabels"] == pod_labels(objects)
    [verbs, metrics] = policy["ingress"]
    assert [p["port"] for p in verbs["ports"]] == ["https"] and verbs["from"]
    assert [p["port"] for p in metrics["ports"]] == ["metrics"] and "from" not in metrics


def pod_labels(objects: tuple[dict[str, Any], ...]) -> dict[str, str]:
    labels: dict[str, str] = find(objects, "Deployment", "descheduler-extender")["spec"]["template"]["metadata"][
        "labels"
    ]
    return labels
