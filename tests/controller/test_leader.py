"""Leader election on a Lease in the fake API server, with the real client: one leader at a time,
hand-over within the lease duration when the leader dies, within a retry period when it releases."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from descheduler.controller.leader import LeaderElector, LeaseConfig, election_client
from descheduler.fakecluster.apiserver import FakeApiServer
from tests import waiting

LEASE = {"lease_duration": 2.0, "renew_deadline": 1.2, "retry_period": 0.1}


class Candidate:
    """One replica: an elector on its own thread; `crash()` makes it stop talking to the API at once
    (like a killed process: no release, no renewals)."""

    def __init__(self, server: FakeApiServer, identity: str) -> None:
        config = LeaseConfig(namespace="kube-system", identity=identity, **LEASE)
        self.kube = election_client(server.configuration(), config)  # as `descheduler run` makes it
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stop = threading.Event()
        self.crashed = False
        self.elector = LeaderElector(
            self.kube.api_client,
            config,
            on_started=self.started.set,
            on_stopped=self.stopped.set,
        )
        original = self.elector._try_acquire_or_renew
        self.elector._try_acquire_or_renew = lambda: False if self.crashed else original()  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def crash(self) -> None:
        self.crashed = True

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.kube.close()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as srv:
        yield srv


def watch_leaders(candidates: list[Candidate], stop: threading.Event, overlaps: list[float]) -> None:
    while not stop.is_set():
        if sum(c.elector.is_leader for c in candidates) > 1:
            overlaps.append(time.monotonic())
        time.sleep(0.005)


def wait_for(predicate: Any, timeout: float) -> float:
    return waiting.wait_for(predicate, timeout, interval=0.01)


def lease(server: FakeApiServer) -> Any:
    with server.api_client() as api:
        return client.CoordinationV1Api(api).read_namespaced_lease("descheduler", "kube-system")


def test_one_leader_and_handover_when_the_leader_dies(server: FakeApiServer) -> None:
    a, b = Candidate(server, "a"), Candidate(server, "b")
    done, overlaps = threading.Event(), []  # type: ignore[var-annotated]
    monitor = threading.Thread(target=watch_leaders, args=([a, b], done, overlaps), daemon=True)
    monitor.start()
    try:
        wait_for(lambda: a.elector.is_leader or b.elector.is_leader, 3)
        leader, standby = (a, b) if a.elector.is_leader else (b, a)
        time.sleep(0.5)  # several renewals: the standby must not take over a live leader
        assert not standby.elector.is_leader
        leader.crash()
        handover = wait_for(lambda: standby.elector.is_leader, 5)
        assert handover <= LEASE["lease_duration"] + 0.5
        assert leader.stopped.is_set()  # it noticed it could not renew and stopped working
        assert lease(server).spec.holder_identity == standby.elector.config.identity
        assert lease(server).spec.lease_transitions == 1
    finally:
        done.set()
        monitor.join()
        a.close()
        b.close()
    assert overlaps == []


def test_the_leader_releases_on_shutdown_and_the_standby_takes_over_quickly(server: FakeApiServer) -> None:
    a = Candidate(server, "a")
    wait_for(lambda: a.elector.is_leader, 3)
    b = Candidate(server, "b")
    try:
        time.sleep(0.3)
        assert not b.elector.is_leader
        a.close()  # graceful: releases the Lease
        assert a.stopped.is_set()
        handover = wait_for(lambda: b.elector.is_leader, 3)
        assert handover < 1.0  # a retry period or so, not a lease duration
    finally:
        b.close()
        a.close()


def test_api_errors_while_leading_lose_leadership_after_the_renew_deadline(server: FakeApiServer) -> None:
    a = Candidate(server, "a")
    try:
        wait_for(lambda: a.elector.is_leader, 3)
        server.faults.fail_next(1000, status=500, path="/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")
        lost = wait_for(lambda: a.stopped.is_set(), 5)
        assert LEASE["renew_deadline"] - 0.3 <= lost <= LEASE["renew_deadline"] + 1.0
        assert not a.elector.is_leader
    finally:
        server.faults.clear()
        a.close()


def test_a_hung_renewal_ends_leadership_by_the_renew_deadline_before_a_standby_may_take_over(
    server: FakeApiServer,
) -> None:
    """A Lease request that does not answer must not keep a replica leading: the call is cut at the
    renew deadline, so the work stops before the lease duration (when a standby may acquire)."""
    a = Candidate(server, "a")
    try:
        wait_for(lambda: a.elector.is_leader, 3)
        server.faults.delay(30.0, path="/leases/", count=1)
        lost = wait_for(lambda: a.stopped.is_set(), 10)
        assert lost < LEASE["lease_duration"], lost
    finally:
        server.faults.clear()
        a.close()


def test_step_driven_on_a_clock_of_its_own_hands_over_after_the_lease_duration(server: FakeApiServer) -> None:
    """`step` is one round at the elector's clocks (a simulated day's driver): the standby waits a
    full lease duration of *its* clock after the holder stops renewing, and the old holder, when it
    comes back, has lost and stays out."""
    now = [1_000.0]
    events: list[str] = []

    def elector(identity: str) -> LeaderElector:
        return LeaderElector(
            server.api_client(),
            LeaseConfig(
                namespace="kube-system", identity=identity, lease_duration=15, renew_deadline=10, retry_period=2
            ),
            on_started=lambda: events.append(f"{identity} started"),
            on_stopped=lambda: events.append(f"{identity} stopped"),
            monotonic=lambda: now[0],
        )

    a, b = elector("a"), elector("b")
    assert a.step() and not b.step()
    now[0] += 14  # a is silent: b has watched the same record for 14 s, less than the lease duration
    assert not b.step()
    now[0] += 2
    assert b.step()
    assert a.step() is False and a.lost  # a's renew deadline passed and the holder is b: a stops
    now[0] += 30
    assert not a.step()  # a lost leader does not compete again
    assert b.step()
    assert events == ["a started", "b started", "a stopped"]
