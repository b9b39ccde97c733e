"""FakeApiServer: the store, the request logic and the HTTP transport, started on 127.0.0.1."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from .access import AccessLog
from .api import Api
from .clock import Clock, wall_clock
from .faults import Faults
from .http import ApiHTTPServer
from .store import Store

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# The priority classes kube-apiserver creates at start-up, as v1.36.2 has them.
SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2000001000,
        "description": "Used for system critical pods that must not be moved from their current node.",
        "preemptionPolicy": "PreemptLowerPriority",
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-cluster-critical"},
        "value": 2000000000,
        "description": "Used for system critical pods that must run in the cluster, but can be moved to another node "
        "if necessary.",
        "preemptionPolicy": "PreemptLowerPriority",
    },
)


class FakeApiServer:
    """A stateful Kubernetes API server for tests and the simulator; plain HTTP, any token accepted.

    >>> with FakeApiServer() as server:
    ...     core = kubernetes.client.CoreV1Api(server.api_client())
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        store: Store | None = None,
        clock: Clock = wall_clock,
        history_size: int = 10_000,
        pod_termination_delay: float | None = 0.0,
        bookmark_interval: float = 1.0,
        seed_namespaces: tuple[str, ...] = SYSTEM_NAMESPACES,
    ) -> None:
        """`seed_namespaces` are created at once, as every real cluster has them (ignored if a
        `store` is passed in); the system priority classes are added to any store that lacks them,
        as the real server does at start-up; `bookmark_interval` is seconds between watch bookmarks
        (the real server sends them about once a minute)."""
        if store is None:
            store = Store(clock=clock, history_size=history_size, pod_termination_delay=pod_termination_delay)
            store.load({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in seed_namespaces)
        store.load(pc for pc in SYSTEM_PRIORITY_CLASSES if not store.exists("priorityclasses", pc["metadata"]["name"]))
        self.store = store
        self.faults = Faults(self.store)
        # The authorization attributes of every request, for RBAC tests (see access.py).
        self.accesses = AccessLog()
        self.host = host
        self._port = port
        self.bookmark_interval = bookmark_interval
        self._httpd: ApiHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeApiServer:
        if self._httpd is not None:
            return self
        api = Api(self.store)
        httpd = ApiHTTPServer((self.host, self._port), api, self.faults, self.bookmark_interval, self.accesses)
        self._port = httpd.server_address[1]
        api.server_address = f"{self.host}:{self._port}"
        self._httpd = httpd
        # A short poll interval keeps stop() fast; tests start and stop a server per test.
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.02,), name=f"fake-apiserver:{self._port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        httpd.stopping.set()
        self.store.close()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._port}"

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": namespace}}],
            "current-context": "fake",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """Write a kubeconfig whose current context points at this server; returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(namespace), sort_keys=False))
        return target

    def configuration(self) -> Any:
        """A kubernetes.client.Configuration for this server."""
        from kubernetes import client

        config = client.Configuration(host=self.url)
        config.api_key = {"BearerToken": "fake-token"}
        config.api_key_prefix = {"BearerToken": "Bearer"}
        return config

    def api_client(self) -> Any:
        """A kubernetes.client.ApiClient talking to this server; close it when done."""
        from kubernetes import client

        return client.ApiClient(self.configuration())
