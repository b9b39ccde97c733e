"""The Python kustomize renderer: the same output as kustomize itself, and refusals with clear messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from .deploy_support import FIXTURES, deploy_targets, find, kubectl_kustomize, target_id
from .kustomize import KustomizeError, configmap_hash, render

PATCHED_OVERLAY = FIXTURES / "kustomize" / "patched" / "overlay"
# The components, each built as a user's overlay of deploy/base would have it.
COMPONENT_FIXTURES = [
    FIXTURES / "kustomize" / name
    for name in (
        "evict-by-delete",
        "make-before-break",
        "make-before-break-namespaced",
        "make-before-break-own-policy",
    )
]
ALL_TARGETS = [*deploy_targets(), PATCHED_OVERLAY, *COMPONENT_FIXTURES]


def test_deploy_has_the_documented_kustomizations() -> None:
    names = {target_id(t) for t in deploy_targets()}
    assert {"deploy/base", "deploy/overlays/dry-run", "deploy/overlays/monitoring"} <= names


@pytest.mark.parametrize("directory", ALL_TARGETS, ids=target_id)
def test_renders_exactly_what_kubectl_kustomize_renders(directory: Path) -> None:
    theirs = kubectl_kustomize(directory)
    if theirs is None:
        pytest.skip("kubectl is not installed; the renderer's own tests still run")
    assert render(directory) == theirs


@pytest.mark.parametrize(
    ("data", "suffix"),
    [
        # Values produced by kustomize v5.5 (kubectl 1.32).
        ({"a": "b"}, "4h2mbtbbt6"),
        ({"a": "b<c&d>", "x": "é"}, "9t4m4g628t"),
    ],
)
def test_configmap_hash_is_kustomizes(data: dict[str, str], suffix: str) -> None:
    assert configmap_hash({"kind": "ConfigMap", "metadata": {"name": "any"}, "data": data}) == suffix


def test_generated_configmap_names_are_rewritten_in_pod_templates() -> None:
    objects = render(PATCHED_OVERLAY)
    settings = next(o["metadata"]["name"] for o in objects if o["metadata"]["name"].startswith("settings-"))
    deployment = find(objects, "Deployment", "app")
    pod = deployment["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert main["envFrom"] == [{"configMapRef": {"name": settings}}]
    assert {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": settings, "key": "mode"}}} in main["env"]
    assert pod["volumes"][-1]["projected"]["sources"] == [{"configMap": {"name": settings}}]


def test_merge_behavior_keeps_base_keys_and_overrides_the_rest() -> None:
    objects = render(PATCHED_OVERLAY)
    settings = next(o for o in objects if o["metadata"]["name"].startswith("settings-"))
    assert settings["data"] == {"mode": "slow", "threshold": "<80 & >20", "extra": "1"}
    assert settings["metadata"]["namespace"] == "app-ns"


def test_strategic_merge_deletes_and_merges_by_key() -> None:
    pod = find(render(PATCHED_OVERLAY), "Deployment", "app")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["main"]
    assert [e["name"] for e in pod["containers"][0]["env"]] == ["A", "B", "MODE"]
    assert pod["containers"][0]["env"][0]["value"] == "2"


def _write(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return directory


def test_file_outside_the_kustomization_is_refused(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "policy.yaml": "a: 1\n",
            "k/kustomization.yaml": "configMapGenerator:\n- name: p\n  files: [../policy.yaml]\n",
        },
    )
    with pytest.raises(KustomizeError, match="outside the kustomization's directory"):
        render(tmp_path / "k")


def test_unsupported_field_is_refused_not_ignored(tmp_path: Path) -> None:
    _write(tmp_path, {"kustomization.yaml": "namePrefix: x-\nresources: []\n"})
    with pytest.raises(KustomizeError, match="namePrefix not supported"):
        render(tmp_path)


def test_missing_resource_file_names_the_kustomization(tmp_path: Path) -> None:
    _write(tmp_path, {"kustomization.yaml": "resources: [gone.yaml]\n"})
    with pytest.raises(KustomizeError, match=r"kustomization.yaml: 'gone.yaml' does not exist"):
        render(tmp_path)


def test_an_object_defined_twice_is_an_error(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    _write(tmp_path, {"kustomization.yaml": "resources: [a.yaml, b.yaml]\n", "a.yaml": cm, "b.yaml": cm})
    with pytest.raises(KustomizeError, match="defined twice"):
        render(tmp_path)


def test_a_component_cannot_be_built_as_a_kustomization(tmp_path: Path) -> None:
    _write(tmp_path, {"kustomization.yaml": "kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\n"})
    with pytest.raises(KustomizeError, match="must be a Kustomization"):
        render(tmp_path)
