"""Where the extender's view of the cluster comes from: a snapshot file, or the list-watch cache.

A source answers a few questions cheaply — is it ready, has anything changed (`generation`), which
pods were just bound, which Reservations just changed — and one expensively: `snapshot()`, which
the extender calls at most once per refresh interval and only when the generation moved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from descheduler.model import Pod, Reservation
from descheduler.snapshot import Snapshot, load_snapshot

BindingHook = Callable[[Pod, str], None]
ReservationHook = Callable[[str, Reservation | None], None]
LeavingHook = Callable[[Pod, bool], None]  # a pod that started terminating (False) or is gone (True)
RESERVATIONS = "reservations.descheduler.dev"


class ClusterSource(Protocol):
    def not_ready(self) -> str | None:
        """None when `snapshot()` may be called, else why not."""

    def generation(self) -> Hashable:
        """Changes whenever what `snapshot()` would return may have changed."""

    def snapshot(self) -> Snapshot:
        """The cluster now; raises InputError or ClusterUnreachableError when it cannot be read."""

    def watch_bindings(self, hook: BindingHook) -> None:
        """Call `hook(pod, node)` as soon as the source sees a pod bound to a node."""

    def watch_reservations(self, hook: ReservationHook) -> None:
        """Call `hook(name, reservation or None when deleted)` as soon as the source sees a change."""

    def watch_leaving(self, hook: LeavingHook) -> None:
        """Call `hook(pod, gone)` as soon as the source sees a pod start terminating or go."""

    def pod(self, namespace: str, name: str) -> Pod | None:
        """The pod as the source last saw it, if it knows it."""


class SnapshotFileSource:
    """A snapshot file or directory (YAML/JSON Kubernetes objects), re-read when a file changes."""

    def __init__(self, path: str | Path, now: datetime | None = None) -> None:
        self.path = Path(path)
        self.now = now

    def not_ready(self) -> str | None:
        return None if self.path.exists() else f"{self.path}: no such file or directory"

    def generation(self) -> Hashable:
        files = sorted(p for p in self.path.rglob("*") if p.is_file()) if self.path.is_dir() else [self.path]
        stamps = []
        for file in files:
            try:
                stat = file.stat()
            except OSError:
                continue
            stamps.append((str(file), stat.st_mtime_ns, stat.st_size))
        return tuple(stamps)

    def snapshot(self) -> Snapshot:
        return load_snapshot(self.path, now=self.now)

    def watch_bindings(self, hook: BindingHook) -> None:
        """A file reports no bindings."""

    def watch_reservations(self, hook: ReservationHook) -> None:
        """A file reports no changes as they happen: a changed file is a new snapshot."""

    def watch_leaving(self, hook: LeavingHook) -> None:
        """A file reports no changes as they happen."""

    def pod(self, namespace: str, name: str) -> Pod | None:
        return None


class _Cache(Protocol):
    """The part of `descheduler.kube.cache.ClusterCache` a CacheSource uses."""

    def not_ready(self) -> str | None: ...

    def add_listener(
        self, listener: Callable[[Any], None], kinds: Iterable[str] | None = None
    ) -> Callable[[], None]: ...

    def snapshot(self, now: datetime, load: Any = None) -> Snapshot: ...

    def get(self, kind: str, key: str) -> Any: ...


class CacheSource:
    """The list-watch cache plus a load reader.

    Every applied cache event moves the generation; the load reading (an API or Prometheus query
    per call) is taken again at most every `load_interval` seconds, since metrics change only as
    often as they are reported. Pod events that bind a pod go to the binding hooks at once, and
    every Reservation change to the reservation hooks.
    """

    def __init__(
        self,
        cache: _Cache,
        read_load: Callable[[datetime], Any] | None = None,
        *,
        load_interval: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.cache = cache
        self.read_load = read_load
        self.load_interval = load_interval
        self._clock = clock
        self._wall_clock = wall_clock
        self._changes = 0
        self._lock = threading.Lock()
        self._load: Any = None
        self._load_at: float | None = None
        self._hooks: list[BindingHook] = []
        self._reservation_hooks: list[ReservationHook] = []
        self._leaving_hooks: list[LeavingHook] = []
        cache.add_listener(self._on_event)

    def not_ready(self) -> str | None:
        return self.cache.not_ready()

    def generation(self) -> Hashable:
        due = self.read_load is not None and (
            self._load_at is None or self._clock() - self._load_at >= self.load_interval
        )
        return (self._changes, self._load_at, due)

    def snapshot(self) -> Snapshot:
        now = self._wall_clock()
        if self.read_load is not None and (
            self._load_at is None or self._clock() - self._load_at >= self.load_interval
        ):
            self._load = self.read_load(now)
            self._load_at = self._clock()
        return self.cache.snapshot(now, self._load)

    def watch_bindings(self, hook: BindingHook) -> None:
        with self._lock:
            self._hooks = [*self._hooks, hook]

    def watch_reservations(self, hook: ReservationHook) -> None:
        with self._lock:
            self._reservation_hooks = [*self._reservation_hooks, hook]

    def watch_leaving(self, hook: LeavingHook) -> None:
        with self._lock:
            self._leaving_hooks = [*self._leaving_hooks, hook]

    def pod(self, namespace: str, name: str) -> Pod | None:
        found: Pod | None = self.cache.get("pods", f"{namespace}/{name}")
        return found

    def _on_event(self, event: Any) -> None:
        self._changes += 1
        if event.kind == RESERVATIONS:
            record: Reservation | None = event.new
            name = record.name if record is not None else event.old.name
            for reservation_hook in self._reservation_hooks:
                reservation_hook(name, record)
            return
        if event.kind != "pods":
            return
        old: Pod | None = event.old
        if event.new is None or (event.new.deleting and (old is None or not old.deleting)):
            leaving = event.new or old
            if leaving is not None:
                for leaving_hook in self._leaving_hooks:
                    leaving_hook(leaving, event.new is None)
        if event.new is None:
            return
        new: Pod = event.new
        if new.node_name and (old is None or not old.node_name) and not new.terminal:
            for hook in self._hooks:
                hook(new, new.node_name)
