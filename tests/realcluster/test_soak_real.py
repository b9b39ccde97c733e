"""A day under faults, shortened, on the real control plane (issue 18): etcd, kube-apiserver,
kube-controller-manager and a kube-scheduler calling `descheduler extender`, with `descheduler run`
as processes, the kubelet stand-in and the NodeMetric publisher; moves kept flowing while faults are
injected at seeded random steps of a move in flight:

- kube-apiserver restarted (same port and certificates), etcd restarted (same ports and data);
- the leader SIGKILLed and a new candidate started; every candidate killed and two started at once,
  racing for the Lease (the loser stays a standby);
- a Reservation or a PodMigrationJob deleted by hand; the node a pod is moving to deleted (and its
  pods with it, as the pod garbage collector would); the workload's PDB tightened to no disruption;
- an invalid policy written to the controller's policy file, then a valid one.

A controller that exits (it lost the Lease while the API was away) is started again, as Kubernetes
would restart its pod. Counted from the API, the audit log and the controllers' logs after every
fault and at the end: evictions while a PDB allowed none, pods evicted twice, pods deleted by the
controller, Reservations older than their TTL and left at the end, leader overlap (a write that a
candidate sent after another became leader; one sent before and held by the apiserver until etcd
came back is counted apart, and must not be an eviction), workloads not back to their replicas
Ready within a bound, and how long the controller took to come back (from the fault's end to its
next cycle planned or job written).
`SOAK_REAL_SEED` picks the schedule, `SOAK_REAL_ROUNDS` how many times every fault is injected,
`SOAK_REAL_REPORT` a file for the figures as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import installed
import pytest
from controlplane import HOW_TO_GET, ControlPlane, Process, assets_folder
from moves_support import (
    LABEL_JOB,
    LOAD_AWARE_SCHEDULER,
    PMJ_PATH,
    RESERVATION_PATH,
    STEPS,
    LeaseTimings,
    MoveRecorder,
    OurProcess,
    PolicyTimings,
    controller_policy,
    controller_process,
    create_namespace,
    create_test_nodes,
    delete_quietly,
    deployment,
    extender_process,
    list_pods,
    phase,
    reached_step,
    ready,
    scheduler_configuration,
    summary,
    wait_until,
)
from realcluster_support import create, install_node_metric_crd, install_our_crds, merge_patch
from standin import KubeletStandIn, LoadPublisher

from descheduler.errors import ClusterUnreachableError
from descheduler.fakecluster.usage import UsageSpec
from descheduler.kube import KubeApiError, KubeClient, connect

Obj = dict[str, Any]

# Every deadline is derived from these timings times SLACK; the test waits on conditions.
INTERVAL = 3.0  # the policy's cycle
TTL = 30.0  # a job's, and so its Reservation's
COOLDOWN = 5.0
PER_WINDOW = 2  # moves per workload per COOLDOWN
PUBLISH = 2.0  # the NodeMetric publisher's period
MIGRATION_PERIOD = 2.0  # `descheduler run`'s migration pass (its default)
# A 1.5 s margin (duration - renewDeadline - retryPeriod) for the ex-leader to stop: with 0.75 s, on the
# loaded 2-core CI machine an ex-leader once began an eviction 25 ms after the takeover (etcd fault, seed 18).
LEASE = LeaseTimings(duration=4.0, renew_deadline=2.0, retry_period=0.5)
STARTUP = 30.0  # a process importing, listing and syncing on a busy two-core machine
SLACK = 2.0
# A Reservation may outlive its TTL by the sweeper's period (it runs every migration pass).
RESERVATION_GRACE = 2 * MIGRATION_PERIOD
# A workload is back to its replicas Ready this long after a fault: a replacement scheduled and
# started, or after a restart the controller-manager and scheduler relisting.
PODS_BACK = SLACK * STARTUP
# The controller is back (a cycle planned or a job step written) this long after a fault ended:
# the Lease expiring, a new process starting, its first cycle.
COMEBACK = SLACK * (STARTUP + LEASE.duration + INTERVAL)
# A job in flight reaches the armed step this long after the trigger is armed (a hot node's moves
# wait for the workload limiter, at worst for a job's TTL).
MOVE_IN_FLIGHT = SLACK * (STARTUP + 2 * COOLDOWN + TTL)

# A heated node is published hot and planned on within this.
HEAT_SETTLES = 2 * INTERVAL + PUBLISH

CANDIDATES = 2  # `descheduler run` processes competing for the Lease
NODES = 4
WORKLOADS = {"web": 24, "api": 24}
PDB_SPARE = 2  # the PDBs allow this many disruptions, until one is tightened to none
CPU_REQUEST_M = 100
NODE_CPU_M = 4000
HIGH, LOW = 70, 45
HOT_FRACTION = 2.5  # of its request, a heated pod uses
HEAT_LABEL = "soak.descheduler.dev/heat"

CALM_RULE = {"cpu": {"fraction": 0.3}, "memory": {"fraction": 0.5}}
# A pod labelled hot uses HOT_FRACTION of its request; its replacement (from the template) is calm,
# so heating the pods of one node makes that node, and only it, hot until some of them move.
USAGE = UsageSpec.model_validate(
    {
        "default": CALM_RULE,
        "pods": [
            {
                "selector": {"matchLabels": {HEAT_LABEL: "hot"}},
                "cpu": {"fraction": HOT_FRACTION},
                "memory": {"fraction": 0.5},
            }
        ],
    }
)

FAULTS = ("apiserver", "etcd", "kill", "race", "delete-object", "delete-node", "pdb", "policy")
# The steps of a move (moves_support.STEPS) at which each fault may strike.
FAULT_STEPS = {
    "apiserver": (0, 1, 2, 3),
    "etcd": (0, 1, 2, 3),
    "kill": (0, 1, 2, 3),
    "race": (0, 1, 2, 3),
    "delete-object": (0, 1, 2, 3),
    "delete-node": (1, 2),  # the Reservation held on the node, before or right after the eviction
    "pdb": (0, 1),  # before the eviction
    "policy": (0, 1, 2, 3),
}


def policy_text(run: str, namespace: str, *, valid: bool = True) -> str:
    text = controller_policy(run, namespace, PolicyTimings(INTERVAL, TTL, COOLDOWN, PER_WINDOW, HIGH, LOW))
    # An unknown field: `policy validate` names it; the controller must keep its last valid policy.
    return text if valid else text + "notAField: pushed by hand\n"


EXTENDER_POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
loadSource: {type: nodeMetric}
"""


# ---------------------------------------------------------------------------------- the schedule


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str
    step: int  # STEPS[step] of a move in flight triggers it
    delay: float  # seconds after the trigger
    downtime: float = 0.0  # apiserver, etcd: how long the process stays down
    target: str = ""  # delete-object: "Reservation" or "PodMigrationJob"

    def describe(self) -> str:
        extra = f" down {self.downtime:.1f}s" if self.downtime else ""
        extra += f" {self.target}" if self.target else ""
        return f"{self.kind} at '{STEPS[self.step]}' +{self.delay:.2f}s{extra}"


def schedule(seed: int, rounds: int) -> list[Fault]:
    """Every fault kind once per round, in a seeded order, each at a seeded step and delay."""
    rng = random.Random(seed)
    faults = []
    for _ in range(rounds):
        for kind in rng.sample(FAULTS, len(FAULTS)):
            target = ""
            steps = FAULT_STEPS[kind]
            if kind == "delete-object":
                target = rng.choice(("Reservation", "PodMigrationJob"))
                if target == "Reservation":
                    steps = (0, 1)  # before it is consumed
            downtime = round(rng.uniform(0.5, 3.0), 2) if kind in ("apiserver", "etcd") else 0.0
            faults.append(Fault(kind, rng.choice(steps), round(rng.uniform(0.0, 0.5), 2), downtime, target))
    return faults


# ---------------------------------------------------------------------------------- the cluster


@dataclass
class Soak:
    """The module's own control plane (faults restart its processes, so not the session's) and what
    runs on it for the soak."""

    plane: ControlPlane
    kube: KubeClient
    workdir: Path
    namespace: str
    run: str
    nodes: list[str]
    controller_kubeconfig: Path
    policy: Path
    extender: OurProcess
    processes: list[Process]
    standin: KubeletStandIn
    publisher: LoadPublisher


def _skip_without_binaries() -> Path:
    assets, why = assets_folder()
    if assets is None:
        pytest.skip(why)
    missing = [b for b in ("kube-controller-manager", "kube-scheduler") if not (assets / b).is_file()]
    if missing:
        pytest.skip(f"{assets} has no {', '.join(missing)}: {HOW_TO_GET}")
    return assets


def pdb(name: str, min_available: int) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}},
    }


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Soak]:
    assets = _skip_without_binaries()
    workdir = tmp_path_factory.mktemp("soak")
    plane = ControlPlane(assets, workdir / "plane").start()
    kube = connect(plane.kubeconfig, qps=0, burst=0, timeout=30)
    parts: list[Any] = []
    extender: OurProcess | None = None
    try:
        assert plane.certs is not None
        install_our_crds(kube)
        install_node_metric_crd(kube)
        installed.install(kube)
        tokens = {
            account: installed.token_kubeconfig(
                plane.kubeconfig, plane.certs.ca, workdir / f"{account}.kubeconfig", account
            )
            for account in (installed.CONTROLLER, installed.EXTENDER)
        }
        run, namespace = "soak", "soak"
        create_namespace(kube, namespace)
        nodes = [f"soak-{i}" for i in range(1, NODES + 1)]
        create_test_nodes(kube, nodes, run, cpu=f"{NODE_CPU_M}m", memory="16Gi")
        processes = [plane.start_controller_manager()]
        (workdir / "extender-policy.yaml").write_text(EXTENDER_POLICY)
        extender = extender_process(
            workdir, tokens[installed.EXTENDER], workdir / "extender-policy.yaml", installed.NAMESPACE
        ).start()
        extender.wait_ready("/readyz", SLACK * STARTUP)
        config = scheduler_configuration(
            workdir / "load-aware-scheduler.yaml", plane.kubeconfig, f"http://127.0.0.1:{extender.port}"
        )
        processes.append(plane.start_scheduler(config))
        standin = KubeletStandIn(kube, nodes).start()
        parts.append(standin)
        publisher = LoadPublisher(kube, nodes, USAGE, period=PUBLISH).start()
        parts.append(publisher)
        for name, replicas in WORKLOADS.items():
            manifest = deployment(
                name, replicas, run, cpu=f"{CPU_REQUEST_M}m", memory="64Mi", scheduler_name=LOAD_AWARE_SCHEDULER
            )
            create(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments", manifest)
            create(
                kube, f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", pdb(name, replicas - PDB_SPARE)
            )
        policy = workdir / "policy.yaml"
        policy.write_text(policy_text(run, namespace))
        soak = Soak(
            plane, kube, workdir, namespace, run, nodes, tokens[installed.CONTROLLER], policy, extender,
            processes, standin, publisher,
        )  # fmt: skip
        wait_until(
            lambda: workloads_back(soak),
            SLACK * (STARTUP + sum(WORKLOADS.values()) * 0.2),
            "every pod Running and Ready",
            lambda: standin.errors,
        )
        yield soak
    finally:
        for part in reversed(parts):
            with contextlib.suppress(Exception):
                part.stop()
        if extender is not None:
            extender.stop()
        kube.close()
        plane.stop()


def workloads_back(soak: Soak) -> bool:
    """Every workload has its replicas Running and Ready, none terminating."""
    pods = [p for p in list_pods(soak.kube, soak.namespace) if not p["metadata"].get("deletionTimestamp")]
    return all(
        sum(ready(p) and p["metadata"]["labels"].get("app") == name for p in pods) >= replicas
        for name, replicas in WORKLOADS.items()
    )


def patiently(call: Callable[[], Any], what: str, timeout: float = PODS_BACK) -> Any:
    """`call()`, retried while the API is away (a fault of this test's own making)."""
    found: list[Any] = []

    def done() -> bool:
        try:
            found.append(call())
            return True
        except ClusterUnreachableError:
            return False
        except KubeApiError as error:
            if error.status >= 500:
                return False
            raise

    wait_until(done, timeout, what)
    return found[0]


def iso_seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


# ---------------------------------------------------------------------------------- the controllers


@dataclass
class Candidate:
    process: OurProcess
    killed_at: float | None = None  # wall time of the SIGKILL
    exits: int = 0  # times it exited by itself and was started again


class Controllers:
    """The `descheduler run` candidates for the Lease; one that exits by itself is started again (as
    Kubernetes restarts a pod), one killed by the test stays dead."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.all: list[Candidate] = []
        self.alive: list[Candidate] = []
        self.restarts = 0
        self._lock = threading.Lock()

    def start(self, count: int = 1) -> None:
        made = []
        for _ in range(count):
            identity = f"controller-{len(self.all)}"
            process = controller_process(
                self.soak.workdir,
                self.soak.controller_kubeconfig,
                self.soak.policy,
                lease_namespace=installed.NAMESPACE,
                lease_name=installed.CONTROLLER_LEASE,
                identity=identity,
                lease=LEASE,
            )
            candidate = Candidate(process)
            self.all.append(candidate)
            made.append(candidate)
        for candidate in made:  # started together: they race
            candidate.process.start()
            self.alive.append(candidate)

    def supervise(self) -> None:
        with self._lock:
            for candidate in self.alive:
                if not candidate.process.alive():
                    candidate.exits += 1
                    self.restarts += 1
                    candidate.process.start()  # the same identity and log, as a restarted container

    def leader(self) -> Candidate | None:
        return next((c for c in self.alive if c.process.metric("descheduler_leader") == 1.0), None)

    def kill(self, candidate: Candidate) -> None:
        with self._lock:
            candidate.process.kill()
            candidate.killed_at = time.time()
            self.alive.remove(candidate)

    def stop(self) -> None:
        for candidate in self.alive:
            candidate.process.stop()

    def records(self, event: str) -> list[tuple[float, str]]:
        """(wall time, identity) of every log record named `event`, of every candidate."""
        found = []
        for candidate in self.all:
            for line in candidate.process.text().splitlines():
                if event not in line or not line.startswith("{"):
                    continue  # cheaper than decoding every line: this runs every poll
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if record.get("event") == event and "timestamp" in record:
                        found.append((iso_seconds(record["timestamp"]), candidate.process.name))
        return sorted(found)

    def leadership(self) -> list[tuple[str, float, float]]:
        """(identity, from, to) for every stretch a candidate held the Lease and worked: from "became
        leader" to its "stopped work", or to its SIGKILL, or to now."""
        stretches = []
        for candidate in self.all:
            began: float | None = None
            for record in candidate.process.records():
                event, stamp = record.get("event"), record.get("timestamp")
                if stamp is None:
                    continue
                if event == "became leader":
                    if began is not None:  # a restarted process: the killed one's stretch ended
                        stretches.append((candidate.process.name, began, iso_seconds(stamp)))
                    began = iso_seconds(stamp)
                elif event == "stopped work" and began is not None:
                    stretches.append((candidate.process.name, began, iso_seconds(stamp)))
                    began = None
            if began is not None:
                stretches.append((candidate.process.name, began, candidate.killed_at or time.time()))
        return stretches


# The loggers of the controller's writes (jobs, Reservations, evictions); their info records are acts.
ACTING_LOGGERS = (
    "descheduler.migration.pass_reads",
    "descheduler.migration.executor",
    "descheduler.migration.cleanup",
    "descheduler.migration.controller",
)


def acts_after_losing(records: list[Obj]) -> list[str]:
    """One process's acts (info records of ACTING_LOGGERS) after it logged losing the Lease and
    before it became leader again."""
    found, lost = [], False
    for record in records:
        event = record.get("event")
        if event == "became leader":
            lost = False
        elif event == "lost the leader lease":
            lost = True
        elif lost and record.get("level") == "info" and record.get("logger") in ACTING_LOGGERS:
            found.append(f"{record.get('timestamp')} {event} {record.get('job', '')}")
    return found


@dataclass(frozen=True, slots=True)
class Write:
    """One write of the controllers' ServiceAccount, from the audit log."""

    name: str  # the object's
    what: str  # "create pods/eviction", "update podmigrationjobs/status", …
    received: float
    completed: float


@dataclass(frozen=True, slots=True)
class Act:
    """A write a candidate logged (an info record of ACTING_LOGGERS): when, what, on which objects."""

    at: float
    event: str
    names: frozenset[str]  # the job's name (its Reservation's too) and its pod's


def acts_of(records: list[Obj]) -> list[Act]:
    found = []
    for record in records:
        if record.get("level") == "info" and record.get("logger") in ACTING_LOGGERS and "timestamp" in record:
            names = {str(record.get("job", "")), str(record.get("pod", "")).rpartition("/")[2]} - {""}
            found.append(Act(iso_seconds(record["timestamp"]), str(record.get("event")), frozenset(names)))
    return found


# The log record of a write follows its answer; the audit log's clock and the process's are the same.
CLOCK_SLACK = 0.05
# The writes an act's log record reports (any other act: the job's status).
JOB_STATUS = frozenset({"update podmigrationjobs/status", "patch podmigrationjobs/status"})
WRITES_OF = {
    "pod evicted": frozenset({"create pods/eviction", "delete pods"}),
    "reservation created": frozenset({"create reservations"}),
    "reservation released": frozenset({"delete reservations"}),
    "deleted an orphan reservation": frozenset({"delete reservations"}),
    "reservation expired": frozenset({"update reservations/status", "patch reservations/status"}),
    "migration job created": frozenset({"create podmigrationjobs"}),
}


@dataclass
class Takeovers:
    """What candidates did after another became leader, while they still worked."""

    overlaps: list[str] = field(default_factory=list)  # writes sent after the takeover
    landed_late: list[str] = field(default_factory=list)  # sent before it, applied after it
    evictions_landed_late: list[str] = field(default_factory=list)


def judge_takeovers(
    stretches: list[tuple[str, float, float]], acts: dict[str, list[Act]], writes: list[Write]
) -> Takeovers:
    """For every act of a candidate P logged after another candidate Q became leader within P's
    stretch: the audit log's write it reports (the last one on its objects answered before it was
    logged) sent after Q's takeover is a leader overlap; one sent before it and applied after (a
    request the apiserver held while etcd was away) landed late."""
    judged = Takeovers()
    for one, one_from, one_to in stretches:
        for other, other_from, _ in stretches:
            if other == one or not one_from < other_from < one_to:
                continue
            for act in acts.get(one, []):
                if not other_from <= act.at <= one_to:
                    continue
                kinds = WRITES_OF.get(act.event, JOB_STATUS)
                done = [
                    w for w in writes if w.name in act.names and w.what in kinds and w.completed <= act.at + CLOCK_SLACK
                ]
                write = max(done, key=lambda w: w.completed, default=None)
                said = f"{one}'s {act.event} {sorted(act.names)} after {other} became leader"
                if write is None or write.received >= other_from:
                    judged.overlaps.append(f"{said}: sent {write.received - other_from if write else 0:+.3f}s after")
                elif write.completed >= other_from:
                    judged.landed_late.append(
                        f"{said}: {write.what} sent before, applied {write.completed - other_from:.3f}s after"
                    )
                    if write.what in ("create pods/eviction", "delete pods"):
                        judged.evictions_landed_late.append(judged.landed_late[-1])
    return judged


def overlaps(stretches: list[tuple[str, float, float]]) -> list[str]:
    """Every pair of leadership stretches of two candidates that share a moment."""
    found = []
    for i, (one, a_from, a_to) in enumerate(stretches):
        for two, b_from, b_to in stretches[i + 1 :]:
            if one != two and min(a_to, b_to) > max(a_from, b_from):
                found.append(f"{one} [{a_from:.3f}, {a_to:.3f}] and {two} [{b_from:.3f}, {b_to:.3f}]")
    return found


# ---------------------------------------------------------------------------------- the trigger


class Trigger:
    """A MoveRecorder hook: once armed, remembers the first job of ours to reach the armed step."""

    def __init__(self, recorder: MoveRecorder) -> None:
        self.recorder = recorder
        self.fired = threading.Event()
        self.job = ""
        self.job_writes: list[float] = []  # wall times the controller wrote a job (not deletions)
        self.deleted_jobs: set[str] = set()  # the recorder keeps their last state
        self._step: int | None = None
        self._lock = threading.Lock()

    def arm(self, step: int) -> None:
        with self._lock:
            self.fired.clear()
            self.job = ""
            self._step = step

    def __call__(self, kind: str, kind_type: str, obj: Obj, previous: Obj | None) -> None:
        if kind == "job" and kind_type in ("ADDED", "MODIFIED"):
            self.job_writes.append(time.time())
        if kind == "job" and kind_type == "DELETED":
            self.deleted_jobs.add(obj["metadata"]["name"])
        with self._lock:
            if (
                self._step is None
                or kind_type == "SYNC"
                or not reached_step(self._step, kind, kind_type, obj, previous)
            ):
                return
            if kind == "job":
                job = obj["metadata"]["name"]
            elif kind == "pod":
                found = self.recorder.job_of_pod(obj["metadata"]["uid"])
                job = found["metadata"]["name"] if found else ""
            else:
                job = (obj["metadata"].get("labels") or {}).get(LABEL_JOB, "")
            if not job:
                return
            self.job, self._step = job, None
            self.fired.set()


# ---------------------------------------------------------------------------------- the soak


@dataclass
class Figures:
    seed: int
    rounds: int
    schedule: list[str]
    faults: dict[str, int] = field(default_factory=dict)
    moves_attempted: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)  # "Succeeded", "Failed/Timeout", …
    evictions: int = 0
    evictions_beyond_pdb: int = 0
    pods_evicted_twice: int = 0
    pods_deleted_by_controller: int = 0
    evictions_without_job: int = 0
    reservations_past_ttl: int = 0
    orphan_reservations_at_end: int = 0
    leader_overlaps: int = 0  # writes a candidate sent after another became leader
    leadership_stretches_overlapping: int = 0  # "became leader" .. "stopped work" of two candidates
    writes_landed_after_takeover: int = 0  # sent while leading, applied after another took over
    evictions_landed_after_takeover: int = 0
    acts_after_losing_lease: int = 0
    workloads_not_back: int = 0
    controller_exits_restarted: int = 0
    pods_back_seconds_max: float = 0.0
    recovery_seconds: dict[str, float] = field(default_factory=dict)  # fault i → seconds
    recovery_seconds_median: float = 0.0
    recovery_seconds_max: float = 0.0
    round_seconds: dict[str, float] = field(default_factory=dict)  # fault i → its move, fault and recovery
    took_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


class SoakRun:
    def __init__(self, soak: Soak, faults: list[Fault], figures: Figures) -> None:
        self.soak = soak
        self.kube = soak.kube
        self.faults = faults
        self.figures = figures
        self.controllers = Controllers(soak)
        self.recorder = MoveRecorder(soak.kube, soak.namespace)
        self.trigger = Trigger(self.recorder)
        self.recorder.hooks.append(self.trigger)
        self.excused_pods: set[str] = set()  # names of pods this test deleted (the node went away)
        self.tight: list[tuple[str, float, float]] = []  # (workload, from, to): its PDB allowed none
        self.reservation_ages: dict[str, float] = {}  # name → the oldest age seen while it lived
        self.heated: list[str] = []
        self._heated_at = -HEAT_SETTLES
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="soak-sampler", daemon=True)

    # ------------------------------------------------------------------ waiting

    def wait(
        self, check: Callable[[], bool], timeout: float, what: str, state: Callable[[], Any] | None = None
    ) -> float:
        """wait_until, restarting controllers that exited meanwhile."""

        def checked() -> bool:
            self.controllers.supervise()
            return check()

        return wait_until(checked, timeout, what, state or self.state)

    def state(self) -> Any:
        leader = self.controllers.leader()
        return {
            "open jobs": [summary(j) for j in self.open_jobs()],
            "reservations": [(r.name, r.node, r.phases) for r in self.recorder.live_reservations()],
            "leader": leader.process.name if leader else None,
            "leader log": leader.process.tail(12) if leader else [c.process.tail(5) for c in self.controllers.alive],
        }

    def _sample(self) -> None:
        """Every second: how old each live Reservation of ours is (the TTL bound holds at all times)."""
        while not self._stop.wait(1.0):
            try:
                items = self.kube.get_json(RESERVATION_PATH)["items"]
            except (KubeApiError, ClusterUnreachableError):
                continue
            now = time.time()
            for item in items:
                name = item["metadata"]["name"]
                age = now - iso_seconds(item["metadata"]["creationTimestamp"])
                self.reservation_ages[name] = max(self.reservation_ages.get(name, 0.0), age)

    # ------------------------------------------------------------------ moves

    def heat_if_idle(self) -> None:
        """When no node is hot, heat the node with the most pods (label its pods hot) and cool every
        other pod, so that node alone is hot and the others can take its load. (Jobs may still be
        open: one whose Reservation or target went away waits out its TTL, moving nothing.)"""
        if any(u.get("cpu", 0) > NODE_CPU_M * HIGH / 100 for u in self.soak.publisher.last.values()):
            return
        # The last heat is published and planned on before another is judged necessary.
        if time.monotonic() - self._heated_at < HEAT_SETTLES:
            return
        try:
            pods = [p for p in list_pods(self.kube, self.soak.namespace) if not p["metadata"].get("deletionTimestamp")]
        except (KubeApiError, ClusterUnreachableError):
            return
        on: dict[str, list[Obj]] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and ready(pod):
                on.setdefault(node, []).append(pod)
        if not on:
            return
        node = max(sorted(on), key=lambda n: len(on[n]))
        with contextlib.suppress(KubeApiError, ClusterUnreachableError):
            for pod in pods:
                hot = (pod.get("spec") or {}).get("nodeName") == node
                if ((pod["metadata"].get("labels") or {}).get(HEAT_LABEL) == "hot") != hot:
                    path = f"/api/v1/namespaces/{self.soak.namespace}/pods/{pod['metadata']['name']}"
                    merge_patch(self.kube, path, {"metadata": {"labels": {HEAT_LABEL: "hot" if hot else None}}})
            self.heated.append(f"{node} ({len(on[node])} pods)")
        self._heated_at = time.monotonic()

    def open_jobs(self) -> list[Obj]:
        """Jobs of ours not ended and not deleted."""
        deleted = self.trigger.deleted_jobs
        return [
            j for j in self.recorder.job_list() if phase(j) not in TERMINAL and j["metadata"]["name"] not in deleted
        ]

    def wait_for_step(self, step: int) -> str:
        """Arm the trigger and keep moves coming until a job reaches STEPS[step]; that job's name."""
        self.trigger.arm(step)

        def fired() -> bool:
            if self.trigger.fired.is_set():
                return True
            self.heat_if_idle()
            return False

        self.wait(fired, MOVE_IN_FLIGHT, f"a move to reach '{STEPS[step]}'")
        return self.trigger.job

    # ------------------------------------------------------------------ faults

    def inject(self, fault: Fault, job: str) -> float:
        """Inject `fault` on `job` (a move in flight); the wall time the fault ended."""
        kind = fault.kind
        if kind == "apiserver":
            self.soak.plane.restart_apiserver(fault.downtime)
        elif kind == "etcd":
            self.soak.plane.restart_etcd(fault.downtime)
        elif kind == "kill":
            leader = self.controllers.leader()
            if leader is not None:
                self.controllers.kill(leader)
            self.controllers.start(1)
        elif kind == "race":
            for candidate in list(self.controllers.alive):
                self.controllers.kill(candidate)
            self.controllers.start(CANDIDATES)
        elif kind == "delete-object":
            self._delete_object(fault.target, job)
        elif kind == "delete-node":
            self._delete_node(job)
        elif kind == "pdb":
            self._tighten_pdb(job)
        elif kind == "policy":
            self._push_invalid_policy()
        return time.time()

    def _delete_object(self, target: str, job: str) -> None:
        if target == "PodMigrationJob":
            patiently(lambda: delete_quietly(self.kube, f"{PMJ_PATH}/{job}"), "the job deleted")
            return
        names = [r.name for r in self.recorder.live_reservations() if r.job == job]
        for name in names:
            patiently(lambda: delete_quietly(self.kube, f"{RESERVATION_PATH}/{name}"), "the reservation deleted")  # noqa: B023

    def _delete_node(self, job: str) -> None:
        """Delete the node the job's Reservation holds room on and, as the pod garbage collector would
        (after its quarantine), the pods bound to it; the node comes back once the job has ended."""
        nodes = {r.node for r in self.recorder.reservations.values() if r.job == job}
        for node in nodes:
            delete_quietly(self.kube, f"/api/v1/nodes/{node}")
            for pod in list_pods(self.kube, self.soak.namespace):
                if (pod.get("spec") or {}).get("nodeName") == node:
                    self.excused_pods.add(pod["metadata"]["name"])
                    delete_quietly(
                        self.kube,
                        f"/api/v1/namespaces/{self.soak.namespace}/pods/{pod['metadata']['name']}",
                        {"gracePeriodSeconds": 0},
                    )
        self.wait(lambda: self._ended(job), SLACK * TTL, f"job {job} decided with its node gone")
        create_test_nodes(self.kube, sorted(nodes), self.soak.run, cpu=f"{NODE_CPU_M}m", memory="16Gi")

    def _ended(self, job: str) -> bool:
        found = self.recorder.jobs.get(job)
        return found is None or phase(found) in TERMINAL or job not in self._live_jobs()

    def _live_jobs(self) -> set[str]:
        try:
            return {j["metadata"]["name"] for j in self.kube.get_json(PMJ_PATH)["items"]}
        except (KubeApiError, ClusterUnreachableError):
            return set(self.recorder.jobs)

    def _tighten_pdb(self, job: str) -> None:
        """minAvailable raised to the workload's pod count (its replicas), so no disruption is allowed
        whatever is Ready at the moment, until an eviction of it was refused or the job ended; then
        put back. (Raised to the healthy count read at one moment, it allows one again as soon as a
        replacement that was not Ready yet becomes so: an eviction then is no breach.)"""
        found = self.recorder.jobs.get(job) or {}
        pod_name = ((found.get("spec") or {}).get("podRef") or {}).get("name", "")
        workload = next((w for w in WORKLOADS if pod_name.startswith(f"{w}-")), next(iter(WORKLOADS)))
        path = f"/apis/policy/v1/namespaces/{self.soak.namespace}/poddisruptionbudgets/{workload}"
        merge_patch(self.kube, path, {"spec": {"minAvailable": WORKLOADS[workload]}})
        since = time.time()  # evictions received from now on find the budget at none (or not yet observed)

        def refused_or_ended() -> bool:
            return self._ended(job) or any(
                e["_received"] >= since and e["_code"] == 429 and e["_pod"].startswith(f"{workload}-")
                for e in self.evictions()
            )

        self.wait(refused_or_ended, SLACK * (INTERVAL + MIGRATION_PERIOD) * 2, "an eviction refused by the PDB")
        self.tight.append((workload, since, time.time()))
        merge_patch(self.kube, path, {"spec": {"minAvailable": WORKLOADS[workload] - PDB_SPARE}})

    def _push_invalid_policy(self) -> None:
        """An invalid policy until the leader rejected it and planned a cycle on the last valid one,
        then a valid one again."""
        since = time.time()
        self.soak.policy.write_text(policy_text(self.soak.run, self.soak.namespace, valid=False))

        def rejected_and_still_planning() -> bool:
            rejected = [
                t
                for t, _ in self.controllers.records("policy change rejected; keeping the last valid policy")
                if t >= since
            ]
            return bool(rejected) and any(t > rejected[0] for t, _ in self.controllers.records("cycle planned"))

        self.wait(
            rejected_and_still_planning, SLACK * (INTERVAL + COMEBACK), "the invalid policy rejected, cycles going on"
        )
        self.soak.policy.write_text(policy_text(self.soak.run, self.soak.namespace))

        def accepted() -> bool:
            leader = self.controllers.leader()
            return leader is not None and leader.process.metric("descheduler_policy_rejected") == 0.0

        self.wait(accepted, SLACK * (INTERVAL + COMEBACK), "the valid policy accepted")

    # ------------------------------------------------------------------ counting

    def evictions(self) -> list[Obj]:
        """The controller's eviction calls from the audit log, with their pod, answer and time."""
        found = []
        for event in self.soak.plane.audit_events(installed.user(installed.CONTROLLER)):
            ref = event.get("objectRef") or {}
            if ref.get("resource") == "pods" and ref.get("subresource") == "eviction" and event.get("verb") == "create":
                event["_pod"] = ref.get("name", "")
                event["_code"] = (event.get("responseStatus") or {}).get("code", 0)
                event["_received"] = iso_seconds(event["requestReceivedTimestamp"])
                found.append(event)
        return found

    def writes(self) -> list[Write]:
        """Every write the controllers' ServiceAccount made, from the audit log."""
        found = []
        for event in self.soak.plane.audit_events(installed.user(installed.CONTROLLER)):
            ref = event.get("objectRef") or {}
            if event.get("verb") not in ("create", "update", "patch", "delete") or not ref.get("name"):
                continue
            what = f"{event['verb']} {ref.get('resource', '')}" + (
                f"/{ref['subresource']}" if ref.get("subresource") else ""
            )
            received, completed = iso_seconds(event["requestReceivedTimestamp"]), iso_seconds(event["stageTimestamp"])
            found.append(Write(ref["name"], what, received, completed))
        return found

    def comeback(self, ended: float) -> float | None:
        """Seconds from `ended` to the controller's first sign of work after it: a cycle planned or a
        job written (None: not yet)."""
        cycles = [t for t, _ in self.controllers.records("cycle planned") if t > ended]
        writes = [t for t in self.trigger.job_writes if t > ended]
        first = min([*cycles[:1], *writes[:1]], default=None)
        return None if first is None else first - ended

    def count(self) -> list[str]:
        """Every invariant, from the API, the audit log and the logs; the problems found."""
        problems = []
        evictions = self.evictions()
        succeeded = [e for e in evictions if e["_code"] in (200, 201)]
        self.figures.evictions = len({e["_pod"] for e in succeeded})
        twice = [pod for pod, n in Counter(e["_pod"] for e in succeeded).items() if n > 1]
        self.figures.pods_evicted_twice = len(twice)
        problems += [f"pod {pod} evicted twice" for pod in twice]
        beyond = [
            e
            for e in succeeded
            for workload, since, until in self.tight
            if e["_pod"].startswith(f"{workload}-") and since <= e["_received"] <= until
        ]
        self.figures.evictions_beyond_pdb = len(beyond)
        problems += [f"pod {e['_pod']} evicted while its PDB allowed no disruption" for e in beyond]
        deleted = [
            e
            for e in self.soak.plane.audit_events(installed.user(installed.CONTROLLER))
            if (e.get("objectRef") or {}).get("resource") == "pods"
            and not (e.get("objectRef") or {}).get("subresource")
            and e.get("verb") == "delete"
        ]
        self.figures.pods_deleted_by_controller = len(deleted)
        problems += [f"the controller deleted pod {(e.get('objectRef') or {}).get('name')}" for e in deleted]
        # The recorder's watch may lag just after an apiserver restart: the jobs listed now count too.
        listed = patiently(lambda: self.kube.get_json(PMJ_PATH)["items"], "the jobs listed")
        subjects = {
            ((j.get("spec") or {}).get("podRef") or {}).get("name") for j in [*self.recorder.job_list(), *listed]
        }
        stray = sorted({e["_pod"] for e in succeeded} - subjects)
        self.figures.evictions_without_job = len(stray)
        problems += [f"pod {pod} evicted but no job moves it" for pod in stray]
        past = {n: a for n, a in self.reservation_ages.items() if a > TTL + RESERVATION_GRACE}
        self.figures.reservations_past_ttl = len(past)
        problems += [f"reservation {n} lived {a:.0f}s (TTL {TTL:g}s)" for n, a in sorted(past.items())]
        stretches = self.controllers.leadership()
        self.figures.leadership_stretches_overlapping = len(overlaps(stretches))
        acts = {c.process.name: acts_of(c.process.records()) for c in self.controllers.all}
        judged = judge_takeovers(stretches, acts, self.writes())
        self.figures.leader_overlaps = len(judged.overlaps)
        problems += [f"leader overlap: {o}" for o in judged.overlaps]
        # A write in flight when the Lease was lost (the apiserver holding it while etcd is away) may
        # be applied after a standby took over: a figure for status updates and Reservations (the
        # resourceVersion and the job's fixed names make them safe); never for an eviction, which
        # eviction_client bounds so that it cannot.
        self.figures.writes_landed_after_takeover = len(judged.landed_late)
        self.figures.evictions_landed_after_takeover = len(judged.evictions_landed_late)
        problems += [f"eviction landed after the takeover: {e}" for e in judged.evictions_landed_late]
        losing = [a for c in self.controllers.all for a in acts_after_losing(c.process.records())]
        self.figures.acts_after_losing_lease = len(losing)
        self.figures.controller_exits_restarted = self.controllers.restarts
        return problems

    # ------------------------------------------------------------------ the run

    def run(self) -> None:
        figures = self.figures
        began = time.monotonic()
        seen: set[str] = set()  # problems reported already (the counts are cumulative)
        self.recorder.start()
        self._sampler.start()
        try:
            self.controllers.start(CANDIDATES)  # a leader and a standby, as deploy/ runs them
            self.wait(lambda: self.controllers.leader() is not None, COMEBACK, "a leader")
            for index, fault in enumerate(self.faults):
                self._one_fault(f"{index}:{fault.kind}", fault, seen)
            self.wait(self._settled, SLACK * (TTL + STARTUP), "every job ended and no Reservation left")
        finally:
            self._stop.set()
            self._sampler.join(10)
            self.controllers.stop()
            self.recorder.stop()
            figures.took_seconds = round(time.monotonic() - began, 1)
        figures.problems += [p for p in self.count() if p not in seen]
        figures.orphan_reservations_at_end = len(
            patiently(lambda: self.kube.get_json(RESERVATION_PATH)["items"], "reservations")
        )
        jobs = self.recorder.job_list()
        figures.moves_attempted = len(jobs)
        deleted = self.trigger.deleted_jobs
        figures.outcomes = dict(
            Counter("deleted by hand" if j["metadata"]["name"] in deleted else outcome(j) for j in jobs)
        )
        recoveries = list(figures.recovery_seconds.values())
        figures.recovery_seconds_median = round(statistics.median(recoveries), 3) if recoveries else 0.0
        figures.recovery_seconds_max = max(recoveries, default=0.0)

    def _one_fault(self, key: str, fault: Fault, seen: set[str]) -> None:
        """A move brought to the fault's step, the fault, then the controller and the workloads back."""
        figures = self.figures
        began = time.monotonic()
        job = self.wait_for_step(fault.step)
        if fault.delay:
            time.sleep(fault.delay)  # the schedule's offset into the move, not a wait for a condition
        ended = self.inject(fault, job)
        figures.faults[fault.kind] = figures.faults.get(fault.kind, 0) + 1
        what = f"fault {key} ({fault.describe()}, job {job})"
        self.wait(lambda: self.comeback(ended) is not None, COMEBACK, f"the controller back after {what}")
        back = self.comeback(ended)
        assert back is not None
        figures.recovery_seconds[key] = round(back, 3)
        try:
            took = self.wait(lambda: workloads_back(self.soak), PODS_BACK, f"workloads back after {what}")
            figures.pods_back_seconds_max = max(figures.pods_back_seconds_max, round(took, 3))
        except AssertionError as error:
            figures.workloads_not_back += 1
            figures.problems.append(f"after {what}: {error}")
        problems = self.count()
        figures.problems += [f"after {what}: {p}" for p in problems if p not in seen]
        seen.update(problems)
        figures.round_seconds[key] = round(time.monotonic() - began, 1)

    def _settled(self) -> bool:
        jobs = self.kube.get_json(PMJ_PATH)["items"]
        ours = [j for j in jobs if ((j.get("spec") or {}).get("podRef") or {}).get("namespace") == self.soak.namespace]
        return all(phase(j) in TERMINAL for j in ours) and not self.kube.get_json(RESERVATION_PATH)["items"]


TERMINAL = {"Succeeded", "Failed", "Aborted"}


def outcome(job: Obj) -> str:
    """The job's phase, and its reason when that says more ("Failed/Timeout")."""
    reason = (job.get("status") or {}).get("reason", "")
    return f"{phase(job)}/{reason}" if reason and reason != phase(job) else phase(job) or "Pending"


def test_a_day_under_faults_loses_nothing(soak: Soak) -> None:
    seed = int(os.environ.get("SOAK_REAL_SEED", "18"))
    rounds = int(os.environ.get("SOAK_REAL_ROUNDS", "1"))
    faults = schedule(seed, rounds)
    figures = Figures(seed, rounds, [f.describe() for f in faults])
    soak_run = SoakRun(soak, faults, figures)
    try:
        soak_run.run()
    finally:
        report = os.environ.get("SOAK_REAL_REPORT")
        if report:
            Path(report).write_text(json.dumps(asdict(figures), indent=2) + "\n")
        print(f"\nsoak on the real control plane, seed {seed}:\n" + json.dumps(asdict(figures), indent=2))
        print(f"heated: {soak_run.heated}")
    assert not figures.problems, f"seed {seed}, schedule {figures.schedule}:\n" + "\n".join(figures.problems)
    assert figures.orphan_reservations_at_end == 0, f"seed {seed}"
    assert sum(figures.faults.values()) == len(faults)
    assert figures.moves_attempted >= len(faults), figures.outcomes


def test_the_schedule_is_the_seeds() -> None:
    assert schedule(7, 2) == schedule(7, 2)
    assert schedule(7, 1) != schedule(8, 1)
    assert sorted(f.kind for f in schedule(7, 2)) == sorted(FAULTS * 2)
    for fault in schedule(7, 3):
        assert fault.step in FAULT_STEPS[fault.kind]


def test_leader_overlap_is_two_candidates_working_at_once() -> None:
    assert overlaps([("a", 0.0, 5.0), ("b", 5.5, 9.0), ("a", 9.5, 12.0)]) == []
    assert len(overlaps([("a", 0.0, 5.0), ("b", 4.0, 9.0)])) == 1


def test_an_act_after_losing_the_lease_is_counted() -> None:
    def record(event: str, logger: str = "descheduler.controller.leader", **extra: str) -> Obj:
        return {"event": event, "logger": logger, "level": "info", "timestamp": "t", **extra}

    evicted = record("pod evicted", "descheduler.migration.pass_reads", job="web-1")
    assert acts_after_losing([record("became leader"), evicted]) == []
    assert acts_after_losing([record("became leader"), record("lost the leader lease"), evicted]) == [
        "t pod evicted web-1"
    ]
    assert acts_after_losing([record("lost the leader lease"), record("became leader"), evicted]) == []


def test_a_takeover_tells_a_write_sent_after_it_from_one_that_landed_late() -> None:
    stretches = [("a", 0.0, 10.0), ("b", 8.0, 20.0)]
    acts = {
        "a": [
            Act(5.0, "pod evicted", frozenset({"j1", "p1"})),  # before the takeover: not judged
            Act(8.5, "replacement bound", frozenset({"j1", "p1"})),  # sent at 7, held, applied at 8.4
            Act(9.5, "pod evicted", frozenset({"j2", "p2"})),  # sent at 9: after b became leader
        ]
    }
    writes = [
        Write("p1", "create pods/eviction", 4.9, 4.95),
        Write("j1", "update podmigrationjobs/status", 7.0, 8.4),
        Write("p2", "create pods/eviction", 9.0, 9.4),
    ]
    judged = judge_takeovers(stretches, acts, writes)
    assert len(judged.overlaps) == 1 and "pod evicted ['j2', 'p2']" in judged.overlaps[0]
    assert len(judged.landed_late) == 1 and "update podmigrationjobs/status" in judged.landed_late[0]
    assert judged.evictions_landed_late == []
    late_eviction = judge_takeovers(
        stretches, {"a": [Act(8.5, "pod evicted", frozenset({"p3"}))]}, [Write("p3", "create pods/eviction", 7.5, 8.45)]
    )
    assert len(late_eviction.evictions_landed_late) == 1
