"""The project's RBAC as `kubectl apply -k deploy/overlays/with-scheduler` installs it, on the real
control plane: the ServiceAccounts, ClusterRoles, ClusterRoleBindings, Roles and RoleBindings the
project's kustomize renderer (tests/deploy/kustomize.py) makes of deploy/base and the overlay, in
the rendered namespace; tokens for the ServiceAccounts from the TokenRequest API and kubeconfigs
that use them; and what the apiserver's audit log says each ServiceAccount did (every call's RBAC
attributes and answer), judged with tests/deploy/rbac.py's evaluator against the same manifests."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from controlplane import HOW_TO_GET, ControlPlane
from realcluster_support import REPO, create, eventually, install_node_metric_crd, install_our_crds

from descheduler.fakecluster.apiserver import Access
from descheduler.kube import KubeApiError, KubeClient
from tests.deploy.kustomize import render
from tests.deploy.rbac import KUBE_SCHEDULER_ROLES, Permission, grants_for, rbac_covers, unused_permissions

OVERLAY = REPO / "deploy" / "overlays" / "with-scheduler"
NAMESPACE = "descheduler-system"  # what deploy/base/kustomization.yaml sets
CONTROLLER = "descheduler"
# The account the extender runs as: deploy/overlays/with-scheduler runs it as the load-aware
# kube-scheduler's sidecar, under that scheduler's ServiceAccount, bound to the extender's roles.
EXTENDER = "load-aware-scheduler"
EXTENDER_ROLE = "descheduler-extender"  # the extender's ClusterRole (deploy/components/extender-roles)
CONTROLLER_LEASE = "descheduler"  # `descheduler run`'s default --lease-name, the one the Role names
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")

_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}

# A log line that reports a refusal: the server's Status reason, or a client error's "403 Forbidden".
FORBIDDEN = re.compile(r"\b403\b|forbidden", re.IGNORECASE)


def rendered_rbac() -> list[dict[str, Any]]:
    """The overlay's (and so the base's) Namespace and RBAC objects, as rendered."""
    return [o for o in render(OVERLAY) if o["kind"] in RBAC_KINDS]


def _path(obj: dict[str, Any]) -> str:
    return _PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))


@dataclass
class Installation:
    """What `install` applied, to delete again."""

    objects: list[dict[str, Any]] = field(default_factory=list)

    def remove(self, kube: KubeClient, timeout: float = 60.0) -> None:
        """Every object, newest first, then wait until the namespace is gone: the next module installs
        into it again, and a Terminating namespace refuses new objects. Call it while the
        controller-manager still runs: its namespace controller is what finishes a namespace's deletion."""
        for obj in reversed(self.objects):
            try:
                kube.request("DELETE", f"{_path(obj)}/{obj['metadata']['name']}")
            except KubeApiError as error:
                if error.status != 404:
                    raise
        namespaces = [o for o in self.objects if o["kind"] == "Namespace"]

        def gone() -> bool:
            for obj in namespaces:
                try:
                    kube.request("GET", f"{_path(obj)}/{obj['metadata']['name']}")
                except KubeApiError as error:
                    if error.status != 404:
                        raise
                else:
                    return False
            return True

        eventually(gone, timeout, what="the installation's namespace deleted")


def install(kube: KubeClient) -> Installation:
    """Create every rendered Namespace and RBAC object (one already there is left as it is)."""
    return install_objects(kube, rendered_rbac())


def scheduler_side(
    control_plane: ControlPlane, kube: KubeClient, workdir: Path
) -> tuple[Installation, dict[str, Path]]:
    """What a test of the controller beside kube-scheduler and the extender needs first: the two binaries
    (else the test is skipped, saying how to get them), our CRDs and NodeMetric's, the overlay's RBAC, and
    a token kubeconfig for the controller's and the extender's ServiceAccounts (by account name)."""
    missing = [b for b in ("kube-controller-manager", "kube-scheduler") if not (control_plane.assets / b).is_file()]
    if missing:
        pytest.skip(f"{control_plane.assets} has no {', '.join(missing)}: {HOW_TO_GET}")
    assert control_plane.certs is not None
    install_our_crds(kube)
    install_node_metric_crd(kube)
    installation = install(kube)
    tokens = {
        account: token_kubeconfig(
            control_plane.kubeconfig, control_plane.certs.ca, workdir / f"{account}.kubeconfig", account
        )
        for account in (CONTROLLER, EXTENDER)
    }
    return installation, tokens


def token_kubeconfig(
    admin_kubeconfig: Path, ca: Path, path: Path, service_account: str, namespace: str = NAMESPACE
) -> Path:
    """A kubeconfig for `service_account` in `namespace`: a bearer token from the TokenRequest API
    (an hour; the audience the apiserver defaults to, its issuer) and the server's CA."""
    api = kubernetes.config.new_client_from_config(config_file=str(admin_kubeconfig))
    try:
        server = api.configuration.host
        request = kubernetes.client.AuthenticationV1TokenRequest(
            spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
        answer = kubernetes.client.CoreV1Api(api).create_namespaced_service_account_token(
            service_account, namespace, request
        )
        token = answer.status.token
    finally:
        api.close()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "realcluster",
                "cluster": {"server": server, "certificate-authority-data": base64.b64encode(ca.read_bytes()).decode()},
            }
        ],
        "users": [{"name": service_account, "user": {"token": token}}],
        "contexts": [{"name": service_account, "context": {"cluster": "realcluster", "user": service_account}}],
        "current-context": service_account,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def user(service_account: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{service_account}"


def forbidden_lines(log_text: str) -> list[str]:
    return [line for line in log_text.splitlines() if FORBIDDEN.search(line)]


def access_of(event: dict[str, Any]) -> Access:
    """An audit event's RBAC attributes (the same ones kube-apiserver's authorizer saw)."""
    ref = event.get("objectRef")
    if not ref or not ref.get("resource"):
        return Access(event["verb"], path=event["requestURI"].split("?", 1)[0])
    return Access(
        event["verb"],
        group=ref.get("apiGroup", ""),
        resource=ref["resource"],
        subresource=ref.get("subresource", ""),
        namespace=ref.get("namespace", ""),
        name=ref.get("name", ""),
    )


@dataclass
class AuditReport:
    """What one ServiceAccount did on the real server, against what the manifests grant it."""

    service_account: str
    refused: list[str]  # every 403 the apiserver answered it: "verb resource … (reason)"
    not_covered: list[Access]  # calls the manifests do not allow, by tests/deploy/rbac.py's evaluator
    unused: list[Permission]  # granted permissions no call used in this run
    accesses: set[Access]


def audit(events: list[dict[str, Any]], service_account: str) -> AuditReport:
    accesses = {access_of(e) for e in events}
    refused = sorted(
        {
            f"{access_of(e)} ({(e.get('annotations') or {}).get('authorization.k8s.io/reason', '')})"
            for e in events
            if (e.get("responseStatus") or {}).get("code") == 403
        }
    )
    grants = grants_for(render(OVERLAY), NAMESPACE, service_account, outside=KUBE_SCHEDULER_ROLES)
    return AuditReport(
        service_account, refused, rbac_covers(grants, accesses), unused_permissions(grants, accesses), accesses
    )


# ---------------------------------------------------------------------------------- components

BASE = REPO / "deploy" / "base"
# deploy/base with deploy/components/make-before-break, as a user's overlay has it (tests/deploy).
MAKE_BEFORE_BREAK = REPO / "tests" / "deploy" / "fixtures" / "kustomize" / "make-before-break"


def component_rbac(with_component: Path = MAKE_BEFORE_BREAK) -> list[dict[str, Any]]:
    """The RBAC objects a component adds to deploy/base: those `with_component` (the base with the
    component) renders that the base alone does not."""
    base = {(o["kind"], o["metadata"]["name"]) for o in render(BASE)}
    return [
        o for o in render(with_component) if o["kind"] in RBAC_KINDS and (o["kind"], o["metadata"]["name"]) not in base
    ]


def install_objects(kube: KubeClient, objects: list[dict[str, Any]]) -> Installation:
    """Create these RBAC objects (one already there is left as it is); `remove()` deletes them."""
    done = Installation()
    order = {kind: index for index, kind in enumerate(RBAC_KINDS)}
    for obj in sorted(objects, key=lambda o: order[o["kind"]]):
        try:
            create(kube, _path(obj), obj)
        except KubeApiError as error:
            if error.status != 409:
                raise
        done.objects.append(obj)
    return done


def may(kube: KubeClient, service_account: str, verb: str, group: str, resource: str, namespace: str = "") -> bool:
    """What `kubectl auth can-i VERB RESOURCE.GROUP -n NAMESPACE --as system:serviceaccount:NAMESPACE_OF_THE_ROLES:ACCOUNT`
    answers: a SubjectAccessReview, made as the admin, for the ServiceAccount and its groups."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user(service_account),
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"],
            "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": namespace},
        },
    }
    answer = create(kube, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool((answer.get("status") or {}).get("allowed"))


def grant_make_before_break(kube: KubeClient) -> Installation:
    """deploy/components/make-before-break's RBAC installed beside the base's, once the apiserver's
    authorizer has it in force (the controller may update Deployments); `remove()` takes it away."""
    grant = install_objects(kube, component_rbac())
    eventually(
        lambda: may(kube, CONTROLLER, "update", "apps", "deployments", "default"),
        30,
        what="the make-before-break grant in force",
    )
    return grant


def not_granted(objects: list[dict[str, Any]], service_account: str, accesses: list[Access]) -> list[Access]:
    """The accesses that these RBAC objects (a component's) do not allow the ServiceAccount either."""
    return rbac_covers(grants_for(objects, NAMESPACE, service_account), accesses)
