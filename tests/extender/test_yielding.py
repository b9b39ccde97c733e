"""A rebuilding thread steps aside while requests are in flight, and is never starved (`RequestsFirst`)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from descheduler.extender import yielding
from descheduler.extender.yielding import RequestsFirst


def _rebuild(gate: RequestsFirst, calls: int, progress: list[int], done: threading.Event) -> None:
    """A stand-in rebuild: many small Python calls, its progress counted."""
    with gate.yielding():
        for _ in range(calls):
            progress.append(len(progress))
    done.set()


def _start(gate: RequestsFirst, calls: int) -> tuple[list[int], threading.Event]:
    progress: list[int] = []
    done = threading.Event()
    threading.Thread(target=_rebuild, args=(gate, calls, progress, done), daemon=True).start()
    return progress, done


def test_a_rebuild_waits_while_a_request_is_in_flight_and_resumes_when_it_ends() -> None:
    gate = RequestsFirst(min_share=0.0, grace=0.0)
    gate.enter()
    progress, done = _start(gate, 1000)
    time.sleep(0.3)
    assert not done.is_set()
    assert len(progress) <= 1
    gate.leave()
    assert done.wait(10)
    assert len(progress) == 1000
    assert gate.waits > 0


def test_a_request_arriving_mid_rebuild_is_waited_for_asleep_not_in_a_spin() -> None:
    gate = RequestsFirst(min_share=0.0, grace=0.0)
    progress: list[int] = []
    stop, done = threading.Event(), threading.Event()

    def rebuild() -> None:
        with gate.yielding():
            while not stop.is_set():
                progress.append(len(progress))
        done.set()

    threading.Thread(target=rebuild, daemon=True).start()
    while not progress:
        time.sleep(0.001)
    with gate.serving():
        time.sleep(0.05)
        seen = len(progress)
        time.sleep(0.3)
        assert len(progress) <= seen + 1
    stop.set()
    assert done.wait(10)
    # Waiting on the event it wakes from at most every 50 ms: a handful of waits, not one per spin.
    assert 0 < gate.waits < 100


def test_a_rebuild_keeps_its_share_when_requests_never_stop() -> None:
    gate = RequestsFirst(min_share=0.5, grace=0.0)
    gate.enter()  # a request that never ends
    try:
        _, done = _start(gate, 200)
        assert done.wait(10)
    finally:
        gate.leave()


def test_a_short_rebuild_finishes_without_stepping_aside() -> None:
    gate = RequestsFirst(min_share=0.0, grace=10.0)
    gate.enter()
    try:
        _, done = _start(gate, 1000)
        assert done.wait(10)
        assert gate.waits == 0
    finally:
        gate.leave()


def test_a_rebuild_without_requests_does_not_wait() -> None:
    gate = RequestsFirst()
    _, done = _start(gate, 1000)
    assert done.wait(10)
    assert gate.waits == 0


def _after_a_request(gate: RequestsFirst) -> RequestsFirst:
    gate.enter()
    gate.leave()
    return gate


def test_a_rebuild_between_requests_hands_the_core_over_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request's thread woken on the same core runs at the next hand-over, not at the end of the
    rebuild's time slice (several ms), and only then asks for the GIL."""
    handed: list[float] = []
    monkeypatch.setattr(yielding, "_hand_over", lambda: handed.append(time.perf_counter()))
    gate = _after_a_request(RequestsFirst())
    with gate.yielding():
        started = time.perf_counter()
        while time.perf_counter() - started < 0.05:
            len([])  # a call, as a rebuild makes millions
        elapsed = time.perf_counter() - started
    assert 2 <= len(handed) <= elapsed / yielding.YIELD_EVERY + 1


def test_a_rebuild_of_few_long_c_calls_still_hands_the_core_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass over pods in slices makes a few calls per slice of ~1 ms: the hand-overs come within a
    few slices, not only after hundreds of them."""
    handed: list[float] = []
    monkeypatch.setattr(yielding, "_hand_over", lambda: handed.append(time.perf_counter()))
    gate = _after_a_request(RequestsFirst())
    with gate.yielding():
        for _ in range(40):
            sum(range(100_000))  # one C call of about a millisecond
    assert len(handed) >= 5


@pytest.mark.parametrize("requests", ["none yet", "the last one a while ago"])
def test_a_rebuild_with_no_request_lately_keeps_the_core(monkeypatch: pytest.MonkeyPatch, requests: str) -> None:
    """A hand-over gives the core to any process that wants it, not only to a request's thread: with no
    request lately, a rebuild on a busy node would get a fraction of its share for nothing."""
    handed: list[float] = []
    monkeypatch.setattr(yielding, "_hand_over", lambda: handed.append(time.perf_counter()))
    gate = RequestsFirst(recent=0.01)
    if requests != "none yet":
        _after_a_request(gate)
        time.sleep(0.02)
    with gate.yielding():
        started = time.perf_counter()
        while time.perf_counter() - started < 0.05:
            len([])
    assert handed == []


def test_requests_in_flight_are_counted_across_threads() -> None:
    gate = RequestsFirst()

    def requests() -> None:
        for _ in range(2000):
            with gate.serving():
                pass

    threads = [threading.Thread(target=requests) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gate.in_flight == 0


def test_the_previous_profile_function_is_restored() -> None:
    def other(frame: object, event: str, arg: object) -> None:
        pass

    previous = sys.getprofile()
    sys.setprofile(other)
    try:
        with RequestsFirst().yielding():
            pass
        assert sys.getprofile() is other
    finally:
        sys.setprofile(previous)
