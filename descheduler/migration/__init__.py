"""Carrying out planned moves: PodMigrationJobs, Reservations, arbitration (migration.md).

Public surface:
- `Executor(api_client, policy).submit(plan, snapshot) -> [job names]`: a cycle's Plan becomes jobs.
- `MigrationController(api_client, policy, snapshot, clock, recorder)`: `reconcile_once()` drives
  every job one pass further (plus the orphan sweeper and job retention); `run(stop, period)` loops.
- The API models `PodMigrationJob` and `Reservation`, and `crds` (CRD manifests generated from them:
  `python -m descheduler.migration.crds [DIR]`).

Inside, by responsibility (pure modules decide, the controller, its drivers and cleanup do the I/O):
- `controller`: the loop — list, admit, hand each running job's next step to its mode's driver;
- one driver per move mode: `reservation_first`, `steered` (EvictDirectly, and moves without a
  reservation-aware scheduler), `make_before_break`; over `driving`, what they share (apply a
  decision: API writes, Events, logs, metrics; retries; the pod; the eviction);
- `steps`: a running job's next step and what each step's reads mean (pure); `rollout_steps`, the
  same for MakeBeforeBreak's rollout;
- `admission` (facts) and `arbiter` with `limits` (verdicts): which Pending jobs may start (pure);
- `pass_reads`: what one reconcile pass reads (jobs, Reservations, snapshot, placement);
- `cleanup`: Reservations released, swept and expired; finished jobs retired; invalid jobs failed;
- `targets` (where to reserve), `presence` (is a reservation-aware scheduler there), `records`
  (status conditions, Reservation bodies), `api` (the calls), `objects` (the models), `executor`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from descheduler.migration.api import ApiFailure
    from descheduler.migration.controller import MigrationController
    from descheduler.migration.driving import Backoff
    from descheduler.migration.executor import Executor, job_name
    from descheduler.migration.objects import (
        API_VERSION,
        JOBS,
        RESERVATIONS,
        ObjectError,
        PodMigrationJob,
        Reservation,
        parse_job,
        parse_reservation,
    )

# The public names are imported when first used: a command that reads only `objects` (`snapshot
# save`, `plan`) does not import the controller and all it imports.
_HOME = {
    "ApiFailure": "api",
    "Backoff": "driving",
    "MigrationController": "controller",
    "Executor": "executor",
    "job_name": "executor",
    **dict.fromkeys(
        ("API_VERSION", "JOBS", "RESERVATIONS", "ObjectError", "PodMigrationJob", "Reservation", "parse_job",
         "parse_reservation"),
        "objects",
    ),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "API_VERSION",
    "JOBS",
    "RESERVATIONS",
    "ApiFailure",
    "Backoff",
    "Executor",
    "MigrationController",
    "ObjectError",
    "PodMigrationJob",
    "Reservation",
    "job_name",
    "parse_job",
    "parse_reservation",
]
