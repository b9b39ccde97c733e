"""Fixtures for contract tests: the same test against two servers.

`api_server` is the fake API server (a fresh one per test) and, when $KUBEBUILDER_ASSETS has the
binaries, the session's real kube-apiserver v1.36.2 (tests/realcluster's control plane, a namespace
of its own per test with the `default` ServiceAccount). A test that uses the fake's Python side
(the `server` fixture: store, faults) or is marked `fake_only` runs on the fake alone.

Differences found against kube-apiserver v1.36.2 (etcd 3.4.23, no controller-manager), and what was done:
- /version said v1.31.0: the fake now answers v1.36.2 with every field the real one has (emulation and
  min-compatibility versions included). Fixed; pinned on both.
- persistentvolumeclaims and priorityclasses answered 404: served now (PVC defaults volumeMode
  Filesystem, phase Pending; PriorityClass preemptionPolicy PreemptLowerPriority; the system classes
  with the real values and descriptions; bookmark body `value: 0`). Fixed; pinned on both. Left
  out: the real admission adds the `kubernetes.io/pvc-protection` finalizer and its controller
  (controller-manager) removes it; the fake adds none so a deleted claim goes at once.
- WatchList (sendInitialEvents=true, resourceVersionMatch=NotOlderThan): implemented per the API
  docs; the real server streams the initial ADDED events (pinned on both) but answers a watch that
  also allows bookmarks with a 500 "required storage feature RequestWatchProgress is disabled" on
  this etcd, so the initial-events-end bookmark is fake-only (written down in the test). The 422s
  for invalid sendInitialEvents/resourceVersionMatch combinations copy the real ones: pinned.
- Content negotiation: an unreadable body type was a 400 "not valid JSON"; now 415
  UnsupportedMediaType "the body of the request was in an unknown format - accepted media types
  include: application/json, application/yaml" (pinned; the real one also lists protobuf). YAML
  bodies are read (pinned). A protobuf body gets the 415 on the fake, which is a deliberate
  exception: the real server decodes protobuf (fake-only). A PATCH of an unknown type now says
  "415: Unsupported Media Type" as the real one does (pinned). An Accept the server cannot answer
  is a 406 NotAcceptable "406: Not Acceptable\n\nAvailable representations: application/json…"
  (pinned); protobuf-only Accept is 406 on the fake but served on the real one (fake-only).
- An update carrying another object's metadata.uid: the fake ignored it, the real server treats it
  as a precondition (409 "Precondition failed: UID in precondition: …"). Fixed; pinned.
- Pod spec updates (replace, merge/JSON/strategic patches of the container list): the real server
  forbids them (pod spec immutable but for images and a few fields; admission also adds a
  service-account volume); the fake does not validate pod updates. Those tests are fake-only and
  say why; the fake should learn this next.
- pods/status update with label changes: the real server keeps the labels, the fake drops them
  (status writes change status only). Fake-only, written down; worth fixing next.
- Namespace deletion removing the contents needs the namespace controller (controller-manager):
  fake-only.
- events.k8s.io Events from the Python client: it writes eventTime as "+00:00", which the real
  MicroTime parser rejects (400); the fake does not parse times. Fake-only.
- CRD groups (ElasticQuota, NodeMetric, and discovery of our groups) are built into the fake; the
  real server serves them only once installed: our PodMigrationJob/Reservation CRDs are installed
  for the tests that need them, the others are fake-only.
- Fake-only by construction (they use the fake's store or fault injection, the `server` fixture):
  fault injection, request counting, store seeding with arbitrary status, terminating pods held
  for a simulated kubelet, Tables on a still clock, bookmark cadence, history windows (410).
Known but not differing in what the tests check: the real server adds managedFields, a
service-account volume, more defaulted fields; resourceVersions are etcd revisions (global and
increasing on both); new nodes get the not-ready taint; PDB status is written by the test (no
disruption controller).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from servers import ServerUnderTest

from descheduler.fakecluster.apiserver import FakeApiServer

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
