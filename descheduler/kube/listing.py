"""Paginated list requests (limit/continue), shared by the reflectors, the load readers and `snapshot save`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, Protocol, TypeVar

import msgspec

from descheduler import decode
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.kube.kinds import RawList, RawListMeta, RawMetaOnly, ResourceKind


class ContinueExpired(KubeApiError):
    """410 on a follow-up page: the continue token left the server's window; list again from the start."""


class _ObjectList(msgspec.Struct, kw_only=True):
    metadata: RawListMeta = msgspec.field(default_factory=RawListMeta)
    items: list[dict[str, Any]] | None = None


class _TypeMeta(msgspec.Struct, rename="camel"):
    api_version: Any = None
    kind: Any = None


_OBJECTS = msgspec.json.Decoder(_ObjectList)
_RAW_LIST = msgspec.json.Decoder(RawList[msgspec.Raw])
_META = msgspec.json.Decoder(RawMetaOnly)
_TYPE_META = msgspec.json.Decoder(_TypeMeta)


class _Page(Protocol):
    @property
    def metadata(self) -> RawListMeta: ...


PageT = TypeVar("PageT", bound=_Page)


def list_pages(
    client: KubeClient,
    path: str,
    decode: Callable[[bytes], PageT],
    *,
    page_size: int = 500,
    cancel: threading.Event | None = None,
) -> Iterator[PageT]:
    """Each page of a list, decoded by `decode` (which must read `metadata.continue`);
    `page_size` 0 asks for everything at once."""
    token = ""
    while True:
        query: dict[str, Any] = {}
        if page_size > 0:
            query["limit"] = page_size
        if token:
            query["continue"] = token
        try:
            body = client.request("GET", path, query=query, cancel=cancel)
        except KubeApiError as error:
            if error.status == 410 and token:
                raise ContinueExpired(error.method, error.path, error.status, error.body) from None
            raise
        page = decode(body)
        yield page
        token = page.metadata.continue_
        if not token:
            return


def list_objects(
    client: KubeClient,
    path: str,
    *,
    api_version: str,
    kind: str,
    page_size: int = 500,
    attempts: int = 3,
) -> tuple[list[dict[str, Any]], str]:
    """Every object of a collection as plain dicts, with apiVersion and kind set on each (list items
    carry neither), and the list's resourceVersion. An expired continue token restarts the list."""

    def typed(item: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": kind, **item}

    return _restarting(client, path, _OBJECTS.decode, typed, page_size, attempts)


def list_texts(
    client: KubeClient,
    path: str,
    *,
    api_version: str,
    kind: str,
    page_size: int = 500,
    attempts: int = 3,
) -> tuple[list[msgspec.Raw], str]:
    """`list_objects`, each object as its JSON text instead of a dict (a tenth of the memory, and
    written to a snapshot file as it is)."""
    return _restarting(
        client, path, _RAW_LIST.decode, partial(object_text, api_version=api_version, kind=kind), page_size, attempts
    )


OutT = TypeVar("OutT")


def _restarting(
    client: KubeClient,
    path: str,
    read_page: Callable[[bytes], Any],
    each: Callable[[Any], OutT],
    page_size: int,
    attempts: int,
) -> tuple[list[OutT], str]:
    """Every item of a list through `each`, and the list's resourceVersion; an expired continue
    token lists again from the start, up to `attempts` times."""
    for attempt in range(attempts):
        out: list[OutT] = []
        version = ""
        try:
            for page in list_pages(client, path, read_page, page_size=page_size):
                version = page.metadata.resource_version
                out.extend(each(item) for item in page.items or ())
        except ContinueExpired:
            if attempt + 1 == attempts:
                raise
            continue
        return out, version
    raise AssertionError("unreachable")


def object_text(item: msgspec.Raw, api_version: str, kind: str) -> msgspec.Raw:
    """A list item's JSON with apiVersion and kind set, as `list_objects` sets them."""
    head = _type_head(api_version, kind)
    if memoryview(item)[: len(head)] == head:
        return item  # set already, and first (metrics-server's items): as it is, not decoded and encoded again
    try:
        given = _TYPE_META.decode(item)
    except msgspec.ValidationError:
        return item  # not an object: whoever decodes it names the problem
    if given.api_version is None and given.kind is None:
        rest = bytes(item)[1:].lstrip()
        return msgspec.Raw(head[:-1] + rest if rest.startswith(b"}") else head + rest)
    obj = msgspec.json.decode(item)
    return msgspec.Raw(msgspec.json.encode({"apiVersion": api_version, "kind": kind, **obj}))


@lru_cache(maxsize=64)
def _type_head(api_version: str, kind: str) -> bytes:
    """`{"apiVersion":…,"kind":…,`: how an object with both set, and first, begins."""
    return b'{"apiVersion":%s,"kind":%s,' % (msgspec.json.encode(api_version), msgspec.json.encode(kind))


@dataclass(slots=True)
class Listed:
    """A whole list decoded into records by key; objects that could not be read are in `problems`."""

    records: dict[str, Any] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    resource_version: str = ""


class DecodedPage:
    """Typed items, or raw ones when one item did not fit the kind's shape (decoded one by one)."""

    __slots__ = ("body", "items", "metadata", "typed")

    def __init__(self, page: RawList[Any], *, typed: bool, body: bytes = b"") -> None:
        self.metadata: RawListMeta = page.metadata
        self.items: list[Any] = page.items or []
        self.typed = typed
        self.body = body  # the JSON, while typed: an item that needs its full shape (decode.Refit) re-reads it


def list_records(
    client: KubeClient,
    kind: ResourceKind,
    *,
    page_size: int = 500,
    cancel: threading.Event | None = None,
) -> Listed:
    """List a collection in pages and decode it into the kind's records."""
    listed = Listed()
    for page in list_pages(client, kind.path, partial(decode_page, kind), page_size=page_size, cancel=cancel):
        add_page(kind, page, listed)
    return listed


def decode_page(kind: ResourceKind, body: bytes) -> DecodedPage:
    """One list page of raw JSON, decoded into the kind's raw shapes (not yet records)."""
    try:
        return DecodedPage(kind.list_decoder.decode(body), typed=True, body=body)
    except msgspec.ValidationError:
        return DecodedPage(_RAW_LIST.decode(body), typed=False)


def add_page(kind: ResourceKind, page: DecodedPage, listed: Listed) -> None:
    """The records of one decoded page into `listed` (objects that cannot be read into its problems)."""
    listed.resource_version = page.metadata.resource_version
    records, problems = listed.records, listed.problems
    if not page.typed:
        for raw in page.items:
            key, record, problem = decode_object(kind, raw)
            if problem is not None:
                problems[key] = problem
            else:
                records[key] = record
        return
    to_record, key_of, namespaced = kind.listed_record, kind.key, kind.namespaced
    for obj in page.items:
        meta = obj.metadata
        key = f"{meta.namespace}/{meta.name}" if namespaced else key_of(meta)  # kind.key, without a call
        try:
            records[key] = to_record(obj)
        except decode.DecodeError as error:
            problems[key] = _problem(error)
        except decode.Refit:
            # Read the page one object at a time in the full shape, as a page that did not fit at all
            # (the records already added are added again, equal and in the same order).
            add_page(kind, DecodedPage(_RAW_LIST.decode(page.body), typed=False), listed)
            return


def records_of(kind: ResourceKind, objects: Iterable[Mapping[str, Any] | msgspec.Raw]) -> Listed:
    """Decode already-loaded objects (plain dicts, or JSON texts) into the kind's records."""
    listed = Listed()
    for obj in objects:
        key, record, problem = decode_object(kind, obj if isinstance(obj, msgspec.Raw) else msgspec.json.encode(obj))
        if problem is not None:
            listed.problems[key] = problem
        else:
            listed.records[key] = record
    return listed


def decode_object(kind: ResourceKind, raw: bytes | msgspec.Raw) -> tuple[str, Any, str | None]:
    """(key, record, None), or (key, None, why it cannot be read) for a malformed object."""
    try:
        obj = kind.item_decoder.decode(raw)
    except msgspec.ValidationError as error:
        try:
            meta = _META.decode(raw).metadata
        except msgspec.DecodeError:
            return "?", None, f"undecodable object: {error}"
        return kind.key(meta), None, str(error)
    key = kind.key(obj.metadata)
    try:
        return key, kind.to_record(obj), None
    except decode.DecodeError as error:
        return key, None, _problem(error)


def _problem(error: decode.DecodeError) -> str:
    return f"{error.field}: {error.message}" if error.field else error.message
