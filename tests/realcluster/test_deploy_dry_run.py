"""Every kustomization under deploy/ (and the fixtures that build each component into the base), as
rendered, is accepted by the real kube-apiserver: a server-side apply of every object with
`dryRun=All` and strict field validation, so an unknown or misspelt field, a bad value, a
reference the server checks (a RoleBinding's role kind) or an object the server would refuse
fails here, though nothing is written.

Only kinds the server cannot know are left out, by name: the Prometheus Operator's (ServiceMonitor,
PrometheusRule), whose CRDs a cluster with the operator has (tests/deploy checks them against
their schema)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realcluster_support import create

from descheduler.kube import KubeApiError, KubeClient
from tests.deploy.deploy_support import (
    BASE,
    FIXTURES,
    NAMESPACE,
    deploy_targets,
    kustomization_kind,
    rendered,
    target_id,
)
from tests.deploy.kustomize import iter_kustomizations

NOT_SERVED_HERE = frozenset({("monitoring.coreos.com", "ServiceMonitor"), ("monitoring.coreos.com", "PrometheusRule")})
# deploy/'s kustomizations, and the fixtures that build its components into the base (not the
# renderer's own test fixtures under `patched/`).
TARGETS = [
    *deploy_targets(),
    *(
        d
        for d in iter_kustomizations(FIXTURES / "kustomize")
        if kustomization_kind(d) == "Kustomization" and "patched" not in d.relative_to(FIXTURES).parts
    ),
]


def _resources(kube: KubeClient) -> dict[tuple[str, str], tuple[str, bool]]:
    """(apiVersion, kind) -> (the collection's path without namespace, namespaced), from discovery."""
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    versions = [("v1", "/api/v1")]
    for group in kube.get_json("/apis")["groups"]:
        versions += [(v["groupVersion"], f"/apis/{v['groupVersion']}") for v in group["versions"]]
    for api_version, prefix in versions:
        for resource in kube.get_json(prefix)["resources"]:
            if "/" not in resource["name"]:
                found[(api_version, resource["kind"])] = (f"{prefix}/{resource['name']}", resource["namespaced"])
    return found


@pytest.fixture(scope="module")
def served(kube: KubeClient) -> Iterator[dict[tuple[str, str], tuple[str, bool]]]:
    """Discovery, with the namespaces the manifests install into present (a dry run does not create a
    Namespace, and a namespaced object's dry run needs its namespace)."""
    wanted = {NAMESPACE} | {
        o["metadata"]["namespace"] for d in TARGETS for o in rendered(d) if o["metadata"].get("namespace")
    }
    made = []
    try:
        for name in sorted(wanted):
            try:
                create(
                    kube, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                )
                made.append(name)
            except KubeApiError as error:
                if error.status != 409:
                    raise
        yield _resources(kube)
    finally:
        for name in made:  # nothing was written in them: finish the deletion as the namespace controller would
            kube.request("DELETE", f"/api/v1/namespaces/{name}")
            namespace = kube.get_json(f"/api/v1/namespaces/{name}")
            namespace["spec"]["finalizers"] = []
            kube.request("PUT", f"/api/v1/namespaces/{name}/finalize", body=namespace)


def _path(obj: dict[str, Any], served: dict[tuple[str, str], tuple[str, bool]]) -> str | None:
    found = served.get((obj["apiVersion"], obj["kind"]))
    if found is None:
        return None
    collection, namespaced = found
    if namespaced:
        group_prefix, _, plural = collection.rpartition("/")
        collection = f"{group_prefix}/namespaces/{obj['metadata'].get('namespace') or 'default'}/{plural}"
    return f"{collection}/{obj['metadata']['name']}"


@pytest.mark.parametrize("directory", TARGETS, ids=target_id)
def test_the_real_apiserver_accepts_every_object_of_the_kustomization(
    kube: KubeClient, served: dict[tuple[str, str], tuple[str, bool]], directory: Path
) -> None:
    refused, skipped = [], []
    for obj in rendered(directory):
        path = _path(obj, served)
        if path is None:
            group = obj["apiVersion"].rpartition("/")[0]
            assert (group, obj["kind"]) in NOT_SERVED_HERE, f"{obj['apiVersion']} {obj['kind']} is not served"
            skipped.append(obj["kind"])
            continue
        query = {"dryRun": "All", "fieldManager": "deploy-dry-run", "force": "true", "fieldValidation": "Strict"}
        try:
            kube.request("PATCH", path, query=query, body=obj, content_type="application/apply-patch+yaml")
        except KubeApiError as error:
            refused.append(f"{obj['kind']} {obj['metadata']['name']}: {error}")
    assert not refused, "\n".join(refused)
    print(f"{target_id(directory)}: {len(rendered(directory)) - len(skipped)} objects accepted, skipped {skipped}")


def test_a_misspelt_field_is_refused_by_the_same_dry_run(
    kube: KubeClient, served: dict[tuple[str, str], tuple[str, bool]]
) -> None:
    """The check can fail: strict validation names an unknown field."""
    [deployment] = [o for o in rendered(BASE) if o["kind"] == "Deployment"]
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    path = _path(broken, served)
    assert path is not None
    query = {"dryRun": "All", "fieldManager": "deploy-dry-run", "force": "true", "fieldValidation": "Strict"}
    with pytest.raises(KubeApiError, match="imagePullPolcy"):
        kube.request("PATCH", path, query=query, body=broken, content_type="application/apply-patch+yaml")
