"""Request handling: map a URL to a resource and verb, call the store, render the answer.

Transport-free, so it can be exercised without sockets; http.py drives it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from . import discovery, errors
from .binding import bind_pod
from .entry import decode, encode
from .errors import ApiError
from .eviction import evict_pod
from .patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    MalformedPatch,
    PatchError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from .printing import TableFormat, TableWatch, requested_table
from .resources import ResourceType
from .scale import scale_of
from .selectors import parse_field_selector, parse_label_selector
from .store import ListPage, Store
from .watch import Watcher, WatchEvent


@dataclass(frozen=True, slots=True)
class ApiRequest:
    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes = b""
    accept: str = ""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class WatchStream:
    """An open watch for the transport to drain; `error` is sent as one ERROR event instead."""

    rt: ResourceType
    watcher: Watcher | None
    initial: list[WatchEvent]
    timeout: float | None
    bookmarks: bool
    error: ApiError | None = None
    # Set when the client asked for Tables (`kubectl get --watch`): events carry one-row Tables.
    table: TableWatch | None = None
    # WatchList (sendInitialEvents=true): the resourceVersion of the initial events, sent after
    # them in a BOOKMARK annotated `k8s.io/initial-events-end` when bookmarks are allowed.
    initial_events_end: int | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """What a URL names. `kind` is discovery, resource or bindings; `verb` is the Kubernetes verb."""

    kind: str
    verb: str
    rt: ResourceType | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    document: dict[str, Any] | None = None


def error_response(error: ApiError) -> Response:
    headers: tuple[tuple[str, str], ...] = ()
    if error.retry_after:
        headers = (("Retry-After", str(error.retry_after)),)
    return Response(error.code, encode(error.status()), headers)


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class Api:
    """The API server's request logic over a Store."""

    def __init__(self, store: Store, server_address: str = "127.0.0.1:0") -> None:
        self.store = store
        self.table = store.table
        self.server_address = server_address

    # -------------------------------------------------------------- routing

    def resolve(self, request: ApiRequest) -> Target:
        """Raises a 404 ApiError for paths the server does not serve."""
        segments = [s for s in request.path.split("/") if s]
        method = request.method
        if request.path in ("/healthz", "/readyz", "/livez"):
            return Target("health", "get")
        if segments == ["version"]:
            return Target("discovery", "get", document=discovery.version_info())
        if not segments or segments[0] not in ("api", "apis"):
            raise errors.path_not_found()
        if segments == ["api"]:
            return Target("discovery", "get", document=discovery.api_versions(self.server_address))
        if segments == ["apis"]:
            return Target("discovery", "get", document=discovery.api_group_list(self.table))
        if segments[0] == "api":
            group, version, rest = "", segments[1], segments[2:]
        else:
            if len(segments) == 2:
                doc = discovery.api_group(self.table, segments[1])
                if doc is None:
                    raise errors.path_not_found()
                return Target("discovery", "get", document=doc)
            group, version, rest = segments[1], segments[2], segments[3:]
        if not rest:
            doc = discovery.resource_list(self.table, group, version)
            if doc is None:
                raise errors.path_not_found()
            return Target("discovery", "get", document=doc)
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            candidate = self.table.by_path(group, version, rest[2])
            if (candidate is not None and candidate.namespaced) or (group == "" and rest[2] == "bindings"):
                namespace, rest = rest[1], rest[2:]
        if group == "" and rest == ["bindings"] and namespace is not None:
            return Target("bindings", "create", namespace=namespace)
        rt = self.table.by_path(group, version, rest[0])
        if rt is None or len(rest) > 3 or (rt.namespaced and namespace is None and len(rest) > 1):
            raise errors.path_not_found()
        if not rt.namespaced and namespace is not None:
            raise errors.path_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources:
            raise errors.path_not_found()
        verb = _verb(method, name, sub, _truthy(request.query.get("watch")))
        return Target("resource", verb, rt, namespace, name, sub)

    # -------------------------------------------------------------- serving

    def serve(self, target: Target, request: ApiRequest) -> Response | WatchStream:
        if target.kind == "health":
            return Response(200, b"ok", (("Content-Type", "text/plain"),))
        if target.kind == "discovery":
            _check_accept(request.accept)
            return Response(200, encode(target.document))
        if target.kind == "bindings":
            if request.method != "POST":
                raise errors.method_not_allowed()
            body = _json_body(request)
            name = str((body.get("metadata") or {}).get("name") or "")
            return Response(201, encode(bind_pod(self.store, target.namespace or "", name, body)))
        rt = target.rt
        assert rt is not None
        _check_accept(request.accept)
        if target.verb not in rt.verbs and target.subresource is None:
            raise errors.method_not_allowed()
        handler = getattr(self, f"_{target.verb}")
        result: Response | WatchStream = handler(rt, target, request)
        return result

    def _get(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        with self.store.lock:
            entry = self.store.entry(rt, target.name or "", target.namespace or "")
        if target.subresource == "scale":
            return Response(200, encode(scale_of(entry.decode())))
        table = requested_table(request.accept, request.query)
        if table is not None:
            obj = entry.decode()
            meta = {"resourceVersion": obj["metadata"]["resourceVersion"]}
            return Response(200, encode(table.table(rt, [obj], self.store.clock(), meta)))
        return Response(200, entry.raw)

    def _list(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        q = request.query
        table = requested_table(request.accept, q)
        limit = _int_param(q, "limit") or 0
        page = self.store.list_page(
            rt,
            target.namespace,
            labels=parse_label_selector(q.get("labelSelector", "")),
            fields=parse_field_selector(q.get("fieldSelector", ""), rt.field_labels),
            limit=max(limit, 0),
            continue_token=q.get("continue") or None,
            resource_version=q.get("resourceVersion"),
            resource_version_match=q.get("resourceVersionMatch"),
        )
        if table is not None:
            return Response(200, render_table(page, table, self.store.clock()))
        return Response(200, render_list(page))

    def _watch(self, rt: ResourceType, target: Target, request: ApiRequest) -> WatchStream:
        q = request.query
        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""), rt.field_labels)
        raw_rv = q.get("resourceVersion")
        since = None
        if raw_rv not in (None, "", "0"):
            since = _int_param(q, "resourceVersion")
        send_initial = _watch_list_mode(q)
        timeout = _int_param(q, "timeoutSeconds")
        bookmarks = _truthy(q.get("allowWatchBookmarks"))
        table = requested_table(request.accept, q)
        tables = TableWatch(rt, table, self.store.clock) if table is not None else None
        initial_events_end = None
        try:
            with self.store.lock:
                if send_initial is True:
                    # NotOlderThan: the current state is at least as new as any version asked for.
                    if since is not None and since > self.store.resource_version:
                        raise errors.too_large_resource_version(since, self.store.resource_version)
                    since, initial_events_end = None, self.store.resource_version
                elif send_initial is False and since is None:
                    since = self.store.resource_version  # no initial events: changes from now on
                watcher, initial = self.store.watch(rt, target.namespace, labels=labels, fields=fields, since=since)
        except ApiError as error:
            if error.code != 410:
                raise
            # The real server accepts the watch and reports expiry as an ERROR event in the stream.
            return WatchStream(rt, None, [], None, False, error)
        return WatchStream(
            rt,
            watcher,
            initial,
            float(timeout) if timeout else None,
            bookmarks,
            table=tables,
            initial_events_end=initial_events_end,
        )

    def _create(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        body = _json_body(request)
        if target.subresource == "eviction":
            return Response(201, encode(evict_pod(self.store, target.namespace or "", target.name or "", body)))
        if target.subresource == "binding":
            return Response(201, encode(bind_pod(self.store, target.namespace or "", target.name or "", body)))
        if target.name is not None or target.subresource is not None:
            raise errors.method_not_allowed()
        self._check_identity(rt, target, body)
        return Response(201, encode(self.store.create(body, from_api=True)))

    def _update(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        body = _json_body(request)
        if target.subresource == "scale":
            return self._write_scale(rt, target, lambda _current: body)
        self._check_identity(rt, target, body)
        meta = body.setdefault("metadata", {})
        if meta.get("name") != target.name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({target.name})"
            )
        return Response(200, encode(self.store.update(body, subresource=target.subresource)))

    def _patch(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        content_type = request.content_type.split(";")[0].strip()
        if content_type == STRATEGIC_MERGE_PATCH and not rt.builtin:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "strategic merge patch is not supported for custom resources; use a merge patch instead",
                {},
            )
        if content_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            raise errors.unsupported_media_type()
        patch = _json_value(request.body)

        def apply(current: dict[str, Any]) -> dict[str, Any]:
            try:
                if content_type == JSON_PATCH:
                    result = json_patch(current, patch)
                elif content_type == MERGE_PATCH:
                    result = merge_patch(current, patch)
                else:
                    result = strategic_merge_patch(current, patch)
            except MalformedPatch as error:
                raise errors.bad_request(str(error)) from None
            except PatchError as error:
                raise errors.unprocessable(str(error)) from None
            if not isinstance(result, dict):
                raise errors.bad_request("the patch produced an object that is not a JSON object")
            return result

        if target.subresource == "scale":
            return self._write_scale(rt, target, apply)
        name, namespace = target.name or "", target.namespace or ""

        def patched(current: dict[str, Any]) -> dict[str, Any]:
            result = apply(current)
            meta = result.get("metadata") or {}
            if meta.get("name") != name or (rt.namespaced and meta.get("namespace") != namespace):
                raise errors.bad_request("metadata.name and metadata.namespace cannot be changed by a patch")
            return result

        return Response(200, encode(self.store.modify(rt, name, namespace, patched, subresource=target.subresource)))

    def _write_scale(self, rt: ResourceType, target: Target, change: Any) -> Response:
        with self.store.lock:
            current = self.store.get(rt, target.name or "", target.namespace or "")
            scale = change(copy.deepcopy(scale_of(current)))
            given_rv = (scale.get("metadata") or {}).get("resourceVersion")
            if given_rv and str(given_rv) != current["metadata"]["resourceVersion"]:
                raise errors.stale(rt, target.name or "")
            replicas = (scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(rt, target.name or "", [("spec.replicas", "Invalid value: must be >= 0")])
            current.setdefault("spec", {})["replicas"] = replicas
            updated = self.store.update(current)
        return Response(200, encode(scale_of(updated)))

    def _delete(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        options = _json_body(request) if request.body.strip() else {}
        grace = options.get("gracePeriodSeconds")
        if "gracePeriodSeconds" in request.query:
            grace = _int_param(request.query, "gracePeriodSeconds")
        deleted = self.store.delete(
            rt,
            target.name or "",
            target.namespace or "",
            grace_period_seconds=int(grace) if grace is not None else None,
            preconditions=options.get("preconditions"),
        )
        return Response(200, encode(deleted))

    def _deletecollection(self, rt: ResourceType, target: Target, request: ApiRequest) -> Response:
        q = request.query
        page = self.store.list_page(
            rt,
            target.namespace,
            labels=parse_label_selector(q.get("labelSelector", "")),
            fields=parse_field_selector(q.get("fieldSelector", ""), rt.field_labels),
        )
        deleted = []
        for entry in page.items:
            meta = entry.decode()["metadata"]
            try:
                deleted.append(self.store.delete(rt, meta["name"], meta.get("namespace", "")))
            except ApiError as error:
                if error.code != 404:
                    raise
        rv = self.store.resource_version
        return Response(
            200,
            encode(
                {
                    "kind": rt.list_kind,
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": str(rv)},
                    "items": deleted,
                }
            ),
        )

    def _check_identity(self, rt: ResourceType, target: Target, body: dict[str, Any]) -> None:
        """Fill or check apiVersion, kind and namespace against the URL, as the real decoder does."""
        if (
            body.setdefault("apiVersion", rt.api_version) != rt.api_version
            or body.setdefault("kind", rt.kind) != rt.kind
        ):
            raise errors.bad_request(
                f"the API version in the data ({body.get('apiVersion')}) does not match the expected "
                f"API version ({rt.api_version}) or the kind ({body.get('kind')}) is not {rt.kind}"
            )
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != target.namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace


def render_list(page: ListPage) -> bytes:
    """Join pre-encoded items: a 500-pod page costs one bytes.join, not 500 encodes."""
    rt = page.rt
    meta = _list_meta(page)
    head = b'{"kind":"' + rt.list_kind.encode() + b'","apiVersion":"' + rt.api_version.encode()
    return head + b'","metadata":' + encode(meta) + b',"items":[' + b",".join(e.raw for e in page.items) + b"]}"


def _list_meta(page: ListPage) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    return meta


def render_table(page: ListPage, table: TableFormat, now: float) -> bytes:
    """A list page as the Table `kubectl get` reads; `continue` pages through it as through the list."""
    return encode(table.table(page.rt, [e.decode() for e in page.items], now, _list_meta(page)))


def _verb(method: str, name: str | None, sub: str | None, watch: bool) -> str:
    if method == "GET":
        if name is not None:
            return "get"
        return "watch" if watch else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        if sub is not None:
            raise errors.method_not_allowed()
        return "delete" if name is not None else "deletecollection"
    raise errors.method_not_allowed()


JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
# What the fake reads in a request body and writes in a response (no protobuf: we do not implement it).
_BODY_TYPES = (JSON, YAML)
_ANSWER_TYPES = (JSON, "application/*", "*/*")


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def _check_accept(accept: str) -> None:
    """406, as the real server answers an Accept it cannot serve; protobuf counts as one here."""
    offered = [_media_type(part) for part in accept.split(",") if part.strip()]
    if offered and not any(media in _ANSWER_TYPES for media in offered):
        raise ApiError(406, "NotAcceptable", f"406: Not Acceptable\n\nAvailable representations: {JSON}", {})


def _watch_list_mode(query: Mapping[str, str]) -> bool | None:
    """sendInitialEvents as the real server validates it with resourceVersionMatch (422 otherwise)."""
    match = query.get("resourceVersionMatch")
    raw = query.get("sendInitialEvents")
    if raw is None:
        if match:
            raise _invalid_list_options(
                ["Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"]
            )
        return None
    send = _truthy(raw)
    if send and match != "NotOlderThan":
        problems = ["Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]
        if match:
            problems.append(f'Unsupported value: "{match}": supported values: "NotOlderThan"')
        raise _invalid_list_options(problems)
    return send


def _invalid_list_options(problems: list[str]) -> ApiError:
    field = "resourceVersionMatch"
    text = ", ".join(f"{field}: {p}" for p in problems)
    message = f'ListOptions.meta.k8s.io "" is invalid: {text if len(problems) == 1 else f"[{text}]"}'
    causes = [
        {
            "reason": "FieldValueForbidden" if p.startswith("Forbidden") else "FieldValueNotSupported",
            "message": p,
            "field": field,
        }
        for p in problems
    ]
    return ApiError(422, "Invalid", message, {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes})


def _json_value(body: bytes, content_type: str = JSON) -> Any:
    media = _media_type(content_type) or JSON
    if media not in _BODY_TYPES:
        raise errors.unknown_body_format(", ".join(_BODY_TYPES))
    if media == YAML:
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as error:
            raise errors.bad_request(f"the request body is not valid YAML: {error}") from None
    try:
        return decode(body)
    except msgspec.DecodeError as error:
        raise errors.bad_request(f"the request body is not valid JSON: {error}") from None


def _json_body(request: ApiRequest) -> dict[str, Any]:
    value = _json_value(request.body, request.content_type)
    if not isinstance(value, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return value


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    text = query.get(name)
    if text in (None, ""):
        return None
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f"invalid value for {name}: {text!r}") from None
