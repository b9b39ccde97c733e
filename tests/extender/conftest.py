"""An extender serving a snapshot file over HTTP on loopback; kube-scheduler's request bodies are in `requests`."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from descheduler.extender import Extender, ExtenderServer, SnapshotFileSource
from descheduler.policy import SchedulingArgs, default_policy, parse_policy
from descheduler.snapshot import SNAPSHOT_TIME_ANNOTATION
from tests.extender.requests import extender_args, kube_pod

__all__ = ["Client", "extender_args", "kube_pod", "scheduling_args", "write_snapshot"]
from tests.builders import NOW, ts

Obj = dict[str, Any]


def write_snapshot(path: Path, objects: Sequence[Mapping[str, Any]]) -> Path:
    """A snapshot file (a List stamped with NOW), as `descheduler snapshot save` writes one."""
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {SNAPSHOT_TIME_ANNOTATION: ts(NOW)}},
        "items": [dict(o) for o in objects],
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def scheduling_args(**overrides: Any) -> SchedulingArgs:
    if not overrides:
        return default_policy().scheduling
    doc = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy", "scheduling": overrides}
    return parse_policy(yaml.safe_dump(doc)).scheduling


class Client:
    """Raw HTTP/1.1 on one kept-alive connection, as kube-scheduler talks to an extender."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] | None = None
    ) -> tuple[int, bytes]:
        try:
            self.conn.request(method, path, body=body, headers=dict(headers or {"Content-Type": "application/json"}))
            response = self.conn.getresponse()
            data = response.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        return response.status, data

    def post(self, verb: str, body: bytes) -> tuple[int, Any]:
        status, data = self.request("POST", f"/{verb}", body)
        return status, json.loads(data)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., tuple[Extender, Client]]]:
    """serve(objects, **scheduling args) -> (extender, client) over a snapshot file on loopback."""
    servers: list[ExtenderServer] = []
    clients: list[Client] = []

    def start(objects: Sequence[Mapping[str, Any]], **args: Any) -> tuple[Extender, Client]:
        path = write_snapshot(tmp_path / f"snapshot-{len(servers)}.yaml", objects)
        extender = Extender(SnapshotFileSource(path), scheduling_args(**args))
        assert extender.refresh(force=True)
        server = ExtenderServer(extender, "127.0.0.1", 0).start()
        servers.append(server)
        clients.append(Client(server.port))
        return extender, clients[-1]

    yield start
    for client in clients:
        client.close()
    for server in servers:
        server.stop()
