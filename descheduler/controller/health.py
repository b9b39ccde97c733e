"""The HTTP endpoints of the process: `/metrics`, `/healthz` (alive), `/readyz` (able to do its job)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from descheduler.errors import listen_error
from descheduler.metrics import REGISTRY

# A check returns None when fine, else the reason it is not.
Check = Callable[[], str | None]


def check_listen(host: str, port: int) -> None:
    """Raise the InputError a server on host:port would (a port in use, …) without serving:
    a command checks before its slow start-up rather than after."""
    open_listener(host, port).close()


def open_listener(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    """A TCP socket listening on host:port, IPv6 for an IPv6 address (`::` takes IPv4 too); a failed
    bind is the InputError naming the host or port."""
    ipv6 = ":" in host
    sock = socket.socket(socket.AF_INET6 if ipv6 else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart binds over connections in TIME_WAIT
        if ipv6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if host == "::" else 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except (OSError, OverflowError) as error:
        sock.close()
        raise listen_error(host, port, error) from None
    return sock


class HealthServer:
    """Serves the endpoints on a daemon thread; `port=0` picks a free port (see `.port`).
    A port in use (or any failed bind) is an InputError naming it."""

    def __init__(self, host: str, port: int, *, live: Check, ready: Check) -> None:
        checks = {"/healthz": live, "/readyz": ready}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(REGISTRY), CONTENT_TYPE_LATEST)
                elif path in checks:
                    try:
                        problem = checks[path]()
                    except Exception as err:  # a broken check is a failing check
                        problem = f"check failed: {err}"
                    body = (problem or "ok").encode() + b"\n"
                    self._send(503 if problem else 200, body, "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # probes every few seconds: no access log
                return

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except (OSError, OverflowError) as error:
            raise listen_error(host, port, error) from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="health-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
