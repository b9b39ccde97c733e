"""The whole loop on a real control plane (issue 19): kube-apiserver, etcd, kube-controller-manager
(Deployments, ReplicaSets, disruption, garbage collection) and kube-scheduler, with a kubelet
stand-in and a NodeMetric publisher over the API, and `descheduler run` as a process.

- kube-scheduler calling `descheduler extender` (filter, prioritize, bind): every move lands on its
  Reservation, judged from the pods' nodes and the Reservations' consumedByUID, not the job's record;
  both processes run as deploy/overlays/with-scheduler installs them (the rendered RBAC applied, a
  TokenRequest token per ServiceAccount, the Leases in the Roles' namespace) and not one call of
  theirs is refused (their logs and the apiserver's audit); the extender runs so for the whole module;
- the stock kube-scheduler alone, with the cool nodes' requests high (ballast) so that it prefers
  the hot source: the moves make no Reservation, the source carries the moving-off taint while they
  run, and no replacement lands back on it;
- both schedulers (the overlay's setup), workloads on each: opted-in pods land on their
  Reservations, the others make none and are steered off the source;
- the controller started before the extender (as after an install): its first jobs wait for the
  scheduler Lease, and every move is still reservation-first;
- the controller SIGKILLed while its source is tainted: the next leader finishes the moves and
  leaves no taint;
- the controller SIGKILLed at each migration step: no pod evicted twice, no orphan Reservation,
  every job decided as its replacement's node says.

Pods use 2.2 times their cpu request (`descheduler.fakecluster.usage` models), so the nodes that hold the
hot workloads run hot while their requests look modest, as on a real cluster.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import installed
import pytest
from controlplane import ControlPlane, Process
from moves_support import (
    LABEL_JOB,
    LOAD_AWARE_SCHEDULER,
    STEPS,
    ExtenderTls,
    LeaseTimings,
    MoveRecorder,
    OurProcess,
    PolicyTimings,
    clean_up,
    controller_policy,
    controller_process,
    cordon,
    create_test_nodes,
    delete_quietly,
    deployment,
    extender_process,
    list_pods,
    load_aware_side,
    phase,
    pods_report,
    reached_step,
    ready,
    summary,
    wait_until,
)
from realcluster_support import create
from standin import KubeletStandIn, LoadPublisher, ObjectWatch

from descheduler.extender.lease import RENEW_PERIOD
from descheduler.fakecluster.usage import UsageSpec
from descheduler.kube import KubeClient
from descheduler.migration.objects import SCHEDULER_LEASE

# Every deadline below is derived from these timings times SLACK, so the tests wait on conditions,
# never on the speed of the machine.
INTERVAL = 3.0  # the policy's cycle
TTL = 75.0  # a job's
COOLDOWN = 5.0  # the policy's cooldown and the workload limiter's window
PER_WINDOW = 3  # moves per workload per window
PUBLISH = 2.0  # the NodeMetric publisher's period
LEASE = LeaseTimings(duration=3.0, renew_deadline=2.0, retry_period=0.25)
# Importing, listing every kind and syncing a cache on a busy two-core machine.
STARTUP = 30.0
SLACK = 2.0
# Moves planned after the last job ended: none, for this long (two cycles and a metrics round).
QUIET = 2 * INTERVAL + PUBLISH

CPU_REQUEST_M = 50
BALLAST_CPU_M = 1500  # two to a cool node: 75% of its cpu requested, 30% of that used
HOT_FACTOR = 2.2
NODE_CPU_M = 4000
OVERHEAD_M = 200
HIGH, LOW = 70, 45
OUR_THREADS = ("watch-", "kubelet-standin", "load-publisher")  # the stand-ins' and the recorder's


def needed_moves(pods_per_node: list[int]) -> int:
    """Moves that bring every node at or under HIGH% cpu, at HOT_FACTOR × the request per pod."""
    per_pod = CPU_REQUEST_M * HOT_FACTOR
    room = NODE_CPU_M * HIGH / 100 - OVERHEAD_M
    return sum(max(0, math.ceil(n - room / per_pod)) for n in pods_per_node)


def policy_text(run: str, namespace: str, migration: str = "", evictor: str = "", ttl: float = TTL) -> str:
    timings = PolicyTimings(INTERVAL, ttl, COOLDOWN, PER_WINDOW, HIGH, LOW)
    return controller_policy(run, namespace, timings, migration, evictor)


EXTENDER_POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
loadSource: {type: nodeMetric}
"""

CALM = UsageSpec.model_validate({"default": {"cpu": {"fraction": 0.3}, "memory": {"fraction": 0.5}}})


def hot(apps: list[str]) -> UsageSpec:
    """CALM, except the pods of `apps` use HOT_FACTOR × their cpu request."""
    rule = {
        "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": apps}]},
        "cpu": {"fraction": HOT_FACTOR},
        "memory": {"fraction": 0.5},
    }
    return UsageSpec.model_validate({"default": CALM.default.model_dump(), "pods": [rule]})


# ---------------------------------------------------------------------------------- fixtures


@dataclass
class Components:
    """What the module shares: the controller-manager, both schedulers, the extender, and the
    deploy/ RBAC installed with a token kubeconfig per ServiceAccount."""

    workdir: Path
    scheduler_namespace: str  # where the extender renews the scheduler Lease: the Roles' namespace
    extender: OurProcess
    processes: list[Process]
    controller_kubeconfig: Path  # the `descheduler` ServiceAccount's token
    control_plane: ControlPlane
    audit_from: int = 0  # the audit log's mark when the module started: its calls are the ones after it

    def state(self, stage: Stage) -> str:
        """For a failure message: the stage's pods and events, the stand-ins' errors and every
        process's log tail."""
        errors = [part.errors[:5] for part in (stage.standin, stage.publisher) if part is not None]
        return (
            f"{pods_report(stage.kube, stage.namespace)}; stand-in errors {errors}\n"
            f"--- extender\n{self.extender.tail()}\n{self.control_plane.logs()}"
        )


@pytest.fixture(scope="module")
def components(
    control_plane: ControlPlane, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Components]:
    """kube-controller-manager, the stock kube-scheduler, `descheduler extender` and a kube-scheduler
    whose profile `load-aware-scheduler` calls it; all stopped when the module ends, so later tests
    find the bare control plane they expect. The extender runs as deploy/overlays/with-scheduler
    installs it: on loopback, under the scheduler's ServiceAccount (its token, bound by the rendered
    RBAC), its Lease in the rendered namespace."""
    with started_components(control_plane, kube, tmp_path_factory.mktemp("moves")) as started:
        yield started


@contextlib.contextmanager
def started_components(
    control_plane: ControlPlane, kube: KubeClient, workdir: Path, tls: ExtenderTls | None = None
) -> Iterator[Components]:
    """What `components` starts; with `tls`, the extender serves HTTPS to client certificates only and
    kube-scheduler calls it with its own, as deploy/overlays/extender-mtls sets them up."""
    audit_from = control_plane.audit_mark()
    installation, tokens = installed.scheduler_side(control_plane, kube, workdir)
    started: list[Process] = []
    extender_policy = workdir / "extender-policy.yaml"
    extender_policy.write_text(EXTENDER_POLICY)
    try:
        started.append(control_plane.start_controller_manager())
        started.append(control_plane.start_scheduler())
        with load_aware_side(
            control_plane,
            workdir,
            tokens[installed.EXTENDER],
            extender_policy,
            installed.NAMESPACE,
            startup=SLACK * STARTUP,
            tls=tls,
        ) as extender:
            yield Components(
                workdir, installed.NAMESPACE, extender, started, tokens[installed.CONTROLLER], control_plane, audit_from
            )
    finally:
        try:
            installation.remove(kube)  # while the controller-manager runs: it finishes the namespace's deletion
        finally:
            for process in reversed(started):
                process.stop()


@dataclass
class Stage:
    """One test's cluster contents: nodes, workloads, the stand-ins, the recorder."""

    kube: KubeClient
    namespace: str
    run: str
    hot_nodes: list[str]
    cool_nodes: list[str]
    workloads: dict[str, int] = field(default_factory=dict)
    schedulers: dict[str, str | None] = field(default_factory=dict)  # a workload's schedulerName, when not prepare's
    # Deployments placed on the cool nodes alone, calm: they fill the cool nodes' requests, so that a
    # scheduler that scores by requests prefers the hot source.
    ballast: dict[str, int] = field(default_factory=dict)
    cpu_m: int = CPU_REQUEST_M  # each workload pod's cpu request
    standin: KubeletStandIn | None = None
    publisher: LoadPublisher | None = None
    recorder: MoveRecorder | None = None

    @property
    def nodes(self) -> list[str]:
        return [*self.hot_nodes, *self.cool_nodes]


def prepare(stage: Stage, components: Components, scheduler_name: str | None) -> dict[str, int]:
    """The workloads placed on the hot nodes alone (cool ones cordoned), every pod Running and Ready;
    then the ballast on the cool nodes alone; then every node opened and the workloads' load raised.
    Returns the workloads' pods per hot node."""
    kube, namespace = stage.kube, stage.namespace
    create_test_nodes(kube, stage.nodes, stage.run, cpu=f"{NODE_CPU_M}m", memory="16Gi")
    cordon(kube, stage.cool_nodes)
    stage.standin = KubeletStandIn(kube, stage.nodes).start()
    stage.publisher = LoadPublisher(kube, stage.nodes, CALM, period=PUBLISH).start()

    def place(workloads: dict[str, int], cpu_m: int) -> None:
        total = len(list_pods(kube, namespace)) + sum(workloads.values())
        for name, replicas in workloads.items():
            scheduler = stage.schedulers.get(name, scheduler_name)
            manifest = deployment(name, replicas, stage.run, cpu=f"{cpu_m}m", memory="64Mi", scheduler_name=scheduler)
            create(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments", manifest)

        def all_ready() -> bool:
            pods = list_pods(kube, namespace)
            return len(pods) == total and all(ready(p) for p in pods)

        # The ReplicaSet controller, the scheduler and the stand-in each take well under a second a pod.
        wait_until(
            all_ready, SLACK * (STARTUP + total * 0.2), "every pod Running and Ready", lambda: components.state(stage)
        )

    if LOAD_AWARE_SCHEDULER in (stage.schedulers.get(name, scheduler_name) for name in stage.workloads):
        # As on a cluster whose nodes exist before its pods: the extender's state holds the new nodes
        # with their labels before pods ask about them. (A burst of filter calls against a state
        # that lacks them can keep its rebuild from finishing for a minute: see the stop-51 note.)
        extender = components.extender
        done = extender.metric("descheduler_extender_refreshes_total", result="success") or 0.0
        wait_until(
            lambda: (extender.metric("descheduler_extender_refreshes_total", result="success") or 0.0) >= done + 2,
            SLACK * STARTUP,
            "the extender's state rebuilt with the new nodes",
            extender.tail,
        )
    place(stage.workloads, stage.cpu_m)
    per_node: dict[str, int] = {}
    for pod in list_pods(kube, namespace):
        per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + 1
    if stage.ballast:
        cordon(kube, stage.hot_nodes)
        cordon(kube, stage.cool_nodes, unschedulable=False)
        place(stage.ballast, BALLAST_CPU_M)
    cordon(kube, stage.nodes, unschedulable=False)
    rounds = stage.publisher.rounds
    stage.publisher.set_spec(hot(list(stage.workloads)))
    wait_until(
        lambda: stage.publisher is not None and stage.publisher.rounds >= rounds + 2,
        SLACK * 2 * PUBLISH,
        "hot load published",
    )
    stage.recorder = MoveRecorder(kube, namespace, stage.run).start()
    return per_node


@pytest.fixture
def stage(kube: KubeClient, namespace: str) -> Iterator[Stage]:
    run = namespace[-5:]
    made = Stage(
        kube,
        namespace,
        run,
        hot_nodes=[],
        cool_nodes=[],
    )
    yield made
    try:
        for part in (made.recorder, made.publisher):
            if part is not None:
                part.stop()
    finally:
        clean_up(kube, namespace, made.nodes, [*made.workloads, *made.ballast])
        if made.standin is not None:
            made.standin.stop()
    for part in (made.standin, made.publisher, made.recorder):
        if part is not None and part.errors:
            print(f"{type(part).__name__} saw: {part.errors[:5]}")
    leaked = [t.name for t in threading.enumerate() if t.name.startswith(OUR_THREADS)]
    assert not leaked, f"threads left running: {leaked}"


def node_names(run: str, prefix: str, count: int) -> list[str]:
    return [f"moves-{run}-{prefix}-{i}" for i in range(1, count + 1)]


def start_controller(
    stage: Stage,
    components: Components,
    kubeconfig: Path,
    *,
    identity: str,
    lease_namespace: str,
    lease_name: str | None = None,
    migration: str = "",
    evictor: str = "",
    ttl: float = TTL,
) -> OurProcess:
    policy = components.workdir / f"policy-{stage.run}.yaml"
    policy.write_text(policy_text(stage.run, stage.namespace, migration, evictor, ttl))
    process = controller_process(
        components.workdir,
        kubeconfig,
        policy,
        lease_namespace=lease_namespace,
        lease_name=lease_name or f"descheduler-{stage.run}",
        identity=identity,
        lease=LEASE,
    )
    return process.start()


def start_installed_controller(
    stage: Stage, components: Components, identity: str, migration: str = "", evictor: str = "", ttl: float = TTL
) -> OurProcess:
    """The controller as deploy/ runs it: its ServiceAccount's token, its Lease in the Roles' namespace."""
    return start_controller(
        stage,
        components,
        components.controller_kubeconfig,
        identity=identity,
        lease_namespace=installed.NAMESPACE,
        lease_name=installed.CONTROLLER_LEASE,
        migration=migration,
        evictor=evictor,
        ttl=ttl,
    )


def wait_leader(controller: OurProcess) -> float:
    def leading() -> bool:
        if not controller.alive():
            raise AssertionError(f"{controller.name} exited:\n{controller.tail()}")
        return controller.metric("descheduler_leader") == 1.0

    return wait_until(
        leading, SLACK * (STARTUP + LEASE.duration + LEASE.retry_period), f"{controller.name} leading", controller.tail
    )


TERMINAL = {"Succeeded", "Failed", "Aborted"}


def wait_settled(stage: Stage, controller: OurProcess, timeout: float) -> float:
    """Until no node is high, every job has ended and no Reservation of ours is left, holding for QUIET."""
    recorder = stage.recorder
    assert recorder is not None
    since: list[float] = []

    def settled_now() -> bool:
        if not controller.alive():
            raise AssertionError(f"{controller.name} exited:\n{controller.tail()}")
        jobs = recorder.job_list()
        return (
            controller.metric("descheduler_nodes", **{"class": "high"}) == 0.0
            and bool(jobs)
            and all(phase(j) in TERMINAL for j in jobs)
            and not recorder.live_reservations()
        )

    def settled() -> bool:
        if not settled_now():
            since.clear()
            return False
        since.append(time.monotonic())
        return since[-1] - since[0] >= QUIET

    def state() -> Any:
        return {
            "high": controller.metric("descheduler_nodes", **{"class": "high"}),
            "open jobs": [summary(j) for j in recorder.job_list() if phase(j) not in TERMINAL],
            "reservations": [(r.name, r.phases) for r in recorder.live_reservations()],
            "published": stage.publisher.last if stage.publisher else None,
            "log": controller.tail(15),
        }

    return wait_until(settled, timeout, "hot nodes relieved and every job ended", state)


@dataclass
class Judgement:
    problems: list[str]
    evicted: int
    replacements: int


def judge(stage: Stage, *, expect_reservations: bool) -> Judgement:
    """Every move judged from the API's own facts: which pods began terminating, which pods the
    Reservations say consumed them, the nodes those pods were bound to."""
    recorder = stage.recorder
    assert recorder is not None
    problems: list[str] = []
    jobs = recorder.job_list()
    pod_uid_of = {
        j["metadata"]["name"]: (j.get("spec") or {}).get("podRef", {}).get("uid")
        or (j.get("status") or {}).get("podUid", "")
        for j in jobs
    }
    subjects = [u for u in pod_uid_of.values() if u]
    if len(subjects) != len(set(subjects)):
        problems.append(f"a pod is the subject of two jobs: {sorted(subjects)}")
    evicted = set(recorder.terminations)
    if len(recorder.terminations) != len(evicted):
        problems.append("a pod's deletion began twice")
    for uid in evicted - set(subjects):
        record = recorder.pods[uid]
        problems.append(f"pod {record.name} ({uid}) was deleted but no job moves it (a second eviction?)")
    new_pods = [p for p in recorder.pods.values() if p.new]
    if len(new_pods) != len(evicted):
        problems.append(f"{len(evicted)} pods evicted but {len(new_pods)} pods created")
    consumers: dict[str, str] = {}
    for job in jobs:
        name, status = job["metadata"]["name"], job.get("status") or {}
        was_evicted = pod_uid_of[name] in evicted
        if not expect_reservations:
            if phase(job) == "Failed":
                problems.append(f"failed: {summary(job)}")
            continue
        reservations = [r for r in recorder.reservations.values() if r.job == name]
        consumed = [r for r in reservations if r.consumed_by_uid and "Consumed" in r.phases]
        landed = False
        for r in consumed:
            consumers.setdefault(r.consumed_by_uid, r.name)
            if consumers[r.consumed_by_uid] != r.name:
                problems.append(
                    f"pod {r.consumed_by} consumed two Reservations: {consumers[r.consumed_by_uid]}, {r.name}"
                )
            pod = recorder.pods.get(r.consumed_by_uid)
            if pod is None:
                problems.append(
                    f"{r.name}: consumer {r.consumed_by} ({r.consumed_by_uid}) never seen in {stage.namespace}"
                )
            elif pod.node != r.node:
                problems.append(f"{r.name}: held room on {r.node} but its consumer {pod.name} is on {pod.node}")
            else:
                landed = True
            new_ref = status.get("newPodRef") or {}
            if phase(job) == "Succeeded" and new_ref.get("uid") and new_ref.get("uid") != r.consumed_by_uid:
                problems.append(
                    f"{name} names {new_ref.get('name')} its replacement but {r.name} was consumed by {r.consumed_by}"
                )
        if was_evicted:
            pod = recorder.pods[pod_uid_of[name]]
            acknowledged = [r.version_of["Available"] for r in reservations if "Available" in r.version_of]
            if not acknowledged or min(acknowledged) > pod.terminating_version:
                problems.append(
                    f"{name}: pod {pod.name} evicted (version {pod.terminating_version}) before the scheduler side "
                    f"held its Reservation {[(r.name, r.version_of) for r in reservations]}"
                )
        expected = "Succeeded" if was_evicted and landed else None
        if expected is not None and phase(job) != expected:
            problems.append(f"expected Succeeded (replacement on its Reservation): {summary(job)}")
        if expected is None and phase(job) == "Succeeded":
            problems.append(
                f"Succeeded without a replacement on its Reservation: {summary(job)}, reservations {[(r.name, r.phases, r.consumed_by) for r in reservations]}"
            )
        if not was_evicted and phase(job) not in ("Aborted", "Failed"):
            problems.append(f"never evicted yet {phase(job)}: {summary(job)}")
    return Judgement(problems, len(evicted), len(new_pods))


def check_permissions(
    components: Components, processes: dict[str, OurProcess], also: list[dict[str, Any]] | None = None
) -> None:
    """No 403 in any process's log, none in the apiserver's audit of its ServiceAccount, and every call
    it made allowed by the manifests (tests/deploy/rbac.py's evaluator agreeing with the real
    authorizer), with `also` (a component's RBAC) installed besides; the granted permissions this run
    did not use are printed, not failed (a run uses what its scenario needs)."""
    problems: list[str] = []
    for account, process in processes.items():
        problems += [f"{process.name} ({account}) log: {line}" for line in installed.forbidden_lines(process.text())]
        events = components.control_plane.audit_events(installed.user(account), since=components.audit_from)
        report = installed.audit(events, account)
        assert report.accesses, f"no audited call of {account}: is it using its token?"
        problems += [f"apiserver refused {account}: {refusal}" for refusal in report.refused]
        not_covered = installed.not_granted(also, account, report.not_covered) if also else report.not_covered
        problems += [f"{account} made a call the manifests do not allow: {access}" for access in not_covered]
        print(f"\n{account}: {len(report.accesses)} distinct calls; unused: " + "; ".join(map(str, report.unused)))
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------- the tests


def run_until_settled(stage: Stage, controller: OurProcess, moves: int) -> float:
    """Let the controller lead until the moves are done and the cluster settles (the seconds that
    took); it is stopped either way. Moves go at PER_WINDOW per workload per cooldown window."""
    try:
        wait_leader(controller)
        windows = math.ceil(moves / (PER_WINDOW * len(stage.workloads)))
        return wait_settled(stage, controller, SLACK * (STARTUP + windows * max(COOLDOWN, INTERVAL) + TTL))
    finally:
        controller.stop()


def test_with_the_extender_every_move_lands_on_its_reservation(components: Components, stage: Stage) -> None:
    """Both processes as deploy/overlays/with-scheduler installs them: each its ServiceAccount's
    token and nothing more, the Leases in the Roles' namespace; not one call refused."""
    stage.hot_nodes = node_names(stage.run, "hot", 3)
    stage.cool_nodes = node_names(stage.run, "cool", 3)
    stage.workloads = {"web": 48, "api": 48}
    per_node = prepare(stage, components, LOAD_AWARE_SCHEDULER)
    moves = needed_moves([per_node.get(n, 0) for n in stage.hot_nodes])
    assert moves >= 20, f"the layout needs only {moves} moves: {per_node}"
    began = time.monotonic()
    controller = start_installed_controller(stage, components, f"controller-{stage.run}")
    took = run_until_settled(stage, controller, moves)
    elapsed = time.monotonic() - began
    recorder = stage.recorder
    assert recorder is not None
    jobs = recorder.job_list()
    verdict = judge(stage, expect_reservations=True)
    print(
        f"\nwith the extender: {len(jobs)} jobs, {sum(phase(j) == 'Succeeded' for j in jobs)} Succeeded, "
        f"{verdict.evicted} evictions, {verdict.replacements} replacements, needed ≥ {moves}; "
        f"most in flight per workload {recorder.in_flight_peak}; {elapsed:.0f}s from start ({took:.0f}s to settle)"
    )
    check_permissions(components, {installed.CONTROLLER: controller, installed.EXTENDER: components.extender})
    assert not verdict.problems, "\n".join(verdict.problems)
    assert [summary(j) for j in jobs if phase(j) != "Succeeded"] == []
    assert len(jobs) >= 20
    assert max(recorder.in_flight_peak.values()) >= 2, recorder.in_flight_peak
    assert sorted(r.job for r in recorder.reservations.values()) == sorted(j["metadata"]["name"] for j in jobs)
    assert all(r.phases[-1] == "Consumed" and r.deleted for r in recorder.reservations.values()), [
        (r.name, r.phases, r.deleted) for r in recorder.reservations.values()
    ]


def _settle(stage: Stage, components: Components, moves: int, *, migration: str = "") -> tuple[OurProcess, float]:
    """The controller as deploy/ runs it (its ServiceAccount), led until the stage settles."""
    controller = start_installed_controller(stage, components, f"controller-{stage.run}", migration)
    return controller, run_until_settled(stage, controller, moves)


def _jobs_by_workload(recorder: MoveRecorder) -> dict[str, list[dict[str, Any]]]:
    """The jobs by the workload of the pod each moves (a Deployment's pods are named after it)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for job in recorder.job_list():
        pod = ((job.get("spec") or {}).get("podRef") or {}).get("name", "")
        found.setdefault(pod.split("-")[0], []).append(job)
    return found


def _without_reservation(job: dict[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == "ReservationCreated" and c.get("reason") == "NoReservationScheduler" for c in conditions)


def _steered(stage: Stage, workloads: list[str]) -> list[str]:
    """Problems with the moves of `workloads` made without a Reservation: a job that failed, a
    Reservation made, a replacement on a hot node, a taint not seen or left behind."""
    recorder = stage.recorder
    assert recorder is not None
    problems: list[str] = []
    jobs = [j for w in workloads for j in _jobs_by_workload(recorder).get(w, [])]
    problems += [f"not moved without a Reservation: {summary(j)}" for j in jobs if not _without_reservation(j)]
    problems += [f"failed: {summary(j)}" for j in jobs if phase(j) != "Succeeded"]
    names = {j["metadata"]["name"] for j in jobs}
    problems += [f"{r.name} was made for {r.job}" for r in recorder.reservations.values() if r.job in names]
    new = [p for p in recorder.pods.values() if p.new and p.name.split("-")[0] in workloads]
    problems += [f"replacement {p.name} landed on the hot node {p.node}" for p in new if p.node in stage.hot_nodes]
    if jobs and not set(stage.hot_nodes) & recorder.ever_tainted:
        problems.append(f"no hot node was seen with the moving-off taint ({sorted(recorder.ever_tainted)})")
    if recorder.tainted:
        problems.append(f"the moving-off taint was left on {sorted(recorder.tainted)}")
    return problems


def _wait_untainted(stage: Stage) -> None:
    recorder = stage.recorder
    assert recorder is not None
    wait_until(
        lambda: not recorder.tainted, SLACK * INTERVAL * 3, "the moving-off taints removed", lambda: recorder.tainted
    )


def _hot_beside_ballast(
    stage: Stage, components: Components, workloads: dict[str, int], schedulers: dict[str, str | None] | None = None
) -> int:
    """One hot node holding `workloads`, two cool nodes filled by requests (ballast, so a scheduler
    that scores by requests prefers the hot source); the moves that relieve the hot node."""
    stage.hot_nodes = node_names(stage.run, "hot", 1)
    stage.cool_nodes = node_names(stage.run, "cool", 2)
    stage.workloads = workloads
    stage.schedulers = schedulers or {}
    stage.ballast = {"ballast": 2 * len(stage.cool_nodes)}
    per_node = prepare(stage, components, None)
    return needed_moves([per_node.get(n, 0) for n in stage.hot_nodes])


def test_with_the_stock_scheduler_replacements_are_steered_off_the_source(components: Components, stage: Stage) -> None:
    """kube-scheduler alone scores by requests, and the cool nodes' requests are high (ballast): without
    our taint the replacements go back to the hot source, and their jobs fail ReplacementElsewhere."""
    moves = _hot_beside_ballast(stage, components, {"shop": 30})
    began = time.monotonic()
    controller, took = _settle(stage, components, moves)
    _wait_untainted(stage)
    recorder = stage.recorder
    assert recorder is not None
    jobs = recorder.job_list()
    verdict = judge(stage, expect_reservations=False)
    print(
        f"\nstock scheduler: {len(jobs)} jobs {sorted(phase(j) for j in jobs)}, {verdict.evicted} evictions, "
        f"needed ≥ {moves}; {time.monotonic() - began:.0f}s ({took:.0f}s to settle)"
    )
    assert not verdict.problems, "\n".join(verdict.problems)
    assert not (problems := _steered(stage, ["shop"])), "\n".join(problems)
    assert len(jobs) >= moves
    check_permissions(components, {installed.CONTROLLER: controller})


def test_pods_of_both_schedulers_each_move_their_way(components: Components, stage: Stage) -> None:
    """The overlay's setup: the stock kube-scheduler, and the second one whose profile calls the
    extender. Pods that opted in move through Reservations and land on them; the others make none
    and are steered off the source."""
    moves = _hot_beside_ballast(stage, components, {"web": 16, "shop": 16}, {"web": LOAD_AWARE_SCHEDULER})
    controller, took = _settle(stage, components, moves)
    _wait_untainted(stage)
    recorder = stage.recorder
    assert recorder is not None
    by_workload = _jobs_by_workload(recorder)
    print(
        f"\nboth schedulers: { {w: sorted(phase(j) for j in js) for w, js in by_workload.items()} } ({took:.0f}s to settle)"
    )
    assert by_workload.get("web") and by_workload.get("shop"), by_workload.keys()
    problems = _steered(stage, ["shop"])
    for job in by_workload["web"]:
        name = job["metadata"]["name"]
        consumed = [r for r in recorder.reservations.values() if r.job == name and "Consumed" in r.phases]
        landed = [
            r
            for r in consumed
            if recorder.pods.get(r.consumed_by_uid) and recorder.pods[r.consumed_by_uid].node == r.node
        ]
        if phase(job) != "Succeeded" or not landed:
            problems.append(f"opted-in move did not land on its Reservation: {summary(job)}")
    assert not problems, "\n".join(problems)
    check_permissions(components, {installed.CONTROLLER: controller, installed.EXTENDER: components.extender})


def test_a_controller_started_before_the_extender_waits_for_it(components: Components, stage: Stage) -> None:
    """As after an install of the with-scheduler overlay, or a restart of both: the controller's first
    cycle comes before the extender renews its Lease, and still every move is reservation-first."""
    stage.hot_nodes = node_names(stage.run, "hot", 1)
    stage.cool_nodes = node_names(stage.run, "cool", 2)
    stage.workloads = {"web": 32}
    per_node = prepare(stage, components, LOAD_AWARE_SCHEDULER)
    moves = needed_moves([per_node.get(n, 0) for n in stage.hot_nodes])
    recorder = stage.recorder
    assert recorder is not None
    components.extender.stop()
    delete_quietly(
        stage.kube, f"/apis/coordination.k8s.io/v1/namespaces/{installed.NAMESPACE}/leases/{SCHEDULER_LEASE}"
    )
    controller = start_installed_controller(
        stage,
        components,
        f"controller-{stage.run}",
        # Room for a slow extender start on a loaded two-core machine (the default grace is 30 s).
        "  reservationScheduler: {expect: Preferred, grace: 90s}\n",
    )
    try:
        wait_leader(controller)
        wait_until(lambda: bool(recorder.job_list()), SLACK * (STARTUP + INTERVAL), "a first job", controller.tail)
    finally:
        components.extender.start()  # the module's extender, for the tests after this one
    components.extender.wait_ready("/readyz", SLACK * STARTUP)
    took = run_until_settled(stage, controller, moves)
    jobs = recorder.job_list()
    verdict = judge(stage, expect_reservations=True)
    waited = {
        r.get("job") for r in controller.records() if r.get("event") == "waiting for a reservation-aware scheduler"
    }
    print(f"\ncontroller first: {len(jobs)} jobs {sorted(phase(j) for j in jobs)}, {len(waited)} waited ({took:.0f}s)")
    assert waited, controller.tail()  # the first jobs came before the extender's Lease
    assert not verdict.problems, "\n".join(verdict.problems)
    assert [summary(j) for j in jobs if phase(j) != "Succeeded"] == []
    assert not [j for j in jobs if _without_reservation(j)]
    assert len(jobs) >= moves


def test_a_controller_restarted_mid_move_leaves_no_taint(components: Components, stage: Stage) -> None:
    moves = _hot_beside_ballast(stage, components, {"cart": 30})
    recorder = stage.recorder
    assert recorder is not None
    first = start_installed_controller(stage, components, f"controller-{stage.run}-0")
    try:
        wait_leader(first)
        wait_until(lambda: bool(recorder.tainted), SLACK * (STARTUP + TTL), "a source tainted", first.tail)
    finally:
        first.kill()
    second = start_installed_controller(stage, components, f"controller-{stage.run}-1")
    took = run_until_settled(stage, second, moves)
    _wait_untainted(stage)
    print(f"\nrestarted mid-move: {sorted(phase(j) for j in recorder.job_list())} ({took:.0f}s to settle)")
    assert not recorder.tainted
    assert not (problems := _steered(stage, ["cart"])), "\n".join(problems)


def test_an_extender_that_may_not_write_the_lease_says_the_fix_and_the_fix_works(
    components: Components, kube: KubeClient, namespace: str
) -> None:
    """The extender run as a sidecar of an existing kube-scheduler: its user (here a ServiceAccount in
    kube-system with the extender's ClusterRole) may read the cluster but not write the Lease in
    descheduler-system. Its log names the RoleBinding to create, as one kubectl command; created as
    written, the renewals go through."""
    run = namespace[-5:]
    account = f"sidecar-{run}"
    create(kube, "/api/v1/namespaces/kube-system/serviceaccounts", {"metadata": {"name": account}})
    reads = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": account},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": installed.EXTENDER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}],
    }
    create(kube, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", reads)
    made: list[str] = [f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{account}"]
    assert components.control_plane.certs is not None
    token = installed.token_kubeconfig(
        components.control_plane.kubeconfig,
        components.control_plane.certs.ca,
        components.workdir / f"{account}.kubeconfig",
        account,
        namespace="kube-system",
    )
    policy = components.workdir / "extender-policy.yaml"
    sidecar = extender_process(components.workdir, token, policy, installed.NAMESPACE, identity=account)
    try:
        sidecar.start()
        sidecar.wait_ready("/readyz", SLACK * STARTUP)
        command = re.compile(  # in a JSON log line: a word ends at a space or a quote
            r'kubectl -n ([^\s"]+) create rolebinding ([^\s"]+) --role=([^\s"]+) --serviceaccount=([^\s":]+):([^\s"]+)'
        )

        def fix_said() -> re.Match[str] | None:
            return next((m for m in map(command.search, installed.forbidden_lines(sidecar.text())) if m), None)

        wait_until(
            lambda: fix_said() is not None, SLACK * 3 * RENEW_PERIOD, "the refused renewal and its fix", sidecar.tail
        )
        assert (sidecar.metric("descheduler_extender_lease_renewals_total", result="forbidden") or 0) >= 1
        said = fix_said()
        assert said is not None
        lease_namespace, name, role, account_namespace, account_name = said.groups()
        assert (lease_namespace, role, account_namespace, account_name) == (
            installed.NAMESPACE,
            "descheduler-extender-lease",
            "kube-system",
            account,
        ), said.group(0)
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": lease_namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account_name, "namespace": account_namespace}],
        }
        create(kube, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{lease_namespace}/rolebindings", binding)
        made.append(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{lease_namespace}/rolebindings/{name}")
        lease = f"/apis/coordination.k8s.io/v1/namespaces/{installed.NAMESPACE}/leases/{SCHEDULER_LEASE}"

        def renewed_by_sidecar() -> bool:
            holder = ((kube.get_json(lease).get("spec") or {}).get("holderIdentity")) or ""
            return (
                holder == account
                and (sidecar.metric("descheduler_extender_lease_renewals_total", result="ok") or 0) >= 1
            )

        wait_until(renewed_by_sidecar, SLACK * 3 * RENEW_PERIOD, "the sidecar renewing the Lease", sidecar.tail)
    finally:
        sidecar.stop()
        for path in made:
            delete_quietly(kube, path)
        delete_quietly(kube, f"/api/v1/namespaces/kube-system/serviceaccounts/{account}")


class StepKiller:
    """SIGKILLs the armed controller the moment any job of ours reaches the armed step."""

    def __init__(self, recorder: MoveRecorder) -> None:
        self.recorder = recorder
        self._lock = threading.Lock()
        self._armed: tuple[int, OurProcess] | None = None
        self.fired = threading.Event()
        self.kills: list[str] = []

    def arm(self, step: int, process: OurProcess) -> None:
        with self._lock:
            self.fired.clear()
            self._armed = (step, process)

    def __call__(self, kind: str, kind_type: str, obj: dict[str, Any], previous: dict[str, Any] | None) -> None:
        with self._lock:
            if self._armed is None or kind_type == "SYNC":
                return
            step, process = self._armed
            if not reached_step(step, kind, kind_type, obj, previous):
                return
            process.kill()
            self.kills.append(f"{STEPS[step]} ({kind} {obj['metadata']['name']}): {self._job_state(kind, obj)}")
            self._armed = None
            self.fired.set()

    def _job_state(self, kind: str, obj: dict[str, Any]) -> str:
        """What the job concerned had recorded when its controller died."""
        if kind == "job":
            job: dict[str, Any] | None = obj
        elif kind == "pod":
            job = self.recorder.job_of_pod(obj["metadata"]["uid"])
        else:
            job = self.recorder.jobs.get((obj["metadata"].get("labels") or {}).get(LABEL_JOB, ""))
        if job is None:
            return "job not seen"
        done = [c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
        return f"job {job['metadata']['name']} {phase(job)} with {done or 'no step'} recorded"


def test_controller_killed_at_each_step_evicts_once_and_decides_every_job(
    components: Components, stage: Stage, kubeconfig: Path
) -> None:
    stage.hot_nodes = node_names(stage.run, "hot", 1)
    stage.cool_nodes = node_names(stage.run, "cool", 2)
    stage.workloads = {"shop": 34}
    per_node = prepare(stage, components, LOAD_AWARE_SCHEDULER)
    moves = needed_moves([per_node.get(n, 0) for n in stage.hot_nodes])
    assert moves >= len(STEPS), per_node
    recorder = stage.recorder
    assert recorder is not None
    killer = StepKiller(recorder)
    recorder.hooks.append(killer)
    began = time.monotonic()
    controllers: list[OurProcess] = []

    def start(index: int) -> OurProcess:
        process = start_controller(
            stage,
            components,
            kubeconfig,
            identity=f"controller-{stage.run}-{index}",
            lease_namespace=components.scheduler_namespace,
        )
        controllers.append(process)
        return process

    try:
        controller = start(0)
        for step in range(len(STEPS)):
            wait_leader(controller)
            killer.arm(step, controller)
            # Each step comes within a few cycles of the last restart (a move takes seconds).
            wait_until(
                killer.fired.is_set,
                SLACK * (STARTUP + 2 * COOLDOWN + TTL),
                f"a job to reach {STEPS[step]}",
                controller.tail,
            )
            assert not controller.alive()
            controller = start(step + 1)
        wait_leader(controller)
        took = wait_settled(stage, controller, SLACK * (STARTUP + moves * max(COOLDOWN, INTERVAL) + TTL))
    finally:
        for process in controllers:
            process.stop()
    jobs = recorder.job_list()
    verdict = judge(stage, expect_reservations=True)
    print(
        f"\nkilled at each step: kills {killer.kills}; {len(jobs)} jobs {sorted(phase(j) for j in jobs)}, "
        f"{verdict.evicted} evictions, {verdict.replacements} replacements; {time.monotonic() - began:.0f}s ({took:.0f}s to settle)"
    )
    assert len(killer.kills) == len(STEPS)
    check_permissions(components, {installed.EXTENDER: components.extender})
    assert not verdict.problems, "\n".join(verdict.problems)
    assert not recorder.live_reservations()
    assert [summary(j) for j in jobs if phase(j) not in TERMINAL] == []


# ---------------------------------------------------------------------------------- the judge itself


def _fake_stage(events: list[tuple[str, str, dict[str, Any]]]) -> Stage:
    """A stage whose recorder saw `events` (kind, type, object) and never watched anything."""
    recorder = MoveRecorder(cast(KubeClient, None), "shop")
    handlers = {"pod": recorder._pod, "job": recorder._job, "reservation": recorder._reservation}
    for kind, kind_type, obj in events:
        handlers[kind](kind_type, obj)
    return Stage(cast(KubeClient, None), "shop", "run", [], [], recorder=recorder)


def _pod(uid: str, node: str, version: int, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": f"web-{uid}", "namespace": "shop", "resourceVersion": str(version)}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}}


def _reservation(phase_: str, version: int, consumer: str = "") -> dict[str, Any]:
    return {
        "metadata": {
            "uid": "r",
            "name": "move-old",
            "resourceVersion": str(version),
            "labels": {LABEL_JOB: "move-old"},
        },
        "spec": {"nodeName": "cool-1", "owners": [{"controller": {"namespace": "shop"}}]},
        "status": {
            "phase": phase_,
            "consumedBy": f"shop/web-{consumer}" if consumer else "",
            "consumedByUID": consumer,
        },
    }


def _job(phase_: str, new_pod: str) -> dict[str, Any]:
    return {
        "metadata": {"uid": "j", "name": "move-old"},
        "spec": {"podRef": {"namespace": "shop", "name": "web-old", "uid": "old"}},
        "status": {"phase": phase_, "newPodRef": {"namespace": "shop", "name": f"web-{new_pod}", "uid": new_pod}},
    }


def _move(*, new_node: str = "cool-1", evicted_at: int = 4, stray_eviction: bool = False) -> list[Any]:
    events: list[Any] = [
        ("pod", "SYNC", _pod("old", "hot-1", 1)),
        ("job", "ADDED", _job("Running", "")),
        ("reservation", "ADDED", _reservation("Pending", 2)),
        ("reservation", "MODIFIED", _reservation("Available", 3)),
        ("pod", "MODIFIED", _pod("old", "hot-1", evicted_at, deleting=True)),
        ("pod", "ADDED", _pod("new", new_node, 5)),
        ("reservation", "MODIFIED", _reservation("Consumed", 6, "new")),
        ("job", "MODIFIED", _job("Succeeded", "new")),
    ]
    if stray_eviction:
        events += [
            ("pod", "SYNC", _pod("other", "hot-1", 1)),
            ("pod", "MODIFIED", _pod("other", "hot-1", 7, deleting=True)),
        ]
    return events


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        (_move(), None),
        (_move(new_node="cool-2"), "held room on cool-1 but its consumer web-new is on cool-2"),
        (_move(evicted_at=2), "before the scheduler side held its Reservation"),
        (_move(stray_eviction=True), "was deleted but no job moves it"),
    ],
    ids=["on-its-reservation", "elsewhere", "evicted-before-acknowledged", "evicted-twice"],
)
def test_the_judge_sees_a_move_that_missed(events: list[Any], problem: str | None) -> None:
    problems = judge(_fake_stage(events), expect_reservations=True).problems
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


# ---------------------------------------------------------------------------------- make-before-break

SOLO_CPU_M = 1000  # two such pods at HOT_FACTOR make a node hot; one fits a cool node under HIGH
READY_DELAY = 3.0  # seconds from a pod's binding to Ready (the stand-in's start delay)
MAKE_BEFORE_BREAK = "  makeBeforeBreak: {enabled: true}\n"


class ReadyTimeline:
    """Every pod of the namespace as the watch reports it: per workload (label app), how many are
    Ready and not terminating after each event, the fewest seen, and the seconds with none."""

    def __init__(self, kube: KubeClient, namespace: str, apps: list[str]) -> None:
        self.apps = apps
        self.fewest = dict.fromkeys(apps, math.inf)
        self.unready_seconds = dict.fromkeys(apps, 0.0)
        self._pods: dict[str, tuple[str, bool]] = {}
        self._none_since: dict[str, float] = {}
        self._measuring = False
        self._lock = threading.Lock()
        self._watch = ObjectWatch(kube, f"/api/v1/namespaces/{namespace}/pods", self._on_pod, name="ready-timeline")

    def start(self) -> ReadyTimeline:
        self._watch.start()
        wait_until(lambda: all(self.count(app) >= 1 for app in self.apps), SLACK * STARTUP, "every workload Ready")
        with self._lock:
            self._measuring = True
        return self

    def stop(self) -> None:
        self._watch.stop()
        now = time.monotonic()
        with self._lock:
            for app, since in self._none_since.items():
                self.unready_seconds[app] += now - since

    def count(self, app: str) -> int:
        with self._lock:
            return sum(1 for owner, up in self._pods.values() if owner == app and up)

    def _on_pod(self, kind: str, pod: Any) -> None:
        meta = pod["metadata"]
        app = (meta.get("labels") or {}).get("app", "")
        with self._lock:
            if kind == "DELETED":
                self._pods.pop(meta["uid"], None)
            else:
                self._pods[meta["uid"]] = (app, ready(pod) and not meta.get("deletionTimestamp"))
            if not self._measuring or app not in self.fewest:
                return
            up = sum(1 for owner, is_up in self._pods.values() if owner == app and is_up)
            self.fewest[app] = min(self.fewest[app], up)
            now = time.monotonic()
            if up == 0:
                self._none_since.setdefault(app, now)
            elif app in self._none_since:
                self.unready_seconds[app] += now - self._none_since.pop(app)


def _solo_stage(stage: Stage, components: Components) -> ReadyTimeline:
    """Two single-replica Deployments on one hot node, two cool nodes; replacements Ready READY_DELAY
    seconds after they are bound."""
    stage.hot_nodes = node_names(stage.run, "hot", 1)
    stage.cool_nodes = node_names(stage.run, "cool", 2)
    stage.workloads = {"solo-a": 1, "solo-b": 1}
    stage.cpu_m = SOLO_CPU_M
    prepare(stage, components, LOAD_AWARE_SCHEDULER)
    assert stage.standin is not None
    stage.standin.start_delay = READY_DELAY
    return ReadyTimeline(stage.kube, stage.namespace, list(stage.workloads)).start()


def _has_condition(job: Any, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in (job.get("status") or {}).get("conditions") or ()
    )


def _deployment_labels(stage: Stage, name: str) -> dict[str, str]:
    found = stage.kube.get_json(f"/apis/apps/v1/namespaces/{stage.namespace}/deployments/{name}")
    return cast(dict[str, str], found["spec"]["template"]["metadata"]["labels"])


@pytest.fixture
def make_before_break_grant(kube: KubeClient) -> Iterator[list[dict[str, Any]]]:
    """deploy/components/make-before-break's RBAC beside the module's (deploy/base no longer lets the
    controller write Deployments), in force for one test; the objects it installed."""
    grant = installed.grant_make_before_break(kube)
    try:
        yield grant.objects
    finally:
        grant.remove(kube)


def test_make_before_break_moves_a_single_replica_deployment_with_a_ready_pod_throughout(
    components: Components, stage: Stage, make_before_break_grant: list[dict[str, Any]]
) -> None:
    """The only pod of each Deployment is moved by its rollout onto its Reservation's node: 0 seconds
    without a Ready pod, measured from the watch, across a controller SIGKILLed mid-move; no eviction;
    the hot node cool; every call the controller made allowed by deploy/'s RBAC with
    deploy/components/make-before-break."""
    timeline = _solo_stage(stage, components)
    recorder = stage.recorder
    assert recorder is not None
    first = start_installed_controller(stage, components, f"controller-{stage.run}-0", evictor=MAKE_BEFORE_BREAK)
    try:
        wait_leader(first)
        started = lambda: any(_has_condition(j, "ReplacementStarted") for j in recorder.job_list())  # noqa: E731
        wait_until(started, SLACK * (STARTUP + TTL), "a rollout started", first.tail)
    finally:
        first.kill()
    second = start_installed_controller(stage, components, f"controller-{stage.run}-1", evictor=MAKE_BEFORE_BREAK)
    try:
        took = run_until_settled(stage, second, 2)
    finally:
        timeline.stop()
    jobs = recorder.job_list()
    print(
        f"\nmake-before-break: {[summary(j) for j in jobs]}; unready seconds {timeline.unready_seconds} ({took:.0f}s)"
    )
    assert jobs and {phase(j) for j in jobs} == {"Succeeded"}, (
        [summary(j) for j in jobs],
        components.extender.tail(80),
    )
    assert {j["spec"]["mode"] for j in jobs} == {"MakeBeforeBreak"}
    assert timeline.unready_seconds == dict.fromkeys(stage.workloads, 0.0)
    assert all(fewest >= 1 for fewest in timeline.fewest.values()), timeline.fewest
    pods = {p["metadata"]["name"]: p for p in list_pods(stage.kube, stage.namespace)}
    for job in jobs:
        new = pods[job["status"]["newPodRef"]["name"]]
        assert new["spec"]["nodeName"] == job["status"]["targetNode"] in stage.cool_nodes, (
            job["status"]["conditions"],
            [(r.name, r.phases, r.consumed_by) for r in recorder.reservations.values()],
        )
        assert ready(new)
    assert (second.metric("descheduler_evictions_total", result="success") or 0.0) == 0.0
    check_permissions(components, {installed.CONTROLLER: second}, also=make_before_break_grant)


def test_evict_first_leaves_a_single_replica_deployment_without_a_ready_pod(
    components: Components, stage: Stage
) -> None:
    """The baseline make-before-break removes: the same moves evicting first (minReplicas 1) leave
    each moved Deployment without a Ready pod until its replacement is Ready."""
    timeline = _solo_stage(stage, components)
    controller = start_installed_controller(stage, components, f"controller-{stage.run}", evictor="  minReplicas: 1\n")
    try:
        run_until_settled(stage, controller, 2)
    finally:
        timeline.stop()
    assert stage.recorder is not None
    jobs = stage.recorder.job_list()
    moved = {j["status"]["workload"]["name"].rsplit("-", 1)[0] for j in jobs if phase(j) == "Succeeded"}
    print(f"\nevict-first: unready seconds {timeline.unready_seconds}, moved {moved}")
    assert moved and {j["spec"]["mode"] for j in jobs} == {"ReservationFirst"}
    assert all(timeline.unready_seconds[app] >= READY_DELAY * 0.5 for app in moved), timeline.unready_seconds


def test_make_before_break_whose_replacement_never_gets_ready_leaves_the_deployment_as_it_was(
    components: Components, stage: Stage, make_before_break_grant: list[dict[str, Any]]
) -> None:
    """Pods on the cool nodes never get Ready: at its ttl the job puts the template back, fails
    with the reason, and the old pod stays Ready throughout; the rollout's pod is removed."""
    timeline = _solo_stage(stage, components)
    assert stage.standin is not None and stage.recorder is not None
    stage.standin.unready = set(stage.cool_nodes)
    before = list_pods(stage.kube, stage.namespace)
    templates = {name: _deployment_labels(stage, name) for name in stage.workloads}
    recorder = stage.recorder
    ttl = 20.0
    controller = start_installed_controller(
        stage, components, f"controller-{stage.run}", evictor=MAKE_BEFORE_BREAK, ttl=ttl
    )
    try:
        wait_leader(controller)
        failed = lambda: any(phase(j) == "Failed" for j in recorder.job_list())  # noqa: E731
        wait_until(failed, SLACK * (STARTUP + 2 * ttl), "a job failed at its ttl", controller.tail)
    finally:
        controller.stop()
    job = next(j for j in recorder.job_list() if phase(j) == "Failed")
    assert job["status"]["reason"] == "ReplacementNotReady", summary(job)
    app = job["status"]["workload"]["name"].rsplit("-", 1)[0]
    assert _deployment_labels(stage, app) == templates[app]

    old = {p["metadata"]["uid"] for p in before if p["metadata"]["labels"]["app"] == app}

    def only_the_old_pod() -> bool:
        pods = list_pods(stage.kube, stage.namespace)
        return {p["metadata"]["uid"] for p in pods if p["metadata"]["labels"]["app"] == app} == old

    wait_until(
        only_the_old_pod, SLACK * STARTUP, "the rollout's pod removed", lambda: pods_report(stage.kube, stage.namespace)
    )
    timeline.stop()
    assert timeline.unready_seconds == dict.fromkeys(stage.workloads, 0.0)
