"""`descheduler policy convert`: an upstream descheduler or Koordinator configuration as our policy.

`convert_document(raw)` is pure: a parsed peer document → a Conversion (our document, its comments,
every problem). `convert_text(text, source)` reads, converts, renders the commented YAML and
validates it as a policy; it raises ConversionError naming every field that cannot be carried over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from descheduler.convert import koordinator, upstream
from descheduler.convert.draft import Conversion, out_path_text
from descheduler.convert.render import render
from descheduler.errors import InputError
from descheduler.policy import API_VERSION, KIND, PolicyError, parse_policy

__all__ = ["Conversion", "ConversionError", "convert_document", "convert_text", "detect"]

_KINDS = (
    f"an upstream descheduler policy (apiVersion {upstream.API_VERSION}, kind {upstream.KIND}) or a Koordinator "
    f"configuration (apiVersion {koordinator.API_VERSION}, kind {koordinator.KIND})"
)


class ConversionError(InputError):
    """A peer configuration that cannot be converted, with every field that cannot be carried over."""

    def __init__(self, source: str, problems: Sequence[tuple[str, str]], what: str = "") -> None:
        self.problems = list(problems)
        lines = [f"cannot convert{f' {what}' if what else ''}:"]
        lines += [f"  - {path}: {message}" if path else f"  - {message}" for path, message in self.problems]
        super().__init__("\n".join(lines), source=source)


def detect(raw: Any) -> str:
    """Which peer wrote this document: "upstream" or "koordinator"; ValueError says why it is neither."""
    if not isinstance(raw, Mapping):
        got = "an empty document" if raw is None else f"a {type(raw).__name__}"
        raise ValueError(f"expected {_KINDS}; got {got}")
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    if api_version == upstream.API_VERSION and kind == upstream.KIND:
        return "upstream"
    if api_version == koordinator.API_VERSION and kind == koordinator.KIND:
        return "koordinator"
    if api_version == API_VERSION and kind == KIND:
        raise ValueError("this is already our policy (check it with `descheduler policy validate`)")
    if api_version == "descheduler/v1alpha1":
        raise ValueError(
            "a descheduler/v1alpha1 policy (strategies, not profiles): upstream's v1alpha1 is gone; convert it to "
            "descheduler/v1alpha2 first (upstream's docs show how), then here"
        )
    raise ValueError(f"expected {_KINDS}; got apiVersion {api_version!r}, kind {kind!r}")


def convert_document(raw: Any) -> Conversion:
    """A parsed peer document as our policy (plain data), its comments and its problems."""
    peer = detect(raw)
    conversion = upstream.convert_upstream(raw) if peer == "upstream" else koordinator.convert_koordinator(raw)
    conversion.policy = {"apiVersion": API_VERSION, "kind": KIND, **conversion.policy}
    return conversion


def convert_text(text: str, source: str = "<string>") -> str:
    """The commented YAML of our policy for this peer configuration; ConversionError lists every problem."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConversionError(source, [("", f"not valid YAML: {err}")]) from None
    try:
        conversion = convert_document(raw)
    except ValueError as err:
        raise ConversionError(source, [("", str(err))]) from None
    if conversion.errors:
        raise ConversionError(source, conversion.errors, f"{conversion.converted_from}")
    header = [
        f"Converted by `descheduler policy convert` from {conversion.converted_from}: {source}.",
        "Comments mark every field whose meaning differs from the original; check them before use.",
        *conversion.notes,
    ]
    output = render(conversion.policy, conversion.comments, header)
    if yaml.safe_load(output) != conversion.policy:  # the hand-written YAML must say what the document does
        raise AssertionError(f"rendered YAML does not re-load as the converted document:\n{output}")
    try:
        parse_policy(output, f"converted from {source}")
    except PolicyError as err:
        raise ConversionError(source, _at_input(conversion, err), conversion.converted_from) from None
    return output


def _at_input(conversion: Conversion, error: PolicyError) -> list[tuple[str, str]]:
    """Our policy's problems, each at the input field it came from (or at ours when none did)."""
    by_text = {out_path_text(path): path for path in conversion.origins}
    problems = []
    for path, message in error.problems:
        # The longest converted path that starts the problem's path.
        found = max(
            (text for text in by_text if path == text or path.startswith((f"{text}.", f"{text}["))),
            key=len,
            default=None,
        )
        origin = conversion.origins[by_text[found]] if found is not None else None
        problems.append((origin, message) if origin else (path, f"{message} (in the converted policy)"))
    return problems
