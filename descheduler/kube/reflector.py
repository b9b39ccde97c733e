"""One resource's list-then-watch loop (client-go's Reflector), feeding decoded records to a sink.

List in pages (limit/continue), then watch from the list's resourceVersion with bookmarks; a watch
that ends is resumed from the last version seen, a 410 Gone (the version left the server's
history window, or an expired continue token) re-lists, and errors reconnect with capped,
jittered exponential backoff. A missing optional API (CRD not installed) counts as an empty list.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import msgspec
import structlog
import urllib3

from descheduler import decode, metrics
from descheduler.errors import ClusterUnreachableError
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.kube.gcpause import paused_gc
from descheduler.kube.kinds import RawBookmark, RawMetaOnly, RawStatus, RawWatchEvent, ResourceKind
from descheduler.kube.listing import ContinueExpired, decode_object, list_records
from descheduler.kube.ratelimit import Cancelled

log = structlog.get_logger(__name__)

_EVENT_DECODER = msgspec.json.Decoder(RawWatchEvent)
_STATUS_DECODER = msgspec.json.Decoder(RawStatus)
_META_DECODER = msgspec.json.Decoder(RawMetaOnly)
_BOOKMARK_DECODER = msgspec.json.Decoder(RawBookmark)


class Sink(Protocol):
    """Where a reflector puts what it reads (the ClusterCache)."""

    def replace(self, kind: ResourceKind, items: dict[str, Any], problems: dict[str, str]) -> None: ...

    def apply(self, kind: ResourceKind, event_type: str, key: str, record: Any, problem: str | None) -> None: ...

    def absent(self, kind: ResourceKind, why: str) -> None: ...

    def healthy(self, kind: ResourceKind, resource_version: str) -> None: ...

    def failed(self, kind: ResourceKind, why: str, code: int = 0) -> None: ...


class _Gone(Exception):
    """410: re-list from scratch."""


class Reflector:
    """Runs `run()` on its own daemon thread until `stop()`."""

    def __init__(
        self,
        client: KubeClient,
        kind: ResourceKind,
        sink: Sink,
        *,
        page_size: int = 500,
        watch_seconds: tuple[int, int] = (300, 600),
        read_timeout: float = 90.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        absent_recheck: float = 300.0,
    ) -> None:
        self.client = client
        self.kind = kind
        self.sink = sink
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.read_timeout = read_timeout
        self.backoff = backoff
        self.absent_recheck = absent_recheck
        self.resource_version = ""
        self._stop = threading.Event()
        self._response: Any = None
        self._response_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"reflector:{self.kind.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end and cut an open watch, so a blocked read returns now."""
        self._stop.set()
        with self._response_lock:
            response = self._response
        if response is not None:
            _shutdown(response)

    def join(self, timeout: float) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    # ---------------------------------------------------------------- the loop

    def run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if not self.resource_version:
                    if not self._list():
                        continue  # absent optional API: rechecked after a pause
                    failures = 0
                opened = time.monotonic()
                self._watch()
                metrics.WATCH_RESTARTS.labels(self.kind.name, "closed").inc()
                if time.monotonic() - opened > 1.0:
                    failures = 0
                    continue
                # A stream that ends at once, again and again, must not spin: fall through to the backoff.
            except Cancelled:
                return
            except _Gone as gone:
                metrics.WATCH_RESTARTS.labels(self.kind.name, "gone").inc()
                log.info("resource version expired; re-listing", resource=self.kind.name, why=str(gone))
                self.resource_version = ""
                continue
            except (
                KubeApiError,
                ClusterUnreachableError,
                urllib3.exceptions.HTTPError,
                OSError,
                ValueError,
                msgspec.MsgspecError,
            ) as error:
                if self._stop.is_set():
                    return
                metrics.WATCH_RESTARTS.labels(self.kind.name, "error").inc()
                self.sink.failed(self.kind, _describe(error), error.status if isinstance(error, KubeApiError) else 0)
            except Exception as error:  # a bug here must not end the thread: the cache would silently go stale
                if self._stop.is_set():
                    return
                log.exception("list/watch loop failed", resource=self.kind.name)
                metrics.WATCH_RESTARTS.labels(self.kind.name, "error").inc()
                self.sink.failed(self.kind, _describe(error))
            delay = min(self.backoff[1], self.backoff[0] * float(2**failures)) * random.uniform(0.5, 1.0)
            failures = min(failures + 1, 16)
            log.debug("list/watch backing off", resource=self.kind.name, delay=round(delay, 2))
            if self._stop.wait(delay):
                return

    def _list(self) -> bool:
        """Paginated list into the sink; False when the API is absent (and we paused)."""
        try:
            with paused_gc():
                listed = list_records(self.client, self.kind, page_size=self.page_size, cancel=self._stop)
        except ContinueExpired as error:
            raise _Gone(f"continue token expired: {error.message}") from None
        except KubeApiError as error:
            if error.status == 404 and self.kind.optional:
                self.sink.absent(self.kind, f"{self.kind.api_version} {self.kind.kind} is not served (404)")
                self.resource_version = ""
                if self._stop.wait(self.absent_recheck):
                    raise Cancelled("stopped") from None
                return False
            if error.status == 403 and self.kind.may_be_forbidden:
                self.sink.absent(self.kind, f"{self.kind.api_version} {self.kind.kind} may not be listed (403)")
                self.resource_version = ""
                if self._stop.wait(self.absent_recheck):
                    raise Cancelled("stopped") from None
                return False
            raise
        with paused_gc():
            self.sink.replace(self.kind, listed.records, listed.problems)
        self.resource_version = listed.resource_version
        self.sink.healthy(self.kind, listed.resource_version)
        return True

    def _watch(self) -> None:
        """One watch stream, applied until it ends; raises _Gone on 410."""
        kind = self.kind
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": random.randint(*self.watch_seconds),
        }
        response = self.client.stream(kind.path, query=query, read_timeout=self.read_timeout, cancel=self._stop)
        with self._response_lock:
            self._response = response
        if self._stop.is_set():
            _shutdown(response)
        self.sink.healthy(kind, self.resource_version)
        try:
            self.apply_events(_lines(response))
        except urllib3.exceptions.ReadTimeoutError:
            # Nothing arrived for read_timeout: a quiet resource on a server that sends no bookmarks,
            # or a connection that died silently. Either way, watch again from where we are.
            if self._stop.is_set():
                raise Cancelled("stopped") from None
        except (urllib3.exceptions.HTTPError, OSError):
            if self._stop.is_set():
                raise Cancelled("stopped") from None
            raise
        finally:
            with self._response_lock:
                self._response = None
            _shutdown(response)
        if self._stop.is_set():
            raise Cancelled("stopped")

    def apply_events(self, lines: Iterable[bytes]) -> None:
        """Decode watch-stream lines and apply each event to the sink; raises _Gone on a 410 ERROR event."""
        kind = self.kind
        decode_typed, to_record, key_of, apply = (
            kind.event_decoder.decode,
            kind.listed_record,
            kind.key,
            self.sink.apply,
        )
        for line in lines:
            try:
                # One pass for the common case: the event and its object in the kind's raw shape.
                event = decode_typed(line)
            except msgspec.ValidationError:
                self._apply_untyped(line)
                continue
            kind_of_event, obj = event.type, event.object
            if kind_of_event == "BOOKMARK":
                if obj.metadata.resource_version:
                    self.resource_version = obj.metadata.resource_version
                continue
            if kind_of_event == "ERROR":
                self._apply_untyped(line)
                continue
            try:
                record = to_record(obj)
            except (decode.DecodeError, decode.Refit):
                self._apply_untyped(line)
                continue
            apply(kind, kind_of_event, key_of(obj.metadata), record, None)
            if obj.metadata.resource_version:
                self.resource_version = obj.metadata.resource_version

    def _apply_untyped(self, line: bytes) -> None:
        """The slow path: ERROR events, bookmarks whose object does not fit the kind's shape, and
        objects that do not fit it (named as problems)."""
        kind = self.kind
        event = _EVENT_DECODER.decode(line)
        if event.type == "BOOKMARK":
            # A bookmark is no object: it only moves the version on, whatever its body looks like.
            with contextlib.suppress(msgspec.DecodeError):
                version = _BOOKMARK_DECODER.decode(event.object).metadata.resource_version
                if version:
                    self.resource_version = version
            return
        if event.type == "ERROR":
            status = _STATUS_DECODER.decode(event.object)
            if status.code == 410:
                raise _Gone(status.message or "410 Gone")
            raise KubeApiError("WATCH", kind.path, status.code or 500, bytes(event.object))
        key, record, problem = decode_object(kind, event.object)
        self.sink.apply(kind, event.type, key, record, problem)
        with contextlib.suppress(msgspec.DecodeError):
            version = _META_DECODER.decode(event.object).metadata.resource_version
            if version:
                self.resource_version = version


def _lines(response: Any) -> Iterator[bytes]:
    """Complete lines of a streamed body, as they arrive."""
    pending = b""
    for chunk in response.stream(65536, decode_content=True):
        if not chunk:
            continue
        pending += chunk
        if b"\n" not in chunk:
            continue
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _shutdown(response: Any) -> None:
    # shutdown() unblocks a read in progress on another thread; it refuses once the connection is back in
    # the pool, and urllib3 2 raises ValueError when it was shut down already (stop() and the watch's own
    # clean-up both call this): an error here must not hide why the watch ended, nor skip the close.
    with contextlib.suppress(urllib3.exceptions.HTTPError, OSError, RuntimeError, ValueError):
        shutdown = getattr(response, "shutdown", None)
        if shutdown is not None:
            shutdown()
    with contextlib.suppress(urllib3.exceptions.HTTPError, OSError, RuntimeError, ValueError):
        response.release_conn()
        response.close()


def _describe(error: BaseException) -> str:
    if isinstance(error, KubeApiError | ClusterUnreachableError):
        return str(error)
    return f"{type(error).__name__}: {error}"
