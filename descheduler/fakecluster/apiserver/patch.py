"""The three patch formats the API server accepts: merge, JSON (RFC 6902) and strategic merge."""

from __future__ import annotations

import copy
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class PatchError(Exception):
    """The patch could not be applied (a 422 from the server)."""


class MalformedPatch(Exception):
    """The patch document itself is wrong (a 400 from the server)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Field name → patchMergeKey, from the Kubernetes types' `patchStrategy:"merge"` tags. Keyed by
# field name alone: every kind we serve uses these names with one meaning.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "conditions": "type",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "taints": "key",
    "addresses": "type",
    "topologySpreadConstraints": "topologyKey",
    "hostAliases": "ip",
    "resourceClaims": "name",
}
# Lists of scalars with patchStrategy merge: union, keeping order.
PRIMITIVE_MERGE_LISTS = {"finalizers"}


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge: merge-patch, plus keyed merging of known lists and the `$patch` directives."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        replaced: dict[str, Any] = _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
        return replaced
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise MalformedPatch(f"unknown patch type: {directive}")
    result = dict(target)
    deletions: list[tuple[str, Any]] = []
    for key, value in patch.items():
        if key == "$patch" or key == "$retainKeys" or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            deletions.append((key.split("/", 1)[1], value))
            continue
        current = result.get(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value)
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_keyed_list(current if isinstance(current, list) else [], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in PRIMITIVE_MERGE_LISTS:
            base = list(current) if isinstance(current, list) else []
            result[key] = base + [v for v in value if v not in base]
        else:
            result[key] = _strip_directives(value)
    for key, values in deletions:
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    return result


def _merge_keyed_list(target: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" and len(p) == 1 for p in patch):
        return [_strip_directives(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    result = [copy.deepcopy(item) for item in target]
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise MalformedPatch(f"map in list must contain the merge key {merge_key!r}")
        index = next(
            (i for i, cur in enumerate(result) if isinstance(cur, dict) and cur.get(merge_key) == item[merge_key]),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(_smp_map({}, item))
        else:
            result[index] = _smp_map(result[index], item)
    return result


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy and test, applied in order, all or nothing."""
    if not isinstance(operations, list):
        raise MalformedPatch("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise MalformedPatch(f"invalid JSON patch operation {op!r}")
        kind, path = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(_value(op)))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(_value(op)))
        elif kind in ("move", "copy"):
            source = _pointer(_required(op, "from"))
            if kind == "move":
                doc, moved = _remove(doc, source)
            else:
                moved = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, moved)
        elif kind == "test":
            if _get(doc, path) != _value(op):
                raise PatchError(f"testing value {op['path']} failed")
        else:
            raise MalformedPatch(f"unknown JSON patch operation {kind!r}")
    return doc


def _required(op: dict[str, Any], name: str) -> Any:
    if name not in op:
        raise MalformedPatch(f"operation {op['op']!r} needs {name!r}")
    return op[name]


def _value(op: dict[str, Any]) -> Any:
    return _required(op, "value")


def _pointer(text: Any) -> list[str]:
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise MalformedPatch(f"invalid JSON pointer {text!r}")
    if text == "":
        return []
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"array index {index} out of bounds")
    return index


def _parent(doc: Any, path: list[str]) -> Any:
    return _get(doc, path[:-1])


def _get(doc: Any, path: list[str]) -> Any:
    cur = doc
    for token in path:
        if isinstance(cur, dict):
            if token not in cur:
                raise PatchError(f"path /{'/'.join(path)} does not exist")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, allow_end=False)]
        else:
            raise PatchError(f"path /{'/'.join(path)} does not exist")
    return cur


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, token = _parent(doc, path), path[-1]
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, allow_end=True), value)
    else:
        raise PatchError(f"cannot add at /{'/'.join(path)}")
    return doc


def _remove(doc: Any, path: list[str]) -> tuple[Any, Any]:
    if not path:
        return None, doc
    parent, token = _parent(doc, path), path[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"path /{'/'.join(path)} does not exist")
        return doc, parent.pop(token)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, token, allow_end=False))
    raise PatchError(f"path /{'/'.join(path)} does not exist")
