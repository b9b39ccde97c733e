"""The simulation driver's pace: the migration controller steps at its period, and at the busy period
while a move is in flight (as the product's controller, stepping every 2 s, finishes a move in seconds)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from descheduler.fakecluster.scenario import load_demo_scenario
from descheduler.policy import load_policy
from descheduler.simulate.cli import DEMO_POLICY
from descheduler.simulate.runner import Simulation, SimulationOptions


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _move_seconds(job: dict[str, Any]) -> float:
    return _stamp(job["status"]["completionTime"]) - _stamp(job["metadata"]["creationTimestamp"])


def _succeeded_moves(busy_period: float | None) -> list[float]:
    options = SimulationOptions(cycles=1, migration_period=60.0, busy_period=busy_period)
    record = Simulation(load_demo_scenario(), load_policy(DEMO_POLICY), options).run()
    jobs = [job for job in record.jobs.values() if (job.get("status") or {}).get("phase") == "Succeeded"]
    return [_move_seconds(job) for job in jobs]


def test_moves_in_flight_are_stepped_at_the_busy_period() -> None:
    busy = _succeeded_moves(busy_period=5.0)
    assert busy and max(busy) <= 60.0  # reserve, evict, bound, Ready: a few 5 s steps
    coarse = _succeeded_moves(busy_period=None)
    assert coarse and min(coarse) >= 120.0  # the same steps one 60 s period apart


class _StepTimes(Simulation):
    """Records when, from the start, the migration controller stepped."""

    steps: list[float]

    def _observe(self) -> None:
        super()._observe()
        self.steps.append(round(self.cluster.now - self._origin, 6))


def test_idle_steps_can_fall_on_the_period_grid_whatever_the_cycles_phase() -> None:
    policy = load_policy(DEMO_POLICY).model_copy(update={"dry_run": True})  # nothing moves: every step idle
    options = SimulationOptions(cycles=2, warmup_seconds=25.0, migration_period=20.0, align_idle_steps=True)
    simulation = _StepTimes(load_demo_scenario(), policy, options)
    simulation.steps = []
    simulation.run()
    # Cycles at 25 s and 85 s (a 60 s interval); steps on the 20 s grid, plus one where each interval ends.
    assert simulation.steps == [40.0, 60.0, 80.0, 85.0, 100.0, 120.0, 140.0, 145.0]
