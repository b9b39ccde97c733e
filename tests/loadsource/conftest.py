"""Fixtures for the load reader tests: a fake API server with a client on it, and a Prometheus stub."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest
from loadsource_support import PrometheusStub, handler, vector

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import KubeClient, RetryPolicy


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_interval=0.1) as srv:
        yield srv


@pytest.fixture
def kube(server: FakeApiServer) -> Iterator[KubeClient]:
    client = KubeClient(server.configuration(), qps=0, burst=0, timeout=10, retry=RetryPolicy(2, 0.01, 0.05))
    yield client
    client.close()


@pytest.fixture
def prometheus() -> Iterator[PrometheusStub]:
    stub = PrometheusStub(answer=lambda q: (200, vector([])))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(stub))
    httpd.daemon_threads = True
    stub.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield stub
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)
