"""Clean-up after the jobs (migration.md §4, §6): a finished job's Reservation released, orphan
Reservations swept, unconsumed Reservations expired past their TTL, finished jobs deleted after
their retention, and jobs we cannot read failed once.

The rules (`orphaned`, `ttl_passed`, `retention`) are pure functions; `Cleanup` applies them with
API calls and logs. Every call here is safe to repeat: a failure is retried on the next pass.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import structlog

from descheduler.events import EventRecorder, ObjectRef
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.objects import (
    JOBS,
    LABEL_JOB,
    RESERVATIONS,
    RESERVING_MODES,
    TERMINAL_PHASES,
    ObjectError,
    PodMigrationJob,
    Reservation,
    parse_reservation,
)
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.records import owner_uid, reservation_name
from descheduler.policy import MigrationArgs
from descheduler.timestamps import format_time

log = structlog.get_logger(__name__)


def orphaned(job: PodMigrationJob | None, owner: str) -> bool:
    """A Reservation of ours whose job is gone, finished, or another job of the same name (`owner`:
    the UID of the Reservation's controller owner, "" when it has none)."""
    return job is None or job.terminal or bool(owner and job.metadata.uid and owner != job.metadata.uid)


def ttl_passed(reservation: Reservation, now: datetime) -> bool:
    """A Reservation still holding room after its TTL: it expires."""
    created = reservation.metadata.creation_timestamp
    return reservation.holds_room and created is not None and now >= created + reservation.spec.ttl


def retention(args: MigrationArgs) -> timedelta:
    """How long a finished job is kept: jobRetention, but not less than the cooldown and the workload
    rate limit, which are counted from these jobs."""
    return max(args.job_retention, args.cooldown, args.object_limiters.workload.duration)


def past_retention(job: PodMigrationJob, keep: timedelta, now: datetime) -> bool:
    ended = job.status.completion_time or job.metadata.creation_timestamp
    return job.terminal and ended is not None and now - ended >= keep


class Cleanup:
    """The clean-up calls of one controller; `released` holds the jobs whose Reservation this pass
    already deleted (the sweeper leaves those alone)."""

    def __init__(self, api: MigrationApi, recorder: EventRecorder | None) -> None:
        self.api = api
        self.recorder = recorder
        self.released: set[str] = set()

    def new_pass(self) -> None:
        self.released = set()

    def release(self, handle: JobHandle) -> None:
        """Delete the job's Reservation (the sweeper retries when this fails)."""
        job = handle.job
        if job.spec.mode not in RESERVING_MODES:
            return
        self.released.add(job.name)
        try:
            if self.api.delete_object(RESERVATIONS, reservation_name(job)):
                handle.log().info("reservation released")
        except ApiFailure as failure:
            handle.log().warning("could not delete the reservation; the sweeper will", error=str(failure))

    def sweep(self, reads: PassReads) -> None:
        """Delete Reservations whose job is gone or finished; expire unconsumed ones past their TTL."""
        jobs = {h.job.name: h.job for h in reads.handles}
        for raw in reads.reservations:
            meta = raw.get("metadata") or {}
            labels = meta.get("labels") or {}
            name = str(meta.get("name", ""))
            job = jobs.get(labels.get(LABEL_JOB, ""))
            if job is not None and job.name in self.released:
                continue  # finished in this pass, which already released its Reservation
            try:
                if orphaned(job, owner_uid(raw)):
                    if self.api.delete_object(RESERVATIONS, name, str(meta.get("uid", ""))):
                        log.info("deleted an orphan reservation", reservation=name, job=labels.get(LABEL_JOB, ""))
                    continue
                reservation = parse_reservation(raw)
                if ttl_passed(reservation, reads.now):
                    status = {**(raw.get("status") or {}), "phase": "Expired", "reason": "TTLExceeded"}
                    self.api.write_status(RESERVATIONS, {**raw, "status": status})
                    log.info("reservation expired", reservation=reservation.name, node=reservation.spec.node_name)
            except ApiFailure as failure:
                if not failure.not_found and not failure.conflict:
                    log.warning("reservation clean-up failed; will retry", reservation=name, error=str(failure))
            except ObjectError as err:
                log.warning("unreadable reservation left alone", reservation=name, error=str(err))

    def retire(self, reads: PassReads) -> None:
        """Delete finished jobs past their retention, and their Reservations."""
        keep = retention(reads.policy.migration)
        for handle in reads.handles:
            job = handle.job
            if not past_retention(job, keep, reads.now):
                continue
            try:
                self.release(handle)
                if self.api.delete_object(JOBS, job.name, job.metadata.uid):
                    handle.log().info("finished migration job deleted", phase=job.status.phase)
            except ApiFailure as failure:
                if not failure.not_found and not failure.conflict:
                    handle.log().warning("could not delete a finished job; will retry", error=str(failure))

    def reject(self, raw: dict[str, Any], err: ObjectError, now: datetime) -> None:
        """A job we cannot read is failed (never acted on), once, with the field that is wrong."""
        found = raw.get("status")
        status: dict[str, Any] = found if isinstance(found, dict) else {}
        if status.get("phase") in TERMINAL_PHASES:
            return
        log.error("invalid migration job; failing it", job=raw["metadata"].get("name"), error=str(err))
        body = {
            **raw,
            "status": {
                **status,
                "phase": "Failed",
                "reason": "InvalidSpec",
                "message": str(err),
                "completionTime": format_time(now),
            },
        }
        try:
            self.api.write_status(JOBS, body)
        except ApiFailure as failure:
            log.warning("could not mark the invalid job failed", job=raw["metadata"].get("name"), error=str(failure))
            return
        if self.recorder is not None:
            self.recorder.warning(ObjectRef.of(raw), "InvalidSpec", str(err))
