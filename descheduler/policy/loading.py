"""Reading a policy from text or a file, the built-in default, and the JSON schema."""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic.json_schema import GenerateJsonSchema

from descheduler.policy.default import DEFAULT_POLICY_YAML
from descheduler.policy.document import FILE_CONTEXT, Policy
from descheduler.policy.errors import PolicyError, problems_from

SCHEMA_ID = "https://descheduler.dev/schemas/policy.schema.json"


def parse_policy(text: str, source: str = "<string>") -> Policy:
    """Validate a policy written as YAML or JSON; raise PolicyError listing every problem."""
    if "\x00" in text:
        raise PolicyError(source, [("", "not a text file (it holds NUL bytes)")])
    raw = _load_document(text, source)
    if not isinstance(raw, dict):
        got = "an empty document" if raw is None else f"a {type(raw).__name__}"
        raise PolicyError(source, [("", f"expected a map with apiVersion, kind, strategies, …; got {got}")])
    peer = _PEER_KINDS.get((raw.get("apiVersion"), raw.get("kind")))
    if peer is not None:
        raise PolicyError(
            source, [("", f"this is {peer}, not our policy: convert it with `descheduler policy convert {source}`")]
        )
    if (raw.get("apiVersion"), raw.get("kind")) == ("v1", "ConfigMap"):
        raise PolicyError(
            source,
            [
                (
                    "",
                    "this is a ConfigMap, not a policy: give the policy it holds (the text of its data key); "
                    f"a peer's configuration inside one converts with `descheduler policy convert {source}`",
                )
            ],
        )
    # The models default these for Python callers; a file must state what it is.
    missing = [(key, "required") for key in ("apiVersion", "kind") if key not in raw]
    try:
        # by_name=False: Python code may use snake_case names, a file only the documented camelCase keys.
        policy = Policy.model_validate(raw, strict=True, by_name=False, context=FILE_CONTEXT)
    except ValidationError as err:
        raise PolicyError(source, missing + problems_from(err, Policy, raw)) from None
    if missing:
        raise PolicyError(source, missing)
    return policy


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate a policy file; a missing or unreadable file is a PolicyError naming it."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise PolicyError(source, [("", "not a text file (it is not UTF-8)")]) from None
    except OSError as err:
        raise PolicyError(source, [("", f"cannot read the file: {err.strerror or err}")]) from None
    return parse_policy(text, source)


# Configurations of the peers `descheduler policy convert` reads, by (apiVersion, kind).
_PEER_KINDS: dict[tuple[Any, Any], str] = {
    (
        "descheduler/v1alpha2",
        "DeschedulerPolicy",
    ): "an upstream kubernetes-sigs/descheduler policy (descheduler/v1alpha2)",
    (
        "descheduler/v1alpha1",
        "DeschedulerPolicy",
    ): "an upstream kubernetes-sigs/descheduler policy (descheduler/v1alpha1)",
    ("descheduler/v1alpha2", "DeschedulerConfiguration"): "a Koordinator koord-descheduler configuration",
}


@functools.cache
def default_policy() -> Policy:
    """The policy used when none is given (the content of config/policy.yaml)."""
    # Cached: a Policy is immutable, and the default text is part of the package.
    return parse_policy(DEFAULT_POLICY_YAML, "<default policy>")


def policy_schema() -> dict[str, Any]:
    """The JSON schema of the policy file (config/policy.schema.json)."""
    schema = Policy.model_json_schema(by_alias=True, mode="validation", schema_generator=_SchemaWithoutFieldTitles)
    # Strategy args come out inline (StrategyConfig builds them per registered name); name them.
    defs = schema.setdefault("$defs", {})
    for alternative in defs.get("StrategyConfig", {}).get("oneOf", []):
        args = alternative["properties"]["args"]
        if "title" in args and args["title"] not in defs:
            defs[args["title"]] = args
            alternative["properties"]["args"] = {"$ref": f"#/$defs/{args['title']}"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


class _SchemaWithoutFieldTitles(GenerateJsonSchema):
    """Field titles would only repeat the key ("Usagethresholds"); descriptions say what a field means."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, which PyYAML would otherwise silently overwrite."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 reads 1e-05 (no dot) as a string; JSON and YAML 1.2 read it as a number, and so do we.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"),
)


def _load_document(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = " ".join(part for part in (err.context, err.problem) if part)
        raise PolicyError(source, [(where, f"not valid YAML: {reason}")]) from None
    except yaml.YAMLError as err:
        raise PolicyError(source, [("", f"not valid YAML: {err}")]) from None


def schema_text() -> str:
    """config/policy.schema.json exactly as it should be on disk."""
    return json.dumps(policy_schema(), indent=2, sort_keys=True) + "\n"
