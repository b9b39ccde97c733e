"""`descheduler run`: the in-cluster controller, assembled from its parts."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from descheduler.controller.cycle import PlanningLoop
from descheduler.controller.health import check_listen
from descheduler.controller.leader import LeaderElector, LeaseConfig, election_client
from descheduler.controller.logs import Format, configure_logging
from descheduler.controller.process import ControllerProcess, Options
from descheduler.controller.reload import PolicyFile
from descheduler.controller.source import ClusterSource
from descheduler.errors import InputError
from descheduler.events import EventRecorder, ObjectRef
from descheduler.kube import CLUSTER_KINDS, ClusterCache, KubeClient, RetryPolicy, connect
from descheduler.loadsource import cache_kinds
from descheduler.migration.api import Evictions, MigrationApi
from descheduler.migration.controller import MigrationController
from descheduler.migration.executor import Executor
from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE, parse_lease_ref
from descheduler.migration.presence import SchedulerPresence, plan_routes
from descheduler.policy import PolicyError

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class RunOptions:
    policy: Path
    kubeconfig: Path | None = None
    context: str | None = None
    dry_run: bool = False
    dry_run_events: bool = False
    leader_elect: bool = True
    lease_name: str = "descheduler"
    lease_namespace: str = ""
    identity: str = ""
    scheduler_lease: str = f"{SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}"  # NAMESPACE/NAME
    policy_configmap: str = "descheduler-policy"
    host: str = "0.0.0.0"  # probes and scrapes come from outside the pod
    port: int = 8080
    qps: float = 50.0
    burst: int = 100
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    log_level: str = "info"
    log_format: Format = "auto"


def pod_namespace() -> str:
    """The namespace the process runs in (downward API, then the service account mount)."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    mounted = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    return mounted.read_text().strip() if mounted.is_file() else "default"


def eviction_client(configuration: Any, lease: LeaseConfig) -> KubeClient:
    """The client a leader evicts pods through: no retries, each call bounded by the Lease's margin
    (leaseDuration - renewDeadline - retryPeriod). A leader notices a renewal deadline missed within
    a retry period and stops before its next step, so it sends an eviction at most renewDeadline +
    retryPeriod after its last renewal, and a standby takes over no sooner than leaseDuration after
    it: an eviction answered or given up within the margin never lands while another replica leads;
    one retried later, or held by the apiserver until etcd is back, could (the soak on the real
    control plane saw a pod evicted by both replicas that way). A configuration with no margin left
    gets one retry period."""
    margin = lease.lease_duration - lease.renew_deadline - lease.retry_period
    timeout = max(margin, lease.retry_period)
    return KubeClient.from_configuration(configuration, timeout=timeout, retry=RetryPolicy(max_retries=0))


def run(options: RunOptions, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> int:
    """Run until SIGTERM (0) or a lost lease (1). An invalid policy at start raises PolicyError (exit 1)
    before anything touches the cluster; an unreachable cluster raises ClusterUnreachableError (exit 2)."""
    configure_logging(options.log_level, options.log_format)
    namespace = options.lease_namespace or pod_namespace()
    recorder: list[EventRecorder] = []

    def on_policy_error(err: PolicyError) -> None:
        if recorder:
            ref = ObjectRef("ConfigMap", options.policy_configmap, namespace)
            recorder[0].warning(ref, "InvalidPolicy", f"{err}\nthe last valid policy stays in force")

    policy_file = PolicyFile(options.policy, on_error=on_policy_error)
    policy = policy_file.policy
    identity = options.identity or os.environ.get("POD_NAME") or socket.gethostname()
    try:
        lease = LeaseConfig(
            namespace=namespace,
            name=options.lease_name,
            identity=identity,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
    except ValueError as err:
        raise InputError(str(err), field="--lease-duration/--renew-deadline/--retry-period") from None

    try:
        scheduler_lease = parse_lease_ref(options.scheduler_lease)
    except ValueError as err:
        raise InputError(str(err), field="--scheduler-lease") from None

    check_listen(options.host, options.port)  # a port in use is a user's mistake: say so before connecting

    kube = connect(options.kubeconfig, options.context, qps=options.qps, burst=options.burst)
    with ExitStack() as cleanup:
        cleanup.callback(kube.close)
        events = EventRecorder(kube.api_client, clock=clock)
        recorder.append(events)
        cache = ClusterCache(kube, kinds=(*CLUSTER_KINDS, *cache_kinds(policy.load_source)))
        cleanup.callback(cache.stop)
        cache.start()
        source = ClusterSource(kube, cache)
        cleanup.callback(source.close)
        current = lambda: policy_file.policy  # noqa: E731 - read on every use: reloads take effect
        presence = SchedulerPresence(MigrationApi(kube.api_client), *scheduler_lease)
        evictions = None
        if options.leader_elect:
            evicting = eviction_client(kube.configuration, lease)
            cleanup.callback(evicting.close)
            evictions = Evictions(evicting.api_client, evicting.timeout)
        migration = (
            None
            if options.dry_run
            else MigrationController(
                kube.api_client,
                current,
                source.snapshot_now(clock, current),
                clock,
                events,
                presence=presence,
                evictions=evictions,
            )
        )
        work_stop = threading.Event()  # set when this replica stops leading: no job is submitted then
        loop = PlanningLoop(
            source,
            Executor(kube.api_client, current, stop=work_stop),
            current,
            clock,
            dry_run=options.dry_run,
            recorder=events,
            dry_run_events=options.dry_run_events,
            routes=plan_routes(presence, current),
        )

        election = election_client(kube.configuration, lease)
        cleanup.callback(election.close)

        def elector(started: Callable[[], None], stopped: Callable[[], None]) -> LeaderElector:
            return LeaderElector(election.api_client, lease, on_started=started, on_stopped=stopped)

        process = ControllerProcess(
            policy_file,
            loop,
            migration,
            elector if options.leader_elect else None,
            Options(health_host=options.host, health_port=options.port),
            work_stop,
        )
        log.info(
            "descheduler starting",
            policy=str(options.policy),
            cluster=kube.host,
            identity=identity,
            lease=f"{namespace}/{options.lease_name}" if options.leader_elect else None,
            scheduler_lease=presence.lease,
            dry_run=options.dry_run or policy.dry_run,
            port=process.health.port,
        )
        return process.run()
    raise AssertionError("unreachable")  # ExitStack does not swallow exceptions; mypy cannot tell
