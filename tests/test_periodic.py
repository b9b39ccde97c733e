"""descheduler.periodic: a function called every period on a background thread until stopped."""

from __future__ import annotations

import logging
import threading

import pytest

from descheduler.periodic import Periodic

log = logging.getLogger("test.periodic")


def test_a_failing_call_is_logged_and_the_loop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    third = threading.Event()

    def step() -> None:
        calls.append(len(calls))
        if len(calls) >= 3:
            third.set()
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")

    loop = Periodic(step, 0.01, name="test-loop", failure="test: step failed", log=log)
    loop.start()
    try:
        assert third.wait(5)
    finally:
        loop.stop()
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == ["test: step failed"]


def test_no_call_after_stop_returns() -> None:
    calls: list[int] = []
    loop = Periodic(lambda: calls.append(1), 0.01, name="test-loop", failure="x", log=log)
    loop.start()
    loop.stop()
    seen = len(calls)
    threading.Event().wait(0.05)
    assert len(calls) == seen


def test_starting_a_running_loop_starts_no_second_thread() -> None:
    gate = threading.Event()
    loop = Periodic(lambda: gate.wait(5), 0.01, name="test-loop-once", failure="x", log=log)
    loop.start()
    loop.start()
    try:
        assert sum(t.name == "test-loop-once" for t in threading.enumerate()) == 1
    finally:
        gate.set()
        loop.stop()
