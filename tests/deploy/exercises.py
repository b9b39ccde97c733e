"""Exercises: real code paths of the descheduler, run against the fake API server, so the RBAC test
can record every call the code makes (`FakeApiServer.accesses`) and compare them with the manifests.

An exercise seeds what it needs through the server's store (no HTTP, so setup is not recorded),
runs product code with a client on the server, and returns the accesses the server recorded. To
cover a new code path, write a function taking a scratch directory and add it to `EXERCISES`;
`api_server()` gives an empty server, `demo_cluster()` the simulator's demo cluster.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from descheduler.fakecluster.apiserver import Access, FakeApiServer
from descheduler.fakecluster.apiserver.server import SYSTEM_NAMESPACES
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario
from tests.waiting import wait_for

from .deploy_support import DEPLOY, FIXTURES, NAMESPACE

SERVICE_ACCOUNT = "descheduler"


@dataclass(frozen=True, slots=True)
class Exercise:
    name: str
    covers: str  # the product code it runs
    run: Callable[[Path], set[Access]]
    service_account: tuple[str, str] = (NAMESPACE, SERVICE_ACCOUNT)
    # An opt-in feature or another workload: the kustomization that grants what it needs (None:
    # every kustomization that installs the controller must allow it).
    target: Path | None = None


@contextmanager
def api_server() -> Iterator[FakeApiServer]:
    """An empty fake API server with the system namespaces and the descheduler's own."""
    with FakeApiServer(seed_namespaces=(*SYSTEM_NAMESPACES, NAMESPACE), bookmark_interval=0.1) as server:
        yield server


@contextmanager
def demo_cluster() -> Iterator[SimulatedCluster]:
    """The simulator's demo cluster (nodes, workloads, pods, PDBs, metrics, the descheduler's
    namespace), started and settled."""
    cluster = SimulatedCluster(load_demo_scenario())
    with cluster:
        cluster.advance(60)
        yield cluster


def kube_client(server: FakeApiServer) -> Any:
    """The product's rate-limited, retrying client on the fake server."""
    from descheduler.kube import KubeClient

    return KubeClient.from_configuration(server.configuration())


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    wait_for(condition, timeout, what, interval=0.02)


def leader_election(scratch: Path) -> set[Access]:
    """Two replicas: one creates the Lease, renews it and releases it; the other watches it held."""
    with api_server() as server:
        _elect(server)
        return server.accesses.accesses()


def _elect(server: FakeApiServer) -> None:
    from descheduler.controller.leader import LeaderElector, LeaseConfig

    def elector(identity: str) -> LeaderElector:
        config = LeaseConfig(NAMESPACE, identity=identity, lease_duration=3.0, renew_deadline=2.0, retry_period=0.05)
        return LeaderElector(api_client, config, on_started=lambda: None, on_stopped=lambda: None)

    api_client = server.api_client()
    try:
        leader, standby = elector("descheduler-a"), elector("descheduler-b")
        stop_leader, stop_standby = threading.Event(), threading.Event()
        threads = [
            threading.Thread(target=leader.run, args=(stop_leader,), daemon=True),
            threading.Thread(target=standby.run, args=(stop_standby,), daemon=True),
        ]
        threads[0].start()
        _wait(lambda: leader.is_leader, 5, "the first replica to lead")
        threads[1].start()
        renewed = server.accesses.counts()
        _wait(
            lambda: server.accesses.counts()[_lease("update")] > renewed[_lease("update")] + 2,
            5,
            "the leader to renew the Lease",
        )
        stop_leader.set()  # releases the Lease; the standby takes over
        threads[0].join(5)
        _wait(lambda: standby.is_leader, 5, "the standby to take over")
        stop_standby.set()
        threads[1].join(5)
    finally:
        api_client.close()


def _lease(verb: str) -> Access:
    from descheduler.controller.leader import LeaseConfig

    name = LeaseConfig(NAMESPACE, identity="x").name
    return Access(verb, "coordination.k8s.io", "leases", namespace=NAMESPACE, name=name)


def cluster_cache(scratch: Path) -> set[Access]:
    """The list-watch cache over every kind it can watch: paginated lists, then watches."""
    from descheduler.kube import CLUSTER_KINDS, NODE_METRICS, ClusterCache

    with demo_cluster() as cluster:
        kinds = (*CLUSTER_KINDS, NODE_METRICS)
        with kube_client(cluster.server) as client, ClusterCache(client, kinds=kinds, page_size=5) as cache:
            assert cache.wait_synced(10), cache.not_ready()

            # Every reflector has listed; wait until each has its watch open too.
            def watching() -> int:
                return len({(a.group, a.resource) for a in cluster.server.accesses.accesses() if a.verb == "watch"})

            _wait(lambda: watching() == len(kinds), 10, "a watch on every kind")
            cache.snapshot(datetime.now(UTC))
        return cluster.server.accesses.accesses()


def load_readers(scratch: Path) -> set[Access]:
    """Every load source that reads the API: metrics.k8s.io and Koordinator NodeMetric (listed)."""
    from descheduler.loadsource import MetricsServerReader, NodeMetricReader

    with demo_cluster() as cluster:
        now = datetime.fromtimestamp(cluster.now, UTC)
        with kube_client(cluster.server) as client:
            MetricsServerReader(client).read(now)
            NodeMetricReader(client, None).read(now)
        return cluster.server.accesses.accesses()


@contextmanager
def migration_harness(
    objects: list[dict[str, Any]] | None = None, *, eviction_policy: str = "Eviction"
) -> Iterator[tuple[Any, set[str]]]:
    """The migration tests' harness on a cluster with a hot node; yields it and the terminal phases."""
    from tests.migration.conftest import Harness, hot_cluster_objects, make_policy, start_cluster

    cluster = start_cluster(objects or hot_cluster_objects())
    harness = Harness(cluster, make_policy(ttl="10m", eviction_policy=eviction_policy, jobRetention="1m"))
    try:
        yield harness, {"Succeeded", "Failed", "Aborted"}
    finally:
        harness.api.close()
        cluster.stop()


def _finish(harness: Any, names: list[str], terminal: set[str]) -> None:
    """Drive the jobs to an end, then past their retention so the controller deletes them."""
    from tests.migration.conftest import JOBS

    controller = harness.controller()
    harness.run(controller, 180, until=lambda: all(harness.phase(n) in terminal for n in names))
    assert {harness.phase(n) for n in names} == {"Succeeded"}, [harness.job(n).get("status") for n in names]
    # Kept for max(jobRetention, cooldown, the workload limiter's window): 10 minutes by default.
    harness.run(controller, 900, until=lambda: not harness.cluster.store.list(JOBS), tick=30)
    assert not harness.cluster.store.list(JOBS), "finished jobs outlived jobRetention"


def migration_reservation_first(scratch: Path) -> set[Access]:
    """A planned move end to end: PodMigrationJob, Reservation, a conflicting status write, eviction
    blocked by a PDB and retried (a repeated event), replacement bound, clean-up after retention."""
    from descheduler.plan_cycle import plan_cycle
    from tests.migration.conftest import NS, pdb

    with migration_harness() as (harness, terminal):
        plan, _ = plan_cycle(harness.snapshot(), harness.policy)
        names = harness.submit(plan)
        assert names, "the hot cluster planned no move"
        # A budget with no room appears before the eviction: retried with backoff, the same event repeated.
        harness.cluster.store.create(pdb("web", 4))
        harness.cluster.advance(1)
        harness.run(harness.controller(), 30)
        assert any(harness.job(n)["status"].get("reason") == "DisruptionBudget" for n in names)
        # Another writer got there first: the next status write conflicts and the job is read again.
        harness.cluster.server.faults.fail_next(1, path=r"/podmigrationjobs/[^/]+/status$", verb="update", status=409)

        def relax(obj: dict[str, Any]) -> None:
            obj["spec"]["minAvailable"] = 3
            obj["metadata"]["generation"] = 2

        harness.cluster.store.modify("poddisruptionbudgets.policy", "web", NS, relax)
        _finish(harness, names, terminal)
        return harness.cluster.server.accesses.accesses()


def migration_reservation_expiry(scratch: Path) -> set[Access]:
    """A Reservation no scheduler acknowledges, past its TTL: the sweeper marks it Expired."""
    from tests.migration.conftest import JOBS, RESERVATIONS

    with migration_harness() as (harness, _):
        harness.cluster.components.remove(harness.cluster.scheduler)
        [name] = harness.submit(harness.plan_move("web-0", "node-c"))
        controller = harness.controller()
        harness.run(controller, 10, until=lambda: bool(harness.reservations()))
        harness.cluster.store.modify(RESERVATIONS, name, "", lambda obj: obj["spec"].update(ttl="5s"))
        harness.cluster.advance(6)
        controller.reconcile_once()
        assert harness.cluster.store.get(RESERVATIONS, name)["status"]["phase"] == "Expired"
        harness.cluster.store.delete(JOBS, name)
        return harness.cluster.server.accesses.accesses()


def migration_make_before_break(scratch: Path) -> set[Access]:
    """A single-replica Deployment's pod moved by a rollout: its ReplicaSet and Deployment read, the
    Deployment written with the move's template label."""
    from descheduler.plan_cycle import plan_cycle
    from tests.migration.conftest import Harness
    from tests.migration.test_make_before_break import cluster, objects, policy

    harness = Harness(cluster(objects()), policy(retention="1m"))
    try:
        plan, _ = plan_cycle(harness.snapshot(), harness.policy)
        _finish(harness, harness.submit(plan), {"Succeeded", "Failed", "Aborted"})
        return harness.cluster.server.accesses.accesses()
    finally:
        harness.api.close()
        harness.cluster.stop()


def migration_evict_directly(scratch: Path) -> set[Access]:
    """QuotaReclaim's mode: no Reservation, straight to the Eviction."""
    with migration_harness() as (harness, terminal):
        names = harness.submit(harness.plan_move("web-0", None, mode="EvictDirectly", strategy="QuotaReclaim"))
        _finish(harness, names, terminal)
        return harness.cluster.server.accesses.accesses()


def migration_delete_policy(scratch: Path) -> set[Access]:
    """`evictionPolicy: Delete` (opt-in): a plain DELETE of the pod instead of the Eviction."""
    with migration_harness(eviction_policy="Delete") as (harness, terminal):
        names = harness.submit(harness.plan_move("web-0", "node-c"))
        _finish(harness, names, terminal)
        return harness.cluster.server.accesses.accesses()


def source_steering(scratch: Path) -> set[Access]:
    """Moves without a Reservation: the moving-off taint put on a source node (read, then written
    back), and taken off by the reconcile that lists nodes once their moves ended."""
    from descheduler.migration.api import MigrationApi
    from descheduler.migration.steering import SourceSteering, carries_moving_off

    with api_server() as server:
        server.store.load([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}, "spec": {}}])
        with kube_client(server) as client:
            steering = SourceSteering(MigrationApi(client.api_client))
            steering.taint("node-a")
            assert carries_moving_off(server.store.get("nodes", "node-a"))
            steering.reconcile(set())
            assert not carries_moving_off(server.store.get("nodes", "node-a"))
        return server.accesses.accesses()


def _cli(args: list[str]) -> str:
    from typer.testing import CliRunner

    from descheduler.cli import app

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, f"descheduler {' '.join(args)} failed: {result.output} {result.exception!r}"
    return result.stdout


def plan_live(scratch: Path) -> set[Access]:
    """`descheduler plan --kubeconfig` (what the README says to run first), and `snapshot save`."""
    with demo_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(scratch / "kubeconfig")
        assert '"kind": "Plan"' in _cli(["plan", "--kubeconfig", str(kubeconfig), "-o", "json"])
        _cli(["snapshot", "save", str(scratch / "snapshot.yaml"), "--kubeconfig", str(kubeconfig)])
        return cluster.server.accesses.accesses()


def extender_source(scratch: Path) -> set[Access]:
    """The scheduler extender's view of the cluster: its list-watch cache and the load reader, for
    both load sources that read the API."""
    from descheduler.extender.command import ExtenderOptions, cluster_source
    from descheduler.policy import parse_policy

    with demo_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(scratch / "kubeconfig")
        for source in ("metricsServer", "nodeMetric"):
            policy = parse_policy(
                "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\n"
                f"loadSource: {{type: {source}}}\nstrategies: []\n"
            )
            with cluster_source(policy, ExtenderOptions(kubeconfig=kubeconfig)) as view:
                _wait(lambda view=view: view.not_ready() is None, 10, "the extender's view to be ready")
                view.snapshot()
        return cluster.server.accesses.accesses()


def extender_scheduler_side(scratch: Path) -> set[Access]:
    """The extender's side of the Reservation contract, as `descheduler extender` wires it: a Pending
    Reservation acknowledged, a pod bound onto it (consumed), another owner pod bound elsewhere (sent
    back once, then the next one failed), and the scheduler Lease created then renewed."""
    import msgspec

    from descheduler.extender import CacheSource, Extender
    from descheduler.extender.command import EXTENDER_KINDS
    from descheduler.extender.lease import SchedulerLease
    from descheduler.extender.protocol import ExtenderBindingResult
    from descheduler.extender.reservations import ReservationWriter
    from descheduler.kube import ClusterCache
    from descheduler.policy import default_policy
    from tests.extender.test_reservation_protocol import NS, _node, _pod, _reservation

    reservations = "reservations.descheduler.dev"
    with api_server() as server:
        server.store.load([_node("cool"), _node("other"), _pod("web-a"), _pod("web-b")])
        with kube_client(server) as client, ClusterCache(client, kinds=EXTENDER_KINDS) as cache:
            assert cache.wait_synced(10), cache.not_ready()
            extender = Extender(CacheSource(cache), default_policy().scheduling, writer=ReservationWriter(client, "x"))
            extender.start(poll=0.01)
            try:
                # The first state waits for numba to compile the kernels (cold on a fresh clone, on a busy machine).
                _wait(lambda: extender.state is not None, 60, "the extender's first state")
                server.store.create(_reservation("r-1", "cool", cpu="1", phase="Pending"))
                server.store.create(_reservation("r-2", "cool", cpu="1", phase="Pending"))

                def acknowledged() -> bool:
                    return all(r["status"].get("phase") == "Available" for r in server.store.list(reservations))

                _wait(acknowledged, 10, "the Reservations to be acknowledged")
                _wait(lambda: cache.get("pods", f"{NS}/web-b") is not None, 10, "the pods in the cache")
                # web-b bound elsewhere is sent back once (towards r-2), then bound to other and r-2 failed.
                for pod, node, refused in (
                    ("web-a", "cool", ""),
                    ("web-b", "other", "not binding"),
                    ("web-b", "other", ""),
                ):
                    body = {"PodName": pod, "PodNamespace": NS, "PodUID": f"uid-{pod}", "Node": node}
                    answer = msgspec.json.decode(extender.bind(msgspec.json.encode(body)), type=ExtenderBindingResult)
                    assert answer.Error.startswith(refused) and bool(answer.Error) == bool(refused), answer.Error
                phases = sorted(r["status"]["phase"] for r in server.store.list(reservations))
                assert phases == ["Consumed", "Failed"], phases
            finally:
                extender.stop()
            lease = SchedulerLease(client, NAMESPACE, "descheduler-extender-0")
            assert lease.renew() and lease.renew(), "the scheduler Lease was not created and renewed"
        return server.accesses.accesses()


_RUN_POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: 2s
strategies:
  - name: LowNodeLoad
    args: {highThresholds: {cpu: 70}, lowThresholds: {cpu: 45}}
"""


def descheduler_run(scratch: Path) -> set[Access]:
    """`descheduler run` as a process, as the Deployment starts it: it takes the Lease, plans on the
    demo's hot nodes, submits and drives PodMigrationJobs, then releases the Lease on SIGTERM."""
    policy = scratch / "policy.yaml"
    policy.write_text(_RUN_POLICY)
    with demo_cluster() as cluster:
        with cluster.running_in_real_time():
            kubeconfig = cluster.write_kubeconfig(scratch / "kubeconfig")
            command = [
                sys.executable,
                "-m",
                "descheduler",
                "run",
                "--policy",
                str(policy),
                "--kubeconfig",
                str(kubeconfig),
            ]
            command += [
                "--port",
                str(_free_port()),
                "--retry-period",
                "0.25",
                "--renew-deadline",
                "2",
                "--lease-duration",
                "3",
            ]
            env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "POD_NAME": "descheduler-0", "PYTHONUNBUFFERED": "1"}
            with (scratch / "run.log").open("w") as log:
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                try:
                    _wait(
                        lambda: (
                            process.poll() is not None
                            or any(
                                (j.get("status") or {}).get("phase", "Pending") != "Pending"
                                for j in cluster.store.list(_JOBS)
                            )
                        ),
                        60,
                        "the controller to take up a PodMigrationJob",
                    )
                    assert process.poll() is None, (
                        "descheduler run exited early: " + (scratch / "run.log").read_text()[-2000:]
                    )
                    process.send_signal(signal.SIGTERM)
                    assert process.wait(20) == 0, (scratch / "run.log").read_text()[-2000:]
                finally:
                    if process.poll() is None:
                        process.kill()
                        process.wait()
        released = cluster.store.get("leases.coordination.k8s.io", "descheduler", NAMESPACE)
        assert not released["spec"].get("holderIdentity"), "the Lease was not released on SIGTERM"
        return cluster.server.accesses.accesses()


_JOBS = "podmigrationjobs.descheduler.dev"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


EXERCISES: tuple[Exercise, ...] = (
    Exercise("descheduler-run", "descheduler run: the controller process, as the Deployment runs it", descheduler_run),
    Exercise("leader-election", "descheduler/controller/leader.py: LeaderElector", leader_election),
    Exercise("cluster-cache", "descheduler/kube/cache.py: ClusterCache over every kind", cluster_cache),
    Exercise("load-readers", "descheduler/loadsource: metrics.k8s.io and NodeMetric readers", load_readers),
    Exercise(
        "migration-reservation-first",
        "descheduler/migration (Executor, MigrationController, ReservationFirst, PDB retries) and descheduler/events.py",
        migration_reservation_first,
    ),
    Exercise("plan-live", "descheduler plan --kubeconfig and descheduler snapshot save (CLI)", plan_live),
    # The extender as the with-scheduler overlay runs it (kube-scheduler's sidecar, under its account)
    # and as the extender-mtls overlay runs it (alone, under its own).
    *(
        exercise
        for overlay, account in (("with-scheduler", "load-aware-scheduler"), ("extender-mtls", "descheduler-extender"))
        for exercise in (
            Exercise(
                f"extender-source-{overlay}",
                f"descheduler extender: its cluster view (cache and load reader), as {account}",
                extender_source,
                service_account=(NAMESPACE, account),
                target=DEPLOY / "overlays" / overlay,
            ),
            Exercise(
                f"extender-scheduler-side-{overlay}",
                f"descheduler extender: acknowledge, check and bind (consume, fail), the scheduler Lease, as {account}",
                extender_scheduler_side,
                service_account=(NAMESPACE, account),
                target=DEPLOY / "overlays" / overlay,
            ),
        )
    ),
    Exercise(
        "migration-make-before-break",
        "descheduler/migration: a MakeBeforeBreak move (the Deployment's rollout)",
        migration_make_before_break,
        target=FIXTURES / "kustomize" / "make-before-break",
    ),
    Exercise(
        "migration-make-before-break-namespaced",
        "descheduler/migration: a MakeBeforeBreak move, granted by a RoleBinding in the Deployment's namespace",
        migration_make_before_break,
        target=FIXTURES / "kustomize" / "make-before-break-namespaced",
    ),
    Exercise(
        "migration-reservation-expiry",
        "descheduler/migration: the sweeper expires an unacknowledged Reservation",
        migration_reservation_expiry,
    ),
    Exercise("migration-evict-directly", "descheduler/migration: EvictDirectly", migration_evict_directly),
    Exercise(
        "source-steering",
        "descheduler/migration/steering.py: SourceSteering taints and untaints a source node",
        source_steering,
    ),
    Exercise(
        "migration-delete-policy",
        "descheduler/migration: evictionPolicy Delete",
        migration_delete_policy,
        target=FIXTURES / "kustomize" / "evict-by-delete",
    ),
)


def run_exercise(exercise: Exercise, scratch: Path) -> set[Access]:
    """Run one exercise; the distinct accesses it made."""
    return exercise.run(scratch)
