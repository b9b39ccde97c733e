"""Fixtures for contract tests: the same test against two servers.

`api_server` is the fake API server (a fresh one per test) and, when $KUBEBUILDER_ASSETS has the
binaries, the session's real kube-apiserver v1.36.2 (tests/realcluster's control plane, a namespace
of its own per test with the `default` ServiceAccount). A test that uses the fake's Python side
(the `server` fixture: store, faults) or is marked `fake_only` runs on the fake alone.

DIFFERENCES
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from servers import ServerUnderTest

from descheduler.sim.apiserver import FakeApiServer

FAKE_ONLY = "fake_only"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{FAKE_ONLY}(reason): a contract test the real server cannot run, and why")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "api_server" not in metafunc.fixturenames:
        return
    fake_only = "server" in metafunc.fixturenames or metafunc.definition.get_closest_marker(FAKE_ONLY) is not None
    metafunc.parametrize("api_server", ["fake"] if fake_only else ["fake", "real"], indirect=True)


@pytest.fixture
def api_server(request: pytest.FixtureRequest) -> Iterator[ServerUnderTest]:
    if request.param == "fake":
        with FakeApiServer(bookmark_interval=0.1) as fake:
            yield ServerUnderTest("fake", fake.url, "default", fake=fake)
        return
    plane = request.getfixturevalue("control_plane")
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.originalname.lower()).strip("-")[:40].strip("-")
    real = ServerUnderTest(
        "real",
        plane.server,
        f"{stem}-{uuid.uuid4().hex[:5]}",
        kubeconfig=plane.kubeconfig,
        ssl_context=plane.admin_ssl_context(),
    )
    real.call("POST", "/api/v1/namespaces", {"metadata": {"name": real.namespace}})
    # The service-account controller (controller-manager) would make it; pod admission needs it.
    real.call("POST", f"/api/v1/namespaces/{real.namespace}/serviceaccounts", {"metadata": {"name": "default"}})
    yield real
    # Nodes are cluster-scoped: remove the ones this test made (named after its namespace).
    for node in real.call("GET", "/api/v1/nodes")["items"]:
        if node["metadata"]["name"].startswith(real.namespace):
            real.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")
    real.request("DELETE", f"/api/v1/namespaces/{real.namespace}")


@pytest.fixture
def server(api_server: ServerUnderTest) -> FakeApiServer:
    """The fake server itself, for tests that seed its store or inject faults (fake-only)."""
    assert api_server.fake is not None
    return api_server.fake


@pytest.fixture
def ns(api_server: ServerUnderTest) -> str:
    """The namespace a test works in: `default` on the fake, one of its own on the real server."""
    return api_server.namespace


@pytest.fixture
def api_client(api_server: ServerUnderTest) -> Iterator[Any]:
    api = api_server.api_client()
    yield api
    api.close()


@pytest.fixture
def core(api_client: Any) -> Any:
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client: Any) -> Any:
    return client.AppsV1Api(api_client)


@pytest.fixture
def policy(api_client: Any) -> Any:
    return client.PolicyV1Api(api_client)


@pytest.fixture
def custom(api_client: Any) -> Any:
    return client.CustomObjectsApi(api_client)
