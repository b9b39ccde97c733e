"""The `descheduler` command line."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from datetime import datetime
from enum import StrEnum
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo

from descheduler import __version__, timestamps
from descheduler.errors import ClusterUnreachableError, InputError, NoClusterConfigError
from descheduler.kube.cli import (
    DEFAULT_SCHEDULER_LEASE,
    ContextOption,
    KubeconfigOption,
    SchedulerLeaseOption,
    lease_ref,
    plan_snapshot,
    snapshot_app,
)
from descheduler.policy import PolicyError, default_policy, load_policy, policy_schema

# Plain help (not Typer's rich panels, which give every flag a `<bool>` value placeholder);
# -h is --help on every command.
HELP = {"help_option_names": ["-h", "--help"]}


# The extender, the controller and the simulators are imported when their command is named (or
# help lists them): `snapshot save` and `plan` need none of them, and importing them took ~0.3 s
# of every command's start.
def _extender() -> Any:
    from descheduler.extender.command import extender_command

    return extender_command


def _run() -> Any:
    from descheduler.controller.cli import run_command

    return run_command


def _simulate() -> Any:
    from descheduler.simulate.cli import simulate_command

    return simulate_command


def _sim() -> typer.Typer:
    from descheduler.fakecluster.cli import sim_app

    return sim_app


_LAZY_COMMANDS: dict[str, Callable[[], Any]] = {"extender": _extender, "run": _run, "simulate": _simulate}
_LAZY_GROUPS: dict[str, Callable[[], typer.Typer]] = {"sim": _sim}
# The order help lists the commands in.
_ORDER = ("extender", "run", "simulate", "plan", "version", "policy", "sim", "snapshot")


class _Commands(MutableMapping[str, Any]):
    """A group's commands by name, the lazy ones built (their module imported) when first looked up."""

    def __init__(self, built: MutableMapping[str, Any], lazy: dict[str, Callable[[], Any]]) -> None:
        self._built = dict(built)
        self._lazy = dict(lazy)

    def _names(self) -> list[str]:
        names = [*self._built, *self._lazy]
        return sorted(names, key=lambda name: _ORDER.index(name) if name in _ORDER else len(_ORDER))

    def __getitem__(self, name: str) -> Any:
        if name not in self._built and name in self._lazy:
            self._built[name] = self._lazy.pop(name)()
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._lazy.pop(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if self._lazy.pop(name, None) is None:
            del self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._built) + len(self._lazy)


class _Group(TyperGroup):
    """The top-level group, with the commands of `_LAZY_COMMANDS` and `_LAZY_GROUPS` built as
    Typer would build them had they been registered, but only when named."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        lazy: dict[str, Callable[[], Any]] = {name: _lazy_command(name, load) for name, load in _LAZY_COMMANDS.items()}
        lazy.update({name: _lazy_group(name, load) for name, load in _LAZY_GROUPS.items()})
        self.commands = _Commands(self.commands, lazy)


def _lazy_command(name: str, load: Callable[[], Any]) -> Callable[[], Any]:
    def build() -> Any:
        info = CommandInfo(name=name, callback=load())
        return typer.main.get_command_from_info(
            info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
        )

    return build


def _lazy_group(name: str, load: Callable[[], typer.Typer]) -> Callable[[], Any]:
    def build() -> Any:
        return typer.main.get_group_from_info(
            TyperInfo(load(), name=name),
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
            suggest_commands=app.suggest_commands,
        )

    return build


app = typer.Typer(
    name="descheduler",
    cls=_Group,
    help="Load-aware Kubernetes descheduler: plans and moves pods off hot nodes and back to starving quotas.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    context_settings=HELP,
)
policy_app = typer.Typer(
    help="Check, describe and convert policy files.", no_args_is_help=True, rich_markup_mode=None, context_settings=HELP
)
app.add_typer(policy_app, name="policy")
app.add_typer(snapshot_app, name="snapshot")


class Output(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


def demo_snapshot_path() -> Path:
    """The built-in demo snapshot shipped with the package."""
    return Path(str(files("descheduler") / "demo" / "snapshot.yaml"))


def parse_time(value: str | None, option: str = "--now") -> datetime | None:
    if value is None:
        return None
    try:
        return timestamps.parse_time(value)
    except ValueError:
        raise InputError(f"{value!r} is not an RFC 3339 time (example: 2026-01-15T12:00:00Z)", field=option) from None


@app.command()
def plan(
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot", "-s", help="snapshot file or directory (Kubernetes objects in JSON or YAML, or .gz of them)"
        ),
    ] = None,
    demo: Annotated[bool, typer.Option("--demo", help="plan on the built-in demo snapshot")] = False,
    policy: Annotated[
        Path | None, typer.Option("--policy", "-p", help="policy file (default: the built-in default)")
    ] = None,
    now: Annotated[
        str | None, typer.Option("--now", help="evaluation time, RFC 3339 (default: the snapshot's time)")
    ] = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="report format")] = Output.table,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    scheduler_lease: SchedulerLeaseOption = DEFAULT_SCHEDULER_LEASE,
) -> None:
    """One planning cycle, no side effects: what would move and why, what would not and why not.

    On a snapshot file (--snapshot), the demo (--demo), or a live cluster: --kubeconfig/--context,
    or with none of these flags the cluster kubectl would use ($KUBECONFIG, ~/.kube/config, or
    in-cluster).

    Each ReservationFirst move says how it would go (its landing: Reservation, Waits, Steered or
    Unsteered), from the scheduler Lease: on a cluster the one --scheduler-lease names, on a
    snapshot the one `snapshot save` recorded (a snapshot without one gives no landings).

    Exit codes: 0 planned; 1 bad input, or no cluster configuration found; 2 the cluster could not be read."""
    from descheduler.migration.landings import snapshot_landings
    from descheduler.plan_cycle import plan_cycle
    from descheduler.report import render
    from descheduler.snapshot import load_snapshot

    explicit = kubeconfig is not None or context is not None
    if (snapshot is not None) + demo + explicit > 1:
        raise InputError("give exactly one of --snapshot PATH, --demo, or --kubeconfig FILE [--context NAME]")
    loaded_policy = load_policy(policy) if policy is not None else default_policy()
    lease = lease_ref(scheduler_lease)
    when = parse_time(now)
    if snapshot is None and not demo:
        try:
            loaded = plan_snapshot(kubeconfig, context, loaded_policy, when, lease)
        except NoClusterConfigError as error:
            raise NoClusterConfigError(f"{error}; to plan without a cluster: --demo or --snapshot PATH") from None
    else:
        loaded = load_snapshot(snapshot if snapshot is not None else demo_snapshot_path(), now=when)
    planned, _ = plan_cycle(loaded, loaded_policy)
    result = snapshot_landings(planned, loaded, loaded_policy.migration)
    sys.stdout.write(render(result, output.value))


@policy_app.command("validate")
def policy_validate(file: Annotated[Path, typer.Argument(help="policy file to check")]) -> None:
    """Check a policy file; every problem is listed with its field path."""
    load_policy(file)
    typer.echo(f"{file}: valid")


@policy_app.command("convert")
def policy_convert(
    file: Annotated[
        Path,
        typer.Argument(
            help="an upstream descheduler DeschedulerPolicy (v1alpha2 or v1alpha1) or a Koordinator "
            "DeschedulerConfiguration, or a ConfigMap holding one"
        ),
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write the policy to this file (default: stdout)")
    ] = None,
    key: Annotated[
        str | None,
        typer.Option("--key", "-k", help="the ConfigMap data key to read (default: the first that holds one)"),
    ] = None,
) -> None:
    """Convert a peer's configuration into our policy, with a comment on every field whose meaning changes.

    The input's kind is detected from apiVersion and kind. A ConfigMap is read at the data key
    that holds the configuration (the header names it). The profile that runs LowNodeUtilization
    (or LowNodeLoad) is converted; every other plugin is left out and listed, on stderr and in the
    header: it keeps running in the peer, which can run beside this one. Fields that cannot be
    carried over are all listed, and nothing is written.

    Exit codes: 0 converted, nothing left out; 3 converted and written, with other plugins left out
    (listed on stderr); 1 the file cannot be read or converted, nothing written."""
    from descheduler.convert import EXIT_LEFT_OUT, convert_input

    converted = convert_input(read_text_file(file), str(file), key)
    if output is None:
        sys.stdout.write(converted.text)
    else:
        try:
            output.write_text(converted.text, encoding="utf-8")
        except OSError as err:
            raise InputError(f"cannot write the file: {err.strerror or err}", source=str(output)) from None
        typer.echo(f"{file}: converted to {output}", err=True)
    for place in converted.also_found:
        typer.echo(f"{file}: also holds a configuration at {place}, not converted (choose it with --key)", err=True)
    if converted.left_out:
        typer.echo(
            f"{file}: {len(converted.left_out)} plugin(s) left out, not converted: {converted.left_out_how}:",
            err=True,
        )
        for item in converted.left_out:
            typer.echo(f"  - {item.line()}", err=True)
        raise typer.Exit(EXIT_LEFT_OUT)


def read_text_file(file: Path) -> str:
    """A file's text; a missing, unreadable or binary file is one InputError naming it."""
    try:
        data = file.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the file: {err.strerror or err}", source=str(file)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a text file (it is not UTF-8)", source=str(file)) from None
    if "\x00" in text:
        raise InputError("not a text file (it holds NUL bytes)", source=str(file))
    return text


@policy_app.command("schema")
def policy_schema_command() -> None:
    """Print the policy's JSON schema."""
    import json

    typer.echo(json.dumps(policy_schema(), indent=2, sort_keys=True))


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(f"descheduler {__version__}")


def main(args: Sequence[str] | None = None, *, prog_name: str = "descheduler") -> None:
    """Entry point (`args`: the command line, default sys.argv): user mistakes become one clear
    message and exit code 1, never a traceback. Always ends in SystemExit."""
    try:
        app(args=None if args is None else list(args), prog_name=prog_name)
    except (InputError, PolicyError) as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except ClusterUnreachableError as exc:
        typer.echo(f"error: cannot reach the cluster: {exc}", err=True)
        sys.exit(2)
    except SystemExit as exc:
        # Usage errors are input errors (exit 1); 2 is kept for an unreachable cluster.
        sys.exit(1 if exc.code == 2 else exc.code)


def kubectl_main() -> None:
    """The kubectl plugin (`kubectl-descheduler` on $PATH): `kubectl descheduler plan …`. kubectl
    runs the plugin with the words after its name, so help and usage show the name users typed."""
    main(prog_name="kubectl descheduler")


if __name__ == "__main__":
    main()
