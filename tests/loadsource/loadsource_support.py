"""A Prometheus query API stub (a real HTTP server) and answer builders (imported by name)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs

Answer = Callable[[str], tuple[int, Any]]


@dataclass
class PrometheusStub:
    """A real HTTP server speaking the Prometheus query API (`POST/GET /api/v1/query`).

    `answer(query)` returns (HTTP status, body): a dict is sent as JSON, bytes as is. Every request
    is recorded with its form fields and Authorization header.
    """

    answer: Answer
    delay: float = 0.0
    requests: list[dict[str, str]] = field(default_factory=list)
    url: str = ""


def handler(stub: PrometheusStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _serve(self, form: dict[str, str]) -> None:
            if self.path.split("?")[0] != "/api/v1/query":
                self._send(404, b"404 page not found\n")
                return
            stub.requests.append({**form, "authorization": self.headers.get("Authorization", "")})
            if stub.delay:
                time.sleep(stub.delay)
            status, body = stub.answer(form.get("query", ""))
            self._send(status, body if isinstance(body, bytes) else json.dumps(body).encode())

        def _send(self, status: int, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up (timeout tests)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[-1] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            self._serve(form)

        def do_GET(self) -> None:
            query = self.path.partition("?")[2]
            self._serve({k: v[-1] for k, v in parse_qs(query).items()})

    return Handler


def vector(series: list[tuple[dict[str, str], Any]], at: float = 1_768_478_400.0) -> dict[str, Any]:
    """A successful instant-vector answer: one sample per (labels, value)."""
    return {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": m, "value": [at, str(v)]} for m, v in series]},
    }


class DelayProxy:
    """A TCP proxy on loopback that holds each answer from `upstream` (host, port) for `delay` seconds:
    a slow Prometheus in front of a real one. Every connection ends when either side closes."""

    def __init__(self, upstream: tuple[str, int], delay: float) -> None:
        import socket
        import threading

        self.upstream, self.delay = upstream, delay
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="delay-proxy", daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()

    def _accept(self) -> None:
        import socket
        import threading

        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            server = socket.create_connection(self.upstream, timeout=5)
            threading.Thread(target=self._pump, args=(client, server, 0.0), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, self.delay), daemon=True).start()

    def _pump(self, source: Any, target: Any, delay: float) -> None:
        try:
            while chunk := source.recv(65536):
                if delay and self._stop.wait(delay):
                    break
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.close()
