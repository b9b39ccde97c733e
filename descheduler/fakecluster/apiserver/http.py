"""HTTP transport: stdlib ThreadingHTTPServer, keep-alive, chunked watch streams, fault hooks."""

from __future__ import annotations

import logging
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from . import errors
from .access import AccessLog, request_access
from .api import Api, ApiRequest, Response, Target, WatchStream, error_response
from .entry import decode, encode
from .errors import ApiError
from .faults import Faults, RequestInfo
from .watch import INITIAL_EVENTS_END, StopWatch, bookmark_object, event_line

log = logging.getLogger(__name__)

# How often an idle watch stream wakes to notice a gone client or a stopping server.
_WATCH_TICK = 0.25
# Initial ADDED events are written in chunks of about this many bytes.
_CHUNK_BYTES = 256 * 1024


class ApiHTTPServer(ThreadingHTTPServer):
    """Carries the request logic and fault hooks the handler needs."""

    daemon_threads = True
    # Keep-alive connections park their threads in a blocking read; do not wait for them on close.
    block_on_close = False
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        api: Api,
        faults: Faults,
        bookmark_interval: float,
        accesses: AccessLog | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self.faults = faults
        self.accesses = accesses if accesses is not None else AccessLog()
        self.bookmark_interval = bookmark_interval
        self.stopping = threading.Event()

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        """A client that hangs up (or a server shutting down under a kept-alive connection) is
        normal traffic, not a traceback on stderr; anything else is still reported."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError) or self.stopping.is_set():
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's delayed
    # ACK (~40 ms per response on a kept-alive connection).
    disable_nagle_algorithm = True
    server: ApiHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        log.debug(format, *args)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = ApiRequest(
            self.command, url.path, query, self.headers.get("Content-Type", ""), body, self.headers.get("Accept", "")
        )
        api, faults = self.server.api, self.server.faults
        self.server.accesses.record(request_access(self.command, url.path, query))
        target: Target | None = None
        try:
            target = api.resolve(request)
        except ApiError as error:
            failure: ApiError | None = error
        else:
            failure = None
        info = RequestInfo(self.command, url.path, target.verb if target else "", self.headers.get("User-Agent", ""))
        faults.record(info)
        delay = faults.delay_for(info)
        if delay > 0:
            time.sleep(delay)
        failure = faults.failure_for(info) or failure
        if failure is not None or target is None:
            response = error_response(failure or errors.path_not_found())
            faults.audited(info, response.status)
            self._send(response)
            return
        try:
            result = api.serve(target, request)
        except ApiError as error:
            result = error_response(error)
        except Exception as error:  # a bug in the fake must reach the client as a 500, not a hang
            log.exception("fake API server failed on %s %s", self.command, self.path)
            result = error_response(errors.internal_error(f"{type(error).__name__}: {error}"))
        if isinstance(result, WatchStream):
            faults.audited(info, 200)
            self._stream(result)
        else:
            faults.audited(info, result.status)
            self._send(result)

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        headers = dict(response.headers)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(response.body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(response.body)

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stream(self, stream: WatchStream) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        watcher = stream.watcher
        store = self.server.api.store
        try:
            if stream.error is not None or watcher is None:
                error = stream.error or errors.internal_error("watch failed")
                self._chunk(event_line("ERROR", encode(error.status())))
            else:
                if self._pump(stream) == "abrupt":
                    self._abort()
                    return
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
        finally:
            if watcher is not None:
                store.stop_watch(watcher)

    def _pump(self, stream: WatchStream) -> str:
        """Write events until timeout, stop or client gone; returns why it ended."""
        watcher = stream.watcher
        assert watcher is not None
        store = self.server.api.store
        buffer: list[bytes] = []
        size = 0
        tables = stream.table
        for event in stream.initial:
            seen = watcher.translate(event)
            if seen is not None:
                line = event_line(seen[0], tables.event_object(seen[1]) if tables else seen[1])
                buffer.append(line)
                size += len(line)
                if size >= _CHUNK_BYTES:
                    self._chunk(b"".join(buffer))
                    buffer, size = [], 0
        if stream.initial_events_end is not None and stream.bookmarks:
            buffer.append(event_line("BOOKMARK", self._initial_events_end(stream, stream.initial_events_end)))
        self._chunk(b"".join(buffer))
        self.wfile.flush()
        start = time.monotonic()
        deadline = start + stream.timeout if stream.timeout else None
        interval = self.server.bookmark_interval
        next_bookmark = start + interval if stream.bookmarks else None
        while not self.server.stopping.is_set():
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return "timeout"
            wait = min(t - now for t in (deadline, next_bookmark, now + _WATCH_TICK) if t is not None)
            item = watcher.next(wait)
            if isinstance(item, StopWatch):
                return "abrupt" if item.abrupt else "stopped"
            if item is not None:
                seen = watcher.translate(item)
                if seen is not None:
                    self._chunk(event_line(seen[0], tables.event_object(seen[1]) if tables else seen[1]))
                    self.wfile.flush()
            elif self._client_gone():
                return "gone"
            if next_bookmark is not None and time.monotonic() >= next_bookmark:
                rv = store.idle_resource_version(watcher)
                if rv is not None:
                    bookmark = tables.bookmark(rv) if tables else bookmark_object(stream.rt, rv)
                    self._chunk(event_line("BOOKMARK", bookmark))
                    self.wfile.flush()
                    next_bookmark = time.monotonic() + interval
        return "stopped"

    @staticmethod
    def _initial_events_end(stream: WatchStream, rv: int) -> bytes:
        """The BOOKMARK closing a WatchList's initial events (annotated `k8s.io/initial-events-end`)."""
        if stream.table is None:
            return bookmark_object(stream.rt, rv, initial_events_end=True)
        table = decode(stream.table.bookmark(rv))
        table.setdefault("metadata", {}).setdefault("annotations", {})[INITIAL_EVENTS_END] = "true"
        return encode(table)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _abort(self) -> None:
        """Drop the connection mid-stream, as a crashing or restarting API server would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
