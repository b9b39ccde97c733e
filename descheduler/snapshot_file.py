"""Snapshot files (README §4.1): the formats `snapshot save` writes, written as a stream, and the
objects of any snapshot file read back one at a time.

- JSON (`.json`, `.json.gz`): `snapshot save` writes one `List` with one item per line. That is
  plain JSON for any tool, and a layout this reader streams: memory holds one line, not the file.
  Any other JSON (kubectl's pretty-printed `-o json`, a single object) is read whole and its items
  handed over as JSON text, to be decoded one by one.
- YAML (`.yaml`, `.yml`, and `.gz` of them): one `List`, as kubectl writes it, written item by
  item. A List laid out so (kubectl's too) is read one item at a time; anything else is read
  whole. PyYAML builds every scalar in Python (a few ms an object either way, see README): YAML is
  for people and small clusters, JSON for big ones.

`.gz`: gzip through ISA-L (`isal`: deflate ~8× and inflate ~2× as fast as zlib, the same format),
level 1 (Kubernetes JSON still shrinks about 20×).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

import msgspec
import yaml
from isal import igzip, igzip_lib

from descheduler.errors import InputError

SNAPSHOT_TIME_ANNOTATION = "descheduler.dev/snapshot-time"
# The scheduler Lease `snapshot save` looked for (NAMESPACE/NAME); the Lease itself is an item when it
# existed. With it, `plan --snapshot` says how each move would go, as `plan --kubeconfig` does.
SCHEDULER_LEASE_ANNOTATION = "descheduler.dev/scheduler-lease"
# Why that Lease could not be read (a 403, say), when it could not: the replayed plan says so too.
SCHEDULER_LEASE_ERROR_ANNOTATION = "descheduler.dev/scheduler-lease-error"
SUFFIXES = (".json", ".json.gz", ".yaml", ".yml", ".yaml.gz", ".yml.gz")
GZIP_LEVEL = 1
_BUFFER = 1 << 20  # bytes handed to zlib (or the file) at a time

# How `snapshot save` and the API begin an object (apiVersion, then kind, first): its type can be read
# from these bytes alone (group 1: the kind).
TYPE_HEAD = re.compile(rb'\{"apiVersion":"[^"\\]*","kind":"([^"\\]*)"')
_ITEMS_OPEN = b'"items":['
_ITEMS_CLOSE = b"]}"
_ABSENT = msgspec.Raw(b"")
_END = object()
_INFLATE_ERROR = cast(type[Exception], igzip_lib.IsalError)  # corrupt deflate data (its stub calls it an instance)


class Restart(Exception):
    """A JSON file began in the streamed layout but left it (hand-edited, cut short): read it whole."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


def is_json(path: Path) -> bool:
    name = path.name.removesuffix(".gz")
    return Path(name).suffix == ".json"


def snapshot_files(path: Path) -> list[Path]:
    """The file, or the snapshot files under a directory, sorted."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.name.endswith(SUFFIXES) and p.is_file())
        if not found:
            raise InputError("directory holds no .json, .yaml or .yml files (nor .gz of them)", source=str(path))
        return found
    if not path.exists():
        raise InputError("no such file or directory", source=str(path))
    return [path]


# --- reading --------------------------------------------------------------------------------


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML loader that keeps timestamps as strings, as the API's JSON has them."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _JsonDocument(msgspec.Struct):
    """A JSON file's top-level object as far as telling a List from an object goes."""

    kind: Any = None
    metadata: Any = None
    items: msgspec.Raw = _ABSENT


_DOCUMENT = msgspec.json.Decoder(_JsonDocument)
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw] | None)


def documents(path: Path, *, whole: bool = False) -> Iterator[tuple[str, Any]]:
    """(where, object) for every object in a file: documents, and items of List documents. A JSON
    object comes as its text (`msgspec.Raw`), a YAML one as plain data; a List's own metadata as
    `{"__list_meta__": metadata}`. `whole`: read a JSON file whole, not line by line."""
    try:
        if is_json(path):
            yield from _json_documents(path, whole=whole)
        else:
            yield from _yaml_documents(path, whole=whole)
    except (EOFError, zlib.error, _INFLATE_ERROR, gzip.BadGzipFile) as error:
        raise InputError(f"not a readable gzip file: {error}", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", source=str(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", source=str(path)) from None


def _open(path: Path) -> BinaryIO:
    if path.name.endswith(".gz"):
        return igzip.open(path, "rb")  # type: ignore[no-any-return, no-untyped-call]
    return path.open("rb")


def _json_documents(path: Path, *, whole: bool) -> Iterator[tuple[str, Any]]:
    with _open(path) as stream:
        first = stream.readline()
        head = None if whole else _list_head(first)
        if head is None:
            yield from _whole_json(path, first + stream.read())
            return
        kind, meta = head
        yield (kind, {"__list_meta__": meta})
        index, pending, closed = 0, b"", False
        # Blocks split into lines in C: a line at a time through readline costs more than its decoding.
        while block := stream.read(_BUFFER):
            lines = block.split(b"\n")
            if pending:  # joined to its line only: a copy of the whole block costs as much as the split
                lines[0] = pending + lines[0]
            pending = lines.pop()
            for line in lines:
                if closed:
                    if line.strip():
                        raise Restart(path)
                elif line.endswith(b","):
                    yield (f"item {index}", msgspec.Raw(line[:-1]))
                    index += 1
                elif line == _ITEMS_CLOSE:
                    closed = True
                elif line.strip():
                    yield (f"item {index}", msgspec.Raw(line))
                    index += 1
        if not closed and pending.strip() == _ITEMS_CLOSE:
            return
        if not closed or pending.strip():
            raise Restart(path)  # no closing line: cut short, or not the layout `snapshot save` writes


def _list_head(line: bytes) -> tuple[str, Any] | None:
    """The kind and metadata of a List whose first line is everything up to `"items":[`, else None."""
    text = line.strip()
    if not (text.startswith(b"{") and text.endswith(_ITEMS_OPEN)):
        return None
    body = text[: -len(_ITEMS_OPEN)].rstrip()
    if body.endswith(b","):
        body = body[:-1] + b"}"
    elif body == b"{":
        body = b"{}"
    else:
        return None
    try:
        head = _DOCUMENT.decode(body)
    except msgspec.MsgspecError:
        return None
    if not (isinstance(head.kind, str) and head.kind.endswith("List")):
        return None
    return head.kind, head.metadata or {}


def _whole_json(path: Path, data: bytes) -> Iterator[tuple[str, Any]]:
    try:
        document = _DOCUMENT.decode(data)
    except msgspec.ValidationError:  # valid JSON, but not an object: the collector names what it is
        yield ("", msgspec.Raw(data))
        return
    except msgspec.DecodeError as error:
        raise _malformed_json(path, data, error) from None
    kind = document.kind
    if not (isinstance(kind, str) and kind.endswith("List") and document.items is not _ABSENT):
        yield ("", msgspec.Raw(data))
        return
    try:
        items = _ITEMS.decode(document.items) or []
    except msgspec.ValidationError:
        raise InputError("items must be a list", source=str(path), where=kind, field="items") from None
    yield (kind, {"__list_meta__": document.metadata or {}})
    for index, item in enumerate(items):
        yield (f"item {index}", item)


def _malformed_json(path: Path, data: bytes, error: msgspec.DecodeError) -> InputError:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return InputError("not a UTF-8 text file", source=str(path))
    message = str(error).removeprefix("JSON is malformed: ")
    at = re.search(r"\s*\(byte (\d+)\)$", message)
    if at is None:
        return InputError(f"malformed JSON: {message}", source=str(path))
    offset = int(at.group(1))
    line, column = data.count(b"\n", 0, offset) + 1, offset - data.rfind(b"\n", 0, offset)
    return InputError(f"malformed JSON at line {line}, column {column}: {message[: at.start()]}", source=str(path))


def _yaml_documents(path: Path, *, whole: bool) -> Iterator[tuple[str, Any]]:
    if not whole:
        with io.TextIOWrapper(_open(path), encoding="utf-8") as stream:
            chunked = _yaml_list_items(path, stream)
            if chunked is not None:
                yield from chunked
                return
    with io.TextIOWrapper(_open(path), encoding="utf-8") as stream:
        loaded = _loaded_yaml(path, stream)
        # Documents are named by index only when a file has several: look one ahead to know.
        ahead = [doc for doc in (next(loaded, _END), next(loaded, _END)) if doc is not _END]
        several = len(ahead) > 1
        for index, doc in enumerate(_chain(ahead, loaded)):
            if doc is None:
                continue
            where = f"document {index}" if several else ""
            if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
                items = doc.get("items") or []
                if not isinstance(items, list):
                    raise InputError(
                        "items must be a list", source=str(path), where=where or doc["kind"], field="items"
                    )
                yield (f"{where} {doc['kind']}".strip(), {"__list_meta__": doc.get("metadata") or {}})
                for i, item in enumerate(items):
                    yield (f"{where} item {i}".strip(), item)
            else:
                yield (where, doc)


# A YAML List as `snapshot save` and kubectl write it (one document, `items:` at the margin, each
# item a `- ` at the margin) is read one item at a time: each item's lines are a YAML document of
# their own, which the C parser reads; the rest of the List is read once its items are done. A line
# at the margin inside an item can only be another item or the List's next key, so the cut is
# exact; anything unexpected (several documents, an alias to another item, a parse error) reads the
# file whole instead, which also names a syntax error by its line in the file.


def _yaml_list_items(path: Path, stream: IO[str]) -> Iterator[tuple[str, Any]] | None:
    """The items of a one-document YAML List one by one, or None when the file is not laid out so
    (nothing is read past its head then)."""
    head: list[str] = []
    for line in stream:
        if line.startswith(("---", "...")):
            return None
        if line.rstrip() == "items:":
            break
        head.append(line)
    else:
        return None
    first = _next_content(stream)
    if first is None or not (first.startswith("- ") or first.rstrip() == "-"):
        return None
    known = _yaml_head(head)
    if known is None or not (known.get("kind") is None or str(known.get("kind")).endswith("List")):
        return None
    return _yaml_chunks(path, stream, head, first)


def _next_content(stream: IO[str]) -> str | None:
    for line in stream:
        if line.strip() and not line.startswith("#"):
            return line
    return None


def _yaml_head(lines: list[str]) -> dict[str, Any] | None:
    try:
        head = yaml.load("".join(lines) + "items: []\n", Loader=_Loader)
    except yaml.YAMLError:
        return None
    return head if isinstance(head, dict) and head.get("items") == [] else None


def _yaml_chunks(path: Path, stream: IO[str], head: list[str], first: str) -> Iterator[tuple[str, Any]]:
    known = _yaml_head(head) or {}
    kind = known.get("kind")
    if kind is not None:
        yield (str(kind), {"__list_meta__": known.get("metadata") or {}})
    chunk, index, tail = [first], 0, False
    for line in stream:
        if tail:
            head.append(line)
            if line.startswith(("---", "...")):
                raise Restart(path)
        elif line.startswith("- ") or line.rstrip() == "-":
            yield (f"item {index}", _yaml_item(path, chunk))
            chunk, index = [line], index + 1
        elif line[:1] in (" ", "#", "\n", "\r", "\t") or not line:
            chunk.append(line)
        else:  # the List's next key: its items are done
            tail = True
            head.append(line)
    yield (f"item {index}", _yaml_item(path, chunk))
    whole = _yaml_head(head)
    if whole is None or not str(whole.get("kind", "")).endswith("List"):
        raise Restart(path)  # not a List after all: read the file whole, as any document
    if kind is None:
        yield (str(whole["kind"]), {"__list_meta__": whole.get("metadata") or {}})


def _yaml_item(path: Path, lines: list[str]) -> Any:
    try:
        loaded = yaml.load("".join(lines), Loader=_Loader)
    except yaml.YAMLError:
        raise Restart(path) from None
    if not (isinstance(loaded, list) and len(loaded) == 1):
        raise Restart(path)
    return loaded[0]


def _chain(ahead: list[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from ahead
    ahead.clear()  # the look-ahead holds no document once handed on
    yield from rest


def _loaded_yaml(path: Path, stream: IO[str]) -> Iterator[Any]:
    """Each document of a YAML stream, parsed as it is reached; a syntax error names line and column."""
    try:
        yield from yaml.load_all(stream, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML{where}: {problem}", source=str(path)) from None


# --- writing --------------------------------------------------------------------------------


@contextmanager
def writing(
    path: Path, snapshot_time: str, annotations: Mapping[str, str] | None = None
) -> Iterator[Callable[[bytes], None]]:
    """Write a snapshot file as a stream, in the format its suffix names: yields `write(item)`,
    which takes each object as compact JSON (apiVersion and kind set). The List's annotations are
    the snapshot time and `annotations`. The file appears under its name only once complete."""
    temporary = path.with_name(path.name + ".tmp")
    meta = {"annotations": {SNAPSHOT_TIME_ANNOTATION: snapshot_time, **(annotations or {})}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb", buffering=_BUFFER) as file:
            out: BinaryIO = file
            if path.name.endswith(".gz"):
                compressed = igzip.GzipFile(  # type: ignore[no-untyped-call]
                    filename="", mode="wb", fileobj=file, compresslevel=GZIP_LEVEL, mtime=0
                )
                out = io.BufferedWriter(compressed, buffer_size=_BUFFER)
            with out:
                if is_json(path):
                    yield from _json_writer(out, meta)
                else:
                    yield from _yaml_writer(out, meta)
        temporary.replace(path)  # never leave a half-written snapshot under the real name
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", source=str(path)) from None
    finally:
        temporary.unlink(missing_ok=True)


def _json_writer(out: BinaryIO, meta: dict[str, Any]) -> Iterator[Callable[[bytes], None]]:
    head = msgspec.json.encode({"apiVersion": "v1", "kind": "List", "metadata": meta})
    out.write(head[:-1] + b"," + _ITEMS_OPEN)
    # Items are gathered and written a megabyte at a time, joined by their separators: one copy of
    # each (the join; `out` takes a write that large without copying it into its buffer), and one
    # large write, instead of two calls and a copy into the buffer per item.
    pending: list[bytes] = []
    size = 0
    separator = b"\n"

    def flush() -> None:
        nonlocal separator, size
        if pending:
            out.write(separator)
            out.write(b",\n".join(pending))
            pending.clear()
            separator, size = b",\n", 0

    def write(item: bytes) -> None:
        nonlocal size
        if b"\n" in item:  # whitespace from a pretty-printing server: one item must be one line
            item = msgspec.json.encode(msgspec.json.decode(item))
        pending.append(item)
        size += len(item)
        if size >= _BUFFER:
            flush()

    yield write
    flush()
    out.write(b"\n" + _ITEMS_CLOSE + b"\n")


def _yaml_writer(out: BinaryIO, meta: dict[str, Any]) -> Iterator[Callable[[bytes], None]]:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    options: dict[str, Any] = {"Dumper": dumper, "sort_keys": False, "default_flow_style": False}
    text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    try:
        yaml.dump({"apiVersion": "v1", "kind": "List", "metadata": meta}, text, **options)
        written = [False]

        def write(item: bytes) -> None:
            if not written[0]:
                text.write("items:\n")
                written[0] = True
            yaml.dump([msgspec.json.decode(item)], text, **options)

        yield write
        if not written[0]:
            text.write("items: []\n")
    finally:
        text.flush()
        text.detach()  # `out` is closed by its owner
