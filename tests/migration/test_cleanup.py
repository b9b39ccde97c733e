"""The clean-up rules (descheduler.migration.cleanup), as pure functions: which Reservations are
orphans, when one expires, how long a finished job is kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from descheduler.migration.cleanup import orphaned, past_retention, retention, ttl_passed
from descheduler.migration.objects import PodMigrationJob, Reservation, parse_job, parse_reservation
from descheduler.policy import parse_policy

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def job(phase: str = "Running", uid: str = "uid-job", **status: Any) -> PodMigrationJob:
    return parse_job(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "PodMigrationJob",
            "metadata": {"name": "web-0-abc", "uid": uid, "creationTimestamp": "2026-01-15T11:00:00Z"},
            "spec": {"podRef": {"namespace": "shop", "name": "web-0"}},
            "status": {"phase": phase, **status},
        }
    )


def reservation(phase: str = "Pending", age: timedelta = timedelta(minutes=1), ttl: str = "5m") -> Reservation:
    return parse_reservation(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "web-0-abc", "creationTimestamp": (NOW - age).isoformat()},
            "spec": {"nodeName": "node-b", "ttl": ttl},
            "status": {"phase": phase},
        }
    )


@pytest.mark.parametrize(
    ("the_job", "owner", "orphan"),
    [
        (None, "uid-job", True),
        (job("Succeeded"), "uid-job", True),
        (job("Running"), "uid-job", False),
        (job("Running"), "", False),
        (job("Running"), "uid-earlier-job-of-the-same-name", True),
    ],
    ids=["job-gone", "job-finished", "its-job-runs", "no-owner-recorded", "another-job-of-the-name"],
)
def test_orphaned(the_job: PodMigrationJob | None, owner: str, orphan: bool) -> None:
    assert orphaned(the_job, owner) is orphan


@pytest.mark.parametrize(
    ("found", "expires"),
    [
        (reservation("Pending", timedelta(minutes=4)), False),
        (reservation("Pending", timedelta(minutes=5)), True),
        (reservation("Available", timedelta(minutes=6)), True),
        (reservation("Consumed", timedelta(minutes=6)), False),
        (reservation("Expired", timedelta(minutes=6)), False),
    ],
)
def test_an_unconsumed_reservation_expires_at_its_ttl(found: Reservation, expires: bool) -> None:
    assert ttl_passed(found, NOW) is expires


def test_a_finished_job_is_kept_until_the_limits_counted_from_it_are_done_with_it() -> None:
    policy = parse_policy(
        "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\n"
        "migration: {jobRetention: 1m, cooldown: 10m, objectLimiters: {workload: {duration: 5m, maxMigrating: 1}}}\n"
    )
    keep = retention(policy.migration)
    assert keep == timedelta(minutes=10)
    ended = {"completionTime": "2026-01-15T11:50:00Z"}
    assert past_retention(job("Succeeded", **ended), keep, NOW)
    assert not past_retention(job("Succeeded", **ended), keep, NOW - timedelta(seconds=1))
    assert not past_retention(job("Running", **ended), keep, NOW)
