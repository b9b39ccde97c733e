"""deploy/ validated offline: every manifest file and every rendered kustomization, strictly, for the
Kubernetes versions we support; custom resources against their CRDs; policies against their schema;
and the Deployment wired the way the process expects (args, probes, policy mount, security)."""

from __future__ import annotations

import copy
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE
from descheduler.policy import Policy, parse_policy

from .deploy_support import (
    BASE,
    DEPLOY,
    FIXTURES,
    KUBERNETES_VERSIONS,
    NAMESPACE,
    ROOT,
    controller_targets,
    deploy_targets,
    find,
    rendered,
    target_id,
)
from .kustomize import CLUSTER_SCOPED, KUSTOMIZATION_FILES, iter_kustomizations
from .policy_copies import expected_copies
from .validation import InvalidObject, crd_schemas, validate_object, validate_policy

CRD_DIR = BASE / "crds"
POLICY_ARG = "/etc/descheduler/policy.yaml"


def _crd_files() -> list[Path]:
    return [f for f in sorted(CRD_DIR.glob("*.yaml")) if f.name not in KUSTOMIZATION_FILES]


def _crds() -> list[dict[str, Any]]:
    return [d for f in _crd_files() for d in yaml.safe_load_all(f.read_text()) if d]


def _schemas() -> dict[tuple[str, str], tuple[dict[str, Any], str]]:
    return crd_schemas(_crds())


def _manifest_files() -> list[Path]:
    """Every YAML file under deploy/ that holds Kubernetes objects (not kustomizations, not policies)."""
    return [
        f
        for f in sorted(DEPLOY.rglob("*.yaml"))
        if f.name not in KUSTOMIZATION_FILES and f.name != "policy.yaml" and not _is_patch(f)
    ]


def _is_patch(path: Path) -> bool:
    """Files a kustomization uses as patches hold partial objects; they are checked through the output."""
    for kustomization in path.parent.glob("kustomization.y*ml"):
        spec = yaml.safe_load(kustomization.read_text()) or {}
        if any(p.get("path") == path.name for p in spec.get("patches") or []):
            return True
    return False


def _pod(objects: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    template: dict[str, Any] = find(objects, "Deployment", "descheduler")["spec"]["template"]
    return template


def _container(objects: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    containers = _pod(objects)["spec"]["containers"]
    container: dict[str, Any] = next(c for c in containers if c["name"] == "descheduler")
    return container


# ---------------------------------------------------------------------- schema validation


@pytest.mark.parametrize("directory", deploy_targets(), ids=target_id)
def test_every_rendered_object_validates_strictly(directory: Path) -> None:
    objects = rendered(directory)
    assert objects
    schemas = crd_schemas(o for o in objects if o["kind"] == "CustomResourceDefinition")
    for obj in objects:
        validate_object(obj, KUBERNETES_VERSIONS, schemas)


@pytest.mark.parametrize("path", _manifest_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_manifest_file_validates_strictly(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs, f"{path} holds no object"
    schemas = _schemas()
    for doc in docs:
        validate_object(doc, KUBERNETES_VERSIONS, schemas)


def test_the_base_includes_every_crd_file() -> None:
    spec = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    listed = {r for r in spec["resources"] if r.startswith("crds/")}
    assert listed == {f"crds/{f.name}" for f in _crd_files()}
    assert listed == {"crds/descheduler.dev_podmigrationjobs.yaml", "crds/descheduler.dev_reservations.yaml"}


def test_the_crds_define_our_two_cluster_scoped_kinds() -> None:
    crds = _crds()
    kinds = {(c["spec"]["group"], c["spec"]["names"]["kind"], c["spec"]["scope"]) for c in crds}
    assert kinds == {
        ("descheduler.dev", "PodMigrationJob", "Cluster"),
        ("descheduler.dev", "Reservation", "Cluster"),
    }
    rendered_names = {o["metadata"]["name"] for o in rendered(BASE) if o["kind"] == "CustomResourceDefinition"}
    assert rendered_names == {c["metadata"]["name"] for c in crds}


def test_the_validator_rejects_unknown_fields_and_bad_types() -> None:
    deployment = copy.deepcopy(find(rendered(BASE), "Deployment", "descheduler"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(InvalidObject, match="securityContex"):
        validate_object(deployment, KUBERNETES_VERSIONS, {})
    service = copy.deepcopy(find(rendered(BASE), "Service"))
    service["spec"]["ports"][0]["port"] = "eighty"
    with pytest.raises(InvalidObject, match=r"spec\.ports\.0\.port"):
        validate_object(service, KUBERNETES_VERSIONS, {})


def test_the_validator_rejects_unknown_kinds_and_bad_service_monitors() -> None:
    with pytest.raises(InvalidObject, match="no schema"):
        validate_object({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, ["1.31"], {})
    monitor = copy.deepcopy(find(rendered(DEPLOY / "overlays" / "monitoring"), "ServiceMonitor", "descheduler"))
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(InvalidObject, match="intervall"):
        validate_object(monitor, KUBERNETES_VERSIONS, {})


def test_the_validator_checks_custom_resources_against_their_crd() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {
                                        "size": {"x-kubernetes-int-or-string": True},
                                        "note": {"type": "string", "nullable": True},
                                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    validate_object(crd, KUBERNETES_VERSIONS, {})
    schemas = crd_schemas([crd])

    def widget(spec: dict[str, Any], **meta: str) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", **meta}, "spec": spec}

    validate_object(widget({"size": "10%", "note": None, "extra": {"anything": 1}}), ["1.31"], schemas)
    validate_object(widget({"size": 3}), ["1.31"], schemas)
    for bad, message in [
        (widget({"size": 1, "colour": "red"}), "colour"),
        (widget({}), "'size' is a required property"),
        (widget({"size": 1.5}), "spec.size"),
        (widget({"size": 1}, namespace="ns"), "cluster-scoped"),
        (widget({"size": 1}, nam="x"), "nam"),
    ]:
        with pytest.raises(InvalidObject, match=message):
            validate_object(bad, ["1.31"], schemas)


def test_the_objects_the_migration_code_writes_match_the_crds() -> None:
    """What the code writes must fit the CRDs: the API server would drop unknown fields silently."""
    from tests.migration.conftest import RESERVATIONS

    from .exercises import migration_harness

    schemas = _schemas()
    seen: list[dict[str, Any]] = []
    with migration_harness() as (harness, terminal):
        [name] = harness.submit(harness.plan_move("web-0", "node-c"))
        seen.append(harness.job(name))

        def done() -> bool:
            seen.extend(harness.cluster.store.list(RESERVATIONS))
            return harness.phase(name) in terminal

        harness.run(harness.controller(), 60, until=done)
        seen.append(harness.job(name))
    assert {o["kind"] for o in seen} == {"PodMigrationJob", "Reservation"}
    assert seen[-1]["status"]["phase"] == "Succeeded" and seen[-1]["status"]["newPodRef"]
    for obj in seen:
        validate_object(obj, KUBERNETES_VERSIONS, schemas)


# ---------------------------------------------------------------------- policies


def _policy_files() -> list[Path]:
    return [
        ROOT / "config" / "policy.yaml",
        *sorted((ROOT / "config" / "examples").glob("*.yaml")),
        *sorted(DEPLOY.rglob("policy.yaml")),
    ]


@pytest.mark.parametrize("path", _policy_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_policy_file_validates_against_the_models_and_the_schema(path: Path) -> None:
    text = path.read_text()
    parse_policy(text, str(path))
    validate_policy(yaml.safe_load(text), str(path))


def test_the_schema_check_can_fail() -> None:
    doc = yaml.safe_load((ROOT / "config" / "policy.yaml").read_text())
    doc["interval"] = [60]
    doc["dryRunn"] = True
    with pytest.raises(InvalidObject, match="dryRunn"):
        validate_policy(doc, "bad.yaml")


def test_the_policy_copies_under_deploy_are_in_step_with_config_policy_yaml() -> None:
    for path, text in expected_copies().items():
        assert path.read_text() == text, (
            f"{path.relative_to(ROOT)} is out of step with config/policy.yaml; "
            "run `.venv/bin/python -m tests.deploy.policy_copies`"
        )


@pytest.mark.parametrize("directory", controller_targets(), ids=target_id)
def test_the_rendered_policy_configmap_is_the_policy_the_deployment_reads(directory: Path) -> None:
    objects = rendered(directory)
    volume = next(v for v in _pod(objects)["spec"]["volumes"] if v["name"] == "policy")
    configmap = find(objects, "ConfigMap", volume["configMap"]["name"])
    assert configmap["metadata"]["namespace"] == NAMESPACE
    filename = posixpath.basename(POLICY_ARG)
    assert set(configmap["data"]) == {filename}
    policy = parse_policy(configmap["data"][filename], f"{target_id(directory)} ConfigMap")
    assert policy.dry_run is (directory.name == "dry-run")


# ---------------------------------------------------------------------- the make-before-break components

MAKE_BEFORE_BREAK = DEPLOY / "components" / "make-before-break"
MAKE_BEFORE_BREAK_FIXTURES = [
    FIXTURES / "kustomize" / name
    for name in ("make-before-break", "make-before-break-namespaced", "make-before-break-own-policy")
]


def _rendered_policy(directory: Path) -> Policy:
    configmap = find(rendered(directory), "ConfigMap", "descheduler-policy")
    return parse_policy(configmap["data"]["policy.yaml"], f"{target_id(directory)} ConfigMap")


@pytest.mark.parametrize("directory", MAKE_BEFORE_BREAK_FIXTURES, ids=target_id)
def test_the_base_with_a_make_before_break_component_validates_strictly(directory: Path) -> None:
    objects = rendered(directory)
    schemas = crd_schemas(o for o in objects if o["kind"] == "CustomResourceDefinition")
    for obj in objects:
        validate_object(obj, KUBERNETES_VERSIONS, schemas)


@pytest.mark.parametrize("directory", MAKE_BEFORE_BREAK_FIXTURES[:2], ids=target_id)
def test_the_make_before_break_components_turn_the_feature_on(directory: Path) -> None:
    policy = _rendered_policy(directory)
    assert policy.evictor.make_before_break.enabled and not policy.dry_run
    assert not _rendered_policy(BASE).evictor.make_before_break.enabled  # off without the component


def test_a_policy_of_ones_own_one_level_up_replaces_the_components() -> None:
    own = FIXTURES / "kustomize" / "make-before-break-own-policy"
    policy = _rendered_policy(own)
    assert policy.dry_run and policy.evictor.make_before_break.enabled
    assert (
        find(rendered(own), "ConfigMap", "descheduler-policy")["data"]["policy.yaml"]
        == (own / "policy.yaml").read_text()
    )
    assert find(rendered(own), "ClusterRoleBinding", "descheduler-make-before-break")  # the grant stays


def test_both_make_before_break_variants_grant_the_same_rules() -> None:
    cluster_wide, namespaced = (
        find(rendered(d), "ClusterRole", "descheduler-make-before-break") for d in MAKE_BEFORE_BREAK_FIXTURES[:2]
    )
    assert cluster_wide["rules"] == namespaced["rules"]
    assert not [
        o
        for o in rendered(MAKE_BEFORE_BREAK_FIXTURES[1])
        if o["kind"] == "ClusterRoleBinding" and "make-before-break" in o["metadata"]["name"]
    ]


def test_the_rolebinding_the_component_readme_shows_is_the_one_tested() -> None:
    readme = (MAKE_BEFORE_BREAK / "README.md").read_text()
    [shown] = [b for b in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL) if "kind: RoleBinding" in b]
    tested = FIXTURES / "kustomize" / "make-before-break-namespaced" / "make-before-break-rolebindings.yaml"
    assert shown == tested.read_text()


# ---------------------------------------------------------------------- the Deployment


@pytest.mark.parametrize("directory", controller_targets(), ids=target_id)
def test_the_deployment_runs_the_controller_with_the_mounted_policy(directory: Path) -> None:
    objects = rendered(directory)
    deployment = find(objects, "Deployment", "descheduler")
    assert deployment["spec"]["replicas"] == 2
    container = _container(objects)
    # The scheduler Lease where the extender renews it (deploy/overlays/with-scheduler).
    lease = f"{SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}"
    assert container["args"] == ["run", "--policy", POLICY_ARG, "--scheduler-lease", lease]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "policy")
    # A directory mount: a subPath mount never sees the kubelet's symlink swap, so no hot reload.
    assert "subPath" not in mount and mount["mountPath"] == posixpath.dirname(POLICY_ARG)
    assert mount.get("readOnly") is True


def test_the_process_learns_its_namespace_name_and_configmap_from_the_deployment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from descheduler.controller.command import RunOptions, pod_namespace

    objects = rendered(BASE)
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in _container(objects)["env"]}
    assert env == {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    monkeypatch.setenv("POD_NAMESPACE", "ns-from-the-downward-api")
    assert pod_namespace() == "ns-from-the-downward-api"  # the Lease and policy events go there
    volume = next(v for v in _pod(objects)["spec"]["volumes"] if v["name"] == "policy")
    assert volume["configMap"]["name"] == RunOptions(policy=Path(POLICY_ARG)).policy_configmap


def test_the_probes_reach_the_process_health_endpoints() -> None:
    from descheduler.controller.command import RunOptions

    objects = rendered(BASE)
    container = _container(objects)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": RunOptions(policy=Path(POLICY_ARG)).port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


def test_the_pod_runs_locked_down() -> None:
    objects = rendered(BASE)
    pod = _pod(objects)["spec"]
    container = _container(objects)
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and pod["securityContext"]["runAsNonRoot"] is True
    assert isinstance(pod["securityContext"]["runAsUser"], int) and pod["securityContext"]["runAsUser"] > 0
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    # A read-only root needs somewhere to write temporary files.
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])


def test_the_container_has_requests_and_limits() -> None:
    from descheduler.quantity import parse_quantity

    resources = _container(rendered(BASE))["resources"]
    for resource in ("cpu", "memory"):
        request, limit = resources["requests"][resource], resources["limits"][resource]
        assert 0 < parse_quantity(request) <= parse_quantity(limit), f"{resource}: request {request}, limit {limit}"


def test_the_service_and_pdb_select_the_pods_and_the_service_account_is_bound() -> None:
    objects = rendered(BASE)
    labels = _pod(objects)["metadata"]["labels"]
    service = find(objects, "Service", "descheduler-metrics")
    assert service["spec"]["selector"].items() <= labels.items()
    port_names = {p["name"] for p in _container(objects)["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= port_names
    pdb = find(objects, "PodDisruptionBudget", "descheduler")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1  # of 2 replicas: the other keeps the Lease
    account = _pod(objects)["spec"]["serviceAccountName"]
    find(objects, "ServiceAccount", account)
    bound = [
        b
        for b in objects
        if b["kind"] in ("RoleBinding", "ClusterRoleBinding")
        and {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} in b["subjects"]
    ]
    assert {b["kind"] for b in bound} == {"RoleBinding", "ClusterRoleBinding"}


def test_the_service_monitor_scrapes_the_metrics_service() -> None:
    objects = rendered(DEPLOY / "overlays" / "monitoring")
    monitor = find(objects, "ServiceMonitor", "descheduler")
    service = find(objects, "Service", "descheduler-metrics")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    assert all(e["path"] == "/metrics" for e in monitor["spec"]["endpoints"])


def test_the_extender_service_monitor_scrapes_the_extender_service() -> None:
    monitor = find(rendered(DEPLOY / "overlays" / "monitoring"), "ServiceMonitor", "descheduler-extender")
    service = find(rendered(DEPLOY / "overlays" / "with-scheduler"), "Service", "descheduler-extender")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    assert all(e["path"] == "/metrics" for e in monitor["spec"]["endpoints"])


@pytest.mark.parametrize("directory", controller_targets(), ids=target_id)
def test_everything_lives_in_the_descheduler_namespace(directory: Path) -> None:
    objects = rendered(directory)
    find(objects, "Namespace", NAMESPACE)
    ours = [o for o in objects if o["kind"] not in CLUSTER_SCOPED and o["metadata"]["name"].startswith("descheduler")]
    assert ours
    assert all(o["metadata"]["namespace"] == NAMESPACE for o in ours), [o["metadata"]["name"] for o in ours]


def test_the_image_tag_is_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _container(rendered(BASE))["image"] == f"descheduler:{version}"


def test_every_base_manifest_is_part_of_the_base() -> None:
    spec = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    listed = set(spec["resources"]) | {f for g in spec.get("configMapGenerator") or [] for f in g.get("files") or []}
    on_disk = {str(f.relative_to(BASE)) for f in BASE.rglob("*.yaml") if f.name not in KUSTOMIZATION_FILES}
    assert on_disk == listed


def test_the_readmes_name_every_kustomization() -> None:
    readme = (ROOT / "README.md").read_text()
    deploy_readme = (DEPLOY / "README.md").read_text()
    for directory in iter_kustomizations(DEPLOY):
        relative = str(directory.relative_to(ROOT))
        if relative == "deploy/base/crds":
            continue  # documented with the base
        assert relative in readme or relative == "deploy/base", f"README.md does not mention {relative}"
        assert str(directory.relative_to(DEPLOY)) + "/" in deploy_readme, f"deploy/README.md does not list {relative}"
