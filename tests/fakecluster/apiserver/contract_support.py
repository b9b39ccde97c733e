"""Manifests and raw-HTTP helpers shared by the contract tests (imported by name; tests/ has no packages)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from kubernetes import client
from servers import ServerUnderTest

from descheduler.fakecluster.apiserver import FakeApiServer


def pod(
    name: str,
    namespace: str = "default",
    *,
    labels: dict[str, str] | None = None,
    node: str | None = None,
    phase: str | None = None,
    ready: bool | None = None,
    grace: int | None = None,
) -> dict[str, Any]:
    """A small pod manifest; phase/ready set a status (only kept when seeded through the store)."""
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }
    if phase is not None:
        status: dict[str, Any] = {"phase": phase}
        if ready is not None:
            status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        obj["status"] = status
    return obj


def running_pod(name: str, namespace: str = "default", **kw: Any) -> dict[str, Any]:
    kw.setdefault("node", "node-1")
    kw.setdefault("ready", True)
    return pod(name, namespace, phase="Running", **kw)


def status_body(error: client.ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    return body


def raw_request(
    server: FakeApiServer | ServerUnderTest,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    *,
    accept: str | None = None,
    data: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request with urllib, for what the client cannot express: (status, headers, body).
    `data` sends bytes as they are (a body that is not JSON)."""
    if data is None and body is not None:
        data = json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Content-Type", content_type)
    if accept is not None:
        request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=10, context=_tls(server)) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def watch_lines(server: FakeApiServer | ServerUnderTest, path: str) -> list[dict[str, Any]]:
    """Read a whole watch stream (the path must carry timeoutSeconds or end by itself)."""
    with urllib.request.urlopen(server.url + path, timeout=10, context=_tls(server)) as resp:
        return [json.loads(line) for line in resp if line.strip()]


def _tls(server: FakeApiServer | ServerUnderTest) -> ssl.SSLContext | None:
    return server.ssl_context if isinstance(server, ServerUnderTest) else None
