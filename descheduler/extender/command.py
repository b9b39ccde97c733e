"""`descheduler extender`: the extender process (the list-watch cache or a snapshot file, the HTTP server).

No leader election: every replica answers from its own cache, so any number can sit behind the
Service kube-scheduler calls. Against a cluster, each replica also acknowledges Pending
Reservations once its state holds them, serves the bind verb, and renews the scheduler Lease
(`--scheduler-lease`, by default `SCHEDULER_LEASE_NAMESPACE/SCHEDULER_LEASE`, where the controller
looks; a heartbeat every replica shares) while it is ready, announcing on it the pod schedulerNames
whose profile calls it (`--scheduler-name`).
The verbs listen on loopback (127.0.0.1, a sidecar of kube-scheduler) unless mutual TLS is given
(`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`): anyone who reaches the port
could bind pods; `--insecure-listen` accepts that risk. `--health-port` adds a plain listener
for /healthz, /readyz and /metrics only, for probes and Prometheus.
SIGTERM/SIGINT stop the server (in-flight requests finish) and the
process exits 0. The policy file is re-read every few seconds; new `scheduling` arguments apply
from the next refresh (a changed `loadSource` needs a restart, and says so).
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Annotated

import structlog
import typer

from descheduler.controller.health import check_listen
from descheduler.controller.reload import PolicyFile
from descheduler.errors import InputError, NoClusterConfigError
from descheduler.extender.lease import SchedulerLease
from descheduler.extender.reservations import ReservationWriter
from descheduler.extender.scheduler_names import LOAD_AWARE_SCHEDULER, SchedulerNames
from descheduler.extender.server import DEFAULT_MAX_BODY, DEFAULT_PORT, ExtenderServer, ServerTLS, TLSFiles
from descheduler.extender.service import Extender, RefreshTiming
from descheduler.extender.sources import CacheSource, ClusterSource, SnapshotFileSource
from descheduler.flags import LogLevelOption, check_log_level, check_port
from descheduler.kube.cli import ContextOption, KubeconfigOption
from descheduler.kube.client import KubeClient
from descheduler.kube.kinds import QUOTAS
from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE, parse_lease_ref
from descheduler.policy import Policy, QuotaReclaimArgs, default_policy
from descheduler.scheduling.quota import DEFAULT_PARENT_LABEL, DEFAULT_QUOTA_LABEL

log = structlog.get_logger(__name__)

POLICY_CHECK_SECONDS = 10.0
# What the extender reads: nodes and their pods, namespaces (for anti-affinity namespace
# selectors), and our Reservations and jobs (held room, moves in flight). Not PDBs, workloads or quotas.
EXTENDER_KINDS = (
    "nodes",
    "pods",
    "namespaces",
    "reservations.descheduler.dev",
    "podmigrationjobs.descheduler.dev",
    *QUOTAS,  # quota admission (scheduling/quota.py); optional: a cluster without the CRD has no quotas
)
TLS_FLAGS = ("--tls-cert-file", "--tls-private-key-file", "--client-ca-file")
EXPOSURE = "any client that reaches the port could bind pods to nodes and read every node's load"


@dataclass(frozen=True, slots=True)
class ExtenderOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tls: TLSFiles | None = None  # mutual TLS on the verb listener
    insecure_listen: bool = False  # plain HTTP on a non-loopback host, knowingly
    health_host: str = "0.0.0.0"
    health_port: int = 0  # 0: no health listener, /healthz, /readyz and /metrics on the verb listener only
    kubeconfig: Path | None = None
    context: str | None = None
    snapshot: Path | None = None
    refresh_interval: float = 1.0
    load_interval: float = 15.0
    max_body: int = DEFAULT_MAX_BODY
    identity: str = ""  # default: the host name (the pod's name in a cluster)
    scheduler_lease: tuple[str, str] = (SCHEDULER_LEASE_NAMESPACE, SCHEDULER_LEASE)  # (namespace, name)
    scheduler_names: tuple[str, ...] = (LOAD_AWARE_SCHEDULER,)


@contextmanager
def cluster_source(policy: Policy, options: ExtenderOptions) -> Iterator[ClusterSource]:
    """The snapshot file when given, else the list-watch cache and the policy's load reader."""
    with cluster_connection(policy, options) as (source, _):
        yield source


@contextmanager
def cluster_connection(policy: Policy, options: ExtenderOptions) -> Iterator[tuple[ClusterSource, KubeClient | None]]:
    """`cluster_source`, and the client it reads with (None for a snapshot file) for the writes."""
    if options.snapshot is not None:
        yield SnapshotFileSource(options.snapshot), None
        return
    from descheduler.kube.cache import ClusterCache
    from descheduler.kube.client import connect
    from descheduler.loadsource import cache_kinds, reader_for

    try:
        client = connect(options.kubeconfig, options.context)
    except NoClusterConfigError as error:
        raise NoClusterConfigError(f"{error}; give --kubeconfig FILE, or --snapshot PATH") from None
    cache = ClusterCache(client, kinds=(*EXTENDER_KINDS, *cache_kinds(policy.load_source)))
    reader = reader_for(policy.load_source, client, cache)

    def read_load(now: datetime) -> object:
        return reader.read(now)

    source = CacheSource(cache, read_load, load_interval=options.load_interval)
    cache.start()
    try:
        yield source, client
    finally:
        cache.stop()
        reader.close()
        client.close()


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: only this machine (this pod, for a sidecar) can connect."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listeners(options: ExtenderOptions) -> str | None:
    """The InputError for listeners that would expose the verbs or collide; the warning to log at start
    for a plain listener off loopback taken with --insecure-listen, else None."""
    if options.health_port and _overlap(options.host, options.port, options.health_host, options.health_port):
        raise InputError(
            f"{options.health_host}:{options.health_port} overlaps the verb listener {options.host}:{options.port}: "
            "give the health listener its own port",
            field="--health-port",
        )
    if options.tls is not None or is_loopback(options.host):
        return None
    risk = f"plain HTTP without client authentication on {options.host}, not a loopback address: {EXPOSURE}"
    if not options.insecure_listen:
        raise InputError(
            f"refusing {risk}. Listen on 127.0.0.1 (the default) as a sidecar of kube-scheduler, or serve mutual "
            f"TLS with {', '.join(TLS_FLAGS)}; --insecure-listen serves anyway",
            field="--host",
        )
    return f"--insecure-listen: serving {risk}"


def _overlap(host: str, port: int, other_host: str, other_port: int) -> bool:
    """Whether two listeners want the same port on a shared address (a wildcard shares every one)."""
    if port != other_port or port == 0:
        return False
    wildcards = ("", "0.0.0.0", "::")
    return host in wildcards or other_host in wildcards or _address(host) == _address(other_host)


def _address(host: str) -> str:
    if host.lower().rstrip(".") == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower()


def listener_kind(options: ExtenderOptions) -> str:
    """How the verb listener is protected, for the start-up log."""
    if options.tls is not None:
        return "https, client certificates signed by --client-ca-file required"
    if is_loopback(options.host):
        return "http, loopback only"
    return "http, INSECURE: no client authentication, reachable from the network"


def run_extender(policy_path: Path | None, options: ExtenderOptions) -> int:
    """Serve until SIGTERM/SIGINT; returns the exit code. No policy file: the built-in default policy."""
    insecure = check_listeners(options)
    policy_file = PolicyFile(policy_path) if policy_path is not None else None
    policy = policy_file.policy if policy_file is not None else default_policy()
    if options.snapshot is not None:
        SnapshotFileSource(options.snapshot).snapshot()  # a bad file is an error now, not a 500 on every request
    tls = ServerTLS(options.tls) if options.tls is not None else None  # a bad certificate file: an error now
    check_listen(options.host, options.port)  # a port in use: say so before connecting to the cluster
    if options.health_port:
        check_listen(options.health_host, options.health_port)
    if insecure is not None:
        log.warning(insecure)
    identity = options.identity or socket.gethostname()
    with cluster_connection(policy, options) as (source, client):
        writer = ReservationWriter(client, identity) if client is not None else None
        timing = RefreshTiming(interval=options.refresh_interval)
        served = SchedulerNames(options.scheduler_names) if client is not None else None
        extender = Extender(
            source,
            policy.scheduling,
            timing=timing,
            writer=writer,
            quota_labels=quota_labels(policy),
            scheduler_names=served,
        )
        server = ExtenderServer(extender, options.host, options.port, max_body=options.max_body, tls=tls)
        health = (
            ExtenderServer(extender, options.health_host, options.health_port, verbs=False)
            if options.health_port
            else None
        )
        lease = None
        if client is not None:
            namespace, name = options.scheduler_lease
            lease = SchedulerLease(
                client,
                namespace,
                identity,
                name=name,
                scheduler_names=options.scheduler_names,
                ready=lambda: extender.not_ready() is None,
            )
        stop = threading.Event()
        extender.start()
        server.start()
        if health is not None:
            health.start()
        if lease is not None:
            lease.start()
        log.info(
            "extender serving",
            verbs=f"{server.address} ({listener_kind(options)})",
            health=f"{health.address} (http, GET /healthz, /readyz, /metrics only)"
            if health
            else "on the verb listener",
            source=str(options.snapshot) if options.snapshot else "cluster",
        )
        if policy_file is not None:
            watcher = threading.Thread(
                target=_watch_policy, args=(policy_file, extender, stop), name="policy-reload", daemon=True
            )
            watcher.start()
        with _signals(lambda: stop.set()):
            stop.wait()
        log.info("extender stopping")
        if lease is not None:
            lease.stop()
        if health is not None:
            health.stop()
        server.stop()
        extender.stop()
    return 0


def quota_labels(policy: Policy) -> tuple[str, str]:
    """The pod label naming a pod's quota and the quota label naming its parent: QuotaReclaim's, so both
    sides group pods alike, or its defaults when the policy does not run it."""
    args = policy.strategy_args("QuotaReclaim")
    if isinstance(args, QuotaReclaimArgs):
        return args.quota_label, args.parent_label
    return DEFAULT_QUOTA_LABEL, DEFAULT_PARENT_LABEL


def _watch_policy(policy_file: PolicyFile, extender: Extender, stop: threading.Event) -> None:
    source = policy_file.policy.load_source
    while not stop.wait(POLICY_CHECK_SECONDS):
        new = policy_file.check()
        if new is None:
            continue
        if new.scheduling != extender.args:
            extender.set_args(new.scheduling)
            log.info("scheduling arguments reloaded")
        if quota_labels(new) != extender.quota_labels:
            log.warning("QuotaReclaim's quotaLabel or parentLabel changed: restart the extender to group pods by them")
        if new.load_source != source:
            log.warning("loadSource changed in the policy: restart the extender to read load from the new source")


@contextmanager
def _signals(on_signal: Callable[[], None]) -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("signal received", signal=signal.Signals(signum).name)
        on_signal()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def extender_command(
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy", "-p", help="policy file: its scheduling and loadSource sections (default: the built-in default)"
        ),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", help="port for /filter, /prioritize, /bind (and /healthz, /readyz, /metrics)")
    ] = DEFAULT_PORT,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="address the verbs listen on: loopback, for a sidecar of kube-scheduler; any other address needs "
            "the three TLS flags (or --insecure-listen)",
        ),
    ] = "127.0.0.1",
    tls_cert_file: Annotated[
        Path | None,
        typer.Option(
            "--tls-cert-file",
            help="serve the verbs over HTTPS with this certificate (PEM, chain allowed); with --tls-private-key-file "
            "and --client-ca-file. Re-read when it changes",
        ),
    ] = None,
    tls_private_key_file: Annotated[
        Path | None, typer.Option("--tls-private-key-file", help="the private key of --tls-cert-file (PEM)")
    ] = None,
    client_ca_file: Annotated[
        Path | None,
        typer.Option(
            "--client-ca-file",
            help="CA bundle (PEM) a client certificate must chain to: without one no client gets past the handshake",
        ),
    ] = None,
    insecure_listen: Annotated[
        bool,
        typer.Option(
            "--insecure-listen",
            help="serve plain HTTP without client authentication on a non-loopback --host: anyone who reaches "
            "the port can bind pods and read node load",
        ),
    ] = False,
    health_port: Annotated[
        int,
        typer.Option(
            "--health-port",
            help="port of a plain-HTTP listener serving only GET /healthz, /readyz and /metrics, for probes and "
            "Prometheus (0: none)",
        ),
    ] = 0,
    health_host: Annotated[
        str, typer.Option("--health-host", help="address the --health-port listener listens on")
    ] = "0.0.0.0",
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    snapshot: Annotated[
        Path | None, typer.Option("--snapshot", "-s", help="answer from a snapshot file instead of a cluster")
    ] = None,
    refresh_interval: Annotated[
        float, typer.Option("--refresh-interval", help="seconds between rebuilds of the node table, at least")
    ] = 1.0,
    load_interval: Annotated[
        float, typer.Option("--load-interval", help="seconds between reads of the load source")
    ] = 15.0,
    max_request_bytes: Annotated[
        int, typer.Option("--max-request-bytes", help="largest request body accepted (413 above)")
    ] = DEFAULT_MAX_BODY,
    identity: Annotated[
        str, typer.Option("--identity", help="who acknowledges Reservations and renews the Lease (default: hostname)")
    ] = "",
    scheduler_lease: Annotated[
        str,
        typer.Option(
            "--scheduler-lease",
            help="NAMESPACE/NAME of the Lease renewed while serving, where `descheduler run --scheduler-lease` looks",
        ),
    ] = f"{SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}",
    scheduler_names: Annotated[
        list[str] | None,
        typer.Option(
            "--scheduler-name",
            help="a pod schedulerName whose kube-scheduler profile calls this extender (repeatable): moves of "
            f"those pods get a Reservation [default: {LOAD_AWARE_SCHEDULER}]",
            show_default=False,
        ),
    ] = None,
    log_level: LogLevelOption = "info",
) -> None:
    """Serve the kube-scheduler HTTP extender (filter, prioritize, bind) with the load-aware scheduling core."""
    from descheduler.controller.logs import configure_logging

    if snapshot is not None and (kubeconfig is not None or context is not None):
        raise InputError("give either --snapshot or --kubeconfig/--context, not both")
    for name, value in (("--refresh-interval", refresh_interval), ("--load-interval", load_interval)):
        if value <= 0:
            raise InputError(f"must be a positive number of seconds, got {value:g}", field=name)
    check_port(port)
    if not 0 <= health_port <= 65535:
        raise InputError(f"must be a port number (0–65535), got {health_port}", field="--health-port")
    tls_files = [tls_cert_file, tls_private_key_file, client_ca_file]
    if any(tls_files) and not all(tls_files):
        missing = [flag for flag, value in zip(TLS_FLAGS, tls_files, strict=True) if value is None]
        raise InputError(
            f"give {', '.join(TLS_FLAGS)} together (missing {', '.join(missing)}): the verbs are served over "
            "mutual TLS with all three, plain HTTP with none"
        )
    tls = (
        TLSFiles(tls_cert_file, tls_private_key_file, client_ca_file)
        if tls_cert_file is not None and tls_private_key_file is not None and client_ca_file is not None
        else None
    )
    if max_request_bytes < 1024:
        raise InputError(f"must be at least 1024, got {max_request_bytes}", field="--max-request-bytes")
    try:
        lease_ref = parse_lease_ref(scheduler_lease)
    except ValueError as error:
        raise InputError(str(error), field="--scheduler-lease") from None
    names = tuple(name.strip() for name in scheduler_names or (LOAD_AWARE_SCHEDULER,))
    if not all(names):
        raise InputError("must be a pod schedulerName, got an empty one", field="--scheduler-name")
    check_log_level(log_level)
    configure_logging(log_level)
    options = ExtenderOptions(
        host=host,
        port=port,
        tls=tls,
        insecure_listen=insecure_listen,
        health_host=health_host,
        health_port=health_port,
        kubeconfig=kubeconfig,
        context=context,
        snapshot=snapshot,
        refresh_interval=refresh_interval,
        load_interval=load_interval,
        max_body=max_request_bytes,
        identity=identity,
        scheduler_lease=lease_ref,
        scheduler_names=names,
    )
    raise typer.Exit(run_extender(policy, options))
