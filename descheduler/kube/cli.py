"""`descheduler snapshot save`, and the live-cluster branch of `descheduler plan`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from descheduler.errors import InputError, NoClusterConfigError
from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE, parse_lease_ref
from descheduler.policy import Policy, default_policy, load_policy
from descheduler.snapshot import Snapshot
from descheduler.timestamps import format_time

snapshot_app = typer.Typer(
    help="Save a live cluster's state as a snapshot file.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

KubeconfigOption = Annotated[
    Path | None,
    typer.Option("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)"),
]
ContextOption = Annotated[str | None, typer.Option("--context", help="kubeconfig context (default: the current one)")]
SchedulerLeaseOption = Annotated[
    str,
    typer.Option(
        "--scheduler-lease",
        help="NAMESPACE/NAME of the Lease the extender renews, which says whether moves get a Reservation "
        "(as `descheduler run --scheduler-lease`)",
    ),
]
DEFAULT_SCHEDULER_LEASE = f"{SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}"


def lease_ref(text: str) -> tuple[str, str]:
    """--scheduler-lease as (namespace, name); a malformed one is an input error naming the flag."""
    try:
        return parse_lease_ref(text)
    except ValueError as error:
        raise InputError(str(error), field="--scheduler-lease") from None


def _quiet_logs() -> None:
    """Logs to stderr, warnings and up: stdout is the command's output."""
    from descheduler.controller.logs import configure_logging

    configure_logging("warning")


def plan_snapshot(
    kubeconfig: Path | None,
    context: str | None,
    policy: Policy,
    now: datetime | None,
    scheduler_lease: tuple[str, str] = (SCHEDULER_LEASE_NAMESPACE, SCHEDULER_LEASE),
) -> Snapshot:
    """The Snapshot `plan --kubeconfig` plans on: the cluster listed once, one load reading, and the
    scheduler Lease read once."""
    from descheduler.kube.live import cluster, read_snapshot

    _quiet_logs()
    with cluster(kubeconfig, context) as client:
        return read_snapshot(client, policy, now or datetime.now(UTC), scheduler_lease=scheduler_lease)


@snapshot_app.command("save")
def save(
    path: Annotated[
        Path,
        typer.Argument(
            help="file to write: .json.gz (for big clusters) or .json (fast, plain), .yaml or .yml (for people, slow), "
            "or .yaml.gz"
        ),
    ],
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    policy: Annotated[
        Path | None, typer.Option("--policy", "-p", help="policy file: its loadSource says where load is read")
    ] = None,
    scheduler_lease: SchedulerLeaseOption = DEFAULT_SCHEDULER_LEASE,
) -> None:
    """Write the cluster's nodes, pods, workloads, PDBs, quotas, our objects and one load reading to
    PATH, stamped with the time read, so `descheduler plan --snapshot PATH` replays this moment.

    The format follows the suffix. JSON is written and read as a stream: 150,000 pods save and load
    in seconds. YAML is for reading by eye: PyYAML takes over a millisecond an object, 6 minutes to
    write 150,000 pods and longer to read them; use .json or .json.gz for big clusters. Every format is
    one List of the objects as the API returns them, less managedFields, the last-applied
    manifest and container environment values. The scheduler Lease (--scheduler-lease) is saved
    too when it exists, and the List names the Lease looked for, so the replayed plan says how each
    move would go (its landing) as `plan` on the cluster does.

    The cluster: --kubeconfig/--context, else the one kubectl would use ($KUBECONFIG,
    ~/.kube/config, or in-cluster). Exit codes: 0 saved; 1 bad input, or no cluster configuration
    found; 2 the cluster could not be read."""
    from descheduler.kube.live import cluster, save_snapshot

    _quiet_logs()
    if path.is_dir():
        raise InputError("is a directory: give a file to write (.json, .json.gz, .yaml or .yml)", source=str(path))
    loaded = load_policy(policy) if policy is not None else default_policy()
    lease = lease_ref(scheduler_lease)
    now = datetime.now(UTC)
    try:
        with cluster(kubeconfig, context) as client:
            saved = save_snapshot(client, loaded, path, now, scheduler_lease=lease)
    except NoClusterConfigError as error:
        raise NoClusterConfigError(f"{error}; give --kubeconfig FILE") from None
    for warning in saved.warnings:
        typer.echo(f"warning: {warning}", err=True)
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(saved.counts.items()))
    typer.echo(f"{saved.path}: {counts or 'no objects'} at {format_time(now)}", err=True)
