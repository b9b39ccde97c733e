"""Fixtures for the kube tests: a fake API server per test, a fast-retrying client on it, caches that stop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import ClusterCache, KubeClient, RetryPolicy

FAST_RETRY = RetryPolicy(max_retries=4, backoff_base=0.01, backoff_cap=0.05)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_interval=0.1) as srv:
        yield srv


@pytest.fixture
def kube(server: FakeApiServer) -> Iterator[KubeClient]:
    client = KubeClient(server.configuration(), qps=0, burst=0, timeout=10, retry=FAST_RETRY)
    yield client
    client.close()


@pytest.fixture
def make_cache(kube: KubeClient) -> Iterator[Callable[..., ClusterCache]]:
    """Build caches with fast backoff; every one is stopped (and its threads checked gone) after the test."""
    caches: list[ClusterCache] = []

    def make(**kw: Any) -> ClusterCache:
        kw.setdefault("backoff", (0.02, 0.2))
        kw.setdefault("read_timeout", 5.0)
        cache = ClusterCache(kw.pop("client", kube), **kw)
        caches.append(cache)
        return cache

    yield make
    for cache in caches:
        cache.stop(timeout=5)
    leaked = [t.name for t in threading.enumerate() if t.name.startswith("reflector:")]
    assert not leaked, f"reflector threads still running: {leaked}"
