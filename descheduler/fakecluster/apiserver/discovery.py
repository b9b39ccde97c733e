"""Discovery documents: /version, /api, /api/v1, /apis, /apis/<group>[/<version>]."""

from __future__ import annotations

from typing import Any

from .resources import ResourceTable, ResourceType

# What kube-apiserver v1.36.2 (the binaries the real-cluster tests run) answers on /version.
VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": "v1.36.2",
    "gitCommit": "98b35193b2ac7a23a673325f5e9b830ecd5ba406",
    "gitTreeState": "clean",
    "buildDate": "2026-11-23T14:17:59Z",
    "goVersion": "go1.26.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}

# subresource → (group, version, kind, verbs); None group/version/kind means "the parent's".
_SUBRESOURCES: dict[str, tuple[str | None, str | None, str | None, list[str]]] = {
    "status": (None, None, None, ["get", "patch", "update"]),
    "scale": ("autoscaling", "v1", "Scale", ["get", "patch", "update"]),
    "eviction": ("policy", "v1", "Eviction", ["create"]),
    "binding": ("", "v1", "Binding", ["create"]),
}


def version_info() -> dict[str, Any]:
    return dict(VERSION_INFO)


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(table: ResourceTable) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in table.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(table: ResourceTable, group: str) -> dict[str, Any] | None:
    versions = table.group_versions().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _resource(rt: ResourceType) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        doc["shortNames"] = list(rt.short_names)
    return doc


def _subresource(rt: ResourceType, sub: str) -> dict[str, Any]:
    group, version, kind, verbs = _SUBRESOURCES[sub]
    doc: dict[str, Any] = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced}
    if group is not None:
        doc["group"], doc["version"] = group, version
    doc["kind"] = kind or rt.kind
    doc["verbs"] = verbs
    return doc


def resource_list(table: ResourceTable, group: str, version: str) -> dict[str, Any] | None:
    kinds = table.in_group_version(group, version)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    if not group:
        resources.append(
            {
                "name": "bindings",
                "singularName": "binding",
                "namespaced": True,
                "kind": "Binding",
                "verbs": ["create"],
            }
        )
    for rt in kinds:
        resources.append(_resource(rt))
        resources.extend(_subresource(rt, sub) for sub in rt.subresources)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
