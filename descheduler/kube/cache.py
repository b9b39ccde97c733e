"""ClusterCache: the list-watch cache of the cluster, and the Snapshot a cycle takes from it.

One reflector thread per resource keeps a dict of narrow records (`descheduler.model`) current.
Pods are also indexed by node, with what a Snapshot needs kept incrementally (the (namespace,
name) order, per-node tuples, pods per owner, the node table's per-pod rows), so `snapshot()`
costs copies and work in proportion to what changed, not per-pod work.

    cache = ClusterCache(client).start()
    if not cache.wait_synced(60):
        raise ClusterUnreachableError(cache.not_ready())
    snapshot = cache.snapshot(now, reader.read(now))

Listeners (`add_listener`) are called on the reflector's thread after each change is applied,
outside the cache's lock, in the order changes happened for that resource.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from types import TracebackType
from typing import TYPE_CHECKING, Any

import structlog

from descheduler import metrics
from descheduler.kube.client import KubeClient
from descheduler.kube.kinds import (
    CLUSTER_KINDS,
    CSI_NODES,
    DAEMONSETS,
    DEPLOYMENTS,
    MIGRATION_JOBS,
    NAMESPACES,
    NODE_METRICS,
    NODES,
    PDBS,
    PODS,
    PVCS,
    PVS,
    QUOTAS,
    REPLICASETS,
    RESERVATIONS,
    RESOURCE_CLAIMS,
    STATEFULSETS,
    STORAGE_CLASSES,
    NodeMetricRecord,
    ResourceKind,
    resolve,
)
from descheduler.kube.reflector import Reflector
from descheduler.model import POD_TERMINAL_PHASES, Node, Pod
from descheduler.podrows import PodRowStore
from descheduler.snapshot import OwnerPods, Snapshot

if TYPE_CHECKING:
    from descheduler.loadsource import LoadReading

log = structlog.get_logger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
_NAMESPACE = attrgetter("namespace")
_ONE_BY_ONE = 32  # up to this many keys added (or removed) are merged into the pod order one at a time


@dataclass(frozen=True, slots=True)
class CacheEvent:
    """One applied change: `old` is None for ADDED, `new` is None for DELETED."""

    kind: str
    type: str
    key: str
    old: Any
    new: Any


Listener = Callable[[CacheEvent], None]


@dataclass(slots=True)
class KindStatus:
    """What a resource's reflector has achieved so far."""

    synced: bool = False
    absent: bool = False
    resource_version: str = ""
    error: str = ""
    failing_since: float | None = None  # monotonic time of the first error since the last success
    code: int = 0  # the HTTP status of the last error, when the server answered one


@dataclass(slots=True)
class _Subscription:
    listener: Listener
    kinds: frozenset[str] | None


def _pod_order(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def _same_owner(old: Pod, new: Pod) -> bool:
    """Same controller uid, and (with a controller) counted alike in `_PodIndex.owners` (non-terminal pods)."""
    was, now = old.owner, new.owner
    if was is None or now is None:
        return was is now
    return (was is now or was.uid == now.uid) and (old.phase in POD_TERMINAL_PHASES) == (
        new.phase in POD_TERMINAL_PHASES
    )


@dataclass(slots=True)
class _PodIndex:
    """Pods by node and the parts of a Snapshot kept current as pods change."""

    by_node: dict[str, dict[str, Pod]] = field(default_factory=dict)
    node_tuples: dict[str, tuple[Pod, ...]] = field(default_factory=dict)
    dirty_nodes: set[str] = field(default_factory=set)
    order: list[str] | None = None  # pod keys sorted by (namespace, name); None: sort on next use
    # Keys added to and removed from `order` since it was last used, merged in at the next use:
    # one insertion into a list of 150,000 keys moves ~1 MB (~40 µs), a merge of many costs one pass.
    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    ordered: tuple[Pod, ...] | None = None
    owners: Counter[str] = field(default_factory=Counter)  # non-terminal pods per controller uid
    namespaces: Counter[str] = field(default_factory=Counter)
    by_owner: dict[str, dict[str, Pod]] = field(default_factory=dict)  # every pod per controller uid
    owner_tuples: dict[str, tuple[Pod, ...]] = field(default_factory=dict)
    dirty_owners: set[str] = field(default_factory=set)

    def change(self, key: str, old: Pod | None, new: Pod | None) -> None:
        """Index a pod's change: added (`old` None), modified, or deleted (`new` None)."""
        self.ordered = None
        if old is not None and new is not None and old.node_name == new.node_name and _same_owner(old, new):
            # The common MODIFIED event (status, labels): same node, same owner, same key order.
            if new.node_name:
                self.by_node[new.node_name][key] = new
                self.dirty_nodes.add(new.node_name)
            if new.owner is not None:
                self.by_owner[new.owner.uid][key] = new
                self.dirty_owners.add(new.owner.uid)
            return
        if old is not None:
            self.remove(key, old)
        if new is not None:
            self.add(key, new)
        if old is None:
            self.insert_key(key)
        elif new is None:
            self.delete_key(key)

    def remove(self, key: str, pod: Pod) -> None:
        if pod.node_name:
            on_node = self.by_node.get(pod.node_name)
            if on_node is not None:
                on_node.pop(key, None)
                if not on_node:
                    del self.by_node[pod.node_name]
            self.dirty_nodes.add(pod.node_name)
        if pod.owner is not None:
            uid = pod.owner.uid
            of_owner = self.by_owner.get(uid)
            if of_owner is not None:
                of_owner.pop(key, None)
                if not of_owner:
                    del self.by_owner[uid]
            self.dirty_owners.add(uid)
            if not pod.terminal:
                self.owners[uid] -= 1
                if self.owners[uid] <= 0:
                    del self.owners[uid]
        self.namespaces[pod.namespace] -= 1
        if self.namespaces[pod.namespace] <= 0:
            del self.namespaces[pod.namespace]

    def add(self, key: str, pod: Pod) -> None:
        if pod.node_name:
            self.by_node.setdefault(pod.node_name, {})[key] = pod
            self.dirty_nodes.add(pod.node_name)
        if pod.owner is not None:
            self.by_owner.setdefault(pod.owner.uid, {})[key] = pod
            self.dirty_owners.add(pod.owner.uid)
            if not pod.terminal:
                self.owners[pod.owner.uid] += 1
        self.namespaces[pod.namespace] += 1

    def rebuild(self, pods: Mapping[str, Pod]) -> None:
        """Index a whole new list: `clear`, then `add` of each pod, in one pass (no per-pod calls)."""
        self.clear()
        by_node, by_owner = self.by_node, self.by_owner
        counted: dict[str, int] = {}
        for key, pod in pods.items():
            node = pod.node_name
            if node:
                on_node = by_node.get(node)
                if on_node is None:
                    by_node[node] = {key: pod}
                else:
                    on_node[key] = pod
            owner = pod.owner
            if owner is not None:
                uid = owner.uid
                of_owner = by_owner.get(uid)
                if of_owner is None:
                    by_owner[uid] = {key: pod}
                else:
                    of_owner[key] = pod
                if pod.phase not in POD_TERMINAL_PHASES:
                    counted[uid] = counted.get(uid, 0) + 1
        self.dirty_nodes.update(by_node)
        self.dirty_owners.update(by_owner)
        self.owners.update(counted)
        self.namespaces.update(map(_NAMESPACE, pods.values()))

    def clear(self) -> None:
        self.by_node.clear()
        self.node_tuples.clear()
        self.dirty_nodes.clear()
        self.order = None
        self.added.clear()
        self.removed.clear()
        self.ordered = None
        self.owners.clear()
        self.namespaces.clear()
        self.by_owner.clear()
        self.owner_tuples.clear()
        self.dirty_owners.clear()

    def insert_key(self, key: str) -> None:
        if self.order is not None:
            if key in self.removed:
                self.removed.discard(key)  # deleted and added again: still in `order`
            else:
                self.added.add(key)
            self._bound()

    def delete_key(self, key: str) -> None:
        if self.order is not None:
            if key in self.added:
                self.added.discard(key)  # added and deleted again: never in `order`
            else:
                self.removed.add(key)
            self._bound()

    def _bound(self) -> None:
        """A cache that is never snapshotted: past a point, sorting afresh is cheaper than merging."""
        if self.order is not None and len(self.added) + len(self.removed) > len(self.order) // 2 + 1000:
            self.order = None
            self.added.clear()
            self.removed.clear()

    def _merge(self, order: list[str]) -> list[str] | None:
        """`order` with the keys removed and added since its last use; None when it has lost its way."""
        removed, added = self.removed, self.added
        self.removed, self.added = set(), set()
        if len(removed) > _ONE_BY_ONE:
            kept = [key for key in order if key not in removed]
            if len(kept) != len(order) - len(removed):  # cannot happen while the index is consistent
                return None
            order = kept
        else:
            for key in removed:
                i = bisect.bisect_left(order, _pod_order(key), key=_pod_order)
                if i < len(order) and order[i] == key:
                    del order[i]
                else:  # cannot happen while the index is consistent; recover by re-sorting
                    return None
        if len(added) > _ONE_BY_ONE:
            merged: list[str] = []
            start = 0
            for key in sorted(added, key=_pod_order):
                at = bisect.bisect_left(order, _pod_order(key), lo=start, key=_pod_order)
                merged += order[start:at]
                merged.append(key)
                start = at
            merged += order[start:]
            order = merged
        else:
            for key in added:
                bisect.insort(order, key, key=_pod_order)
        return order

    def pods_in_order(self, pods: Mapping[str, Pod]) -> tuple[Pod, ...]:
        if self.ordered is None:
            if self.order is not None and (self.added or self.removed):
                self.order = self._merge(self.order)
            if self.order is None:
                self.added.clear()
                self.removed.clear()
                self.order = sorted(pods, key=_pod_order)
            self.ordered = tuple(map(pods.__getitem__, self.order))
        return self.ordered

    def per_owner(self) -> dict[str, tuple[Pod, ...]]:
        """Every pod per controller uid, in the Snapshot's order (namespace, then name)."""
        for uid in self.dirty_owners:
            of_owner = self.by_owner.get(uid)
            if of_owner:
                self.owner_tuples[uid] = tuple(of_owner[k] for k in sorted(of_owner, key=_pod_order))
            else:
                self.owner_tuples.pop(uid, None)
        self.dirty_owners.clear()
        return self.owner_tuples

    def per_node(self) -> dict[str, tuple[Pod, ...]]:
        for node in self.dirty_nodes:
            on_node = self.by_node.get(node)
            if on_node:
                self.node_tuples[node] = tuple(on_node[k] for k in sorted(on_node, key=_pod_order))
            else:
                self.node_tuples.pop(node, None)
        self.dirty_nodes.clear()
        return self.node_tuples


class ClusterCache:
    """A list-watch cache of the resources in `kinds` (names from `descheduler.kube.kinds`)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        kinds: Iterable[str] = CLUSTER_KINDS,
        page_size: int = 500,
        read_timeout: float = 90.0,
        watch_seconds: tuple[int, int] = (300, 600),
        backoff: tuple[float, float] = (0.5, 30.0),
        absent_recheck: float = 300.0,
        max_staleness: float = 60.0,
    ) -> None:
        """`max_staleness`: a synced resource whose list/watch has failed for longer than this makes
        the cache not ready (a cycle must not plan on data that old)."""
        self.client = client
        self.kinds = resolve(kinds)
        self.max_staleness = max_staleness
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {k.name: {} for k in self.kinds}
        self._problems: dict[str, dict[str, str]] = {k.name: {} for k in self.kinds}
        self._status: dict[str, KindStatus] = {k.name: KindStatus() for k in self.kinds}
        self._pods = _PodIndex()
        self._rows = PodRowStore()  # the node table's per-pod rows (descheduler.podrows)
        self._nodes_sorted: tuple[Node, ...] | None = None
        self._subscriptions: list[_Subscription] = []
        self._listeners: dict[str, list[Listener]] = {k.name: [] for k in self.kinds}
        self._gauges = {k.name: metrics.CACHE_OBJECTS.labels(k.name) for k in self.kinds}
        self._synced = threading.Event()
        self._reflectors = [
            Reflector(
                client,
                kind,
                self,
                page_size=page_size,
                watch_seconds=watch_seconds,
                read_timeout=read_timeout,
                backoff=backoff,
                absent_recheck=absent_recheck,
            )
            for kind in self.kinds
        ]
        self._started = False

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> ClusterCache:
        if not self._started:
            self._started = True
            for reflector in self._reflectors:
                reflector.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every reflector and wait (up to `timeout` in total) for their threads to end."""
        for reflector in self._reflectors:
            reflector.stop()
        deadline = time.monotonic() + timeout
        for reflector in self._reflectors:
            reflector.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ClusterCache:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---------------------------------------------------------------- readiness

    @property
    def synced(self) -> bool:
        """True once every resource has been listed (an absent optional API counts as listed)."""
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def not_ready(self) -> str | None:
        """None when a cycle may plan on the cache, else why not (names the resources and errors)."""
        now = time.monotonic()
        with self._lock:
            problems = []
            for name, status in self._status.items():
                if not status.synced:
                    why = f": {status.error}" if status.error else ""
                    problems.append(f"{name} not listed yet{why}")
                elif status.failing_since is not None and now - status.failing_since > self.max_staleness:
                    age = int(now - status.failing_since)
                    problems.append(f"{name} watch failing for {age}s: {status.error}")
        return "; ".join(problems) if problems else None

    def applied_versions(self) -> dict[str, int]:
        """Per resource, the resourceVersion of the last event (or bookmark, or list) applied: a
        caller that knows the version of a change can wait until the cache has seen it."""
        # resourceVersions are opaque strings by contract; every real server sends integers.
        return {r.kind.name: int(r.resource_version) if r.resource_version.isdigit() else 0 for r in self._reflectors}

    def status(self) -> dict[str, KindStatus]:
        with self._lock:
            return {
                name: KindStatus(s.synced, s.absent, s.resource_version, s.error, s.failing_since, s.code)
                for name, s in self._status.items()
            }

    # ---------------------------------------------------------------- reading

    def get(self, kind: str, key: str) -> Any:
        """The record for `key` (`namespace/name` or `name`), or None."""
        with self._lock:
            return self._objects[kind].get(key)

    def records(self, kind: str) -> list[Any]:
        """Every record of one resource."""
        with self._lock:
            return list(self._objects[kind].values())

    def items(self, kind: str) -> dict[str, Any]:
        """A copy of key → record for one resource."""
        with self._lock:
            return dict(self._objects[kind])

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._objects[kind])

    def pods_on(self, node: str) -> tuple[Pod, ...]:
        """The pods bound to `node`, ordered by (namespace, name)."""
        with self._lock:
            on_node = self._pods.by_node.get(node)
            return tuple(on_node[k] for k in sorted(on_node, key=_pod_order)) if on_node else ()

    def node_metrics(self) -> dict[str, NodeMetricRecord]:
        """NodeMetric records by node name (empty unless NODE_METRICS is among the kinds)."""
        with self._lock:
            return dict(self._objects.get(NODE_METRICS, {}))

    def has(self, kind: str) -> bool:
        """Whether this cache lists and watches `kind`."""
        return kind in self._objects

    def problems_of(self, kind: str) -> dict[str, str]:
        """Key → why, for the objects of one resource that could not be decoded."""
        with self._lock:
            return dict(self._problems.get(kind, {}))

    def problems(self) -> list[str]:
        """Objects that could not be decoded (and so are not in the cache), one line each."""
        with self._lock:
            return [
                f"{name} {key}: cannot be read, ignored: {why}"
                for name, found in self._problems.items()
                for key, why in sorted(found.items())
            ]

    # ---------------------------------------------------------------- listeners

    def add_listener(self, listener: Listener, kinds: Iterable[str] | None = None) -> Callable[[], None]:
        """Call `listener` for each applied change (of `kinds`, or all); returns an unsubscribe function."""
        subscription = _Subscription(listener, frozenset(kinds) if kinds is not None else None)
        with self._lock:
            self._subscriptions = [*self._subscriptions, subscription]
            self._index_listeners()

        def remove() -> None:
            with self._lock:
                self._subscriptions = [s for s in self._subscriptions if s is not subscription]
                self._index_listeners()

        return remove

    def _index_listeners(self) -> None:
        self._listeners = {
            name: [s.listener for s in self._subscriptions if s.kinds is None or name in s.kinds]
            for name in self._listeners
        }

    def _listeners_for(self, kind: str) -> list[Listener]:
        return self._listeners[kind]

    def _notify(self, listeners: list[Listener], events: list[CacheEvent]) -> None:
        for event in events:
            for listener in listeners:
                try:
                    listener(event)
                except Exception:  # one listener's bug must not stop the cache
                    log.exception("cache listener failed", resource=event.kind, key=event.key)

    # ---------------------------------------------------------------- the reflectors' sink

    def replace(self, kind: ResourceKind, items: dict[str, Any], problems: dict[str, str]) -> None:
        name = kind.name
        with self._lock:
            listeners = self._listeners_for(name)
            current = self._objects[name]
            events: list[CacheEvent] = []
            if listeners:
                for key, old in current.items():
                    if key not in items:
                        events.append(CacheEvent(name, DELETED, key, old, None))
                for key, new in items.items():
                    old = current.get(key)
                    if old is None:
                        events.append(CacheEvent(name, ADDED, key, None, new))
                    elif old != new:
                        events.append(CacheEvent(name, MODIFIED, key, old, new))
            self._objects[name] = items
            self._problems[name] = dict(problems)
            if name == PODS:
                self._pods.rebuild(items)
                self._rows.reset(items)
            elif name == NODES:
                self._nodes_sorted = None
            status = self._status[name]
            first = not status.synced
            status.synced, status.absent = True, False
            self._gauges[name].set(len(items))
            self._check_synced()
        for key, why in sorted(problems.items()):
            log.warning("object cannot be read; ignored", resource=name, key=key, error=why)
        if first:
            log.info("resource listed", resource=name, objects=len(items))
        self._notify(listeners, events)

    def apply(self, kind: ResourceKind, event_type: str, key: str, record: Any, problem: str | None) -> None:
        name = kind.name
        with self._lock:
            store = self._objects[name]
            old = store.get(key)
            problems = self._problems[name]
            if problem is not None:
                problems[key] = problem
                record = None  # an object we cannot read is not kept in an older state either
            elif problems:
                problems.pop(key, None)
            if event_type == DELETED or record is None:
                if old is None:
                    return
                del store[key]
                record = None
            else:
                store[key] = record
            if name == PODS:
                self._pods.change(key, old, record)
                dirty = self._rows.dirty  # self._rows.touch(key), inlined: this runs for every pod event
                dirty.add(key)
                if len(dirty) > 2 * len(store) + 10_000:
                    self._rows.sync(store)  # bound what a cache that is never snapshotted remembers
            elif name == NODES:
                self._nodes_sorted = None
            if old is None or record is None:  # a MODIFIED event leaves the count as it was
                self._gauges[name].set(len(store))
            listeners = self._listeners[name]
        if problem is not None:
            log.warning("object cannot be read; ignored", resource=name, key=key, error=problem)
        if listeners:
            event = DELETED if record is None else MODIFIED if old is not None else ADDED
            self._notify(listeners, [CacheEvent(name, event, key, old, record)])

    def absent(self, kind: ResourceKind, why: str) -> None:
        name = kind.name
        with self._lock:
            status = self._status[name]
            warn = not status.absent
            had = self._objects[name]
            self._objects[name] = {}
            self._problems[name] = {}
            if name == PODS:
                self._pods.clear()
                self._rows.reset(())
            elif name == NODES:
                self._nodes_sorted = None
            status.synced, status.absent, status.error, status.failing_since, status.code = True, True, "", None, 0
            self._gauges[name].set(0)
            self._check_synced()
            listeners = self._listeners_for(name)
        if warn:
            log.warning("resource not served or not permitted; treated as empty", resource=name, why=why)
        if had and listeners:
            self._notify(listeners, [CacheEvent(name, DELETED, k, v, None) for k, v in had.items()])

    def healthy(self, kind: ResourceKind, resource_version: str) -> None:
        with self._lock:
            status = self._status[kind.name]
            status.resource_version, status.error, status.failing_since, status.code = resource_version, "", None, 0

    def failed(self, kind: ResourceKind, why: str, code: int = 0) -> None:
        with self._lock:
            status = self._status[kind.name]
            status.error, status.code = why, code
            if status.failing_since is None:
                status.failing_since = time.monotonic()
        log.warning("list/watch error", resource=kind.name, error=why)

    def _check_synced(self) -> None:
        if all(s.synced for s in self._status.values()):
            self._synced.set()

    # ---------------------------------------------------------------- snapshot

    def snapshot(self, now: datetime, load: LoadReading | None = None) -> Snapshot:
        """The Snapshot of what the cache holds now, with the load reading's usage; equal to what
        `Snapshot.build` makes of the same records (pods bound to a node that does not exist are
        left out, with a warning, as the file loader refuses them)."""
        with self._lock:
            nodes = self._objects.get(NODES, {})
            pods: dict[str, Pod] = self._objects.get(PODS, {})
            index = self._pods
            if self._nodes_sorted is None:
                self._nodes_sorted = tuple(nodes[k] for k in sorted(nodes))
            node_list = self._nodes_sorted
            pod_list = index.pods_in_order(pods)
            per_node = index.per_node()
            pods_of_owner = dict(index.per_owner())  # the index changes with later events
            self._rows.sync(pods)
            orphans = [n for n in per_node if n not in nodes]
            pods_by_node = {n: pods_on for n, pods_on in per_node.items() if n in nodes} if orphans else dict(per_node)
            left_out: set[str] = set()
            owners = dict(index.owners)
            pod_namespaces = set(index.namespaces)
            warnings: list[str] = []
            if orphans:
                gone = [p for n in orphans for p in per_node[n]]
                warnings.append(
                    f"{len(gone)} pod(s) bound to {len(orphans)} node(s) that do not exist "
                    f"(e.g. {gone[0].key} on {gone[0].node_name}): left out"
                )
                left_out = {p.key for p in gone}
                for uid in {p.owner.uid for p in gone if p.owner is not None}:
                    kept = tuple(p for p in pods_of_owner[uid] if p.key not in left_out)
                    if kept:
                        pods_of_owner[uid] = kept
                    else:
                        del pods_of_owner[uid]
                pod_list = tuple(p for p in pod_list if p.key not in left_out)
                for p in gone:
                    if p.owner is not None and not p.terminal:
                        owners[p.owner.uid] -= 1
                        if owners[p.owner.uid] <= 0:
                            del owners[p.owner.uid]
                pod_namespaces = {p.namespace for p in pod_list}
            namespaces: dict[str, Mapping[str, str]] = dict(self._objects.get(NAMESPACES, {}))
            for ns in pod_namespaces:
                namespaces.setdefault(ns, {})
            workloads = {}
            for name in (DEPLOYMENTS, REPLICASETS, STATEFULSETS, DAEMONSETS):
                for w in self._ordered(name):
                    workloads[w.uid or f"{w.kind}/{w.namespace}/{w.name}"] = w
            pdbs = tuple(self._ordered(PDBS))
            pvcs = dict(self._objects.get(PVCS, {}))
            pvs = dict(self._objects.get(PVS, {}))
            # A volume kind we were refused (403): the pods with claims are not moved (eligibility).
            refused = [n for n in (PVCS, PVS) if n in self._status and self._status[n].absent]
            storage_classes = tuple(self._ordered(STORAGE_CLASSES))
            csi_nodes = tuple(self._ordered(CSI_NODES))
            resource_claims = tuple(self._ordered(RESOURCE_CLAIMS))
            # A scheduling rule's kind we could not list (403, or not served): the pods that need it
            # are not judged by the core, so not moved.
            unreadable = {
                n: f"could not list {n}"
                for n in (STORAGE_CLASSES, CSI_NODES, RESOURCE_CLAIMS)
                if n in self._status and self._status[n].absent
            }
            quotas = tuple(q for name in QUOTAS for q in self._ordered(name))
            reservations = tuple(self._ordered(RESERVATIONS))
            jobs = tuple(self._ordered(MIGRATION_JOBS))
            node_by_name = dict(nodes)
            pod_rows = self._rows.rows(pod_list, node_list, left_out)
        if refused:
            warnings.append(
                f"may not list {' and '.join(refused)} (403): pods with PersistentVolumeClaims are not moved"
            )
        # ResourceClaims are left out: a cluster without DynamicResources does not serve them (the
        # cache logged it once), and no pod there has a claim.
        for name in sorted(unreadable.keys() - {RESOURCE_CLAIMS}):
            warnings.append(f"{unreadable[name]}: pods whose scheduling rules read them are not moved")
        # NodeMetric problems reach the snapshot through the load reading's warnings.
        warnings += [p for p in self.problems() if not p.startswith(f"{NODE_METRICS} ")]
        node_usage = {}
        pod_usage = {}
        if load is not None:
            node_usage = {name: u for name, u in load.node_usage.items() if name in node_by_name}
            pod_usage = dict(load.pod_usage)
            warnings += load.warnings
        return Snapshot(
            now=now,
            nodes=node_list,
            pods=pod_list,
            pdbs=pdbs,
            pvcs=pvcs,
            pvs=pvs,
            volumes_unreadable=f"may not list {' and '.join(refused)}" if refused else "",
            storage_classes={c.name: c for c in storage_classes},
            csi_nodes={c.name: c for c in csi_nodes},
            resource_claims={c.key: c for c in resource_claims},
            unreadable=unreadable,
            workloads=workloads,
            namespaces=namespaces,
            node_usage=node_usage,
            pod_usage=pod_usage,
            quotas=quotas,
            reservations=reservations,
            jobs=jobs,
            warnings=tuple(warnings),
            node_by_name=node_by_name,
            pods_by_node=pods_by_node,
            pods_per_owner=owners,
            owner_pods=OwnerPods(pod_list, pods_of_owner),
            pod_rows=pod_rows,
        )

    def _ordered(self, kind: str) -> list[Any]:
        """Records of a kind in key order (namespace, then name), for a deterministic snapshot."""
        found = self._objects.get(kind)
        if not found:
            return []
        return [found[k] for k in sorted(found, key=_pod_order)]
