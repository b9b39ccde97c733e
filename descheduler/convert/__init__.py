"""`descheduler policy convert`: an upstream descheduler or Koordinator configuration as our policy.

`convert_document(raw)` is pure: a parsed peer document → a Conversion (our document, its comments,
every problem, the plugins left out). `convert_input(text, source)` finds the peer document (the
file itself, or the data key of a ConfigMap that holds it), converts it, renders the commented
YAML and validates it as a policy; it raises ConversionError naming every field that cannot be
carried over. `convert_text` is the same, returning only the YAML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

from descheduler.convert import koordinator, upstream, v1alpha1
from descheduler.convert.draft import Conversion, LeftOut, OutPath, out_path_text
from descheduler.convert.render import render
from descheduler.errors import InputError
from descheduler.policy import API_VERSION, KIND, PolicyError, parse_policy

__all__ = [
    "EXIT_LEFT_OUT",
    "Conversion",
    "ConversionError",
    "Converted",
    "LeftOut",
    "convert_document",
    "convert_input",
    "convert_text",
    "detect",
]

EXIT_LEFT_OUT: Final = 3
"""`policy convert`'s exit code when the load-balancing part converted and other plugins were left out."""

_KINDS = (
    f"an upstream descheduler policy (apiVersion {upstream.API_VERSION} or {v1alpha1.API_VERSION}, kind "
    f"{upstream.KIND}) or a Koordinator configuration (apiVersion {koordinator.API_VERSION}, kind {koordinator.KIND}), "
    "or a ConfigMap holding one"
)
_PEERS: Final[dict[tuple[Any, Any], str]] = {
    (upstream.API_VERSION, upstream.KIND): "upstream",
    (v1alpha1.API_VERSION, v1alpha1.KIND): "upstream-v1alpha1",
    (koordinator.API_VERSION, koordinator.KIND): "koordinator",
}


class ConversionError(InputError):
    """A peer configuration that cannot be converted, with every field that cannot be carried over."""

    def __init__(self, source: str, problems: Sequence[tuple[str, str]], what: str = "") -> None:
        self.problems = list(problems)
        lines = [f"cannot convert{f' {what}' if what else ''}:"]
        lines += [f"  - {path}: {message}" if path else f"  - {message}" for path, message in self.problems]
        super().__init__("\n".join(lines), source=source)


@dataclass(frozen=True, slots=True)
class Converted:
    """The converted policy as YAML, and what the command says beside it."""

    text: str
    comments: Mapping[OutPath, list[str]]  # the comments above each field of the policy, as written in `text`
    converted_from: str
    where: str  # inside the file: "" or "ConfigMap kube-system/descheduler, data key policy.yaml"
    left_out: tuple[LeftOut, ...]
    left_out_how: str  # what to do with the plugins left out
    also_found: tuple[str, ...]  # other places in the file that hold a peer configuration, not converted


def detect(raw: Any) -> str:
    """Which peer wrote this document: "upstream", "upstream-v1alpha1" or "koordinator"; ValueError says why none."""
    if not isinstance(raw, Mapping):
        got = "an empty document" if raw is None else f"a {type(raw).__name__}"
        raise ValueError(f"expected {_KINDS}; got {got}")
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    peer = _PEERS.get((api_version, kind))
    if peer is not None:
        return peer
    if api_version == API_VERSION and kind == KIND:
        raise ValueError("this is already our policy (check it with `descheduler policy validate`)")
    raise ValueError(f"expected {_KINDS}; got apiVersion {api_version!r}, kind {kind!r}")


def convert_document(raw: Any) -> Conversion:
    """A parsed peer document as our policy (plain data), its comments, its problems and what was left out."""
    peer = detect(raw)
    if peer == "upstream":
        conversion = upstream.convert_upstream(raw)
    elif peer == "upstream-v1alpha1":
        conversion = v1alpha1.convert_v1alpha1(raw)
    else:
        conversion = koordinator.convert_koordinator(raw)
    conversion.policy = {"apiVersion": API_VERSION, "kind": KIND, **conversion.policy}
    return conversion


def convert_text(text: str, source: str = "<string>", key: str | None = None) -> str:
    """The commented YAML of our policy for this peer configuration; ConversionError lists every problem."""
    return convert_input(text, source, key).text


def convert_input(text: str, source: str = "<string>", key: str | None = None) -> Converted:
    """Find the peer configuration in `text` (`key`: the ConfigMap data key to read), convert and validate it."""
    raw, where, also_found = _find_peer_document(text, source, key)
    try:
        conversion = convert_document(raw)
    except ValueError as err:
        raise ConversionError(source, [("", f"{where + ': ' if where else ''}{err}")]) from None
    what = f"{conversion.converted_from}{f' in {where}' if where else ''}"
    if conversion.errors:
        raise ConversionError(source, conversion.errors, what)
    header = [
        f"Converted by `descheduler policy convert` from {what}: {source}.",
        "Comments mark every field whose meaning differs from the original; check them before use.",
        *conversion.notes,
        *(f"Also in the file, not converted: {place} (convert it with --key)" for place in also_found),
    ]
    if conversion.left_out:
        header.append(f"Plugins left out, not converted: {conversion.left_out_how}.")
        header += [f"- {item.line()}" for item in conversion.left_out]
    output = render(conversion.policy, conversion.comments, header)
    if yaml.safe_load(output) != conversion.policy:  # the hand-written YAML must say what the document does
        raise AssertionError(f"rendered YAML does not re-load as the converted document:\n{output}")
    try:
        parse_policy(output, f"converted from {source}")
    except PolicyError as err:
        raise ConversionError(source, _at_input(conversion, err), what) from None
    return Converted(
        output,
        conversion.comments,
        conversion.converted_from,
        where,
        tuple(conversion.left_out),
        conversion.left_out_how,
        also_found,
    )


def _find_peer_document(text: str, source: str, key: str | None) -> tuple[Any, str, tuple[str, ...]]:
    """The document to convert, where it was in the file, and the other places that hold one.

    A file may hold the configuration itself, or a ConfigMap (as both peers ship it: upstream's
    kubernetes/base/configmap.yaml and chart, key policy.yaml; Koordinator's
    config/manager/descheduler-config.yaml, key koord-descheduler-config), or several YAML documents
    (a rendered chart). When several hold one, the first is converted and the others are named.
    """
    if "\x00" in text:
        raise ConversionError(source, [("", "not a text file (it holds NUL bytes)")])
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as err:
        raise ConversionError(source, [("", f"not valid YAML: {err}")]) from None
    several = len(documents) > 1
    found: list[tuple[Any, str]] = []
    config_maps: list[tuple[Mapping[str, Any], str]] = []
    for index, document in enumerate(documents):
        label = f"document {index + 1}" if several else ""
        if _is_config_map(document):
            name = _object_name(document)
            config_maps.append((document, name))
            found += _config_map_candidates(document, name, key, source)
        elif (
            key is None
            and isinstance(document, Mapping)
            and (document.get("apiVersion"), document.get("kind")) in _PEERS
        ):
            found.append((document, label))
    if key is not None and not config_maps:
        raise ConversionError(
            source, [("", f"--key {key} reads a ConfigMap's data key, and the file holds no ConfigMap")]
        )
    if not found:
        if config_maps:
            raise ConversionError(source, [("", _no_policy_in(config_maps, key))])
        if len(documents) == 1:
            return documents[0], "", ()
        raise ConversionError(source, [("", f"none of the {len(documents)} YAML documents is {_KINDS}")])
    (raw, where), *others = found
    return raw, where, tuple(place for _, place in others)


def _is_config_map(document: Any) -> bool:
    return isinstance(document, Mapping) and document.get("apiVersion") == "v1" and document.get("kind") == "ConfigMap"


def _object_name(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        return "ConfigMap"
    name, namespace = metadata.get("name"), metadata.get("namespace")
    return f"ConfigMap {namespace}/{name}" if namespace else f"ConfigMap {name}"


def _config_map_candidates(
    document: Mapping[str, Any], name: str, key: str | None, source: str
) -> list[tuple[Any, str]]:
    """The data keys of this ConfigMap that hold a peer configuration (with --key: that key, whatever it holds)."""
    data = document.get("data")
    if not isinstance(data, Mapping):
        return []
    if key is not None:
        if key not in data:
            return []
        return [(_parse_value(data[key], f"{name}, data key {key}", source), f"{name}, data key {key}")]
    candidates = []
    for data_key, value in data.items():
        where = f"{name}, data key {data_key}"
        try:
            parsed = yaml.safe_load(value) if isinstance(value, str) else None
        except yaml.YAMLError:
            continue  # another file kept beside the policy; named if nothing else is found
        if isinstance(parsed, Mapping) and (parsed.get("apiVersion"), parsed.get("kind")) in _PEERS:
            candidates.append((parsed, where))
    return candidates


def _parse_value(value: Any, where: str, source: str) -> Any:
    if not isinstance(value, str):
        raise ConversionError(source, [("", f"{where}: must be text (the policy's YAML), got {type(value).__name__}")])
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise ConversionError(source, [("", f"{where}: not valid YAML: {err}")]) from None


def _no_policy_in(config_maps: list[tuple[Mapping[str, Any], str]], key: str | None) -> str:
    described = []
    for document, name in config_maps:
        data = document.get("data")
        keys = ", ".join(str(k) for k in data) if isinstance(data, Mapping) and data else "no data keys"
        described.append(f"{name} ({keys})")
    if key is not None:
        return f"no data key {key!r} in {'; '.join(described)}"
    return f"no data key of {'; '.join(described)} holds {_KINDS.removesuffix(', or a ConfigMap holding one')}"


def _at_input(conversion: Conversion, error: PolicyError) -> list[tuple[str, str]]:
    """Our policy's problems, each at the input field it came from (or at ours when none did)."""
    by_text = {out_path_text(path): path for path in conversion.origins}
    problems = []
    for path, message in error.problems:
        # The longest converted path that starts the problem's path; what follows it (a key inside
        # a map carried over whole, such as evictableNamespaces.typo) is the same in the input.
        found = max(
            (text for text in by_text if path == text or path.startswith((f"{text}.", f"{text}["))),
            key=len,
            default=None,
        )
        origin = conversion.origins[by_text[found]] if found is not None else None
        if origin and found is not None:
            problems.append((origin + path[len(found) :], message))
        else:
            problems.append((path, f"{message} (in the converted policy)"))
    return problems
