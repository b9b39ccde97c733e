"""`descheduler simulate`: the demo (or a scenario) end to end, with a report."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any

import typer

# The demo's web tier follows a daily curve that peaks in the afternoon: start there, so the demo
# shows the same hot nodes on every machine and at any hour.
DEMO_POLICY = Path(str(files("descheduler") / "demo" / "policy.yaml"))
# The quota demo: two ElasticQuota groups, one borrowing, the other scaling up two minutes in; its
# policy is QuotaReclaim alone with a 30 s grace and a 30 s cycle.
QUOTA_SCENARIO = Path(str(files("descheduler.fakecluster") / "scenarios" / "quota.yaml"))
QUOTA_POLICY = Path(str(files("descheduler") / "demo" / "quota-policy.yaml"))


class Demo(StrEnum):
    load = "load"
    quota = "quota"


def simulate_command(
    scenario: Annotated[Path | None, typer.Argument(help="scenario file (default: the built-in demo)")] = None,
    demo: Annotated[
        Demo | None,
        typer.Option(
            "--demo", help="a built-in demo with its policy: load (hot nodes; the default) or quota (QuotaReclaim)"
        ),
    ] = None,
    cycles: Annotated[int, typer.Option("--cycles", "-n", help="planning cycles to run", min=1)] = 10,
    report: Annotated[Path, typer.Option("--report", "-r", help="directory for report.json and report.html")] = Path(
        "simulation-report"
    ),
    policy: Annotated[
        Path | None,
        typer.Option("--policy", "-p", help="policy file (default: the demo's policy, or the built-in default)"),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            "--start", help="simulated start time, RFC 3339 (default: the scenario's; the demo's is at its peak)"
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="controller log level on stderr")] = "warning",
) -> None:
    """Run the controller against a simulated cluster on simulated time and write a report."""
    from descheduler.controller.logs import configure_logging
    from descheduler.errors import InputError
    from descheduler.fakecluster.scenario import load_demo_scenario, load_scenario
    from descheduler.flags import check_log_level
    from descheduler.policy import default_policy, load_policy
    from descheduler.simulate.charts import render_html
    from descheduler.simulate.runner import Simulation, SimulationOptions

    check_log_level(log_level)
    if report.exists() and not report.is_dir():
        raise InputError("not a directory: give a directory for report.json and report.html", source=str(report))
    try:
        report.mkdir(parents=True, exist_ok=True)  # before simulating: a report that cannot be written fails first
    except OSError as error:
        raise InputError(f"cannot create the report directory: {error.strerror or error}", source=str(report)) from None
    if scenario is not None and demo is not None:
        raise InputError(f"give a scenario file or --demo {demo.value}, not both", source=str(scenario))
    configure_logging(log_level, "console")
    if policy is not None:
        loaded_policy, policy_name = load_policy(policy), str(policy)
    elif demo is Demo.quota:
        loaded_policy, policy_name = load_policy(QUOTA_POLICY), "the quota demo's (descheduler/demo/quota-policy.yaml)"
    elif scenario is None:
        loaded_policy, policy_name = load_policy(DEMO_POLICY), "the demo's (descheduler/demo/policy.yaml)"
    else:
        loaded_policy, policy_name = default_policy(), "built-in default"
    from descheduler.cli import parse_time

    if scenario is not None:
        loaded = load_scenario(scenario)
    elif demo is Demo.quota:
        loaded = load_scenario(QUOTA_SCENARIO)
    else:
        loaded = load_demo_scenario()
    began = parse_time(start, "--start")
    interval = loaded_policy.interval.total_seconds()
    typer.echo(
        f"simulating {loaded.source}: {cycles} cycles, one every {interval:g}s of simulated time "
        f"(policy: {policy_name})",
        err=True,
    )
    simulation = Simulation(
        loaded, loaded_policy, SimulationOptions(cycles=cycles), start=began.timestamp() if began else None
    )
    record = simulation.run(progress=_progress if sys.stderr.isatty() else None)
    result = record.to_dict()
    result["scenario"] = loaded.source
    result["policy"] = policy_name
    try:
        (report / "report.json").write_text(json.dumps(result, indent=2) + "\n")
        (report / "report.html").write_text(render_html(result))
    except OSError as error:
        raise InputError(f"cannot write the report: {error.strerror or error}", source=str(report)) from None
    _summary(result, report)


def _progress(done: int, total: int) -> None:
    sys.stderr.write(f"\rcycle {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _summary(result: dict[str, Any], report: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    per_cycle = Table(title="Per cycle", show_edge=False)
    for column in ("cycle", "hot nodes", "planned", "started", "hottest node"):
        per_cycle.add_column(column, justify="right" if column != "hottest node" else "left")
    for cycle, hot in zip(result["perCycle"], result["hotNodes"], strict=True):
        usage = cycle["usage"]
        hottest = max(usage, key=usage.__getitem__) if usage else ""
        text = f"{hottest} {usage[hottest]:.0%}" if hottest else cycle.get("skipped", "")
        per_cycle.add_row(str(cycle["cycle"]), str(hot), str(cycle["planned"]), str(cycle["submitted"]), text)
    console.print(per_cycle)
    moves = Table(title="Moves", show_edge=False)
    for column in ("pod", "from", "to", "phase", "reason"):
        moves.add_column(column, overflow="fold")
    for move in result["moves"]:
        moves.add_row(move["pod"], move["from"], move["to"], move["phase"], move["reason"])
    console.print(moves)
    hot = result["hotNodes"]
    minimum = result["minimumMoves"]
    console.print(
        f"hot nodes: {hot[0] if hot else '-'} at the first cycle, {hot[-1] if hot else '-'} at the last; "
        f"moves made {result['movesMade']} (at least {minimum if minimum is not None else '-'} needed); "
        f"evictions {result['evictions']}; ping-pong {result['pingPong']}; "
        f"limit violations {result['limitViolations']}; orphan Reservations {result['orphanReservations']}"
    )
    from descheduler.simulate.charts import quota_lines

    for line in quota_lines(result):
        console.print(line, highlight=False)
    console.print(f"report: {report / 'report.html'} and {report / 'report.json'}")
