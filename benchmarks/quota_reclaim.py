"""Seconds from a waiting pod's creation to Running, with QuotaReclaim and without (issue 41).

    .venv/bin/python -m benchmarks.quota_reclaim              # the markdown table of RESULTS.md
    .venv/bin/python -m benchmarks.quota_reclaim --json       # the numbers

Runs the built-in quota scenario (`descheduler simulate --demo quota`:
descheduler/fakecluster/scenarios/quota.yaml) twice for the same cycles, on simulated time, with the
real controller and the quota-aware simulated scheduler: once with the quota demo's policy
(descheduler/demo/quota-policy.yaml, QuotaReclaim alone) and once with that policy minus QuotaReclaim
(no strategy: nothing is ever evicted). Each pod of the waiting group that was Pending is reported
with the seconds from its creation to Running, or as still Pending at the end with how long it has
waited by then. The run is deterministic but for the machine's timing of the cache's watch, which
the driver waits out before every cycle (`settle`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from descheduler.controller.logs import configure_logging
from descheduler.fakecluster.scenario import load_scenario
from descheduler.policy import Policy, load_policy
from descheduler.simulate.cli import QUOTA_POLICY, QUOTA_SCENARIO
from descheduler.simulate.runner import Simulation, SimulationOptions

CYCLES = 16  # 90 s of warm-up and 16 cycles of 30 s: the waiting pods wait up to 7.5 min without reclaim
GROUP = "team-b"  # the scenario's group that scales up and waits


def without_reclaim(policy: Policy) -> Policy:
    """The same policy with no QuotaReclaim strategy."""
    return policy.model_copy(update={"strategies": [s for s in policy.strategies if s.name != "QuotaReclaim"]})


def run_scenario(policy: Policy, cycles: int = CYCLES) -> dict[str, Any]:
    """One run of the quota scenario: its report (report.json's content)."""
    record = Simulation(load_scenario(QUOTA_SCENARIO), policy, SimulationOptions(cycles=cycles)).run()
    return record.to_dict()


def compare(cycles: int = CYCLES, group: str = GROUP) -> dict[str, Any]:
    """The waiting group's pods' times to Running, with QuotaReclaim ("on") and without ("off")."""
    policy = load_policy(QUOTA_POLICY)
    out: dict[str, Any] = {"cycles": cycles, "interval": policy.interval.total_seconds(), "group": group}
    for side, used in (("on", policy), ("off", without_reclaim(policy))):
        report = run_scenario(used, cycles)
        pods = [w for w in report.get("podWaits", []) if w["quota"] == group]
        out[side] = {
            "evictions": report["evictions"],
            "end": max((p[-1][0] for q in report["quotas"].values() for p in q["used"].values()), default=0.0),
            "pods": sorted(pods, key=lambda w: (w["seconds"] is None, w["seconds"] or 0.0, w["pod"])),
            "summary": report.get("quotaWaits", {}).get(group, {}),
        }
    return out


def _cell(wait: dict[str, Any] | None, end: float) -> str:
    if wait is None:
        return "-"
    if wait["seconds"] is not None:
        return f"{wait['seconds']:g} s"
    if wait["state"] == "deleted":
        return "deleted before Running"
    return f"still Pending at the end ({end - wait['created']:g} s)"


def table(result: dict[str, Any]) -> str:
    """Markdown: one row per waiting pod (each side in order of its time to Running), then min/median/max."""
    on, off = result["on"], result["off"]
    rows = [
        "| pod of " + result["group"] + " (by time to Running) | with QuotaReclaim | without |",
        "|---|---|---|",
    ]
    for i in range(max(len(on["pods"]), len(off["pods"]))):
        cells = [_cell(side["pods"][i] if i < len(side["pods"]) else None, side["end"]) for side in (on, off)]
        rows.append(f"| {i + 1} | {cells[0]} | {cells[1]} |")

    def stats(side: dict[str, Any]) -> str:
        seconds = [w["seconds"] for w in side["pods"] if w["seconds"] is not None]
        waiting = [side["end"] - w["created"] for w in side["pods"] if w["state"] == "Pending"]
        text = f"{min(seconds):g} / {statistics.median(seconds):g} / {max(seconds):g} s" if seconds else "none ran"
        if waiting:
            span = f"{min(waiting):g}" if min(waiting) == max(waiting) else f"{min(waiting):g}–{max(waiting):g}"
            text += f"; {len(waiting)} still Pending at the end ({span} s)"
        return text

    rows.append(f"| min / median / max of those that ran | {stats(on)} | {stats(off)} |")
    rows.append(f"| evictions | {on['evictions']} | {off['evictions']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=CYCLES, help=f"planning cycles per run (default {CYCLES})")
    parser.add_argument("--group", default=GROUP, help=f"the waiting quota group (default {GROUP})")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON instead of the table")
    args = parser.parse_args(argv)
    configure_logging("error", "console")  # the controller's decisions (and "off"'s no-strategy warning) stay quiet
    result = compare(args.cycles, args.group)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
