"""The moving parts of the whole-loop tests on the real control plane: our processes (`descheduler
run`, `descheduler extender`) as subprocesses, kube-scheduler's configuration calling the extender,
the test's nodes and workloads, and a recorder that follows pods, PodMigrationJobs and Reservations
through watches so a test can judge every move from what the API said, not from the job's record."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane, Process, free_port, terminate
from realcluster_support import create, create_node, merge_patch
from standin import ObjectWatch

from descheduler.kube import KubeApiError, KubeClient
from descheduler.migration.objects import SCHEDULER_LEASE, TAINT_MOVING_OFF
from tests.waiting import wait_for

Obj = dict[str, Any]

RUN_LABEL = "realcluster.descheduler.dev/run"
LOAD_AWARE_SCHEDULER = "load-aware-scheduler"
PMJ_PATH = "/apis/descheduler.dev/v1alpha1/podmigrationjobs"
RESERVATION_PATH = "/apis/descheduler.dev/v1alpha1/reservations"
LABEL_JOB = "descheduler.dev/job"


# ---------------------------------------------------------------------------------- waiting


def wait_until(check: Callable[[], bool], timeout: float, what: str, state: Callable[[], Any] | None = None) -> float:
    """Poll `check` every 0.2 s; the seconds it took, or AssertionError naming `what` (and `state()`)."""
    return wait_for(check, timeout, what, interval=0.2, state=state)


# ---------------------------------------------------------------------------------- processes


def _die_with_us() -> list[str]:
    # The child gets SIGKILL if the test process dies outright (no preexec_fn: threads are running).
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL"] if setpriv else []


@dataclass(slots=True)
class OurProcess:
    """A `descheduler` subcommand run as its own process, logging to a file, with an HTTP port."""

    name: str
    args: list[str]
    log: Path
    port: int
    popen: subprocess.Popen[bytes] | None = None
    health_port: int | None = None  # where GET /healthz, /readyz and /metrics are served, when not on `port`

    def start(self) -> OurProcess:
        command = [*_die_with_us(), sys.executable, "-m", "descheduler", *self.args]
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        return self

    def alive(self) -> bool:
        """Running; a process that lost its port to another (free_port's race) is started again on a new one."""
        if self.popen is None:
            return False
        if self.popen.poll() is None:
            return True
        if self.popen.returncode == 1 and f"port {self.port} on 127.0.0.1 is already in use" in self.tail(3):
            self.port = free_port()
            self.args[self.args.index("--port") + 1] = str(self.port)
            self.start()
            return True
        return False

    def kill(self) -> None:
        """SIGKILL: no release, no goodbye."""
        if self.popen is not None and self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after `grace` seconds; the exit code."""
        return None if self.popen is None else terminate(self.popen, grace)

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-lines:])

    def records(self) -> list[Obj]:
        """The JSON log lines (structlog's), in order."""
        found = []
        for line in self.text().splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    found.append(json.loads(line))
        return found

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port or self.port}{path}", timeout=2) as reply:
                return reply.status, reply.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, ""
        except OSError:
            return 0, ""

    def metric(self, name: str, **labels: str) -> float | None:
        """A sample of `name` with exactly these labels from /metrics (None: not answering or absent)."""
        status, text = self.get("/metrics")
        if status != 200:
            return None
        wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series = f"{name}{{{wanted}}}" if labels else name
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            key, _, value = line.rpartition(" ")
            if key == series or (labels and _same_series(key, name, labels)):
                return float(value)
        return None

    def wait_ready(self, path: str, timeout: float) -> float:
        def ready() -> bool:
            if not self.alive():
                raise AssertionError(f"{self.name} exited ({self.popen and self.popen.returncode}):\n{self.tail()}")
            return self.get(path)[0] == 200

        return wait_until(ready, timeout, f"{self.name} {path}", self.tail)


def _same_series(key: str, name: str, labels: dict[str, str]) -> bool:
    if not key.startswith(name + "{"):
        return False
    pairs = dict(p.split("=", 1) for p in key[len(name) + 1 : -1].split(",") if "=" in p)
    return {k: v.strip('"') for k, v in pairs.items()} == labels


def extender_process(
    workdir: Path,
    kubeconfig: Path,
    policy: Path,
    lease_namespace: str,
    identity: str = "extender-0",
    *,
    health: bool = False,
    extra: Iterable[str] = (),
) -> OurProcess:
    """`descheduler extender` on 127.0.0.1, as deploy/overlays/with-scheduler's sidecar listens; with
    `health`, /healthz, /readyz and /metrics on a port of their own, as the sidecar serves them."""
    port = free_port()
    args = ["extender", "--policy", str(policy), "--kubeconfig", str(kubeconfig), "--host", "127.0.0.1"]
    args += ["--port", str(port), "--identity", identity]
    args += ["--scheduler-lease", f"{lease_namespace}/{SCHEDULER_LEASE}", "--scheduler-name", LOAD_AWARE_SCHEDULER]
    # The load is re-read every 2 s (the publisher's period), not every 15 s.
    args += ["--load-interval", "2", *extra]
    health_port = free_port() if health else None
    if health_port is not None:
        args += ["--health-port", str(health_port)]
    return OurProcess(identity, args, workdir / f"{identity}.log", port, health_port=health_port)


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    duration: float = 3.0
    renew_deadline: float = 2.0
    retry_period: float = 0.25

    def args(self) -> list[str]:
        return [
            *("--lease-duration", f"{self.duration:g}", "--renew-deadline", f"{self.renew_deadline:g}"),
            *("--retry-period", f"{self.retry_period:g}"),
        ]


def controller_process(
    workdir: Path,
    kubeconfig: Path,
    policy: Path,
    *,
    lease_namespace: str,
    lease_name: str,
    identity: str,
    lease: LeaseTimings,
) -> OurProcess:
    port = free_port()
    args = ["run", "--policy", str(policy), "--kubeconfig", str(kubeconfig), "--host", "127.0.0.1"]
    args += ["--port", str(port), "--lease-namespace", lease_namespace, "--lease-name", lease_name]
    args += ["--identity", identity, "--log-format", "json", *lease.args()]
    return OurProcess(identity, args, workdir / f"{identity}.log", port)


@dataclass(frozen=True, slots=True)
class ExtenderTls:
    """Certificates for deploy/overlays/extender-mtls's setup: a CA, the extender's serving certificate
    for 127.0.0.1, and kube-scheduler's client certificate, all from one CA (trustme), as files."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    @classmethod
    def make(cls, folder: Path) -> ExtenderTls:
        import trustme

        folder.mkdir(parents=True, exist_ok=True)
        authority = trustme.CA()
        server = authority.issue_cert("127.0.0.1", "localhost")
        client = authority.issue_cert("kube-scheduler")
        paths = cls(*(folder / n for n in ("ca.crt", "tls.crt", "tls.key", "client.crt", "client.key")))
        authority.cert_pem.write_to_path(str(paths.ca))
        for cert, cert_path, key_path in (
            (server, paths.server_cert, paths.server_key),
            (client, paths.client_cert, paths.client_key),
        ):
            cert.private_key_pem.write_to_path(str(key_path))
            for index, blob in enumerate(cert.cert_chain_pems):
                blob.write_to_path(str(cert_path), append=index > 0)
        return paths

    def server_args(self) -> list[str]:
        """The extender's flags, as deploy/overlays/extender-mtls passes them."""
        return [
            *("--tls-cert-file", str(self.server_cert), "--tls-private-key-file", str(self.server_key)),
            *("--client-ca-file", str(self.ca)),
        ]

    def client_config(self) -> dict[str, Any]:
        """kube-scheduler's extender fields that present the client certificate and check the server's."""
        return {
            "enableHTTPS": True,
            "tlsConfig": {"certFile": str(self.client_cert), "keyFile": str(self.client_key), "caFile": str(self.ca)},
        }


def scheduler_configuration(path: Path, kubeconfig: Path, extender_url: str, tls: dict[str, Any] | None = None) -> Path:
    """deploy/overlays/with-scheduler's KubeSchedulerConfiguration as it ships (its profile, and its
    extender: filter, prioritize, bind, not ignorable), with this machine's parts: the kubeconfig, no
    leader election, the extender's URL (its port is a free one here) and, with `tls`, the fields that
    make it call over mutual TLS (ExtenderTls.client_config), as deploy/overlays/extender-mtls says."""
    from tests.deploy.deploy_support import DEPLOY, find, rendered

    shipped = find(rendered(DEPLOY / "overlays" / "with-scheduler"), "ConfigMap", f"{LOAD_AWARE_SCHEDULER}-config")
    config: dict[str, Any] = yaml.safe_load(shipped["data"]["config.yaml"])
    config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    config["leaderElection"] = {"leaderElect": False}
    [extender] = config["extenders"]
    assert extender["urlPrefix"].startswith("http://127.0.0.1:"), extender["urlPrefix"]  # the pod's own sidecar
    extender.update(urlPrefix=extender_url, **(tls or {}))
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@contextlib.contextmanager
def load_aware_side(
    control_plane: ControlPlane,
    workdir: Path,
    kubeconfig: Path,
    policy: Path,
    lease_namespace: str,
    *,
    startup: float,
    tls: ExtenderTls | None = None,
) -> Iterator[OurProcess]:
    """`descheduler extender` (as `kubeconfig`'s account) and a kube-scheduler whose profile calls it,
    as deploy/ ships them: over loopback, or with `tls` over mutual TLS; both stopped on exit."""
    extender = extender_process(
        workdir,
        kubeconfig,
        policy,
        lease_namespace,
        health=tls is not None,
        extra=tls.server_args() if tls is not None else (),
    )
    scheduler: Process | None = None
    try:
        extender.start()
        extender.wait_ready("/readyz", startup)
        config = scheduler_configuration(
            workdir / "load-aware-scheduler.yaml",
            control_plane.kubeconfig,
            f"{'https' if tls else 'http'}://127.0.0.1:{extender.port}",
            tls=tls.client_config() if tls is not None else None,
        )
        scheduler = control_plane.start_scheduler(config)
        yield extender
    finally:
        if scheduler is not None:
            scheduler.stop()
        extender.stop()


# ---------------------------------------------------------------------------------- the cluster's contents


def create_namespace(kube: KubeClient, name: str) -> None:
    create(kube, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def delete_quietly(kube: KubeClient, path: str, body: Obj | None = None) -> None:
    try:
        kube.request("DELETE", path, body=body)
    except KubeApiError as error:
        if error.status != 404:
            raise


def create_test_nodes(kube: KubeClient, names: Iterable[str], run: str, *, cpu: str, memory: str) -> None:
    """Ready Nodes labelled with the test's run label (so the policy and the pods select only them)."""
    for name in names:
        create_node(kube, name, cpu=cpu, memory=memory)
        merge_patch(kube, f"/api/v1/nodes/{name}", {"metadata": {"labels": {RUN_LABEL: run}}})


def cordon(kube: KubeClient, names: Iterable[str], unschedulable: bool = True) -> None:
    for name in names:
        merge_patch(kube, f"/api/v1/nodes/{name}", {"spec": {"unschedulable": unschedulable or None}})


def deployment(name: str, replicas: int, run: str, *, cpu: str, memory: str, scheduler_name: str | None = None) -> Obj:
    """A Deployment of pause pods kept on the test's nodes; the default 30 s grace period, so only
    the kubelet stand-in finishing deletions lets an evicted pod go."""
    labels = {"app": name}
    pod_spec: Obj = {
        "nodeSelector": {RUN_LABEL: run},
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def list_pods(kube: KubeClient, namespace: str) -> list[Obj]:
    items: list[Obj] = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return items


def pods_report(kube: KubeClient, namespace: str) -> str:
    """For a failure message: the namespace's pods counted by phase, node and readiness, why the
    unbound ones are not scheduled, and the scheduling events (reason, count, latest message)."""
    pods = list_pods(kube, namespace)
    states = Counter(
        f"{(p.get('status') or {}).get('phase', '?')} on {p['spec'].get('nodeName') or 'no node'}"
        + (" Ready" if ready(p) else "")
        for p in pods
    )
    waiting = Counter(
        c.get("message") or c.get("reason") or "?"
        for p in pods
        if not p["spec"].get("nodeName")
        for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled"
    )
    events: dict[str, tuple[int, str]] = {}
    for event in kube.get_json(f"/api/v1/namespaces/{namespace}/events")["items"]:
        if event.get("involvedObject", {}).get("kind") == "Pod" and event.get("reason") != "Scheduled":
            count, _ = events.get(event["reason"], (0, ""))
            events[event["reason"]] = (count + int(event.get("count") or 1), event.get("message", ""))
    report = f"{len(pods)} pods {dict(states)}; unscheduled because {dict(waiting)}; events {events}"
    return report + (f"; nodes as the API has them {nodes_report(kube)}" if waiting else "")


def nodes_report(kube: KubeClient) -> dict[str, str]:
    """Every node's run label, cordon and taints, to tell an unscheduled pod's reasons apart by node."""
    out: dict[str, str] = {}
    for node in kube.get_json("/api/v1/nodes")["items"]:
        spec, labels = node.get("spec") or {}, node["metadata"].get("labels") or {}
        taints = [f"{t.get('key')}:{t.get('effect')}" for t in spec.get("taints") or []]
        out[node["metadata"]["name"]] = (
            f"run={labels.get(RUN_LABEL, '-')} unschedulable={bool(spec.get('unschedulable'))} taints={taints}"
        )
    return out


def clean_up(kube: KubeClient, namespace: str, nodes: Iterable[str], deployments: Iterable[str]) -> None:
    """Deployments, then their pods at once (no kubelet would), then the nodes and their NodeMetrics."""
    for name in deployments:
        delete_quietly(
            kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", {"propagationPolicy": "Background"}
        )
    with contextlib.suppress(KubeApiError):
        kube.request("DELETE", f"/apis/apps/v1/namespaces/{namespace}/replicasets")
    with contextlib.suppress(KubeApiError):
        kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", body={"gracePeriodSeconds": 0})
    for path in (PMJ_PATH, RESERVATION_PATH):
        for obj in kube.get_json(path)["items"]:
            spec = obj.get("spec") or {}
            namespaces = {(spec.get("podRef") or {}).get("namespace")}
            namespaces |= {(o.get("controller") or {}).get("namespace") for o in spec.get("owners") or []}
            if namespace in namespaces:
                delete_quietly(kube, f"{path}/{obj['metadata']['name']}")
    for node in nodes:
        delete_quietly(kube, f"/api/v1/nodes/{node}")
        delete_quietly(kube, f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}")


# ---------------------------------------------------------------------------------- the recorder


@dataclass(slots=True)
class PodRecord:
    uid: str
    name: str
    node: str = ""
    owner: str = ""  # the controller's UID
    created: str = ""
    terminating_at: float | None = None  # monotonic time the deletion was first seen
    terminating_version: int = 0  # the resourceVersion that first showed it (see ReservationRecord)
    gone: bool = False
    new: bool = False  # created while the recorder watched


@dataclass(slots=True)
class ReservationRecord:
    name: str
    node: str
    job: str
    phases: list[str] = field(default_factory=list)
    # phase → the resourceVersion that first showed it: kube-apiserver's versions are etcd revisions,
    # one sequence for every resource, so they order writes across kinds (an implementation detail
    # of the real server that a test may lean on; clients must not).
    version_of: dict[str, int] = field(default_factory=dict)
    consumed_by: str = ""
    consumed_by_uid: str = ""
    acknowledged_by: str = ""
    message: str = ""
    deleted: bool = False

    @property
    def phase(self) -> str:
        return self.phases[-1] if self.phases else ""


Hook = Callable[[str, str, Obj, Obj | None], None]


class MoveRecorder:
    """Follows the namespace's pods and every PodMigrationJob and Reservation through watches,
    keeping what each one went through; `hooks` see every event (kind, type, object, previous)."""

    def __init__(self, kube: KubeClient, namespace: str, run: str = "") -> None:
        """`run`: also follow the moving-off taint on the nodes labelled with it."""
        self.namespace = namespace
        self.tainted: set[str] = set()  # nodes that carry our moving-off taint now
        self.ever_tainted: set[str] = set()
        self.pods: dict[str, PodRecord] = {}
        self.jobs: dict[str, Obj] = {}
        self.reservations: dict[str, ReservationRecord] = {}
        self.terminations: list[str] = []  # pod UIDs in the order their deletion began
        self.in_flight_peak: dict[str, int] = {}  # workload → most jobs Running at once
        self.hooks: list[Hook] = []
        self._lock = threading.RLock()
        self._last: dict[tuple[str, str], Obj] = {}
        self._watches = [
            ObjectWatch(kube, f"/api/v1/namespaces/{namespace}/pods", self._pod, name="recorder-pods"),
            ObjectWatch(kube, PMJ_PATH, self._job, name="recorder-jobs"),
            ObjectWatch(kube, RESERVATION_PATH, self._reservation, name="recorder-reservations"),
        ]
        if run:
            query = {"labelSelector": f"{RUN_LABEL}={run}"}
            self._watches.append(ObjectWatch(kube, "/api/v1/nodes", self._node, name="recorder-nodes", query=query))

    @property
    def errors(self) -> list[str]:
        return [e for w in self._watches for e in w.errors]

    def start(self, timeout: float = 30.0) -> MoveRecorder:
        for watch in self._watches:
            watch.start()
        for watch in self._watches:
            if not watch.synced.wait(timeout):
                raise AssertionError(f"recorder not synced within {timeout}s: {self.errors}")
        return self

    def stop(self) -> None:
        for watch in self._watches:
            watch.stop()

    def _previous(self, kind: str, kind_type: str, obj: Obj) -> Obj | None:
        key = (kind, obj["metadata"]["uid"])
        previous = self._last.get(key)
        if kind_type == "DELETED":
            self._last.pop(key, None)
        else:
            self._last[key] = obj
        return previous

    def _notify(self, kind: str, kind_type: str, obj: Obj, previous: Obj | None) -> None:
        for hook in list(self.hooks):
            hook(kind, kind_type, obj, previous)

    def _pod(self, kind_type: str, pod: Obj) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        with self._lock:
            previous = self._previous("pod", kind_type, pod)
            record = self.pods.setdefault(meta["uid"], PodRecord(meta["uid"], meta["name"]))
            record.node = spec.get("nodeName") or record.node
            record.created = meta.get("creationTimestamp", "")
            owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
            record.owner = owners[0]["uid"] if owners else ""
            if meta.get("deletionTimestamp") and record.terminating_at is None and kind_type != "SYNC":
                record.terminating_at = time.monotonic()
                record.terminating_version = int(meta["resourceVersion"])
                self.terminations.append(record.uid)
            record.gone = record.gone or kind_type == "DELETED"
            record.new = record.new or kind_type == "ADDED"
        self._notify("pod", kind_type, pod, previous)

    def _node(self, kind_type: str, node: Obj) -> None:
        name = node["metadata"]["name"]
        taints = (node.get("spec") or {}).get("taints") or []
        with self._lock:
            if kind_type != "DELETED" and any(t.get("key") == TAINT_MOVING_OFF for t in taints):
                self.tainted.add(name)
                self.ever_tainted.add(name)
            else:
                self.tainted.discard(name)

    def _ours(self, job: Obj) -> bool:
        return bool(((job.get("spec") or {}).get("podRef") or {}).get("namespace") == self.namespace)

    def _job(self, kind_type: str, job: Obj) -> None:
        if not self._ours(job):
            return
        with self._lock:
            previous = self._previous("job", kind_type, job)
            if kind_type != "DELETED":
                self.jobs[job["metadata"]["name"]] = job
            running: dict[str, int] = {}
            for other in self.jobs.values():
                status = other.get("status") or {}
                if status.get("phase") == "Running":
                    workload = (status.get("workload") or {}).get("name", "")
                    running[workload] = running.get(workload, 0) + 1
            for workload, count in running.items():
                self.in_flight_peak[workload] = max(self.in_flight_peak.get(workload, 0), count)
        self._notify("job", kind_type, job, previous)

    def _reservation(self, kind_type: str, obj: Obj) -> None:
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        owners = spec.get("owners") or []
        if not any(((o.get("controller") or {}).get("namespace")) == self.namespace for o in owners):
            return
        with self._lock:
            previous = self._previous("reservation", kind_type, obj)
            job = (meta.get("labels") or {}).get(LABEL_JOB, "")
            record = self.reservations.setdefault(meta["name"], ReservationRecord(meta["name"], spec["nodeName"], job))
            phase = status.get("phase") or "Pending"
            if not record.phases or record.phases[-1] != phase:
                record.phases.append(phase)
                record.version_of.setdefault(phase, int(meta["resourceVersion"]))
            record.consumed_by = status.get("consumedBy") or record.consumed_by
            record.consumed_by_uid = status.get("consumedByUID") or record.consumed_by_uid
            record.acknowledged_by = status.get("acknowledgedBy") or record.acknowledged_by
            record.message = status.get("message") or record.message
            record.deleted = kind_type == "DELETED"
        self._notify("reservation", kind_type, obj, previous)

    # ------------------------------------------------------------------ views

    def job_of_pod(self, uid: str) -> Obj | None:
        with self._lock:
            return next((j for j in self.jobs.values() if (j["spec"].get("podRef") or {}).get("uid") == uid), None)

    def job_list(self) -> list[Obj]:
        with self._lock:
            return list(self.jobs.values())

    def live_reservations(self) -> list[ReservationRecord]:
        with self._lock:
            return [r for r in self.reservations.values() if not r.deleted]


# The steps of a ReservationFirst move, in order, as the API shows them (`reached_step`).
STEPS = ("Reservation created", "Reservation Available", "pod evicted", "ReplacementBound")


def reached_step(step: int, kind: str, kind_type: str, obj: Obj, previous: Obj | None) -> bool:
    """Whether this watch event (a MoveRecorder hook's arguments) is a move reaching STEPS[step]."""
    status = obj.get("status") or {}
    before = (previous or {}).get("status") or {}
    if step == 0:
        return kind == "reservation" and kind_type == "ADDED"
    if step == 1:
        return kind == "reservation" and status.get("phase") == "Available" and before.get("phase") != "Available"
    if step == 2:
        return (
            kind == "pod"
            and bool(obj["metadata"].get("deletionTimestamp"))
            and not (previous or {}).get("metadata", {}).get("deletionTimestamp")
        )
    return kind == "job" and has(obj, "ReplacementBound") and not has(previous or {}, "ReplacementBound")


def phase(job: Obj) -> str:
    return str((job.get("status") or {}).get("phase", ""))


def condition(job: Obj, kind: str) -> Obj | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def has(job: Obj, kind: str) -> bool:
    found = condition(job, kind)
    return found is not None and found.get("status") == "True"


def summary(job: Obj) -> str:
    status = job.get("status") or {}
    ref = (job.get("spec") or {}).get("podRef") or {}
    return (
        f"{job['metadata']['name']} pod={ref.get('name')} {status.get('sourceNode', '?')}->"
        f"{status.get('targetNode', '?')} {status.get('phase')} {status.get('reason', '')}: {status.get('message', '')}"
    )


@contextlib.contextmanager
def running(process: OurProcess) -> Iterator[OurProcess]:
    process.start()
    try:
        yield process
    finally:
        process.stop()


@dataclass(frozen=True, slots=True)
class PolicyTimings:
    interval: float  # the cycle
    ttl: float  # a job's, and so its Reservation's
    cooldown: float  # the policy's cooldown and the workload limiter's window
    per_window: int  # moves per workload per window
    high: int = 70  # cpu percent
    low: int = 45


def controller_policy(run: str, namespace: str, timings: PolicyTimings, migration: str = "", evictor: str = "") -> str:
    """The controller's policy for the nodes labelled with `run` and the pods of `namespace`;
    `migration` and `evictor`: more lines under `migration:` and `evictor:` (indented by two)."""
    t = timings
    return f"""\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {t.interval:g}s
loadSource: {{type: nodeMetric}}
nodeSelector: {{matchLabels: {{{RUN_LABEL}: "{run}"}}}}
evictor:
  namespaces: {{include: ["{namespace}"]}}
{evictor}strategies:
  - name: LowNodeLoad
    args:
      lowThresholds: {{cpu: {t.low}, memory: 55}}
      highThresholds: {{cpu: {t.high}, memory: 80}}
migration:
  ttl: {t.ttl:g}s
  cooldown: {t.cooldown:g}s
  maxMigratingPerNode: 4
  maxMigratingPerWorkload: "50%"
  maxUnavailablePerWorkload: "50%"
  objectLimiters:
    workload: {{duration: {t.cooldown:g}s, maxMigrating: {t.per_window}}}
  evictQPS: 20
  evictBurst: 5
{migration}"""
