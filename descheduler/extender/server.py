"""The extender's HTTP server: POST <prefix>/filter, /prioritize and /bind, GET /healthz, /readyz, /metrics.

The standard library's ThreadingHTTPServer, HTTP/1.1 with keep-alive (kube-scheduler reuses its
connections). Every request is bounded: a body needs a Content-Length no larger than
`max_body`; a malformed one gets 400 with the reason, an unexpected failure 500 — the server
itself never goes down with a request.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgspec
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from descheduler import metrics
from descheduler.errors import listen_error
from descheduler.extender.protocol import RequestError, printable
from descheduler.extender.service import Extender

log = logging.getLogger(__name__)

DEFAULT_PORT = 10262
DEFAULT_MAX_BODY = 8 * 2**20  # 5,000 node names are ~100 KiB; full Nodes lists (not nodeCacheCapable) need more
DISCARD_LIMIT = 64 * 2**20  # an oversized body up to this size is read and dropped; above it, the connection closes
IDLE_TIMEOUT = 120.0  # seconds a kept-alive connection may sit idle (kube-scheduler reconnects)
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


class ExtenderServer:
    """Serves an `Extender` on `host:port` (port 0: a free one, see `.port`) from a daemon thread;
    a port in use (or any failed bind) is an InputError naming it."""

    def __init__(
        self, extender: Extender, host: str = "0.0.0.0", port: int = DEFAULT_PORT, *, max_body: int = DEFAULT_MAX_BODY
    ) -> None:
        self.extender = extender
        self.max_body = max_body
        try:
            self._server = ThreadingHTTPServer((host, port), _handler(self))
        except (OSError, OverflowError) as error:
            raise listen_error(host, port, error) from None
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}"

    def start(self) -> ExtenderServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.05,), name="extender-http", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(reason: str) -> bytes:
    """An error body; `{"Error": …}` is also what kube-scheduler reads from a filter answer."""
    return msgspec.json.encode({"Error": printable(reason)})


def _handler(owner: ExtenderServer) -> type[BaseHTTPRequestHandler]:
    extender = owner.extender
    verbs = {"filter": extender.filter, "prioritize": extender.prioritize, "bind": extender.bind}
    requests = {(verb, code): metrics.EXTENDER_REQUESTS.labels(verb, code) for verb in verbs for code in ("200",)}
    durations = {verb: metrics.EXTENDER_REQUEST_DURATION.labels(verb) for verb in verbs}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = IDLE_TIMEOUT
        server_version = "descheduler-extender"
        wbufsize = 1 << 16  # buffered: headers and body leave in one write (flushed after each request)

        def setup(self) -> None:
            super().setup()
            # Answers leave at once: no Nagle delay waiting for the ACK of an earlier segment.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            # A state rebuild steps aside for the whole request, reading and writing included.
            with extender.requests_first.serving():
                self._post()

        def _post(self) -> None:
            started = time.perf_counter()
            verb = self.path.split("?", 1)[0].rstrip("/").rpartition("/")[2]
            answer = verbs.get(verb)
            try:
                body = self._body()  # read even for a wrong path: the connection stays in step
                if answer is None:
                    known = "POST .../filter, .../prioritize or .../bind"
                    self._finish("other", 404, _error(f"no such verb {verb!r}: {known}"))
                    return
                code, out = 200, answer(body)
            except RequestError as err:
                code, out = err.status, _error(err.reason)
                if err.status == 411:
                    self.close_connection = True  # the body was not read: the stream is unusable
            except Exception as err:  # a bug answers 500 for this request; the server stays up
                log.exception("extender: %s failed", verb)
                code, out = 500, _error(f"internal error: {type(err).__name__}: {err}")
            if answer is None:
                self._finish("other", code, out)
                return
            self._finish(verb, code, out)
            durations[verb].observe(time.perf_counter() - started)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._finish("health", 200, b"ok\n", TEXT)
            elif path == "/readyz":
                problem = extender.not_ready()
                self._finish("health", 503 if problem else 200, (problem or "ok").encode() + b"\n", TEXT)
            elif path == "/metrics":
                self._finish("metrics", 200, generate_latest(metrics.REGISTRY), CONTENT_TYPE_LATEST)
            else:
                self._finish("other", 404, b"not found\n", TEXT)

        def _body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                raise RequestError("chunked bodies are not accepted: send Content-Length", status=411)
            length_header = self.headers.get("Content-Length")
            if length_header is None:
                raise RequestError("Content-Length is required", status=411)
            try:
                length = int(length_header)
            except ValueError:
                raise RequestError(f"Content-Length {length_header!r} is not a number", status=411) from None
            if length < 0:
                raise RequestError(f"Content-Length {length} is negative", status=411)
            if length > owner.max_body:
                self._discard(length)
                raise RequestError(f"body of {length} bytes exceeds the limit of {owner.max_body} bytes", status=413)
            body = self.rfile.read(length)
            if len(body) < length:
                self.close_connection = True
                raise RequestError(f"body ended after {len(body)} of {length} bytes")
            return body

        def _discard(self, length: int) -> None:
            """Read an oversized body to its end so the client sees the 413 rather than a reset
            connection; a body past DISCARD_LIMIT is not worth reading: the connection is closed."""
            if length > DISCARD_LIMIT:
                self.close_connection = True
                return
            left = length
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    self.close_connection = True
                    return
                left -= len(chunk)

        def _finish(self, verb: str, code: int, body: bytes, content_type: str = JSON) -> None:
            counter = requests.get((verb, str(code)))
            (counter or metrics.EXTENDER_REQUESTS.labels(verb, str(code))).inc()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """No access log: thousands of requests a second; errors are logged where they happen."""

        def log_error(self, format: str, *args: object) -> None:
            log.info("extender http: " + format, *args)

    return Handler
