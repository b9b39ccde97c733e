"""The server a contract test runs against: the fake, or the session's real kube-apiserver.

A test written against `ServerUnderTest` reads the same on both: it names its namespace
(`api_server.namespace`), cluster-scoped objects by `api_server.unique(name)`, seeds objects with
their status through `api_server.seed(...)` (the fake's store; on the real server the API, status
written through the status subresource as a kubelet or controller would) and makes raw requests
with `raw_request`/`watch_lines` from contract_support.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config

from descheduler.fakecluster.apiserver import RESOURCES, FakeApiServer, ResourceTable, ResourceType
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[3]
TABLE = ResourceTable(RESOURCES)


@dataclass(slots=True)
class ServerUnderTest:
    """One server for one test: `kind` is "fake" or "real"; `fake` is the FakeApiServer on the fake."""

    kind: str
    url: str
    namespace: str
    fake: FakeApiServer | None = None
    kubeconfig: Path | None = None
    ssl_context: ssl.SSLContext | None = None

    @property
    def real(self) -> bool:
        return self.kind == "real"

    def api_client(self) -> Any:
        """An official-client ApiClient on this server; close it when done."""
        if self.fake is not None:
            return self.fake.api_client()
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def unique(self, name: str) -> str:
        """A cluster-scoped object's name: as given on the fake, prefixed by the namespace on the
        shared real server so tests do not meet each other's nodes."""
        return f"{self.namespace}-{name}" if self.real else name

    def path(self, rt: ResourceType, name: str = "", namespace: str | None = None) -> str:
        base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        if rt.namespaced:
            base += f"/namespaces/{namespace or self.namespace}"
        base += f"/{rt.plural}"
        return f"{base}/{name}" if name else base

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, str], bytes]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ssl_context) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """A request that must succeed; its decoded answer."""
        status, _, raw = self.request(method, path, body, content_type)
        if status >= 400:
            raise AssertionError(f"{method} {path} answered {status}: {raw[:500]!r}")
        return json.loads(raw) if raw else None

    def resource_version(self) -> int:
        """The server's current resourceVersion (on the real server: etcd's revision, read by a quorum list)."""
        if self.fake is not None:
            return self.fake.store.resource_version
        return int(self.call("GET", "/api/v1/namespaces?limit=1")["metadata"]["resourceVersion"])

    def seed(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Put objects in place with the status they carry. Namespaced objects go to their own
        namespace or this test's; on the real server each is created, then its status written."""
        if self.fake is not None:
            self.fake.store.load(objects)
            return
        for obj in objects:
            rt = TABLE.by_kind(str(obj["apiVersion"]), str(obj["kind"]))
            assert rt is not None, f"unknown kind {obj['kind']}"
            body = json.loads(json.dumps(obj))
            meta = body.setdefault("metadata", {})
            status = body.pop("status", None)
            namespace = meta.get("namespace") or self.namespace
            if rt.namespaced:
                meta["namespace"] = namespace
            meta.pop("generation", None)
            created = self.call("POST", self.path(rt, namespace=namespace), body)
            if status and rt.has_status:
                if rt.kind == "PodDisruptionBudget" and "observedGeneration" in status:
                    # The test's generation numbers are relative to the one the server assigned.
                    given = int((obj.get("metadata") or {}).get("generation") or 1)
                    generation = int(created["metadata"]["generation"])
                    status["observedGeneration"] = max(generation + int(status["observedGeneration"]) - given, 0)
                self.call(
                    "PATCH",
                    self.path(rt, meta["name"], namespace) + "/status",
                    {"status": status},
                    "application/merge-patch+json",
                )

    def install_crds(self) -> None:
        """Our CRDs (deploy/base/crds) on the real server, waiting until they are served; the fake has them built in."""
        if not self.real:
            return
        manifests = [
            p for p in sorted((REPO / "deploy" / "base" / "crds").glob("*.yaml")) if p.name != "kustomization.yaml"
        ]
        assert manifests, f"no CRD manifests in {REPO / 'deploy' / 'base' / 'crds'}"
        for path in manifests:
            crd = yaml.safe_load(path.read_text())
            status, _, raw = self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            assert status in (201, 409), raw
            spec = crd["spec"]
            collection = f"/apis/{spec['group']}/{spec['versions'][0]['name']}/{spec['names']['plural']}"
            _wait_until(lambda path=collection: self.request("GET", path)[0] == 200)


def _wait_until(check: Any, timeout: float = 30.0) -> None:
    wait_for(check, timeout, interval=0.1)
