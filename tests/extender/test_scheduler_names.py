"""`--scheduler-name`: a pod whose scheduler profile calls the extender without being announced on
the Lease gets its moves without a Reservation; the extender says so, once per schedulerName."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from descheduler.extender import Extender, SnapshotFileSource
from descheduler.extender.scheduler_names import LOAD_AWARE_SCHEDULER, SchedulerNames, annotation_value
from descheduler.migration.objects import DEFAULT_SCHEDULER_NAME
from tests.builders import node

from .conftest import extender_args, kube_pod, scheduling_args, write_snapshot

LOGGER = "descheduler.extender.scheduler_names"


@pytest.fixture
def extender(tmp_path: Path) -> Extender:
    path = write_snapshot(tmp_path / "snapshot.yaml", [node("cool"), node("plain")])
    extender = Extender(
        SnapshotFileSource(path), scheduling_args(), scheduler_names=SchedulerNames([LOAD_AWARE_SCHEDULER])
    )
    assert extender.refresh(force=True)
    return extender


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def ask(extender: Extender, name: str, **spec: str) -> None:
    body = extender_args(kube_pod(name, **spec), ["cool", "plain"])
    extender.filter(body)
    extender.prioritize(body)


def test_a_pod_of_a_listed_profile_is_no_warning(extender: Extender, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    ask(extender, "web-0")  # kube_pod's schedulerName is load-aware-scheduler
    assert warnings(caplog) == []


def test_an_unlisted_scheduler_name_is_warned_about_once_with_the_fix(
    extender: Extender, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for name in ("batch-0", "batch-1", "batch-2"):
        ask(extender, name, schedulerName="batch-scheduler")
    [warning] = warnings(caplog)
    assert "'batch-scheduler'" in warning and "default/batch-0" in warning
    assert "--scheduler-name does not list it" in warning and "no Reservation" in warning
    assert "add --scheduler-name batch-scheduler" in warning


def test_each_unlisted_name_is_warned_about_on_its_own(extender: Extender, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    ask(extender, "a", schedulerName="batch-scheduler")
    ask(extender, "b", schedulerName="gpu-scheduler")
    assert len(warnings(caplog)) == 2


def test_a_pod_without_a_scheduler_name_is_the_default_schedulers(
    extender: Extender, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    ask(extender, "plain-0", schedulerName="")
    [warning] = warnings(caplog)
    assert f"schedulerName {DEFAULT_SCHEDULER_NAME!r}" in warning


def test_without_names_to_check_nothing_is_warned(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A snapshot-file extender makes no Reservations, so there is nothing to announce or warn about."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    extender = Extender(SnapshotFileSource(write_snapshot(tmp_path / "s.yaml", [node("cool")])), scheduling_args())
    assert extender.refresh(force=True)
    ask(extender, "batch-0", schedulerName="batch-scheduler")
    assert warnings(caplog) == []


@pytest.mark.parametrize(
    ("names", "value"),
    [
        (["load-aware-scheduler"], "load-aware-scheduler"),
        (["b", "a", "b"], "a,b"),
        ([" a ", ""], "a"),
        ([], ""),
    ],
)
def test_the_annotation_is_the_names_sorted_unique_and_comma_joined(names: list[str], value: str) -> None:
    assert annotation_value(names) == value
