"""The client's request path against the fake API server: rate limit, 429 Retry-After, retries, metrics, connect."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from kube_support import node, pod
from kubernetes import client as k8s

from descheduler import metrics
from descheduler.errors import ClusterUnreachableError, InputError
from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import KubeApiError, KubeClient, RetryPolicy, TokenBucket, connect
from descheduler.kube.client import kube_verb
from descheduler.kube.ratelimit import Cancelled

PODS = "/api/v1/namespaces/default/pods"


def _count(verb: str, code: str) -> float:
    return metrics.sample("descheduler_api_requests_total", {"verb": verb, "code": code})


# ---------------------------------------------------------------- the token bucket


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_lets_a_burst_through_then_spaces_requests_at_qps() -> None:
    clock = _Clock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # reservations queue up behind each other


def test_token_bucket_refills_at_qps_up_to_burst() -> None:
    clock = _Clock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    bucket.reserve(), bucket.reserve()
    clock.now = 10.0  # long idle: at most `burst` tokens saved up
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, pytest.approx(0.1)]


def test_token_bucket_with_zero_qps_never_waits() -> None:
    bucket = TokenBucket(qps=0, burst=0)
    assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_token_bucket_wait_is_cancelled_by_the_event() -> None:
    bucket = TokenBucket(qps=0.1, burst=1)
    bucket.reserve()
    cancel = threading.Event()
    threading.Timer(0.05, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        bucket.acquire(cancel)
    assert time.monotonic() - started < 2


# ---------------------------------------------------------------- verbs


@pytest.mark.parametrize(
    ("method", "url", "verb"),
    [
        ("GET", "http://h/api/v1/pods", "list"),
        ("GET", "http://h/api/v1/namespaces/default/pods", "list"),
        ("GET", "http://h/api/v1/namespaces/default/pods/p", "get"),
        ("GET", "http://h/api/v1/namespaces/default/pods?watch=true&resourceVersion=5", "watch"),
        ("GET", "http://h/api/v1/nodes/n1", "get"),
        ("GET", "http://h/api/v1/namespaces", "list"),
        ("GET", "http://h/api/v1/namespaces/kube-system", "get"),
        ("GET", "http://h/apis/apps/v1/namespaces/ns/deployments/d/scale", "get"),
        ("GET", "http://h/version", "get"),
        ("POST", "http://h/api/v1/namespaces/default/pods/p/eviction", "create"),
        ("PUT", "http://h/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "update"),
        ("PATCH", "http://h/api/v1/nodes/n1", "patch"),
        ("DELETE", "http://h/api/v1/namespaces/default/pods/p", "delete"),
        ("DELETE", "http://h/api/v1/namespaces/default/pods", "deletecollection"),
    ],
)
def test_kube_verb_names_the_request_as_rbac_does(method: str, url: str, verb: str) -> None:
    assert kube_verb(method, url) == verb


# ---------------------------------------------------------------- retries


def test_429_is_retried_after_the_servers_retry_after(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([pod("a")])
    server.faults.fail_next(1, path=PODS, status=429, retry_after=1)
    before = _count("list", "429")
    started = time.monotonic()
    body = kube.get_json(PODS)
    assert time.monotonic() - started >= 0.95  # waited what the server asked, not our short backoff
    assert [i["metadata"]["name"] for i in body["items"]] == ["a"]
    assert _count("list", "429") == before + 1


def test_5xx_on_a_read_is_retried_until_it_succeeds(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([pod("a")])
    server.faults.fail_next(3, path=PODS, status=500)
    before_500, before_200 = _count("list", "500"), _count("list", "200")
    assert len(kube.get_json(PODS)["items"]) == 1
    assert server.faults.count(verb="list", path=PODS) == 4
    assert (_count("list", "500"), _count("list", "200")) == (before_500 + 3, before_200 + 1)


def test_a_read_that_keeps_failing_raises_the_last_status_after_max_retries(
    server: FakeApiServer, kube: KubeClient
) -> None:
    server.faults.fail_next(100, path=PODS, status=503)
    with pytest.raises(KubeApiError) as error:
        kube.get_json(PODS)
    assert error.value.status == 503 and "injected fault" in str(error.value)
    assert server.faults.count(verb="list", path=PODS) == 1 + kube.retry.max_retries


def test_a_write_is_not_resent_after_a_500_without_retry_after(server: FakeApiServer, kube: KubeClient) -> None:
    server.faults.fail_next(1, path=PODS, method="POST", status=500)
    with pytest.raises(KubeApiError) as error:
        kube.request("POST", PODS, body=pod("a"))
    assert error.value.status == 500
    assert server.faults.count(verb="create", path=PODS) == 1
    assert not server.store.exists("pods", "a", "default")


def test_a_write_refused_with_429_is_resent(server: FakeApiServer, kube: KubeClient) -> None:
    server.faults.fail_next(1, path=PODS, method="POST", status=429, retry_after=0)
    kube.request("POST", PODS, body=pod("a"))
    assert server.faults.count(verb="create", path=PODS) == 2
    assert server.store.exists("pods", "a", "default")


def test_an_eviction_refused_with_429_is_left_to_the_caller(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([pod("a", node="n1")])
    path = f"{PODS}/a/eviction"
    server.faults.fail_next(1, path=path, status=429, retry_after=1)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a", "namespace": "default"}}
    with pytest.raises(KubeApiError) as error:
        kube.request("POST", path, body=eviction)
    assert error.value.status == 429
    assert server.faults.count(path=path) == 1


def test_generated_apis_go_through_the_same_retrying_path(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node("n1")])
    server.faults.fail_next(2, path="/api/v1/nodes", status=500)
    nodes = k8s.CoreV1Api(kube.api_client).list_node()
    assert [n.metadata.name for n in nodes.items] == ["n1"]
    assert server.faults.count(verb="list", path="/api/v1/nodes$") == 3


def test_generated_apis_and_raw_requests_share_the_rate_limit(server: FakeApiServer) -> None:
    kube = KubeClient(server.configuration(), qps=20, burst=1, timeout=10)
    try:
        core = k8s.CoreV1Api(kube.api_client)
        started = time.monotonic()
        for _ in range(3):
            core.list_namespace()
            kube.get_json("/api/v1/nodes")
        # 6 requests, burst 1, 20/s: the last 5 each wait 50 ms.
        assert time.monotonic() - started >= 0.24
    finally:
        kube.close()


def test_generated_api_errors_still_raise_api_exception(server: FakeApiServer, kube: KubeClient) -> None:
    with pytest.raises(k8s.ApiException) as error:
        k8s.CoreV1Api(kube.api_client).read_namespaced_pod("missing", "default")
    assert error.value.status == 404


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_is_retried_then_reported_as_unreachable() -> None:
    configuration = k8s.Configuration(host=f"http://127.0.0.1:{_closed_port()}")
    kube = KubeClient(configuration, retry=RetryPolicy(max_retries=2, backoff_base=0.01), timeout=2)
    before = _count("list", "error")
    try:
        with pytest.raises(ClusterUnreachableError, match=r"127\.0\.0\.1"):
            kube.get_json("/api/v1/pods")
    finally:
        kube.close()
    assert _count("list", "error") == before + 3


def test_close_interrupts_a_retry_wait(server: FakeApiServer) -> None:
    kube = KubeClient(server.configuration(), retry=RetryPolicy(max_retries=3, backoff_base=30, backoff_cap=30))
    server.faults.fail_next(10, path=PODS, status=500)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            kube.get_json(PODS)
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.2)
    kube.close()
    thread.join(5)
    assert not thread.is_alive()
    assert isinstance(outcome[0], Cancelled)


# ---------------------------------------------------------------- connect


def test_connect_with_a_kubeconfig_reaches_its_server(server: FakeApiServer, tmp_path: Path) -> None:
    config = server.write_kubeconfig(tmp_path / "kubeconfig")
    kube = connect(config, "fake", qps=5, burst=10, timeout=5)
    try:
        assert kube.host == server.url
        assert kube.get_json("/version")["major"]
    finally:
        kube.close()


def test_connect_names_the_missing_context_and_the_ones_there_are(server: FakeApiServer, tmp_path: Path) -> None:
    config = server.write_kubeconfig(tmp_path / "kubeconfig")
    with pytest.raises(InputError, match=r"no context 'prod' in this kubeconfig \(contexts: fake\)"):
        connect(config, "prod")


def test_connect_names_a_missing_kubeconfig_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such kubeconfig file"):
        connect(tmp_path / "nope")


def test_connect_to_a_server_that_does_not_answer_is_unreachable(tmp_path: Path) -> None:
    server = FakeApiServer(port=_closed_port())
    config = server.write_kubeconfig(tmp_path / "kubeconfig")
    started = time.monotonic()
    with pytest.raises(ClusterUnreachableError, match="does not answer"):
        connect(config, retry=RetryPolicy(max_retries=1, backoff_base=0.01))
    assert time.monotonic() - started < 5


def test_connect_reports_refused_credentials(server: FakeApiServer, tmp_path: Path) -> None:
    config = server.write_kubeconfig(tmp_path / "kubeconfig")
    server.faults.fail_next(5, path="/version", status=401)
    with pytest.raises(ClusterUnreachableError, match="refused our credentials: 401"):
        connect(config, retry=RetryPolicy(max_retries=0))
