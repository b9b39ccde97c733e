"""What a kubelet and a metrics agent would do, done over the API for the real-cluster tests.

`KubeletStandIn` watches pods bound to the test's nodes: it reports each one Running and Ready a
short delay after it is bound (conditions, container statuses, podIP, startTime), and finishes the
deletion of a terminating pod (delete again with grace period 0), as a kubelet does once the
containers stopped. `LoadPublisher` writes a Koordinator NodeMetric per node every few seconds
from the simulator's usage models (`descheduler.fakecluster.usage`), so pods use what their model says
and not what they request. Both run on their own threads, are bounded and stop on `stop()`.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import urllib3

from descheduler.errors import ClusterUnreachableError
from descheduler.fakecluster.kubelet import gates_pass
from descheduler.fakecluster.usage import MEASURED, UsageSpec, models_for, usage_units
from descheduler.kube import Cancelled, KubeApiError, KubeClient
from descheduler.quantity import to_units

Obj = dict[str, Any]
Handler = Callable[[str, Obj], None]

NODE_METRICS = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"
RETRY_AFTER = 1.0  # seconds before a pod status or deletion the API could not take is tried again


def rfc3339(moment: float | None = None, *, micro: bool = False) -> str:
    stamp = datetime.fromtimestamp(time.time() if moment is None else moment, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


class ObjectWatch:
    """List, then watch one collection; `handle(type, obj)` gets every object ("SYNC" for the
    list's items, else the watch event's type). Re-lists when the server says the version is gone;
    an object the new list lacks was deleted unseen and is handed over as "DELETED" (its last state),
    as an informer does, so a restarted apiserver does not leave deleted objects behind."""

    def __init__(
        self,
        kube: KubeClient,
        path: str,
        handle: Handler,
        *,
        name: str,
        query: Mapping[str, str] | None = None,
        window: int = 5,
    ) -> None:
        self.kube = kube
        self.path = path
        self.handle = handle
        self.query = dict(query or {})
        # The server ends each watch after `window` seconds, so stop() never waits on a quiet stream long.
        self.window = window
        self.synced = threading.Event()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._response: Any = None
        self._known: dict[str, Obj] = {}  # uid → the last state handed over
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)

    def start(self) -> ObjectWatch:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"{self._thread.name} did not stop within {timeout}s")

    def _run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    version = self._list()
                    self.synced.set()
                version = self._watch(version)
            except KubeApiError as error:
                if error.status == 410:
                    version = ""  # too old: list again
                    continue
                self._problem(str(error))
            except Cancelled:
                return  # stopped while the client waited to retry
            except (ClusterUnreachableError, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
                self._problem(f"{type(error).__name__}: {error}")

    def _problem(self, what: str) -> None:
        if not self._stop.is_set():
            self.errors.append(what)
            self._stop.wait(0.5)

    def _list(self) -> str:
        listing = self.kube.get_json(self.path, query=self.query)
        items = listing.get("items") or []
        listed = {item["metadata"]["uid"] for item in items}
        for uid, last in list(self._known.items()):
            if uid not in listed:
                self._known.pop(uid)
                self.handle("DELETED", last)
        for item in items:
            self._known[item["metadata"]["uid"]] = item
            self.handle("SYNC", item)
        return str(listing["metadata"]["resourceVersion"])

    def _watch(self, version: str) -> str:
        query = {
            **self.query,
            "watch": "true",
            "resourceVersion": version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.window),
        }
        response = self.kube.stream(self.path, query=query, read_timeout=self.window + 10, cancel=self._stop)
        self._response = response
        try:
            pending = b""
            for chunk in response.stream(65536, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        version = self._event(json.loads(line), version)
        finally:
            self._response = None
            with contextlib.suppress(Exception):
                response.release_conn()
                response.close()
        return version

    def _event(self, event: Obj, version: str) -> str:
        kind, obj = event.get("type", ""), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                return ""
            raise ValueError(f"watch error: {obj.get('message', obj)}")
        new_version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if kind != "BOOKMARK":
            uid = (obj.get("metadata") or {}).get("uid", "")
            if kind == "DELETED":
                self._known.pop(uid, None)
            else:
                self._known[uid] = obj
            self.handle(kind, obj)
        return new_version


class _Timer:
    """Actions due at a time, run in order on one thread; one the API could not take (unreachable,
    5xx, 429) is run again RETRY_AFTER seconds later."""

    def __init__(self, name: str) -> None:
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._stopped = False
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def at(self, due: float, action: Callable[[], None]) -> None:
        with self._wake:
            heapq.heappush(self._queue, (due, next(self._order), action))
            self._wake.notify()

    def stop(self, timeout: float = 10.0) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"{self._thread.name} did not stop within {timeout}s")

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopped and (not self._queue or self._queue[0][0] > time.monotonic()):
                    self._wake.wait(None if not self._queue else max(self._queue[0][0] - time.monotonic(), 0))
                if self._stopped:
                    return
                _, _, action = heapq.heappop(self._queue)
            try:
                action()
            except (KubeApiError, ClusterUnreachableError) as error:
                self.errors.append(str(error))
                if isinstance(error, ClusterUnreachableError) or error.status >= 500 or error.status == 429:
                    # The API is away (a restart): a kubelet keeps trying, so does the stand-in.
                    self.at(time.monotonic() + RETRY_AFTER, action)


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


class KubeletStandIn:
    """Runs the pods bound to `nodes`: Running and Ready `start_delay` seconds after binding;
    a terminating pod is deleted for good (grace period 0) `stop_delay` seconds after it is marked."""

    def __init__(self, kube: KubeClient, nodes: Iterable[str], *, start_delay: float = 0.3, stop_delay: float = 0.1):
        self.kube = kube
        self.nodes = frozenset(nodes)
        self.start_delay = start_delay
        self.stop_delay = stop_delay
        # Nodes whose pods run but never get Ready (a readiness probe that keeps failing there).
        self.unready: set[str] = set()
        self.started: set[str] = set()  # pod UIDs reported Running
        self.finished: set[str] = set()  # pod UIDs whose deletion was finished here
        self._seen: set[str] = set()  # UIDs with an action queued
        self._ips = itertools.count(2)
        self._timer = _Timer("kubelet-standin")
        self._watch = ObjectWatch(kube, "/api/v1/pods", self._on_pod, name="kubelet-standin")

    @property
    def errors(self) -> list[str]:
        return [*self._watch.errors, *self._timer.errors]

    def start(self) -> KubeletStandIn:
        self._timer.start()
        self._watch.start()
        return self

    def stop(self) -> None:
        self._watch.stop()
        self._timer.stop()

    def __enter__(self) -> KubeletStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _on_pod(self, kind: str, pod: Obj) -> None:
        if kind == "DELETED":
            return
        meta, spec = pod["metadata"], pod.get("spec") or {}
        node = spec.get("nodeName")
        if node not in self.nodes:
            return
        uid, namespace, name = meta["uid"], meta["namespace"], meta["name"]
        if meta.get("deletionTimestamp"):
            key = f"delete/{uid}"
            if key not in self._seen:
                self._seen.add(key)
                self._timer.at(time.monotonic() + self.stop_delay, lambda: self._finish(namespace, name, uid))
        elif not _ready(pod) and uid not in self._seen:
            self._seen.add(uid)
            self._timer.at(time.monotonic() + self.start_delay, lambda: self._run(pod))

    def _run(self, pod: Obj) -> None:
        meta = pod["metadata"]
        now = rfc3339()
        ip = next(self._ips)
        containers = (pod.get("spec") or {}).get("containers") or []
        # Ready only when every readiness gate's condition is True, as a kubelet reports it, and not on
        # the nodes told to keep their pods unready.
        ready = "True" if gates_pass(pod) and (pod.get("spec") or {}).get("nodeName") not in self.unready else "False"
        conditions = [
            {"type": kind, "status": ready if kind == "Ready" else "True", "lastTransitionTime": now}
            for kind in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")
        ]
        statuses = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": f"{c.get('image', '')}@sha256:{'0' * 64}",
                "containerID": f"containerd://{meta['uid'].replace('-', '')}{i}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for i, c in enumerate(containers)
        ]
        pod_ip = f"10.244.{ip // 250}.{ip % 250 + 2}"
        status = {
            "phase": "Running",
            "conditions": conditions,
            "containerStatuses": statuses,
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "hostIP": "10.0.0.1",
            "startTime": now,
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
        try:
            # The UID in the patch is a precondition: a pod recreated under the same name is left alone.
            self.kube.request(
                "PATCH",
                path,
                body={"metadata": {"uid": meta["uid"]}, "status": status},
                content_type="application/merge-patch+json",
            )
        except KubeApiError as error:
            if error.status not in (404, 409):
                raise
            return
        self.started.add(meta["uid"])

    def _finish(self, namespace: str, name: str, uid: str) -> None:
        try:
            self.kube.request(
                "DELETE",
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
            )
        except KubeApiError as error:
            if error.status not in (404, 409):
                raise
            return
        self.finished.add(uid)


def pod_requests(pod: Obj) -> dict[str, int]:
    """The pod's summed container requests, in integer units (millicores, bytes)."""
    total = dict.fromkeys(MEASURED, 0)
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for resource in MEASURED:
            if resource in requests:
                total[resource] += to_units(resource, requests[resource])
    return total


class LoadPublisher:
    """A NodeMetric per node every `period` seconds: the node's running pods' usage from `spec`
    (its usage models and system overhead), each pod's usage in `podsMetric`."""

    def __init__(self, kube: KubeClient, nodes: Iterable[str], spec: UsageSpec, *, period: float = 2.0, seed: int = 0):
        self.kube = kube
        self.nodes = tuple(sorted(nodes))
        self.period = period
        self.seed = seed
        self.rounds = 0
        self.errors: list[str] = []
        self.last: dict[str, dict[str, int]] = {}  # node → usage units published last
        self._spec = spec
        self._lock = threading.Lock()
        self._began = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="load-publisher", daemon=True)

    def set_spec(self, spec: UsageSpec) -> None:
        """Use these models from the next round on (e.g. the load rising on some workloads)."""
        with self._lock:
            self._spec = spec

    def start(self) -> LoadPublisher:
        self.publish()  # metrics exist before anything schedules
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"load publisher did not stop within {timeout}s")

    def __enter__(self) -> LoadPublisher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.publish()
            except (KubeApiError, ClusterUnreachableError) as error:
                self.errors.append(str(error))

    def usage(self, pods: Iterable[Obj]) -> dict[str, tuple[dict[str, int], list[tuple[str, str, dict[str, int]]]]]:
        """Per node: the node's usage (pods plus overhead) and each running pod's."""
        with self._lock:
            spec = self._spec
        overhead = spec.overhead_units()
        instant, elapsed = time.time(), time.monotonic() - self._began
        by_node: dict[str, tuple[dict[str, int], list[tuple[str, str, dict[str, int]]]]] = {
            node: ({r: overhead.get(r, 0) for r in MEASURED}, []) for node in self.nodes
        }
        for pod in pods:
            meta, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
            if (
                node not in by_node
                or meta.get("deletionTimestamp")
                or (pod.get("status") or {}).get("phase") != "Running"
            ):
                continue
            requests = pod_requests(pod)
            models = models_for(spec, meta["namespace"], meta.get("labels") or {})
            key = f"{meta['namespace']}/{meta['name']}"
            used = {
                resource: usage_units(
                    model, resource, requests[resource], instant=instant, elapsed=elapsed, key=key, seed=self.seed
                )
                for resource, model in models.items()
            }
            total, members = by_node[node]
            for resource, value in used.items():
                total[resource] += value
            members.append((meta["namespace"], meta["name"], used))
        return by_node

    def publish(self) -> None:
        pods = self.kube.get_json("/api/v1/pods", query={"fieldSelector": "status.phase=Running"})["items"]
        stamp = rfc3339()
        for node, (total, members) in self.usage(pods).items():
            self._write(node, stamp, total, members)
            self.last[node] = total
        self.rounds += 1

    def _write(
        self, node: str, stamp: str, total: dict[str, int], members: list[tuple[str, str, dict[str, int]]]
    ) -> None:
        def resources(used: Mapping[str, int]) -> dict[str, str]:
            return {"cpu": f"{used.get('cpu', 0)}m", "memory": str(used.get("memory", 0))}

        status = {
            "updateTime": stamp,
            "nodeMetric": {"nodeUsage": {"resources": resources(total)}},
            "podsMetric": [
                {"namespace": ns, "name": name, "podUsage": {"resources": resources(used)}}
                for ns, name, used in sorted(members, key=lambda m: (m[0], m[1]))
            ],
        }
        try:
            self.kube.request(
                "PATCH",
                f"{NODE_METRICS}/{node}/status",
                body={"status": status},
                content_type="application/merge-patch+json",
            )
            return
        except KubeApiError as error:
            if error.status != 404:
                raise
        interval = max(1, round(self.period))
        self.kube.request(
            "POST",
            NODE_METRICS,
            body={
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeMetric",
                "metadata": {"name": node},
                "spec": {"metricCollectPolicy": {"reportIntervalSeconds": interval, "aggregateDurationSeconds": 300}},
            },
        )
        self.kube.request(
            "PATCH",
            f"{NODE_METRICS}/{node}/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )
