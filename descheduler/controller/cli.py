"""Typer commands of the controller: `descheduler run`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from descheduler.flags import LogLevelOption, check_log_level, check_port
from descheduler.kube.cli import ContextOption, KubeconfigOption
from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE


def run_command(
    policy: Annotated[Path, typer.Option("--policy", "-p", help="policy file (mounted from the ConfigMap)")],
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="plan, log and count; move nothing")] = False,
    dry_run_events: Annotated[
        bool, typer.Option("--dry-run-events", help="with --dry-run: a WouldDeschedule Event on each pod")
    ] = False,
    leader_elect: Annotated[
        bool, typer.Option("--leader-elect/--no-leader-elect", help="only the Lease holder acts")
    ] = True,
    lease_name: Annotated[str, typer.Option("--lease-name", help="name of the leader election Lease")] = "descheduler",
    lease_namespace: Annotated[
        str, typer.Option("--lease-namespace", help="namespace of the Lease (default: the pod's namespace)")
    ] = "",
    identity: Annotated[str, typer.Option("--identity", help="leader election identity (default: $POD_NAME)")] = "",
    scheduler_lease: Annotated[
        str,
        typer.Option(
            "--scheduler-lease",
            help="NAMESPACE/NAME of the Lease the extender renews (give the extender the same)",
        ),
    ] = f"{SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}",
    policy_configmap: Annotated[
        str, typer.Option("--policy-configmap", help="ConfigMap the policy comes from (Events about it go there)")
    ] = "descheduler-policy",
    port: Annotated[int, typer.Option("--port", help="port of /metrics, /healthz and /readyz")] = 8080,
    host: Annotated[
        str, typer.Option("--host", help="address /metrics, /healthz and /readyz listen on (0.0.0.0: every one)")
    ] = "0.0.0.0",
    qps: Annotated[float, typer.Option("--qps", help="API requests per second (client-side limit)", min=0.1)] = 50.0,
    burst: Annotated[int, typer.Option("--burst", help="API request burst", min=1)] = 100,
    lease_duration: Annotated[
        float, typer.Option("--lease-duration", help="seconds a standby waits before taking an unrenewed Lease", min=1)
    ] = 15.0,
    renew_deadline: Annotated[
        float, typer.Option("--renew-deadline", help="seconds the leader keeps trying to renew before giving up")
    ] = 10.0,
    retry_period: Annotated[
        float, typer.Option("--retry-period", help="seconds between Lease acquire/renew attempts")
    ] = 2.0,
    log_level: LogLevelOption = "info",
    log_format: Annotated[str, typer.Option("--log-format", help="auto (JSON unless a TTY), json or console")] = "auto",
) -> None:
    """The in-cluster controller: plan every interval, move pods reservation-first, as the leader.

    The cluster: --kubeconfig/--context, else the one kubectl would use ($KUBECONFIG,
    ~/.kube/config, or the pod's service account in a cluster). Exit codes: 0 stopped by SIGTERM;
    1 bad input (policy, flags, a port in use, no cluster configuration found) or the Lease lost;
    2 the cluster could not be reached."""
    from descheduler.controller.command import RunOptions, run
    from descheduler.errors import InputError

    if log_format not in ("auto", "json", "console"):
        raise InputError(f"{log_format!r} is not one of auto, json, console", field="--log-format")
    check_port(port)
    check_log_level(log_level)
    options = RunOptions(
        policy=policy,
        kubeconfig=kubeconfig,
        context=context,
        dry_run=dry_run,
        dry_run_events=dry_run_events,
        leader_elect=leader_elect,
        lease_name=lease_name,
        lease_namespace=lease_namespace,
        identity=identity,
        scheduler_lease=scheduler_lease,
        policy_configmap=policy_configmap,
        host=host,
        port=port,
        qps=qps,
        burst=burst,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        log_level=log_level,
        log_format=log_format,  # type: ignore[arg-type]
    )
    sys.exit(run(options))
