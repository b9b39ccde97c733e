"""`lease_presence` reads the scheduler Lease as the client's model and as the API's JSON alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client as k8s

from descheduler.migration.objects import ANNOTATION_SCHEDULER_NAMES
from descheduler.migration.presence import Presence, lease_presence
from descheduler.timestamps import format_micro

NOW = datetime(2026, 1, 15, 12, 0, 0, tzinfo=UTC)
NAME = "descheduler-system/descheduler-scheduler"


def as_dict(
    renewed: datetime | None, acquired: datetime | None, duration: int | None, names: str | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": "extender-1"}
    if renewed is not None:
        spec["renewTime"] = format_micro(renewed)
    if acquired is not None:
        spec["acquireTime"] = format_micro(acquired)
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    metadata: dict[str, Any] = {"name": "descheduler-scheduler", "namespace": "descheduler-system"}
    if names is not None:
        metadata["annotations"] = {ANNOTATION_SCHEDULER_NAMES: names}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}


def as_model(renewed: datetime | None, acquired: datetime | None, duration: int | None, names: str | None) -> Any:
    annotations = None if names is None else {ANNOTATION_SCHEDULER_NAMES: names}
    return k8s.V1Lease(
        metadata=k8s.V1ObjectMeta(
            name="descheduler-scheduler", namespace="descheduler-system", annotations=annotations
        ),
        spec=k8s.V1LeaseSpec(
            holder_identity="extender-1", renew_time=renewed, acquire_time=acquired, lease_duration_seconds=duration
        ),
    )


AGO = {s: NOW - timedelta(seconds=s) for s in (3, 21, 120)}


@pytest.mark.parametrize(
    ("renewed", "acquired", "duration", "names"),
    [
        (AGO[3], None, 15, "default-scheduler,load-aware-scheduler"),  # fresh, serving two names
        (AGO[3], None, 15, None),  # fresh, no list: serves every name
        (AGO[21], None, 15, "load-aware-scheduler"),  # within duration + clock skew
        (AGO[120], None, 15, "load-aware-scheduler"),  # stale
        (None, AGO[3], 15, None),  # only acquired
        (None, None, 15, None),  # never renewed
        (AGO[3], None, None, None),  # no duration
        (NOW + timedelta(seconds=2), None, 15, None),  # renewed after `now` (clocks apart)
    ],
)
def test_the_dict_and_the_client_model_say_the_same(
    renewed: datetime | None, acquired: datetime | None, duration: int | None, names: str | None
) -> None:
    from_dict = lease_presence(as_dict(renewed, acquired, duration, names), NOW, NAME)
    assert from_dict == lease_presence(as_model(renewed, acquired, duration, names), NOW, NAME)


def test_a_fresh_lease_as_json_lists_the_names_it_serves() -> None:
    lease = as_dict(NOW - timedelta(seconds=3, microseconds=250000), None, 15, " load-aware-scheduler , ,x")
    assert lease["spec"]["renewTime"] == "2026-01-15T11:59:56.750000Z"
    assert lease_presence(lease, NOW, NAME) == Presence(
        True, f"Lease {NAME} renewed by extender-1 3s ago", frozenset({"load-aware-scheduler", "x"})
    )


def test_a_stale_lease_as_json_names_when_it_was_last_renewed() -> None:
    presence = lease_presence(as_dict(AGO[120], None, 15, None), NOW, NAME)
    assert presence == Presence(
        False, f"Lease {NAME} last renewed by extender-1 at 2026-01-15T11:58:00Z (lease duration 15s)"
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"renewTime": "yesterday", "leaseDurationSeconds": 15},
        {"renewTime": 17, "leaseDurationSeconds": 15},
        {"renewTime": "2026-01-15T11:59:57.000000Z", "leaseDurationSeconds": "15"},
        {"renewTime": "2026-01-15T11:59:57.000000Z", "leaseDurationSeconds": True},
    ],
)
def test_a_malformed_lease_as_json_is_not_fresh(spec: dict[str, Any]) -> None:
    assert lease_presence({"metadata": {}, "spec": spec}, NOW, NAME) == Presence(
        False, f"Lease {NAME} has no renew time or duration"
    )


@pytest.mark.parametrize("lease", [{}, {"metadata": None, "spec": None}, {"metadata": "x", "spec": []}])
def test_a_lease_as_json_without_its_parts_is_not_fresh(lease: dict[str, Any]) -> None:
    assert lease_presence(lease, NOW, NAME).present is False
