"""A Prometheus query API stub (a real HTTP server) and answer builders (imported by name)."""

from __future__ import annotations

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
