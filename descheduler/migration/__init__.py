"""Carrying out planned moves: PodMigrationJobs, Reservations, arbitration (migration.md).

Public surface:
- `Executor(api_client, policy).submit(plan, snapshot) -> [job names]`: a cycle's Plan becomes jobs.
- `MigrationController(api_client, policy, snapshot, clock, recorder)`: `reconcile_once()` drives
  every job one pass further (plus the orphan sweeper and job retention); `run(stop, period)` loops.
- The API models `PodMigrationJob` and `Reservation`, and `crds` (CRD manifests generated from them:
  `python -m descheduler.migration.crds [DIR]`).
"""

from descheduler.migration.api import ApiFailure
from descheduler.migration.controller import Backoff, MigrationController
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
