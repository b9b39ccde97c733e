"""Who may write Deployments, asked of the real authorizer as `kubectl auth can-i update deployments
--as system:serviceaccount:descheduler-system:descheduler` asks it (a SubjectAccessReview, made as the
admin): with deploy/base's RBAC as rendered, the descheduler's ServiceAccount may not; with
deploy/components/make-before-break's beside it, it may, in every namespace, and no more than
MakeBeforeBreak needs; with the namespaced variant's ClusterRole bound in one namespace, only there.

kube-controller-manager runs so that the base's namespace is deleted again at the end."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import installed
import pytest
import yaml
from realcluster_support import eventually

from descheduler.kube import KubeClient
from tests.deploy.kustomize import render

ACCOUNT = installed.CONTROLLER
FIXTURES = installed.REPO / "tests" / "deploy" / "fixtures" / "kustomize"
NAMESPACED = FIXTURES / "make-before-break-namespaced"


@pytest.fixture(scope="module")
def base_rbac(kube: KubeClient, controller_manager: None) -> Iterator[None]:
    """deploy/base's Namespace, ServiceAccount and RBAC as rendered, in force."""
    objects = [o for o in render(installed.BASE) if o["kind"] in installed.RBAC_KINDS]
    installation = installed.install_objects(kube, objects)
    try:
        eventually(lambda: can(kube, "list", "deployments"), 30, what="deploy/base's ClusterRole in force")
        yield
    finally:
        installation.remove(kube)


def can(kube: KubeClient, verb: str, resource: str, namespace: str = "default", group: str = "apps") -> bool:
    """`kubectl auth can-i VERB RESOURCE -n NAMESPACE --as` the descheduler's ServiceAccount."""
    return installed.may(kube, ACCOUNT, verb, group, resource, namespace)


def test_with_deploy_base_alone_the_descheduler_may_not_write_deployments(kube: KubeClient, base_rbac: None) -> None:
    assert can(kube, "list", "deployments") and can(kube, "watch", "replicasets")  # the cache's reads stay
    assert not can(kube, "update", "deployments")
    assert not can(kube, "get", "deployments") and not can(kube, "get", "replicasets")
    assert not can(kube, "update", "deployments", namespace="kube-system")


def test_the_make_before_break_component_lets_it_update_deployments_and_no_more(
    kube: KubeClient, base_rbac: None
) -> None:
    grant = installed.grant_make_before_break(kube)  # waits until `update deployments` is allowed
    try:
        for namespace in ("default", "kube-system", "any-namespace"):
            assert can(kube, "update", "deployments", namespace) and can(kube, "get", "deployments", namespace)
            assert can(kube, "get", "replicasets", namespace)
        for verb, resource in (("patch", "deployments"), ("delete", "deployments"), ("update", "replicasets")):
            assert not can(kube, verb, resource), f"{verb} {resource}"
        assert not can(kube, "update", "statefulsets")
    finally:
        grant.remove(kube)
    eventually(lambda: not can(kube, "update", "deployments"), 30, what="the grant gone with the component")


def test_the_namespaced_variant_lets_it_update_deployments_only_where_bound(
    kube: KubeClient, base_rbac: None, namespace: str
) -> None:
    role = next(o for o in installed.component_rbac(NAMESPACED) if o["kind"] == "ClusterRole")
    [binding] = [d for d in yaml.safe_load_all((NAMESPACED / "make-before-break-rolebindings.yaml").read_text()) if d]
    binding = copy.deepcopy(binding)
    binding["metadata"]["namespace"] = namespace
    grant = installed.install_objects(kube, [role, binding])
    try:
        eventually(
            lambda: can(kube, "update", "deployments", namespace), 30, what=f"the RoleBinding in {namespace} in force"
        )
        assert can(kube, "get", "replicasets", namespace)
        assert not can(kube, "update", "deployments", "default") and not can(kube, "get", "replicasets", "default")
    finally:
        grant.remove(kube)
