"""The API calls the executor and the migration controller make, and what their failures mean.

Thin over the official client: raw JSON in and out (our CRDs as dicts, pods decoded into the
narrow `Pod` record), and every failure turned into one `ApiFailure` that says whether it is a
conflict, a refusal by a disruption budget, throttling, permanent or worth retrying.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from kubernetes import client
from urllib3.exceptions import HTTPError

from descheduler import decode
from descheduler.migration.objects import GROUP, JOBS, RESERVATIONS, VERSION
from descheduler.model import Pod

TIMEOUT: Final = (5.0, 30.0)  # connect, read (seconds)
PAGE_SIZE: Final = 500
_MULTIPLE_PDBS: Final = "more than one poddisruptionbudget"
_PDB_MESSAGE: Final = "disruption budget"


@dataclass(frozen=True, slots=True)
class Evictions:
    """The client pods are evicted (or deleted) through, and the bound on each such call (seconds)."""

    api_client: Any
    timeout: float


@dataclass(frozen=True, slots=True)
class ApiFailure(Exception):
    """A failed call: HTTP status (0 when the server was not reached), reason, message, hints."""

    status: int
    reason: str
    message: str
    retry_after: float | None = None
    causes: tuple[str, ...] = ()  # the reasons of details.causes
    details: tuple[str, ...] = ()  # their messages
    verb: str = ""
    target: str = ""

    def __str__(self) -> str:
        where = f"{self.verb} {self.target}: " if self.verb else ""
        code = f"{self.status} {self.reason}".strip() if self.status else "unreachable"
        return f"{where}{code}: {self.message}"

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def forbidden(self) -> bool:
        """RBAC refused the call: it will be refused again until someone grants it."""
        return self.status == 403

    @property
    def conflict(self) -> bool:
        """Stale resourceVersion or failed precondition: re-read and decide again."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def disruption_budget(self) -> bool:
        """An eviction refused because a PodDisruptionBudget allows no disruption now ("not now")."""
        if self.status != 429:
            return False
        return "DisruptionBudget" in self.causes or _PDB_MESSAGE in self.message.lower()

    @property
    def throttled(self) -> bool:
        """API priority and fairness or a rate limit: wait Retry-After and try again."""
        return self.status == 429 and not self.disruption_budget

    @property
    def multiple_budgets(self) -> bool:
        """The eviction API cannot evict a pod that more than one PDB selects: permanent for this pod."""
        return self.status == 500 and _MULTIPLE_PDBS in self.message.lower()

    @property
    def transient(self) -> bool:
        """Worth retrying the same call later."""
        if self.multiple_budgets:
            return False
        return self.status == 0 or self.status == 429 or self.status >= 500 or self.status == 409


@dataclass(frozen=True, slots=True)
class FetchedPod:
    """A pod as read: raw JSON (for the fields the record does not keep) and the planner's record."""

    raw: dict[str, Any]
    pod: Pod


def _failure(err: Exception, verb: str, target: str) -> ApiFailure:
    if not isinstance(err, client.ApiException):
        return ApiFailure(0, "", f"{type(err).__name__}: {err}", verb=verb, target=target)
    reason, message = str(err.reason or ""), ""
    causes: list[dict[str, Any]] = []
    retry_after: float | None = None
    try:
        body = json.loads(err.body) if err.body else {}
    except (TypeError, ValueError):
        body = {}
    if isinstance(body, dict):
        # A Status with no reason (the eviction API's 500 for two budgets) has none to report.
        reason = str(body.get("reason") or ("" if body.get("kind") == "Status" else reason))
        message = str(body.get("message") or "")
        found = body.get("details")
        details: dict[str, Any] = found if isinstance(found, dict) else {}
        causes = [c for c in details.get("causes") or () if isinstance(c, dict)]
        if details.get("retryAfterSeconds"):
            retry_after = float(details["retryAfterSeconds"])
    header = err.headers.get("Retry-After") if err.headers is not None else None
    if header:
        with contextlib.suppress(ValueError):
            retry_after = float(header)
    return ApiFailure(
        int(err.status or 0),
        reason,
        message or str(err.reason or ""),
        retry_after,
        causes=tuple(str(c.get("reason") or "") for c in causes),
        details=tuple(str(c["message"]) for c in causes if c.get("message")),
        verb=verb,
        target=target,
    )


class MigrationApi:
    """The calls the migration code makes, with a timeout on each; raises ApiFailure.

    `evictions` (`Evictions`, optional) is how pods are evicted or deleted: by a leader, through a
    client that does not retry and bounds each call, so that an eviction is answered or abandoned
    before a standby may take the Lease over (a write the apiserver holds while etcd is away is
    applied when etcd is back, possibly after the Lease passed to another replica; abandoned by the
    client, it is not applied)."""

    def __init__(self, api_client: Any, evictions: Evictions | None = None) -> None:
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.leases = client.CoordinationV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self._evicting = client.CoreV1Api(evictions.api_client) if evictions is not None else self.core
        self._eviction_timeout: Any = evictions.timeout if evictions is not None else TIMEOUT

    def _call(self, verb: str, target: str, fn: Any, *args: Any, _timeout: Any = TIMEOUT, **kwargs: Any) -> Any:
        try:
            return fn(*args, _request_timeout=_timeout, **kwargs)
        except (client.ApiException, HTTPError, OSError) as err:
            raise _failure(err, verb, target) from None

    # -- our objects ------------------------------------------------------------------------

    def list_objects(self, plural: str, label_selector: str = "") -> list[dict[str, Any]]:
        return list(self._pages(plural, label_selector))

    def _pages(self, plural: str, label_selector: str) -> Iterator[dict[str, Any]]:
        token = ""
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE_SIZE}
            if token:
                kwargs["_continue"] = token
            if label_selector:
                kwargs["label_selector"] = label_selector
            page = self._call("list", plural, self.custom.list_cluster_custom_object, GROUP, VERSION, plural, **kwargs)
            yield from page.get("items") or ()
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

    def get_object(self, plural: str, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self._call(
                "get", f"{plural}/{name}", self.custom.get_cluster_custom_object, GROUP, VERSION, plural, name
            )
        except ApiFailure as failure:
            if failure.not_found:
                return None
            raise
        return obj

    def create_object(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        created: dict[str, Any] = self._call(
            "create", f"{plural}/{name}", self.custom.create_cluster_custom_object, GROUP, VERSION, plural, body
        )
        return created

    def write_status(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace the status subresource; the object's resourceVersion makes a stale write a 409."""
        name = obj["metadata"]["name"]
        written: dict[str, Any] = self._call(
            "update",
            f"{plural}/{name}/status",
            self.custom.replace_cluster_custom_object_status,
            GROUP,
            VERSION,
            plural,
            name,
            obj,
        )
        return written

    def delete_object(self, plural: str, name: str, uid: str = "") -> bool:
        """Delete (only the object with this UID, when given); False when it was already gone."""
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._call(
                "delete",
                f"{plural}/{name}",
                self.custom.delete_cluster_custom_object,
                GROUP,
                VERSION,
                plural,
                name,
                body=body,
            )
        except ApiFailure as failure:
            if failure.not_found:
                return False
            raise
        return True

    def list_jobs(self) -> list[dict[str, Any]]:
        return self.list_objects(JOBS)

    def list_reservations(self, label_selector: str = "") -> list[dict[str, Any]]:
        return self.list_objects(RESERVATIONS, label_selector)

    # -- nodes ------------------------------------------------------------------------------

    def list_nodes(self) -> list[dict[str, Any]]:
        """Every node as raw JSON, a page at a time."""
        nodes: list[dict[str, Any]] = []
        token = ""
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE_SIZE, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            page = json.loads(self._call("list", "nodes", self.core.list_node, **kwargs).data)
            nodes += page.get("items") or ()
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return nodes

    def _get_raw(self, target: str, read: Any, *args: Any) -> dict[str, Any] | None:
        """One object read as raw JSON (so no field the client does not know is lost); None when it
        does not exist."""
        try:
            response = self._call("get", target, read, *args, _preload_content=False)
        except ApiFailure as failure:
            if failure.not_found:
                return None
            raise
        found: dict[str, Any] = json.loads(response.data)
        return found

    def get_node(self, name: str) -> dict[str, Any] | None:
        """The node as raw JSON; None when it does not exist."""
        return self._get_raw(f"nodes/{name}", self.core.read_node, name)

    def replace_node(self, node: dict[str, Any]) -> dict[str, Any]:
        """PUT the node as read and changed (raw JSON, so no field the client does not know is
        lost); its resourceVersion makes a stale write a 409. The server keeps the node's status."""
        name = node["metadata"]["name"]
        response = self._call("update", f"nodes/{name}", self.core.replace_node, name, node, _preload_content=False)
        written: dict[str, Any] = json.loads(response.data)
        return written

    # -- workloads (make-before-break moves) --------------------------------------------------

    def get_workload(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A Deployment or ReplicaSet (`kind`) as raw JSON; None when it does not exist."""
        read = self.apps.read_namespaced_deployment if kind == "Deployment" else self.apps.read_namespaced_replica_set
        return self._get_raw(f"{kind.lower()}s/{namespace}/{name}", read, name, namespace)

    def replace_deployment(self, deployment: dict[str, Any]) -> dict[str, Any]:
        """PUT the Deployment as read and changed (raw JSON); its resourceVersion makes a stale write a 409."""
        meta = deployment["metadata"]
        response = self._call(
            "update",
            f"deployments/{meta['namespace']}/{meta['name']}",
            self.apps.replace_namespaced_deployment,
            meta["name"],
            meta["namespace"],
            deployment,
            _preload_content=False,
        )
        written: dict[str, Any] = json.loads(response.data)
        return written

    # -- pods -------------------------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> Any | None:
        """A coordination.k8s.io/v1 Lease (the client's model), or None when there is none."""
        try:
            return self._call("get", f"leases/{namespace}/{name}", self.leases.read_namespaced_lease, name, namespace)
        except ApiFailure as failure:
            if failure.not_found:
                return None
            raise

    def get_pod(self, namespace: str, name: str) -> FetchedPod | None:
        """The pod as raw JSON and as the planner's record; None when it does not exist."""
        raw = self._get_raw(f"pods/{namespace}/{name}", self.core.read_namespaced_pod, name, namespace)
        return None if raw is None else FetchedPod(raw, decode.pod_from_raw(decode.convert(raw, decode.RawPod)))

    def evict_pod(self, namespace: str, name: str, uid: str) -> None:
        """policy/v1 Eviction of exactly this pod (UID precondition): respects PodDisruptionBudgets."""
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        # Raw response: the client's model of the eviction reply is not what the server sends back.
        self._call(
            "create",
            f"pods/{namespace}/{name}/eviction",
            self._evicting.create_namespaced_pod_eviction,
            name,
            namespace,
            body,
            _timeout=self._eviction_timeout,
            _preload_content=False,
        )

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """A plain DELETE with the pod's own grace period (explicit opt-in: ignores PDBs)."""
        body: dict[str, Any] = {}
        if uid:
            body["preconditions"] = {"uid": uid}
        self._call(
            "delete",
            f"pods/{namespace}/{name}",
            self._evicting.delete_namespaced_pod,
            name,
            namespace,
            body=body,
            _timeout=self._eviction_timeout,
            _preload_content=False,
        )
