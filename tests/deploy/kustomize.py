"""A small kustomize renderer in Python, so CI can build deploy/ without the kustomize binary.

It implements the kustomization fields deploy/ uses, with kustomize v5's semantics, and refuses
any other field (so nothing is silently ignored): `resources` (files and directories),
`components`, `namespace`, `configMapGenerator` (files, literals, options, behavior
create/merge/replace) and `generatorOptions`, `patches` (strategic merge and JSON 6902, inline or
from a file, with or without a target), `images`, and `labels`. Generated ConfigMaps get
kustomize's content hash suffix and every reference to them in a pod template is rewritten.
Files must lie inside the kustomization's directory (kustomize's load restrictor); directories
may lie anywhere. tests/deploy/test_kustomize.py checks the output against `kubectl kustomize`
where kubectl is installed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "components",
    "namespace",
    "configMapGenerator",
    "generatorOptions",
    "patches",
    "images",
    "labels",
}
_GENERATOR_FIELDS = {"name", "namespace", "behavior", "files", "literals", "options"}
_OPTION_FIELDS = {"labels", "annotations", "disableNameSuffixHash", "immutable"}

# Kinds that are not namespaced (the namespace transformer leaves them alone).
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CSIDriver",
        "CSINode",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "ComponentStatus",
        "CustomResourceDefinition",
        "FlowSchema",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)
# Kinds whose pod template lies at spec.template (CronJob: spec.jobTemplate.spec.template).
_TEMPLATE_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"})

# kustomize's "legacy" output order: these kinds first, in this order, webhooks last, the rest between.
_ORDER_FIRST = (
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
)
_ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

# Strategic merge: the merge key of a list, by the list's field name (and, where the name is
# ambiguous, the kind of object that holds it). Lists not named here are replaced whole, as
# Kubernetes does for lists without a patchMergeKey.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "conditions": "type",
}
_PORT_MERGE_KEYS = {"Service": "port"}  # container ports merge on containerPort


class KustomizeError(Exception):
    """A kustomization that cannot be rendered; the message names the file and the problem."""


@dataclass
class _Resource:
    obj: dict[str, Any]
    # Generated ConfigMaps: whether the name gets the content hash, and the name before it does.
    needs_hash: bool = False
    generated: bool = False
    original_name: str = ""

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or "")


@dataclass
class _Build:
    resources: list[_Resource] = field(default_factory=list)


def render(directory: str | Path) -> list[dict[str, Any]]:
    """Build the kustomization in `directory`, as `kustomize build` would; objects in legacy order."""
    build = _build(Path(directory).resolve(), component=False, stack=())
    _add_hashes(build)
    return [r.obj for r in sorted(build.resources, key=_legacy_key)]


def render_yaml(directory: str | Path) -> str:
    return yaml.safe_dump_all(render(directory), sort_keys=True)


# ------------------------------------------------------------------ loading


def _kustomization_file(directory: Path) -> Path:
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return directory / name
    raise KustomizeError(f"{directory}: no kustomization.yaml (looked for {', '.join(KUSTOMIZATION_FILES)})")


def _load_kustomization(directory: Path, component: bool) -> tuple[Path, dict[str, Any]]:
    path = _kustomization_file(directory)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise KustomizeError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise KustomizeError(f"{path}: expected a map of kustomization fields")
    expected = "Component" if component else "Kustomization"
    kind = data.get("kind", "Kustomization")
    if kind != expected:
        raise KustomizeError(
            f"{path}: kind is {kind!r}; a {'component' if component else 'resource'} must be a {expected}"
        )
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise KustomizeError(
            f"{path}: field(s) {', '.join(unknown)} not supported by tests/deploy/kustomize.py "
            f"(supported: {', '.join(sorted(_FIELDS))}); add them there if deploy/ needs them"
        )
    return path, data


def _inside(root: Path, relative: str, source: Path) -> Path:
    """A file reference, held to the kustomization's directory as kustomize's load restrictor does."""
    target = (root / relative).resolve()
    if not target.is_relative_to(root):
        raise KustomizeError(
            f"{source}: {relative!r} is outside the kustomization's directory {root} "
            "(kustomize's load restrictor forbids it)"
        )
    if not target.exists():
        raise KustomizeError(f"{source}: {relative!r} does not exist")
    return target


def _documents(path: Path) -> Iterator[dict[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError as error:
        raise KustomizeError(f"{path}: not valid YAML: {error}") from None
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise KustomizeError(f"{path}: document {index} is not a Kubernetes object (apiVersion and kind)")
        if str(doc["kind"]).endswith("List") and isinstance(doc.get("items"), list):
            yield from doc["items"]
        else:
            yield doc


# ------------------------------------------------------------------ building


def _build(directory: Path, *, component: bool, stack: tuple[Path, ...]) -> _Build:
    if directory in stack:
        raise KustomizeError(f"{directory}: kustomizations include each other in a cycle")
    stack = (*stack, directory)
    path, spec = _load_kustomization(directory, component)
    build = _Build()
    _accumulate(build, directory, path, spec, stack)
    # As kustomize v5 (v5.5 checked): its own generators, then its components (so a component's
    # generator with `behavior: replace` wins over the kustomization's own), then its transformers.
    _generate(build, directory, path, spec)
    _apply_components(build, directory, path, spec, stack)
    _transform(build, directory, path, spec)
    return build


def _apply_components(
    build: _Build, directory: Path, path: Path, spec: dict[str, Any], stack: tuple[Path, ...]
) -> None:
    for ref in spec.get("components") or []:
        target = (directory / ref).resolve()
        if not target.is_dir():
            raise KustomizeError(f"{path}: component {ref!r} is not a directory")
        _apply_component(build, target, stack)


def _accumulate(build: _Build, directory: Path, path: Path, spec: dict[str, Any], stack: tuple[Path, ...]) -> None:
    for ref in spec.get("resources") or []:
        target = (directory / ref).resolve()
        if target.is_dir():
            for resource in _build(target, component=False, stack=stack).resources:
                _add(build, resource, path)
        else:
            for obj in _documents(_inside(directory, ref, path)):
                _add(build, _Resource(obj), path)


def _apply_component(build: _Build, directory: Path, stack: tuple[Path, ...]) -> None:
    """A component adds its resources and generators to the parent's, then transforms them all."""
    path, spec = _load_kustomization(directory, component=True)
    _accumulate(build, directory, path, spec, (*stack, directory))
    _generate(build, directory, path, spec)
    _apply_components(build, directory, path, spec, (*stack, directory))
    _transform(build, directory, path, spec)


def _add(build: _Build, resource: _Resource, source: Path) -> None:
    key = _identity(resource)
    if any(_identity(r) == key for r in build.resources):
        raise KustomizeError(f"{source}: {key[0]} {key[1]}/{key[2]} is defined twice")
    build.resources.append(resource)


def _identity(resource: _Resource) -> tuple[str, str, str]:
    return (f"{resource.obj.get('apiVersion')}/{resource.kind}", resource.namespace, resource.name)


# ------------------------------------------------------------------ generators


def _generate(build: _Build, directory: Path, path: Path, spec: dict[str, Any]) -> None:
    defaults = spec.get("generatorOptions") or {}
    _check_keys(defaults, _OPTION_FIELDS, f"{path}: generatorOptions")
    for index, gen in enumerate(spec.get("configMapGenerator") or []):
        where = f"{path}: configMapGenerator[{index}]"
        _check_keys(gen, _GENERATOR_FIELDS, where)
        if not gen.get("name"):
            raise KustomizeError(f"{where}: name is required")
        options = {**defaults, **(gen.get("options") or {})}
        _check_keys(options, _OPTION_FIELDS, f"{where}.options")
        data: dict[str, str] = {}
        for ref in gen.get("files") or []:
            key, _, file = str(ref).rpartition("=") if "=" in str(ref) else (Path(str(ref)).name, "", str(ref))
            data[key] = _inside(directory, file, path).read_text()
        for literal in gen.get("literals") or []:
            key, sep, value = str(literal).partition("=")
            if not sep:
                raise KustomizeError(f"{where}: literal {literal!r} is not KEY=VALUE")
            data[key] = _unquote(value)
        metadata: dict[str, Any] = {"name": gen["name"]}
        if gen.get("namespace"):
            metadata["namespace"] = gen["namespace"]
        if options.get("labels"):
            metadata["labels"] = dict(options["labels"])
        if options.get("annotations"):
            metadata["annotations"] = dict(options["annotations"])
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
        if options.get("immutable"):
            obj["immutable"] = True
        new = _Resource(obj, needs_hash=not options.get("disableNameSuffixHash", False), generated=True)
        new.original_name = gen["name"]
        behavior = gen.get("behavior", "create")
        if behavior == "create":
            _add(build, new, path)
            continue
        if behavior not in ("merge", "replace"):
            raise KustomizeError(f"{where}: behavior {behavior!r} is not one of create, merge, replace")
        matches = [
            r
            for r in build.resources
            if r.kind == "ConfigMap"
            and (r.original_name or r.name) == gen["name"]
            and (not gen.get("namespace") or r.namespace == gen["namespace"])
        ]
        if len(matches) != 1:
            raise KustomizeError(
                f"{where}: behavior {behavior} needs exactly one ConfigMap {gen['name']!r}; found {len(matches)}"
            )
        _merge_generated(matches[0], new, behavior)


def _merge_generated(old: _Resource, new: _Resource, behavior: str) -> None:
    """As kustomize: labels and annotations merge, name, namespace and the hash option stay the old one's."""
    merged = new.obj
    meta = merged["metadata"]
    old_meta = old.obj.get("metadata") or {}
    for key in ("labels", "annotations"):
        combined = {**(old_meta.get(key) or {}), **(meta.get(key) or {})}
        if combined:
            meta[key] = combined
    meta["name"] = old_meta.get("name")
    if old_meta.get("namespace"):
        meta["namespace"] = old_meta["namespace"]
    else:
        meta.pop("namespace", None)
    if behavior == "merge":
        merged["data"] = {**(old.obj.get("data") or {}), **merged["data"]}
    old.obj = merged


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _check_keys(mapping: Any, allowed: set[str], where: str) -> None:
    if not isinstance(mapping, dict):
        raise KustomizeError(f"{where}: expected a map")
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise KustomizeError(
            f"{where}: field(s) {', '.join(unknown)} not supported (supported: {', '.join(sorted(allowed))})"
        )


# ------------------------------------------------------------------ transformers


def _transform(build: _Build, directory: Path, path: Path, spec: dict[str, Any]) -> None:
    """In kustomize's order: patches, namespace, labels, images."""
    for index, patch in enumerate(spec.get("patches") or []):
        _apply_patch(build, directory, path, index, patch)
    if spec.get("namespace"):
        _set_namespace(build, str(spec["namespace"]))
    for index, labels in enumerate(spec.get("labels") or []):
        _add_labels(build, labels, f"{path}: labels[{index}]")
    for index, image in enumerate(spec.get("images") or []):
        _set_image(build, image, f"{path}: images[{index}]")


def _set_namespace(build: _Build, namespace: str) -> None:
    moved_accounts: dict[tuple[str, str], str] = {}
    for r in build.resources:
        meta = r.obj.setdefault("metadata", {})
        if r.kind == "Namespace":
            meta["name"] = namespace
        elif r.kind not in CLUSTER_SCOPED:
            if r.kind == "ServiceAccount":
                moved_accounts[(r.name, r.namespace)] = namespace
            meta["namespace"] = namespace
    for r in build.resources:
        if r.kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        for subject in r.obj.get("subjects") or []:
            if subject.get("kind") != "ServiceAccount":
                continue
            # The "default" account follows the namespace; others follow their ServiceAccount when
            # it is part of this build (kustomize's name reference to the moved object).
            key = (subject.get("name"), subject.get("namespace") or "")
            if subject.get("name") == "default" or key in moved_accounts:
                subject["namespace"] = namespace


def _add_labels(build: _Build, spec: dict[str, Any], where: str) -> None:
    _check_keys(spec, {"pairs", "includeSelectors", "includeTemplates"}, where)
    pairs = spec.get("pairs") or {}
    selectors = bool(spec.get("includeSelectors", False))
    templates = selectors or bool(spec.get("includeTemplates", False))
    for r in build.resources:
        r.obj.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
        template = _pod_template(r.obj)
        if templates and template is not None:
            template.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
        if selectors:
            body = r.obj.get("spec") or {}
            if r.kind == "Service":
                body.setdefault("selector", {}).update(pairs)
            elif r.kind in _TEMPLATE_KINDS or r.kind == "PodDisruptionBudget":
                body.setdefault("selector", {}).setdefault("matchLabels", {}).update(pairs)


def _set_image(build: _Build, spec: dict[str, Any], where: str) -> None:
    _check_keys(spec, {"name", "newName", "newTag", "digest"}, where)
    if not spec.get("name"):
        raise KustomizeError(f"{where}: name is required")
    for r in build.resources:
        for container in _containers(r.obj):
            image = str(container.get("image", ""))
            name, tag, digest = _split_image(image)
            if name != spec["name"]:
                continue
            name = spec.get("newName") or name
            if spec.get("digest"):
                container["image"] = f"{name}@{spec['digest']}"
            elif spec.get("newTag") is not None:
                container["image"] = f"{name}:{spec['newTag']}"
            else:
                container["image"] = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def _split_image(image: str) -> tuple[str, str, str]:
    image, _, digest = image.partition("@")
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1 :], digest
    return image, "", digest


def _pod_template(obj: dict[str, Any]) -> dict[str, Any] | None:
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind in _TEMPLATE_KINDS:
        template = spec.get("template")
        return template if isinstance(template, dict) else None
    if kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
        return template if isinstance(template, dict) else None
    return None


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    if obj.get("kind") == "Pod":
        spec = obj.get("spec")
        return spec if isinstance(spec, dict) else None
    template = _pod_template(obj)
    if template is None:
        return None
    spec = template.get("spec")
    return spec if isinstance(spec, dict) else None


def _containers(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = _pod_spec(obj)
    if spec is None:
        return
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


# ------------------------------------------------------------------ patches


def _apply_patch(build: _Build, directory: Path, path: Path, index: int, spec: dict[str, Any]) -> None:
    where = f"{path}: patches[{index}]"
    _check_keys(spec, {"path", "patch", "target", "options"}, where)
    if ("path" in spec) == ("patch" in spec):
        raise KustomizeError(f"{where}: give exactly one of path or patch")
    text = _inside(directory, spec["path"], path).read_text() if "path" in spec else str(spec["patch"])
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as error:
        raise KustomizeError(f"{where}: not valid YAML: {error}") from None
    target = spec.get("target")
    if len(docs) == 1 and isinstance(docs[0], list):
        if target is None:
            raise KustomizeError(f"{where}: a JSON 6902 patch needs a target")
        matched = _select(build, target, where)
        for r in matched:
            r.obj = _json6902(r.obj, docs[0], where)
        return
    for doc in docs:
        if not isinstance(doc, dict):
            raise KustomizeError(f"{where}: a strategic merge patch must be a map")
        if target is not None:
            matched = _select(build, target, where)
        else:
            meta = doc.get("metadata") or {}
            matched = [
                r
                for r in build.resources
                if r.kind == doc.get("kind")
                and (r.original_name or r.name) == meta.get("name")
                and (not meta.get("namespace") or r.namespace == meta.get("namespace"))
            ]
            if not matched:
                raise KustomizeError(f"{where}: no {doc.get('kind')} {meta.get('name')!r} to patch")
        for r in matched:
            patch = copy.deepcopy(doc)
            if target is not None:
                # A targeted patch applies to many objects: its own identity fields do not rename them.
                patch.setdefault("metadata", {})
                patch["metadata"].pop("name", None)
                patch["metadata"].pop("namespace", None)
            r.obj = _strategic_merge(r.obj, patch, r.kind)


def _select(build: _Build, target: dict[str, Any], where: str) -> list[_Resource]:
    _check_keys(target, {"group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector"}, where)
    out = []
    for r in build.resources:
        group, _, version = str(r.obj.get("apiVersion", "")).rpartition("/")
        meta = r.obj.get("metadata") or {}
        checks = (
            ("group", group),
            ("version", version),
            ("kind", r.kind),
            ("name", r.original_name or r.name),
            ("namespace", r.namespace),
        )
        if any(k in target and not re.fullmatch(str(target[k]), value) for k, value in checks):
            continue
        if "labelSelector" in target and not _selector_matches(target["labelSelector"], meta.get("labels") or {}):
            continue
        if "annotationSelector" in target and not _selector_matches(
            target["annotationSelector"], meta.get("annotations") or {}
        ):
            continue
        out.append(r)
    if not out:
        raise KustomizeError(f"{where}: the target matches no object")
    return out


def _selector_matches(selector: str, labels: dict[str, str]) -> bool:
    """Equality-based selectors (`a=b,c!=d,e`), which is what kustomize targets use in practice."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.split("==", 1) if "==" in term else term.split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _strategic_merge(original: Any, patch: Any, kind: str, field_name: str = "") -> Any:
    if not isinstance(patch, dict) or not isinstance(original, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = copy.deepcopy(original)
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key.startswith("$retainKeys") or key == "$patch":
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _strategic_merge(result[key], value, kind, key)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, kind, key)
        else:
            result[key] = _strip_directives(copy.deepcopy(value))
    return result


def _merge_list(original: list[Any], patch: list[Any], kind: str, field_name: str) -> list[Any]:
    key = _PORT_MERGE_KEYS.get(kind, "containerPort") if field_name == "ports" else _MERGE_KEYS.get(field_name)
    if key is None or not all(isinstance(item, dict) for item in [*original, *patch]):
        if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
            return [_strip_directives(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
        return [_strip_directives(copy.deepcopy(item)) for item in patch]
    if any(item.get("$patch") == "replace" for item in patch):
        return [_strip_directives(i) for i in patch if "$patch" not in i]
    # kustomize (kyaml) writes the patch's elements first, in the patch's order, merged with the
    # original element of the same key, then the original elements the patch does not name.
    by_key = {item.get(key): item for item in original}
    named = {item.get(key) for item in patch}
    result = []
    for item in patch:
        if item.get("$patch") == "delete":
            continue
        existing = by_key.get(item.get(key))
        if existing is None:
            result.append(_strip_directives(copy.deepcopy(item)))
        else:
            result.append(_strategic_merge(existing, item, kind, field_name))
    result.extend(copy.deepcopy(item) for item in original if item.get(key) not in named)
    return result


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def _json6902(obj: dict[str, Any], operations: list[Any], where: str) -> dict[str, Any]:
    doc = copy.deepcopy(obj)
    for number, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise KustomizeError(f"{where}: operation {number} needs op and path")
        kind = op["op"]
        try:
            if kind in ("add", "replace"):
                _pointer_set(doc, op["path"], copy.deepcopy(op["value"]), insert=kind == "add")
            elif kind == "remove":
                _pointer_remove(doc, op["path"])
            elif kind in ("copy", "move"):
                value = copy.deepcopy(_pointer_get(doc, op["from"]))
                if kind == "move":
                    _pointer_remove(doc, op["from"])
                _pointer_set(doc, op["path"], value, insert=True)
            elif kind == "test":
                if _pointer_get(doc, op["path"]) != op["value"]:
                    raise KustomizeError(f"{where}: operation {number}: test failed at {op['path']}")
            else:
                raise KustomizeError(f"{where}: operation {number}: unknown op {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as error:
            raise KustomizeError(f"{where}: operation {number} ({kind} {op['path']}): {error}") from None
    return doc


def _pointer_parts(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def _pointer_get(doc: Any, pointer: str) -> Any:
    return _walk(doc, _pointer_parts(pointer))


def _pointer_set(doc: Any, pointer: str, value: Any, *, insert: bool) -> None:
    parts = _pointer_parts(pointer)
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif insert:
            parent.insert(int(last), value)
        else:
            parent[int(last)] = value
    else:
        if not insert and last not in parent:
            raise KeyError(last)
        parent[last] = value


def _pointer_remove(doc: Any, pointer: str) -> None:
    parts = _pointer_parts(pointer)
    parent = _walk(doc, parts[:-1])
    if isinstance(parent, list):
        parent.pop(int(parts[-1]))
    else:
        del parent[parts[-1]]


# ------------------------------------------------------------------ names and order


def configmap_hash(obj: dict[str, Any]) -> str:
    """kustomize's content hash of a ConfigMap (api/hasher), byte for byte.

    kustomize looks the name up with the single path segment "metadata/name", which finds
    nothing, so the name it hashes is always ""; Go's encoding/json escapes <, > and & for HTML.
    """
    encoded: dict[str, Any] = {"kind": "ConfigMap", "name": "", "data": obj.get("data") or {}}
    if obj.get("binaryData"):
        encoded["binaryData"] = obj["binaryData"]
    text = json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def _add_hashes(build: _Build) -> None:
    renamed: dict[tuple[str, str], str] = {}
    for r in build.resources:
        if r.generated and r.needs_hash:
            new_name = f"{r.name}-{configmap_hash(r.obj)}"
            renamed[(r.name, r.namespace)] = new_name
            r.obj["metadata"]["name"] = new_name
    if renamed:
        for r in build.resources:
            _rename_configmap_refs(r, renamed)


def _rename_configmap_refs(resource: _Resource, renamed: dict[tuple[str, str], str]) -> None:
    spec = _pod_spec(resource.obj)
    if spec is None:
        return
    namespace = resource.namespace

    def rename(holder: dict[str, Any] | None, key: str = "name") -> None:
        if isinstance(holder, dict) and (holder.get(key), namespace) in renamed:
            holder[key] = renamed[(holder[key], namespace)]

    for volume in spec.get("volumes") or []:
        rename(volume.get("configMap"))
        for source in (volume.get("projected") or {}).get("sources") or []:
            rename(source.get("configMap"))
    for container in _containers(resource.obj):
        for env in container.get("env") or []:
            rename((env.get("valueFrom") or {}).get("configMapKeyRef"))
        for env_from in container.get("envFrom") or []:
            rename(env_from.get("configMapRef"))


def _legacy_key(resource: _Resource) -> tuple[int, str, str, str]:
    kind = resource.kind
    if kind in _ORDER_FIRST:
        rank = _ORDER_FIRST.index(kind)
    elif kind in _ORDER_LAST:
        rank = len(_ORDER_FIRST) + 1 + _ORDER_LAST.index(kind)
    else:
        rank = len(_ORDER_FIRST)
    # kustomize writes a missing namespace as "~X", which sorts after every real one.
    return (rank, f"{resource.obj.get('apiVersion')}/{kind}", resource.namespace or "~X", resource.name)


def iter_kustomizations(root: Path) -> Iterable[Path]:
    """Every directory under `root` that holds a kustomization (Kustomization or Component)."""
    seen = set()
    for name in KUSTOMIZATION_FILES:
        for file in sorted(root.rglob(name)):
            if file.parent not in seen:
                seen.add(file.parent)
                yield file.parent
