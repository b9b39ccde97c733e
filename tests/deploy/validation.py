"""Offline validation of Kubernetes objects: built-in kinds with kubernetes-validate (strict), custom
resources against their CustomResourceDefinition's openAPIV3Schema, the ServiceMonitor and the
PrometheusRule against tests/deploy/schemas/, and policies against config/policy.schema.json.

Strict means what `kubectl apply --validate=strict` means: an unknown field is an error, for
built-in kinds and for custom resources alike (a CRD schema's objects accept only the properties
they declare unless they say `x-kubernetes-preserve-unknown-fields`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate

from .deploy_support import ROOT

SCHEMAS = Path(__file__).resolve().parent / "schemas"
# Custom kinds whose CRD we do not ship, checked against a schema of the fields we use.
LOCAL_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SCHEMAS / "servicemonitor.schema.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): SCHEMAS / "prometheusrule.schema.json",
}


class InvalidObject(Exception):
    """An object that does not validate; the message names it and the field."""


def describe(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}{meta.get('name')}"


def _path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(root)"


def validate_builtin(obj: dict[str, Any], version: str) -> bool:
    """Validate a built-in kind strictly; False when kubernetes-validate has no schema for the kind."""
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return False
    except kubernetes_validate.ValidationError as error:
        raise InvalidObject(f"{describe(obj)} (Kubernetes {version}): {_path(error)}: {error.message}") from None
    return True


def _object_meta(obj: dict[str, Any], version: str) -> None:
    """ObjectMeta of a custom resource, checked strictly against the built-in ObjectMeta schema."""
    carrier = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj.get("metadata") or {}}
    try:
        kubernetes_validate.validate(carrier, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        raise InvalidObject(f"{describe(obj)}: {_path(error)}: {error.message}") from None


def openapi_to_json_schema(schema: dict[str, Any], *, root: bool = False) -> dict[str, Any]:
    """A CRD's structural OpenAPI v3 schema as a JSON schema, with Kubernetes' extensions applied."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties"):
            out[key] = {name: openapi_to_json_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = openapi_to_json_schema(value)
        elif key == "additionalProperties":
            out[key] = value if isinstance(value, bool) else openapi_to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [openapi_to_json_schema(sub) for sub in value]
        elif key == "not":
            out[key] = openapi_to_json_schema(value)
        elif key in ("nullable", "format", "description", "example", "externalDocs") or key.startswith("x-"):
            continue  # formats are advisory for the API server too, except on a few built-in ones
        else:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [*out.get("anyOf", []), {"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    is_object = schema.get("type") == "object"
    if is_object and "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if root or schema.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        # ObjectMeta is the API server's to check (validate_custom checks it against the built-in schema).
        props["metadata"] = {"type": "object"}
    return out


def crd_schemas(crds: Iterable[dict[str, Any]]) -> dict[tuple[str, str], tuple[dict[str, Any], str]]:
    """(apiVersion, kind) → (JSON schema, scope) for every served version of every CRD."""
    out = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            api_version = f"{spec['group']}/{version['name']}"
            schema = openapi_to_json_schema(version["schema"]["openAPIV3Schema"], root=True)
            schema["properties"]["apiVersion"] = {"const": api_version}
            schema["properties"]["kind"] = {"const": spec["names"]["kind"]}
            out[(api_version, spec["names"]["kind"])] = (schema, spec["scope"])
    return out


def validate_custom(
    obj: dict[str, Any], schemas: dict[tuple[str, str], tuple[dict[str, Any], str]], version: str
) -> None:
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    if key in LOCAL_SCHEMAS:
        schema, scope = _local_schema(LOCAL_SCHEMAS[key]), "Namespaced"
    elif key in schemas:
        schema, scope = schemas[key]
    else:
        raise InvalidObject(f"{describe(obj)}: no schema for this kind (not built in, no CRD, no local schema)")
    _object_meta(obj, version)
    namespaced = bool((obj.get("metadata") or {}).get("namespace"))
    if scope == "Cluster" and namespaced:
        raise InvalidObject(f"{describe(obj)}: the kind is cluster-scoped; metadata.namespace must not be set")
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidObject(f"{describe(obj)}: " + "; ".join(f"{_path(e)}: {e.message}" for e in errors))


@cache
def _local_schema(path: Path) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def validate_object(
    obj: dict[str, Any], versions: Iterable[str], schemas: dict[tuple[str, str], tuple[dict[str, Any], str]]
) -> None:
    """Built-in kinds for every Kubernetes version in `versions`; other kinds against their schema."""
    versions = list(versions)
    builtin = [validate_builtin(obj, v) for v in versions]
    if not any(builtin):
        validate_custom(obj, schemas, versions[0])
    elif not all(builtin):
        missing = [v for v, known in zip(versions, builtin, strict=True) if not known]
        raise InvalidObject(f"{describe(obj)}: not a built-in kind in Kubernetes {', '.join(missing)}")


@cache
def policy_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((ROOT / "config" / "policy.schema.json").read_text())
    return schema


def validate_policy(document: Any, source: str) -> None:
    """A policy document against config/policy.schema.json (the pydantic models are checked separately)."""
    errors = sorted(
        jsonschema.Draft202012Validator(policy_schema()).iter_errors(document), key=lambda e: list(e.absolute_path)
    )
    if errors:
        raise InvalidObject(f"{source}: " + "; ".join(f"{_path(e)}: {e.message}" for e in errors))
