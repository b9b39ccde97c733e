"""Fixtures for contract tests: a fresh fake API server per test and the official client on it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from descheduler.sim.apiserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_interval=0.1) as srv:
        yield srv


@pytest.fixture
def api_client(server: FakeApiServer) -> Iterator[Any]:
    api = server.api_client()
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
