"""The extender's HTTP server: POST <prefix>/filter, /prioritize and /bind, GET /healthz, /readyz, /metrics.

HTTP/1.1 with keep-alive (kube-scheduler reuses its connections), one thread per connection. A
lean request loop rather than the standard library's http.server, which spent ~0.2 ms of CPU per
request around the answer (headers parsed by the email package, per-request objects, several
writes): with an extender answering fixed bodies of 5,000 names, 0.82-0.85 ms of server CPU per
filter + prioritize pair against 0.39-0.43 here, and 0.23-0.25 for a bare recv-and-sendmsg loop. An
asyncio server (aiohttp, uvicorn) would add an event loop and a hop to a worker thread for answers
that are CPU-bound. This loop reads what has arrived in one call, reads of the head only the
request line and the framing headers (Content-Length, Transfer-Encoding, Connection, Expect), and
answers with one write.

Every request is bounded: a body needs a Content-Length no larger than `max_body`; a malformed
one gets 400 with the reason, an unexpected failure 500 — the server itself never goes down with
a request.

With `tls` the listener serves HTTPS and requires a client certificate signed by the client CA
(kube-scheduler's `tlsConfig` certFile/keyFile/caFile): the handshake runs in the connection's
thread with a timeout, so a slow or bad client never holds up `accept`, and a client without a
valid certificate never reaches a verb. No ALPN is offered, so Go's client speaks HTTP/1.1.
`verbs=False` makes a listener that answers only GET /healthz, /readyz and /metrics, for probes and
Prometheus when the verbs listen on loopback or require client certificates.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path

import msgspec
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from descheduler import metrics
from descheduler.controller.health import open_listener
from descheduler.errors import InputError
from descheduler.extender.protocol import RequestError, printable
from descheduler.extender.service import Extender

log = logging.getLogger(__name__)

DEFAULT_PORT = 10262
DEFAULT_MAX_BODY = 8 * 2**20  # 5,000 node names are ~100 KiB; full Nodes lists (not nodeCacheCapable) need more
DISCARD_LIMIT = 64 * 2**20  # an oversized body up to this size is read and dropped; above it, the connection closes
IDLE_TIMEOUT = 120.0  # seconds a kept-alive connection may sit idle (kube-scheduler reconnects)
MAX_HEAD = 65536  # bytes of request line and headers
MAX_HEADERS = 100
RECV_SIZE = 1 << 18  # bytes asked of the socket at once: a request of 5,000 names arrives in one or two reads
ACCEPT_POLL = 0.05  # seconds between two looks at `stop` while no connection comes
JSON = b"application/json"
TEXT = b"text/plain; charset=utf-8"
SERVER = b"descheduler-extender"
_VERBS = ("filter", "prioritize", "bind")
HANDSHAKE_TIMEOUT = 5.0  # seconds a client has to complete the TLS handshake
TLS_CHECK_INTERVAL = 10.0  # seconds between two looks at the certificate files' modification times
HEALTH_ONLY = (
    "this port serves only GET /healthz, /readyz and /metrics: filter, prioritize and bind are served on the verb port"
)


@dataclass(frozen=True, slots=True)
class TLSFiles:
    """The serving certificate (chain) and its key, and the CA bundle that client certificates must chain to."""

    cert_file: Path
    private_key_file: Path
    client_ca_file: Path


def load_tls_context(files: TLSFiles) -> ssl.SSLContext:
    """A server context for `files` that requires a client certificate, TLS 1.2 at least; an InputError
    naming the flag, the file and what is wrong with it when it cannot be used."""
    cert = _read_pem(files.cert_file, "--tls-cert-file", "CERTIFICATE")
    key = _read_pem(files.private_key_file, "--tls-private-key-file", "PRIVATE KEY")
    client_ca = _read_pem(files.client_ca_file, "--client-ca-file", "CERTIFICATE")
    _parse_certificates(cert, files.cert_file, "--tls-cert-file")
    if "ENCRYPTED" in key:
        raise InputError(
            f"{files.private_key_file}: the private key is encrypted: give it unencrypted (a Secret's tls.key is)",
            field="--tls-private-key-file",
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    try:
        # A password given (and wrong) rather than OpenSSL's prompt on the terminal for an encrypted key.
        context.load_cert_chain(files.cert_file, files.private_key_file, password=b"")
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            problem = f"the private key does not belong to the certificate in {files.cert_file}"
        else:
            problem = f"not a usable PEM private key ({_ssl_reason(error)})"
        raise InputError(f"{files.private_key_file}: {problem}", field="--tls-private-key-file") from None
    except OSError as error:  # replaced between the two reads
        raise InputError(f"cannot read: {error}", field="--tls-cert-file") from None
    _parse_certificates(client_ca, files.client_ca_file, "--client-ca-file", into=context)
    # No ALPN: without it Go's client (kube-scheduler) speaks HTTP/1.1, all this server speaks.
    return context


def _read_pem(path: Path, flag: str, kind: str) -> str:
    try:
        text = path.read_text(encoding="latin-1")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}", field=flag) from None
    if not re.search(rf"-----BEGIN [A-Z0-9 ]*{kind}-----", text):
        raise InputError(f"{path}: no PEM {kind.lower()} in it (a '-----BEGIN {kind}-----' block)", field=flag)
    return text


def _parse_certificates(pem: str, path: Path, flag: str, *, into: ssl.SSLContext | None = None) -> None:
    """Load the PEM certificates of `pem` as trust anchors of `into` (of a throwaway context: only parsed)."""
    try:
        (into or ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)).load_verify_locations(cadata=pem)
    except ssl.SSLError as error:
        raise InputError(f"{path}: not a valid PEM certificate ({_ssl_reason(error)})", field=flag) from None


def _ssl_reason(error: ssl.SSLError) -> str:
    return str(error.reason or error.strerror or error).lower().replace("_", " ")


class ServerTLS:
    """The SSLContext of `files`, built again when one of them changes on disk (cert-manager and kubelet
    rotate mounted Secrets). Looked at by the accepting thread at most every TLS_CHECK_INTERVAL seconds;
    a change that cannot be loaded is logged and the last good context stays. A bad file at the start
    is the InputError of `load_tls_context`."""

    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self._stamp = self._stamp_now()
        self._context = load_tls_context(files)
        self._checked = time.monotonic()

    def context(self) -> ssl.SSLContext:
        now = time.monotonic()
        if now - self._checked >= TLS_CHECK_INTERVAL:
            self._checked = now
            self._reload()
        return self._context

    def _reload(self) -> None:
        stamp = self._stamp_now()
        if stamp == self._stamp:
            return
        self._stamp = stamp  # a broken change is reported once, and tried again when the files change again
        try:
            context = load_tls_context(self.files)
        except InputError as error:
            log.warning("extender https: changed certificate files cannot be used, the previous ones stay: %s", error)
            return
        self._context = context
        log.info("extender https: certificate files changed, reloaded")

    def _stamp_now(self) -> tuple[tuple[int, int, int] | None, ...]:
        """Each file's (mtime, size, inode), following symlinks: a kubelet-mounted Secret swaps a symlink."""

        def stamp(path: Path) -> tuple[int, int, int] | None:
            try:
                status = os.stat(path)
            except OSError:
                return None
            return status.st_mtime_ns, status.st_size, status.st_ino

        files = self.files
        return tuple(stamp(path) for path in (files.cert_file, files.private_key_file, files.client_ca_file))


def handshake_failure(error: Exception) -> str:
    """The failure's reason among a few, for the metric's label."""
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, ssl.SSLEOFError | ssl.SSLZeroReturnError | ConnectionError):
        return "closed"
    reason = str(getattr(error, "reason", None) or "")
    if reason in ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "TLSV13_ALERT_CERTIFICATE_REQUIRED"):
        return "no_certificate"
    if "CERTIFICATE" in reason or "UNKNOWN_CA" in reason:
        return "bad_certificate"
    if reason in _PROTOCOL_REASONS or "VERSION" in reason or "PROTOCOL" in reason or "CIPHER" in reason:
        return "protocol"
    return "other"


_PROTOCOL_REASONS = frozenset(("HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"))


class ExtenderServer:
    """Serves an `Extender` on `host:port` (port 0: a free one, see `.port`) from daemon threads;
    a port in use (or any failed bind) is an InputError naming it. With `tls`: HTTPS, and only to
    clients with a certificate of its client CA. With `verbs=False`: GET /healthz, /readyz and
    /metrics only, every POST a 404 pointing to the verb port."""

    def __init__(
        self,
        extender: Extender,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        tls: ServerTLS | None = None,
        verbs: bool = True,
    ) -> None:
        self.extender = extender
        self.max_body = max_body
        self.tls = tls
        self.verbs = verbs
        self._listener = open_listener(host, port)
        self._listener.settimeout(ACCEPT_POLL)
        self._routes = _Routes(extender, max_body, verbs=verbs)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def host(self) -> str:
        return str(self._listener.getsockname()[0])

    @property
    def address(self) -> str:
        """host:port as bound ([host]:port for IPv6), wildcards as they are."""
        return _address((self.host, self.port))

    @property
    def url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"{'https' if self.tls else 'http'}://{f'[{host}]' if ':' in host else host}:{self.port}"

    def start(self) -> ExtenderServer:
        if self._thread is None:
            self._stopping.clear()
            name = "extender-http" if self.verbs else "extender-health"
            self._thread = threading.Thread(target=self._accept, name=name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close the open connections (a request being answered finishes first)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self._listener.close()
        with self._connections_lock:
            open_now = list(self._connections)
        for connection in open_now:
            with contextlib.suppress(OSError):  # ends a wait for the next request, not an answer being written
                # The plain socket's shutdown: SSLSocket's would drop TLS, and an answer being written leave in clear.
                socket.socket.shutdown(connection, socket.SHUT_RD)

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as error:
                if self._stopping.is_set():
                    return
                log.warning("extender http: accept failed: %s", error)
                time.sleep(ACCEPT_POLL)
                continue
            context = self.tls.context() if self.tls is not None else None
            with self._connections_lock:
                self._connections.add(connection)
            threading.Thread(
                target=self._serve, args=(connection, peer, context), name="extender-connection", daemon=True
            ).start()

    def _serve(self, connection: socket.socket, peer: object, context: ssl.SSLContext | None) -> None:
        sock = connection
        try:
            if context is not None:
                sock = context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
                with self._connections_lock:
                    self._connections.discard(connection)
                    self._connections.add(sock)
                if not self._handshake(sock, peer):
                    return
            _Connection(sock, self._routes, tls=context is not None).serve()
        except ssl.SSLError as error:  # past the handshake: a bad record, an alert
            log.info("extender https: connection from %s ended: %s", _address(peer), _ssl_reason(error))
        except Exception:  # a bug in the loop ends this connection, not the server
            log.exception("extender http: connection failed")
        finally:
            with self._connections_lock:
                self._connections.discard(connection)
                self._connections.discard(sock)
            sock.close()
            connection.close()

    def _handshake(self, sock: ssl.SSLSocket, peer: object) -> bool:
        """Complete the TLS handshake within HANDSHAKE_TIMEOUT; False (logged and counted) when it fails."""
        try:
            _handshake_by(sock, time.monotonic() + HANDSHAKE_TIMEOUT)
            return True
        except (OSError, ValueError) as error:
            if self._stopping.is_set():
                return False
            reason = handshake_failure(error)
            metrics.EXTENDER_TLS_HANDSHAKE_FAILURES.labels(reason).inc()
            detail = _ssl_reason(error) if isinstance(error, ssl.SSLError) else str(error) or type(error).__name__
            log.info("extender https: TLS handshake with %s failed (%s): %s", _address(peer), reason, detail)
            return False


def _handshake_by(sock: ssl.SSLSocket, deadline: float) -> None:
    """The server side of the handshake, done by `deadline` (a TimeoutError after it): a whole deadline,
    not one per read, so a client sending a byte at a time cannot stretch it."""
    sock.setblocking(False)
    poller = select.poll()
    while True:
        try:
            sock.do_handshake()
            return
        except ssl.SSLWantReadError:
            event = select.POLLIN
        except ssl.SSLWantWriteError:
            event = select.POLLOUT
        left = deadline - time.monotonic()
        poller.register(sock, event)
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError(f"no TLS handshake within {HANDSHAKE_TIMEOUT:g} s")
        poller.unregister(sock)


def _address(peer: object) -> str:
    """host:port of an accepted connection's peer ([host]:port for IPv6)."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer)


@dataclass(frozen=True, slots=True)
class Head:
    """What the loop needs of a request's head."""

    method: bytes
    path: str  # without the query
    length: int | None  # Content-Length, None when absent
    chunked: bool  # a Transfer-Encoding was sent (only chunked exists; any is refused)
    keep_alive: bool
    expect_continue: bool


class Refusal(Exception):
    """A request the loop answers itself: status, reason, and whether the connection closes after it."""

    def __init__(self, status: int, reason: str, close: bool = True) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.close = close


def parse_head(head: bytes) -> Head:
    """The request line and framing headers of `head` (without its closing blank line); a Refusal
    for what is not HTTP/1.x or frames its body ambiguously."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise Refusal(400, f"bad request line {printable(lines[0][:200].decode('latin-1'))!r}")
    method, target, version = parts
    if version == b"HTTP/1.1":
        keep_alive = True
    elif version == b"HTTP/1.0":
        keep_alive = False
    elif version.startswith(b"HTTP/") and version[5:6].isdigit() and version[5:6] != b"0":
        raise Refusal(505, f"HTTP version {version.decode('latin-1')!r} is not supported: use HTTP/1.1")
    else:
        raise Refusal(400, f"bad request version {printable(version[:40].decode('latin-1'))!r}")
    if len(lines) - 1 > MAX_HEADERS:
        raise Refusal(431, f"more than {MAX_HEADERS} headers")
    length: int | None = None
    chunked = expect_continue = False
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise Refusal(400, f"bad header line {printable(line[:200].decode('latin-1'))!r}")
        name, value = name.lower(), value.strip()
        if name == b"content-length":
            if not value.isdigit():
                raise Refusal(411, f"Content-Length {value.decode('latin-1')!r} is not a number")
            if length is not None and int(value) != length:
                raise Refusal(400, "two different Content-Length headers")
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = True
        elif name == b"connection":
            tokens = {token.strip() for token in value.lower().split(b",")}
            keep_alive = (keep_alive or b"keep-alive" in tokens) and b"close" not in tokens
        elif name == b"expect":
            expect_continue = value.lower() == b"100-continue"
    path = target.split(b"?", 1)[0].decode("latin-1")
    return Head(method, path, length, chunked, keep_alive, expect_continue)


class _Routes:
    """The answers: verb name -> the Extender's method, the metrics children, the health endpoints."""

    def __init__(self, extender: Extender, max_body: int, *, verbs: bool = True) -> None:
        self.extender = extender
        self.max_body = max_body
        self.verbs: dict[str, Callable[[bytes], bytes]] = (
            {"filter": extender.filter, "prioritize": extender.prioritize, "bind": extender.bind} if verbs else {}
        )
        self.ok = {verb: metrics.EXTENDER_REQUESTS.labels(verb, "200") for verb in _VERBS}
        self.durations = {verb: metrics.EXTENDER_REQUEST_DURATION.labels(verb) for verb in _VERBS}
        self._date = (0, b"")  # (second, its IMF-fixdate): formatted once a second, not per answer

    def date(self) -> bytes:
        now = int(time.time())
        second, text = self._date
        if now != second:
            text = formatdate(now, usegmt=True).encode()
            self._date = (now, text)
        return text

    def count(self, verb: str, code: int) -> None:
        counter = self.ok.get(verb) if code == 200 else None
        (counter or metrics.EXTENDER_REQUESTS.labels(verb, str(code))).inc()

    def post(self, path: str, body: bytes) -> tuple[str, int, bytes]:
        """(verb for the metrics, status, JSON body)."""
        verb = path.rstrip("/").rpartition("/")[2]
        answer = self.verbs.get(verb)
        if answer is None:
            return "other", 404, _error(f"no such verb {verb!r}: POST .../filter, .../prioritize or .../bind")
        try:
            return verb, 200, answer(body)
        except RequestError as err:
            return verb, err.status, _error(err.reason)
        except Exception as err:  # a bug answers 500 for this request; the server stays up
            log.exception("extender: %s failed", verb)
            return verb, 500, _error(f"internal error: {type(err).__name__}: {err}")

    def get(self, path: str) -> tuple[str, int, bytes, bytes]:
        """(verb for the metrics, status, body, content type)."""
        if path == "/healthz":
            return "health", 200, b"ok\n", TEXT
        if path == "/readyz":
            problem = self.extender.not_ready()
            return "health", 503 if problem else 200, (problem or "ok").encode() + b"\n", TEXT
        if path == "/metrics":
            return "metrics", 200, generate_latest(metrics.REGISTRY), CONTENT_TYPE_LATEST.encode()
        return "other", 404, b"not found\n", TEXT


class _Connection:
    """One client connection: requests read and answered in order until it closes or idles out."""

    def __init__(self, sock: socket.socket, routes: _Routes, *, tls: bool = False) -> None:
        self.sock = sock
        self.routes = routes
        self.tls = tls
        self.buffer = b""  # bytes received past the last request handled
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # answers leave at once, no Nagle delay
        if tls:
            # OpenSSL reads whole records: the kernel's timeout would surface as SSLWantReadError mid-record.
            sock.settimeout(IDLE_TIMEOUT)
            return
        # The idle timeout is the kernel's (SO_RCVTIMEO), the socket blocking: a Python-level timeout
        # polls before each recv and send, two waits for the GIL each instead of one, which a state
        # rebuild on the same core makes long.
        sock.settimeout(None)
        timeout = struct.pack("ll", int(IDLE_TIMEOUT), int(IDLE_TIMEOUT % 1 * 1_000_000))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeout)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeout)

    def serve(self) -> None:
        try:
            while self._one():
                pass
        except (BlockingIOError, TimeoutError, ConnectionError):
            pass  # idle past the timeout (SO_RCVTIMEO: EAGAIN), or the client went away

    def _one(self) -> bool:
        """Answer one request; False when the connection is to close."""
        head_bytes = self._head()
        if head_bytes is None:
            return False
        started = time.perf_counter()
        try:
            head = parse_head(head_bytes)
        except Refusal as refusal:
            log.info("extender http: %s", refusal.reason)
            self._send("other", refusal.status, _text(refusal.reason), TEXT, close=True)
            return False
        routes = self.routes
        if head.method == b"POST":
            if not routes.verbs:
                self._send("other", 404, _error(HEALTH_ONLY), JSON, close=True)
                return False
            # A state rebuild steps aside for the whole request, reading and writing included.
            with routes.extender.requests_first.serving():
                return self._post(head, started)
        if head.method == b"GET":
            keep = self._skip_body(head)
            verb, code, body, content_type = routes.get(head.path)
            return self._send(verb, code, body, content_type, close=not keep)
        self._send("other", 501, _text(f"method {head.method.decode('latin-1')!r} is not supported"), TEXT, close=True)
        return False

    def _post(self, head: Head, started: float) -> bool:
        routes = self.routes
        verb = head.path.rstrip("/").rpartition("/")[2]
        known = verb in routes.verbs
        try:
            body = self._body(head)
        except RequestError as err:
            # Only a 413 leaves the stream in step (its body read and dropped); after the others it is not.
            close = err.status != 413 or head.expect_continue or (head.length or 0) > DISCARD_LIMIT
            self._send(verb if known else "other", err.status, _error(err.reason), JSON, close=close)
            return not close
        verb, code, answer = routes.post(head.path, body)
        keep = self._send(verb, code, answer, JSON, close=not head.keep_alive)
        if verb in routes.durations:
            routes.durations[verb].observe(time.perf_counter() - started)
        return keep

    def _head(self) -> bytes | None:
        """The next request's line and headers (blank lines before it skipped); None when the client
        closed between requests. Refused with 431 when longer than MAX_HEAD."""
        buffer = self.buffer.lstrip(b"\r\n")
        end = buffer.find(b"\r\n\r\n")
        while end < 0:
            if len(buffer) > MAX_HEAD:
                log.info("extender http: request head over %d bytes", MAX_HEAD)
                self._send("other", 431, _text(f"request line and headers exceed {MAX_HEAD} bytes"), TEXT, close=True)
                return None
            chunk = self.sock.recv(RECV_SIZE)
            if not chunk:
                return None
            buffer = (buffer + chunk).lstrip(b"\r\n")
            end = buffer.find(b"\r\n\r\n")
        self.buffer = buffer[end + 4 :]
        return buffer[:end]

    def _body(self, head: Head) -> bytes:
        if head.chunked:
            raise RequestError("chunked bodies are not accepted: send Content-Length", status=411)
        if head.length is None:
            raise RequestError("Content-Length is required", status=411)
        limit = self.routes.max_body
        if head.length > limit:
            if head.length <= DISCARD_LIMIT and not head.expect_continue:
                self._discard(head.length)
            raise RequestError(f"body of {head.length} bytes exceeds the limit of {limit} bytes", status=413)
        if head.expect_continue and not self.buffer:
            self.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self._take(head.length)
        if len(body) < head.length:
            raise RequestError(f"body ended after {len(body)} of {head.length} bytes")
        return body

    def _take(self, length: int) -> bytes:
        """The next `length` bytes of the stream (fewer only when it ended)."""
        buffer = self.buffer
        if len(buffer) < length:
            parts, have = [buffer], len(buffer)
            while have < length:
                chunk = self.sock.recv(max(length - have, RECV_SIZE))
                if not chunk:
                    break
                parts.append(chunk)
                have += len(chunk)
            buffer = b"".join(parts)
        self.buffer = buffer[length:]
        return buffer[:length] if len(buffer) > length else buffer

    def _discard(self, length: int) -> None:
        """Read an oversized body to its end so the client sees the 413 rather than a reset connection."""
        left = length - min(len(self.buffer), length)
        self.buffer = self.buffer[length:]
        while left > 0:
            chunk = self.sock.recv(min(left, RECV_SIZE))
            if not chunk:
                raise ConnectionError("the client went away in the middle of a body")
            self.buffer = chunk[left:]
            left -= len(chunk)

    def _skip_body(self, head: Head) -> bool:
        """A GET's body (none is expected) read and dropped; False when it cannot be, and the connection closes."""
        if head.chunked or (head.length or 0) > self.routes.max_body:
            return False
        if head.length:
            self._take(head.length)
        return head.keep_alive

    def _send(self, verb: str, code: int, body: bytes, content_type: bytes, *, close: bool) -> bool:
        """Write the answer in one call; True when the connection stays open."""
        self.routes.count(verb, code)
        head = b"HTTP/1.1 %d %s\r\nServer: %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" % (
            code,
            _PHRASES.get(code, b"Unknown"),
            SERVER,
            self.routes.date(),
            content_type,
            len(body),
            b"Connection: close\r\n" if close else b"",
        )
        if self.tls:  # SSLSocket has no sendmsg; one record write rather than two
            self.sock.sendall(head + body)
            return not close
        sent = self.sock.sendmsg((head, body))  # no copy of a large body into one buffer with its head
        if sent < len(head):
            self.sock.sendall(head[sent:])
            sent = len(head)
        if sent < len(head) + len(body):
            self.sock.sendall(memoryview(body)[sent - len(head) :])
        return not close


_PHRASES = {status.value: status.phrase.encode() for status in HTTPStatus}


def _error(reason: str) -> bytes:
    """An error body; `{"Error": …}` is also what kube-scheduler reads from a filter answer."""
    return msgspec.json.encode({"Error": printable(reason)})


def _text(reason: str) -> bytes:
    return printable(reason).encode() + b"\n"
