"""Crash safety (migration.md §6): a controller killed at any point is replaced by a fresh one that
finishes the job — one eviction, no orphan Reservation, every replica back; API errors and
conflicts at every step are retried."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import NS, Harness


class Killed(BaseException):
    """The process died: nothing in the controller may catch this."""


def killing_client(h: Harness, at: int) -> Any:
    """A client whose `at`-th write reaches the server, and then the process dies."""
    api = h.cluster.api_client()
    send = api.rest_client.request
    writes = 0

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        nonlocal writes
        response = send(method, url, *args, **kwargs)
        if method in ("POST", "PUT", "PATCH", "DELETE") and "/events" not in url:
            writes += 1
            if writes == at:
                raise Killed(f"{method} {url}")
        return response

    api.rest_client.request = request
    return api


def _finish(h: Harness, name: str) -> None:
    """A fresh controller runs the job to its end, then the workload settles."""
    h.run(h.controller(), 60, until=lambda: h.phase(name) in ("Succeeded", "Failed", "Aborted"))
    h.run(h.controller(), 30, until=lambda: len(h.ready_pods()) == 4 and len(h.active_pods()) == 4)


def _writes_in_a_clean_run(make_harness: Callable[..., Harness]) -> int:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    before = h.cluster.server.faults.request_counts()
    _finish(h, name)
    after = h.cluster.server.faults.request_counts()
    writes = {"create", "update", "patch", "delete"}
    return sum(n - before.get(key, 0) for key, n in after.items() if key[0] in writes and "/events" not in key[1])


def test_a_controller_killed_after_any_write_is_finished_by_a_fresh_one(make_harness: Callable[..., Harness]) -> None:
    total = _writes_in_a_clean_run(make_harness)
    assert total >= 6  # start, reserve (create + mark available), record, evict, record, bound, succeed
    for at in range(1, total + 1):
        h = make_harness()
        [name] = h.submit(h.plan_move("web-0", "node-c"))
        first = h.controller(killing_client(h, at))
        with pytest.raises(Killed):
            h.run(first, 60, until=lambda name=name, h=h: h.phase(name) == "Succeeded")  # type: ignore[misc]
        del first  # its memory (backoff, rate limiter) dies with it
        _finish(h, name)
        status = h.job(name)["status"]
        assert status["phase"] == "Succeeded", (at, status)
        assert h.evictions() == 1, f"killed after write {at}: {h.evictions()} evictions"
        assert h.reservations() == [], f"killed after write {at}: orphan reservation"
        assert len(h.ready_pods()) == 4 and len(h.active_pods()) == 4, f"killed after write {at}"
        h.cluster.stop()


@pytest.mark.parametrize("status", [500, 409, 503])
def test_api_errors_at_every_step_are_retried(make_harness: Callable[..., Harness], status: int) -> None:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    faults = h.cluster.server.faults
    steps = [
        ("GET", r"/podmigrationjobs$"),  # the pass's list
        ("GET", r"/reservations$"),
        ("PUT", r"/podmigrationjobs/[^/]+/status$"),  # every phase and condition write
        ("GET", rf"/namespaces/{NS}/pods/web-0$"),
        ("GET", r"/reservations/[^/]+$"),
        ("POST", r"/reservations$"),
        ("PUT", r"/reservations/[^/]+/status$"),
        ("POST", r"/eviction$"),
        ("DELETE", r"/reservations/[^/]+$"),
    ]
    for method, path in steps:
        faults.fail_next(2, path=path, method=method, status=status)
    h.run(h.controller(), 120, until=lambda: h.phase(name) == "Succeeded" and not h.reservations())
    assert h.phase(name) == "Succeeded"
    assert h.evictions() <= 3  # the two injected failures, then one that went through
    assert h.reservations() == []
    h.run(h.controller(), 30, until=lambda: len(h.ready_pods()) == 4)
    assert len(h.ready_pods()) == 4 and len(h.active_pods()) == 4


def test_a_stale_status_write_rereads_and_continues(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    controller = h.controller()
    controller.reconcile_once()  # Running, reserved, evicted
    h.cluster.advance(1)

    def touch(obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("annotations", {})["someone"] = "else"  # bumps resourceVersion

    h.cluster.store.modify("podmigrationjobs.descheduler.dev", name, "", touch)
    h.run(controller, 60, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded" and h.evictions() == 1


def test_a_fresh_controller_resumes_every_job_an_earlier_one_started(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()
    [name] = h.submit(h.plan_move("web-0", "node-c"))
    first = h.controller()
    first.reconcile_once()
    assert h.phase(name) == "Running"
    del first
    h.run(h.controller(), 60, until=lambda: h.phase(name) == "Succeeded")
    assert h.phase(name) == "Succeeded" and h.evictions() == 1
