"""Malformed request bodies get 400 with a reason; nothing a client sends takes the server down."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.extender import Extender, ExtenderServer, RequestError, SnapshotFileSource
from tests.builders import loaded_node, node

from .conftest import Client, extender_args, kube_pod, scheduling_args, write_snapshot

NAMES = ["cool", "hot", "plain"]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Extender, Client]]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "snapshot.yaml"
    write_snapshot(path, [*loaded_node("cool", [("c1", "1")]), *loaded_node("hot", [("h1", "6")]), node("plain")])
    extender = Extender(SnapshotFileSource(path), scheduling_args())
    assert extender.refresh(force=True)
    with ExtenderServer(extender, "127.0.0.1", 0) as server:
        client = Client(server.port)
        yield extender, client
        client.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)

VALID = json.loads(extender_args(kube_pod("web-fuzz"), NAMES))
PATHS = [
    ("Pod",),
    ("Pod", "metadata"),
    ("Pod", "metadata", "name"),
    ("Pod", "metadata", "labels"),
    ("Pod", "metadata", "ownerReferences"),
    ("Pod", "spec"),
    ("Pod", "spec", "containers"),
    ("Pod", "spec", "containers", 0, "resources"),
    ("Pod", "spec", "containers", 0, "resources", "requests"),
    ("Pod", "spec", "containers", 0, "resources", "requests", "cpu"),
    ("Pod", "spec", "tolerations"),
    ("Pod", "spec", "nodeSelector"),
    ("Pod", "spec", "affinity"),
    ("Pod", "spec", "priority"),
    ("Pod", "status"),
    ("NodeNames",),
    ("NodeNames", 0),
    ("Nodes",),
]


def _mutated(path: tuple[Any, ...], value: Any) -> bytes:
    body = copy.deepcopy(VALID)
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(body).encode()


def _check(status: int, answer: bytes) -> None:
    assert status in (200, 400), (status, answer)
    decoded = json.loads(answer)
    if status == 400:
        assert isinstance(decoded, dict) and decoded["Error"], decoded


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_body_is_answered_or_refused_with_a_reason_in_process(
    running: tuple[Extender, Client], body: bytes
) -> None:
    extender, _ = running
    for answer in (extender.filter, extender.prioritize):
        try:
            json.loads(answer(body))
        except RequestError as err:
            assert err.status == 400 and err.reason


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PATHS), json_values)
def test_a_mutated_kube_scheduler_body_gets_200_or_400_over_http(
    running: tuple[Extender, Client], path: tuple[Any, ...], value: Any
) -> None:
    _, client = running
    body = _mutated(path, value)
    for verb in ("filter", "prioritize"):
        _check(*client.request("POST", f"/{verb}", body))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2000))
def test_random_bytes_over_http_get_400_and_the_server_stays_up(running: tuple[Extender, Client], body: bytes) -> None:
    _, client = running
    status, answer = client.request("POST", "/filter", body)
    _check(status, answer)
    assert client.request("GET", "/healthz") == (200, b"ok\n")
    status, answer = client.request("POST", "/filter", extender_args(kube_pod("web-ok"), NAMES))
    assert status == 200 and json.loads(answer)["NodeNames"] == ["cool", "plain"]
