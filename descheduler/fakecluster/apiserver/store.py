"""The object store: versioned, thread-safe, with watch history. The Python side of the fake API server.

Tests and simulator components call it directly; the HTTP layer is a thin shell over it. Every
write goes through `_commit`, which assigns the next global resourceVersion, replaces the stored
entry and feeds the watch history and open watches, so HTTP and Python writes look the same to a
watching client.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import builtins
import json
import random
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import errors
from .clock import Clock, rfc3339, wall_clock
from .defaults import DEFAULT_TERMINATION_GRACE_PERIOD, apply_create_defaults
from .entry import SYSTEM_METADATA, Entry, decode, encode, make_entry, object_key
from .errors import ApiError
from .resources import ResourceTable, ResourceType
from .selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from .watch import StopWatch, Watcher, WatchEvent

ResourceRef = str | ResourceType
Mutation = Callable[[dict[str, Any]], dict[str, Any] | None]
View = Callable[[], Mapping[str, Entry]]  # a served kind's entries by key, in key order

_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list."
)


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list: entries in key order, the list's resourceVersion and continuation."""

    rt: ResourceType
    items: list[Entry]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


class Store:
    """All objects of all served kinds, under one lock."""

    def __init__(
        self,
        table: ResourceTable | None = None,
        *,
        clock: Clock = wall_clock,
        history_size: int = 10_000,
        pod_termination_delay: float | None = 0.0,
        snapshot_count: int = 32,
    ) -> None:
        """`pod_termination_delay`: seconds after graceful deletion before the built-in "kubelet"
        removes a pod (0: at once, after the MODIFIED event); None: pods stay terminating until
        `finalize_pod` is called, as a simulated kubelet would."""
        self.table = table or ResourceTable()
        self.lock = threading.RLock()
        self.clock = clock
        self.pod_termination_delay = pod_termination_delay
        self._rv = 0
        self._objects: dict[ResourceType, dict[str, Entry]] = {rt: {} for rt in self.table}
        self._sorted: dict[ResourceType, builtins.list[str] | None] = {rt: None for rt in self.table}
        self._history: dict[ResourceType, deque[WatchEvent]] = {rt: deque(maxlen=history_size) for rt in self.table}
        self._written: dict[ResourceType, int] = dict.fromkeys(self.table, 0)  # latest write's rv, per resource
        # The highest resourceVersion no longer replayable per type: a watch from before it gets 410.
        self._expired_before: dict[ResourceType, int] = dict.fromkeys(self.table, 0)
        self._watchers: dict[ResourceType, set[Watcher]] = {rt: set() for rt in self.table}
        # Consistent pagination: a continue token reads the key set and entries of its first page.
        self._snapshots: OrderedDict[tuple[ResourceType, int], tuple[builtins.list[str], Mapping[str, Entry]]] = (
            OrderedDict()
        )
        self._snapshot_count = snapshot_count
        self._timers: set[threading.Timer] = set()
        self._pods = self.table.by_kind("v1", "Pod")
        self._namespaces = self.table.by_kind("v1", "Namespace")
        # Read-only kinds a component serves from memory instead (metrics-server's metrics.k8s.io).
        self._views: dict[ResourceType, View] = {}

    # ----------------------------------------------------------------- reads

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def last_change(self, resource: ResourceRef) -> int:
        """The resourceVersion of the latest change to a resource through the API or a component
        (0 when none since it was loaded): a watcher that has applied it has seen everything."""
        rt = self.resolve(resource)
        with self.lock:
            history = self._history[rt]
            return history[-1].entry.rv if history else 0

    def written(self, *resources: ResourceRef) -> tuple[int, ...]:
        """The resourceVersion of the latest write to each resource (0: none), whatever watch history
        was dropped: a component whose inputs show the same numbers as at its last pass has nothing new
        to act on."""
        with self.lock:
            return tuple(self._written[self.resolve(resource)] for resource in resources)

    def resolve(self, resource: ResourceRef) -> ResourceType:
        return self.table.resolve(resource)

    def serve(self, resource: ResourceRef, view: View) -> None:
        """Answer gets and lists of `resource` from `view` (its entries by key, in key order) instead of
        stored objects, as an aggregated API answers from its own memory: nothing is written, so no
        resourceVersion moves and no watch hears of it (metrics.k8s.io cannot be watched)."""
        rt = self.resolve(resource)
        with self.lock:
            self._views[rt] = view

    def _current(self, rt: ResourceType) -> Mapping[str, Entry]:
        view = self._views.get(rt)
        return self._objects[rt] if view is None else view()

    def entry(self, rt: ResourceType, name: str, namespace: str = "") -> Entry:
        found = self._current(rt).get(object_key(namespace if rt.namespaced else "", name))
        if found is None:
            raise errors.not_found(rt, name)
        return found

    def get(self, resource: ResourceRef, name: str, namespace: str = "") -> dict[str, Any]:
        """A fresh copy of one object; raises a 404 ApiError."""
        rt = self.resolve(resource)
        with self.lock:
            return self.entry(rt, name, namespace).decode()

    def exists(self, resource: ResourceRef, name: str, namespace: str = "") -> bool:
        rt = self.resolve(resource)
        with self.lock:
            return object_key(namespace if rt.namespaced else "", name) in self._current(rt)

    def list(
        self,
        resource: ResourceRef,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        shared: bool = False,
    ) -> builtins.list[dict[str, Any]]:
        """Fresh copies of every matching object, in key (namespace/name) order; with `shared`, the
        entries' read-only decoded objects instead (for the simulated components that only read: a
        list of every pod each tick is most of a simulation's time when each is decoded afresh)."""
        rt = self.resolve(resource)
        page = self.list_page(
            rt,
            namespace,
            labels=parse_label_selector(label_selector),
            fields=parse_field_selector(field_selector, rt.field_labels),
        )
        if shared:
            return [e.shared() for e in page.items]
        return [e.decode() for e in page.items]

    def count(self, resource: ResourceRef) -> int:
        rt = self.resolve(resource)
        with self.lock:
            return len(self._current(rt))

    def _keys(self, rt: ResourceType) -> builtins.list[str]:
        if rt in self._views:
            return builtins.list(self._views[rt]())  # a view gives its entries in key order
        keys = self._sorted[rt]
        if keys is None:
            # Rebuilt lazily: bulk loads and churn pay for one sort at the next list, not per write.
            keys = self._sorted[rt] = sorted(self._objects[rt])
        return keys

    def list_page(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage:
        labels = labels or LabelSelector()
        fields = fields or FieldSelector()
        with self.lock:
            start = ""
            if continue_token:
                list_rv, start = _decode_continue(continue_token)
                snapshot = self._snapshot(rt, list_rv)
                if snapshot is None:
                    raise errors.expired(CONTINUE_TOO_OLD)
                keys, objects = snapshot
            else:
                list_rv = self._rv
                keys, objects = self._keys(rt), self._current(rt)
                if resource_version not in (None, "", "0"):
                    requested = _parse_rv(resource_version)
                    if requested > self._rv:
                        raise errors.too_large_resource_version(requested, self._rv)
                    if resource_version_match == "Exact" and requested != self._rv:
                        snapshot = self._snapshot(rt, requested)
                        if snapshot is None:
                            raise errors.expired(f"too old resource version: {requested} ({self._rv})")
                        keys, objects = snapshot
                        list_rv = requested
            lo, hi = 0, len(keys)
            if namespace:
                lo, hi = bisect.bisect_left(keys, namespace + "/"), bisect.bisect_left(keys, namespace + "0")
            i = max(lo, bisect.bisect_left(keys, start)) if start else lo
            items: builtins.list[Entry] = []
            filtering = not (labels.empty and fields.empty)
            while i < hi:
                entry = objects[keys[i]]
                i += 1
                if filtering and not (labels.matches(entry.labels) and fields.matches(_field_getter(rt, entry))):
                    continue
                items.append(entry)
                if limit and len(items) >= limit:
                    break
            if not (limit and len(items) >= limit and i < hi):
                return ListPage(rt, items, list_rv)
            if (rt, list_rv) not in self._snapshots and list_rv == self._rv:
                self._snapshots[(rt, list_rv)] = (keys, dict(objects))
                while len(self._snapshots) > self._snapshot_count:
                    self._snapshots.popitem(last=False)
            token = _encode_continue(list_rv, items[-1].key + "\x00")
            return ListPage(rt, items, list_rv, token, None if filtering else hi - i)

    def _snapshot(self, rt: ResourceType, rv: int) -> tuple[builtins.list[str], Mapping[str, Entry]] | None:
        if (rt, rv) in self._snapshots:
            self._snapshots.move_to_end((rt, rv))
            return self._snapshots[(rt, rv)]
        if rv == self._rv:
            return self._keys(rt), self._current(rt)
        return None

    # ---------------------------------------------------------------- writes

    def type_of(self, obj: Mapping[str, Any]) -> ResourceType:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        rt = self.table.by_kind(api_version, kind)
        if rt is None:
            raise errors.bad_request(f"no kind {kind!r} is registered for version {api_version!r}")
        return rt

    def create(self, obj: Mapping[str, Any], *, from_api: bool = False) -> dict[str, Any]:
        """Create as the API server does: assigns uid, creationTimestamp, generation, resourceVersion.

        Namespaced objects need their namespace to exist (404 otherwise); 409 if the name is taken.
        `from_api` applies the HTTP-only rules (status dropped for kinds with a status subresource).
        """
        rt = self.type_of(obj)
        new: dict[str, Any] = decode(encode(obj))
        with self.lock:
            self._prepare_create(rt, new, from_api=from_api, keep_identity=False)
            self._check_namespace(rt, new)
            if new["metadata"]["name"] and self._key_of(rt, new) in self._objects[rt]:
                raise errors.already_exists(rt, new["metadata"]["name"])
            return self._commit(rt, new, "ADDED").decode()

    def load(self, objects: Iterable[Mapping[str, Any]], *, create_namespaces: bool = True) -> int:
        """Bulk seed: like `create` but keeps given uid/creationTimestamp/status, expands `*List`
        documents, and creates missing namespaces (unless told not to). Returns objects created."""
        count = 0
        with self.lock:
            for obj in objects:
                kind = str(obj.get("kind", ""))
                if kind.endswith("List") and "items" in obj:
                    count += self.load(obj["items"], create_namespaces=create_namespaces)
                    continue
                rt = self.type_of(obj)
                new = dict(obj)
                new["metadata"] = dict(obj.get("metadata") or {})
                # Defaulting writes into spec/status: copy those so the caller's dicts stay untouched.
                for part in ("spec", "status"):
                    if isinstance(new.get(part), dict):
                        new[part] = dict(new[part])
                self._prepare_create(rt, new, from_api=False, keep_identity=True)
                if create_namespaces and rt.namespaced and self._namespaces is not None:
                    ns = new["metadata"]["namespace"]
                    if ns not in self._objects[self._namespaces]:
                        ns_obj: dict[str, Any] = {
                            "apiVersion": "v1",
                            "kind": "Namespace",
                            "metadata": {"name": ns},
                        }
                        self._prepare_create(self._namespaces, ns_obj, from_api=False, keep_identity=False)
                        self._commit(self._namespaces, ns_obj, "ADDED")
                        count += 1
                self._check_namespace(rt, new)
                if self._key_of(rt, new) in self._objects[rt]:
                    raise errors.already_exists(rt, new["metadata"]["name"])
                self._commit(rt, new, "ADDED")
                count += 1
        return count

    def _key_of(self, rt: ResourceType, obj: Mapping[str, Any]) -> str:
        meta = obj["metadata"]
        return object_key(meta.get("namespace", "") if rt.namespaced else "", meta["name"])

    def _prepare_create(self, rt: ResourceType, obj: dict[str, Any], *, from_api: bool, keep_identity: bool) -> None:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choices(_GENERATE_CHARS, k=5))
        if not meta.get("name"):
            raise errors.invalid(rt, "", [("metadata.name", "Required value: name or generateName is required")])
        if rt.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not (keep_identity and meta.get("uid")):
            meta["uid"] = str(uuid.uuid4())
        if not (keep_identity and meta.get("creationTimestamp")):
            meta["creationTimestamp"] = rfc3339(self.clock())
        meta["generation"] = meta.get("generation") if keep_identity and meta.get("generation") else 1
        meta.pop("resourceVersion", None)
        if not keep_identity:
            meta.pop("deletionTimestamp", None)
            meta.pop("deletionGracePeriodSeconds", None)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        apply_create_defaults(rt, obj, from_api=from_api)

    def _check_namespace(self, rt: ResourceType, obj: Mapping[str, Any]) -> None:
        if rt.namespaced and self._namespaces is not None:
            ns = obj["metadata"]["namespace"]
            if ns not in self._objects[self._namespaces]:
                raise errors.namespace_not_found(ns)

    def update(self, obj: Mapping[str, Any], *, subresource: str | None = None) -> dict[str, Any]:
        """PUT semantics. 409 if metadata.resourceVersion is set and stale; 404 if missing.

        With `subresource="status"` only status changes; with None status is kept from the stored
        object for kinds that have a status subresource; `"all"` writes spec and status together, as
        server-internal code does (binding, a simulated kubelet). No-op updates keep the version.
        """
        rt = self.type_of(obj)
        with self.lock:
            return self._update(rt, decode(encode(obj)), subresource).decode()

    def put(self, obj: Mapping[str, Any]) -> None:
        """Write `obj` whole over the stored object of its name, or create it, keeping only the stored
        object's system metadata: how a server-side pipeline (the simulated metrics-server) stores
        objects it owns outright. No generation, no-op or deletion handling, no copy returned and
        the old object is never decoded: a metrics pass writes every pod's and node's object."""
        rt = self.type_of(obj)
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "") if rt.namespaced else ""
        key = object_key(namespace, str(meta["name"]))
        with self.lock:
            entry = self._objects[rt].get(key)
            if entry is None:
                self.create(obj)
                return
            new_meta = {**meta, **entry.system}
            if rt.namespaced:
                new_meta["namespace"] = namespace
            self._commit(
                rt, {**obj, "apiVersion": rt.api_version, "kind": rt.kind, "metadata": new_meta}, "MODIFIED", entry
            )

    def modify(
        self,
        resource: ResourceRef,
        name: str,
        namespace: str = "",
        mutate: Mutation | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Atomic read-modify-write: `mutate` edits the current object in place or returns a new one."""
        rt = self.resolve(resource)
        with self.lock:
            current = self.entry(rt, name, namespace).decode()
            if mutate is not None:
                replaced = mutate(current)
                current = replaced if replaced is not None else current
            return self._update(rt, current, subresource).decode()

    def _update(self, rt: ResourceType, obj: dict[str, Any], subresource: str | None) -> Entry:
        """Store `obj` (owned by this call: it is changed and kept) over its entry; the entry written,
        or the old one when nothing changed."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "") if rt.namespaced else ""
        entry = self.entry(rt, name, namespace)
        given_rv = meta.get("resourceVersion")
        if given_rv not in (None, "") and str(given_rv) != str(entry.rv):
            raise errors.stale(rt, name)
        current = entry.shared()  # read only: compared with, scalars copied from
        # A uid in an update is a precondition on the real server (409 when it is another object's).
        if meta.get("uid"):
            check_preconditions(rt, name, current["metadata"], {"uid": meta["uid"]})
        if subresource == "status":
            new = decode(entry.raw)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            new_meta = new.setdefault("metadata", {})
            for field in SYSTEM_METADATA:
                if field in current["metadata"]:
                    new_meta[field] = current["metadata"][field]
                else:
                    new_meta.pop(field, None)
            if rt.namespaced:
                new_meta["namespace"] = namespace
            if rt.has_status and subresource != "all":
                if "status" in current:
                    new["status"] = entry.decode()["status"]
                else:
                    new.pop("status", None)
            if _spec_of(new) != _spec_of(current):
                new_meta["generation"] = int(current["metadata"].get("generation") or 0) + 1
        new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        if new == current:
            return entry
        return self._commit(rt, new, "DELETED" if self._finished_deleting(rt, new) else "MODIFIED", entry)

    def _finished_deleting(self, rt: ResourceType, obj: Mapping[str, Any]) -> bool:
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return False
        # A terminating pod waits for its kubelet (deletionGracePeriodSeconds 0) even with no finalizers.
        return rt is not self._pods or meta.get("deletionGracePeriodSeconds") == 0

    def delete(
        self,
        resource: ResourceRef,
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """DELETE semantics; returns the object's last state.

        A bound, running pod with a grace period is only marked (deletionTimestamp,
        deletionGracePeriodSeconds) and removed later by the built-in kubelet or `finalize_pod`;
        an object with finalizers is marked and removed when the last finalizer goes. Deleting a
        namespace removes everything in it at once (the real namespace controller is slower).
        """
        rt = self.resolve(resource)
        with self.lock:
            entry = self.entry(rt, name, namespace)
            obj = entry.decode()
            meta = obj["metadata"]
            check_preconditions(rt, name, meta, preconditions or {})
            if rt is self._pods:
                period = _pod_grace_period(obj, grace_period_seconds)
                terminating = bool(meta.get("deletionTimestamp"))
                if terminating and (period == 0 or period < int(meta.get("deletionGracePeriodSeconds") or 0)):
                    meta["deletionGracePeriodSeconds"] = period
                    meta["deletionTimestamp"] = rfc3339(self.clock() + period)
                    if period == 0 and not meta.get("finalizers"):
                        return self._commit(rt, obj, "DELETED", entry).decode()
                    return self._commit(rt, obj, "MODIFIED", entry).decode()
                if terminating:
                    return obj
                if period > 0:
                    meta["deletionTimestamp"] = rfc3339(self.clock() + period)
                    meta["deletionGracePeriodSeconds"] = period
                    marked = self._commit(rt, obj, "MODIFIED", entry).decode()
                    self._start_kubelet_termination(namespace, name)
                    return marked
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return obj
                meta["deletionTimestamp"] = rfc3339(self.clock())
                meta["deletionGracePeriodSeconds"] = 0
                return self._commit(rt, obj, "MODIFIED", entry).decode()
            if rt is self._namespaces:
                self._delete_namespace_contents(name)
            return self._commit(rt, obj, "DELETED", entry).decode()

    def _delete_namespace_contents(self, namespace: str) -> None:
        for rt in self.table:
            if not rt.namespaced:
                continue
            keys = self._keys(rt)
            lo, hi = bisect.bisect_left(keys, namespace + "/"), bisect.bisect_left(keys, namespace + "0")
            for key in keys[lo:hi]:
                entry = self._objects[rt][key]
                self._commit(rt, entry.decode(), "DELETED", entry)

    def _start_kubelet_termination(self, namespace: str, name: str) -> None:
        delay = self.pod_termination_delay
        if delay is None:
            return
        if delay <= 0:
            self.finalize_pod(namespace, name)
            return
        timer = threading.Timer(delay, self._timer_finalize, args=(namespace, name))
        timer.daemon = True
        self._timers.add(timer)
        timer.start()

    def _timer_finalize(self, namespace: str, name: str) -> None:
        self.finalize_pod(namespace, name)
        with self.lock:
            self._timers = {t for t in self._timers if t.is_alive() and t is not threading.current_thread()}

    def finalize_pod(self, namespace: str, name: str) -> bool:
        """What the kubelet does when a terminating pod's containers have stopped: delete it for good.

        Returns True if the pod is gone now; False if it is missing, not terminating, or still held
        by finalizers (then it goes when the last finalizer is removed).
        """
        if self._pods is None:
            return False
        with self.lock:
            entry = self._objects[self._pods].get(object_key(namespace, name))
            if entry is None:
                return False
            obj = entry.decode()
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp"):
                return False
            if meta.get("finalizers"):
                if meta.get("deletionGracePeriodSeconds") != 0:
                    meta["deletionGracePeriodSeconds"] = 0
                    self._commit(self._pods, obj, "MODIFIED", entry)
                return False
            self._commit(self._pods, obj, "DELETED", entry)
            return True

    def _commit(self, rt: ResourceType, obj: dict[str, Any], event_type: str, old: Entry | None = None) -> Entry:
        """The single write path: next resourceVersion, store, history, notify watchers."""
        self._rv += 1
        self._written[rt] = self._rv
        obj["metadata"]["resourceVersion"] = str(self._rv)
        entry = make_entry(rt, obj, self._rv)
        objects = self._objects[rt]
        if event_type == "DELETED":
            del objects[entry.key]
            self._sorted[rt] = None
        else:
            if entry.key not in objects:
                self._sorted[rt] = None
            objects[entry.key] = entry
        history = self._history[rt]
        if history.maxlen is not None and len(history) == history.maxlen:
            self._expired_before[rt] = history[0].entry.rv
        event = WatchEvent(event_type, entry, old if event_type == "MODIFIED" else None)
        history.append(event)
        for watcher in self._watchers[rt]:
            watcher.push(event)
        return entry

    # ----------------------------------------------------------------- watch

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        since: int | None = None,
    ) -> tuple[Watcher, builtins.list[WatchEvent]]:
        """Open a watch. `since` None: synthetic ADDED for every current object, then live events;
        otherwise replay history after `since`. Raises a 410 ApiError if `since` left the window."""
        with self.lock:
            watcher = Watcher(rt, namespace, labels, fields)
            if since is None:
                keys = self._keys(rt)
                lo, hi = 0, len(keys)
                if namespace:
                    lo, hi = (
                        bisect.bisect_left(keys, namespace + "/"),
                        bisect.bisect_left(keys, namespace + "0"),
                    )
                objects = self._objects[rt]
                initial = [WatchEvent("ADDED", objects[k]) for k in keys[lo:hi]]
            else:
                if since < self._expired_before[rt]:
                    oldest = self._history[rt][0].entry.rv if self._history[rt] else self._rv
                    raise errors.expired(f"too old resource version: {since} ({oldest})")
                initial = [e for e in self._history[rt] if e.entry.rv > since]
            self._watchers[rt].add(watcher)
            return watcher, initial

    def idle_resource_version(self, watcher: Watcher) -> int | None:
        """The resourceVersion a bookmark may carry: current, if the watcher has nothing pending."""
        with self.lock:
            return self._rv if watcher.idle() else None

    def stop_watch(self, watcher: Watcher) -> None:
        with self.lock:
            self._watchers[watcher.rt].discard(watcher)

    def close_watches(self, resource: ResourceRef | None = None, *, abrupt: bool = False) -> int:
        """End open watches (all, or one resource's); returns how many were told to stop."""
        with self.lock:
            kinds = [self.resolve(resource)] if resource is not None else list(self.table)
            closed = 0
            for rt in kinds:
                for watcher in self._watchers[rt]:
                    watcher.push(StopWatch(abrupt))
                    closed += 1
                self._watchers[rt] = set()
            return closed

    def forget_history(self, resource: ResourceRef | None = None) -> None:
        """Drop the watch history (all, or one resource's), as etcd compaction does: a watch resumed
        from any resourceVersion before now gets 410 Gone and must list again."""
        with self.lock:
            for rt in [self.resolve(resource)] if resource is not None else list(self.table):
                self._history[rt].clear()
                self._expired_before[rt] = self._rv + 1

    def close(self) -> None:
        """Stop timers and watches; the store stays readable."""
        with self.lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
        self.close_watches()


def _field_getter(rt: ResourceType, entry: Entry) -> Callable[[str], str]:
    return lambda path: entry.field(rt, path)


def _spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _pod_grace_period(pod: Mapping[str, Any], requested: int | None) -> int:
    """pkg/registry/core/pod/strategy.go CheckGracefulDelete."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    period = (
        requested
        if requested is not None
        else int(spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD))
    )
    if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
        period = 0
    return 1 if period < 0 else period


def check_preconditions(rt: ResourceType, name: str, meta: Mapping[str, Any], pre: Mapping[str, Any]) -> None:
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        why = f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}"
        raise errors.conflict(rt.group_resource, name, why)
    if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(meta.get("resourceVersion")):
        why = (
            f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}"
        )
        raise errors.conflict(rt.group_resource, name, why)


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, "BadRequest", f"invalid resource version {text!r}") from None
    if value < 0:
        raise ApiError(400, "BadRequest", f"invalid resource version {text!r}")
    return value


def _encode_continue(rv: int, start: str) -> str:
    payload = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(payload["rv"]), str(payload["start"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion") from None
