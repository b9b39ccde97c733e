"""The scheduler Lease as the controller reads it, against the fake API server: where it lives, the
schedulerNames announced on it, what a refused renewal tells the operator, and the renewal metrics."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from descheduler import metrics
from descheduler.extender.lease import LEASE_ROLE, SchedulerLease, forbidden_fix
from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import KubeClient, RetryPolicy
from descheduler.migration.objects import ANNOTATION_SCHEDULER_NAMES, SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE

LEASES = "leases.coordination.k8s.io"
NO_RETRY = RetryPolicy(max_retries=0, backoff_base=0.01, backoff_cap=0.05)
WALL = datetime(2026, 1, 15, 12, 0, 0, tzinfo=UTC)
SIDECAR_USER = "system:serviceaccount:kube-system:kube-scheduler"


def refused_for(user: str, namespace: str = SCHEDULER_LEASE_NAMESPACE) -> str:
    """The API server's words when RBAC refuses `user` the Lease."""
    return (
        f'leases.coordination.k8s.io "{SCHEDULER_LEASE}" is forbidden: User "{user}" cannot get resource "leases" '
        f'in API group "coordination.k8s.io" in the namespace "{namespace}"'
    )


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(seed_namespaces=("default", SCHEDULER_LEASE_NAMESPACE, "kube-system")) as running:
        yield running


@pytest.fixture
def client(server: FakeApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_configuration(server.configuration(), qps=0, burst=0, timeout=10, retry=NO_RETRY)
    yield kube
    kube.close()


def lease_at(server: FakeApiServer, namespace: str = SCHEDULER_LEASE_NAMESPACE) -> dict[str, Any]:
    return server.store.get(LEASES, SCHEDULER_LEASE, namespace)


def renewer(client: KubeClient, **kwargs: Any) -> SchedulerLease:
    return SchedulerLease(client, SCHEDULER_LEASE_NAMESPACE, "ext-1", wall_clock=lambda: WALL, **kwargs)


def test_the_created_lease_announces_the_scheduler_names_sorted_and_comma_joined(
    server: FakeApiServer, client: KubeClient
) -> None:
    assert renewer(client, scheduler_names=["load-aware-scheduler", "batch", "batch"]).renew()
    annotations = lease_at(server)["metadata"]["annotations"]
    assert annotations == {ANNOTATION_SCHEDULER_NAMES: "batch,load-aware-scheduler"}


def test_by_default_the_lease_announces_the_load_aware_scheduler_profile(
    server: FakeApiServer, client: KubeClient
) -> None:
    assert renewer(client).renew()
    assert lease_at(server)["metadata"]["annotations"][ANNOTATION_SCHEDULER_NAMES] == "load-aware-scheduler"


def test_a_renewal_rewrites_the_names_and_keeps_other_annotations(server: FakeApiServer, client: KubeClient) -> None:
    assert renewer(client, scheduler_names=["old-profile"]).renew()
    server.store.modify(
        LEASES,
        SCHEDULER_LEASE,
        SCHEDULER_LEASE_NAMESPACE,
        lambda obj: obj["metadata"]["annotations"].update({"team.example/owner": "platform"}),
    )
    assert renewer(client, scheduler_names=["load-aware-scheduler"]).renew()
    assert lease_at(server)["metadata"]["annotations"] == {
        ANNOTATION_SCHEDULER_NAMES: "load-aware-scheduler",
        "team.example/owner": "platform",
    }


def test_the_lease_is_written_where_it_is_told_not_where_the_process_runs(
    server: FakeApiServer, client: KubeClient
) -> None:
    lease = SchedulerLease(client, "kube-system", "ext-1", name="my-scheduler-lease")
    assert lease.renew()
    assert server.store.exists(LEASES, "my-scheduler-lease", "kube-system")
    assert not server.store.exists(LEASES, SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE)


def test_start_logs_where_the_lease_is_written_as_whom_and_for_which_names(
    client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="descheduler.extender.lease")
    lease = SchedulerLease(client, "kube-system", "ext-7", scheduler_names=["b", "a"], period=60).start()
    lease.stop()
    [started] = [r.getMessage() for r in caplog.records if "renewing the scheduler Lease" in r.getMessage()]
    assert "kube-system/descheduler-scheduler" in started and "ext-7" in started and "a,b" in started


def test_a_forbidden_renewal_names_the_role_and_the_rolebinding_command_once(
    server: FakeApiServer, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="descheduler.extender.lease")
    server.faults.fail_next(3, path="/leases", status=403, message=refused_for(SIDECAR_USER))
    lease = renewer(client)
    assert not lease.renew() and not lease.renew() and not lease.renew()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"Role {LEASE_ROLE} in namespace {SCHEDULER_LEASE_NAMESPACE}" in warnings[0]
    assert (
        f"kubectl -n {SCHEDULER_LEASE_NAMESPACE} create rolebinding {LEASE_ROLE}-kube-scheduler "
        f"--role={LEASE_ROLE} --serviceaccount=kube-system:kube-scheduler"
    ) in warnings[0]
    assert lease.renew()  # the binding made: renewed, and a later refusal is logged again
    server.faults.fail_next(1, path="/leases", status=403, message=refused_for(SIDECAR_USER))
    assert not lease.renew()
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


@pytest.mark.parametrize(
    ("namespace", "user", "command"),
    [
        (
            SCHEDULER_LEASE_NAMESPACE,
            SIDECAR_USER,
            f"kubectl -n {SCHEDULER_LEASE_NAMESPACE} create rolebinding {LEASE_ROLE}-kube-scheduler "
            f"--role={LEASE_ROLE} --serviceaccount=kube-system:kube-scheduler",
        ),
        (
            SCHEDULER_LEASE_NAMESPACE,
            "system:kube-scheduler",
            f"kubectl -n {SCHEDULER_LEASE_NAMESPACE} create rolebinding {LEASE_ROLE}-system-kube-scheduler "
            f"--role={LEASE_ROLE} --user=system:kube-scheduler",
        ),
        (
            "kube-system",
            "system:serviceaccount:descheduler-system:descheduler-extender",
            f"kubectl -n kube-system create rolebinding {LEASE_ROLE}-descheduler-extender "
            f"--role={LEASE_ROLE} --serviceaccount=descheduler-system:descheduler-extender",
        ),
    ],
)
def test_the_fix_binds_the_role_to_the_user_the_api_server_named(namespace: str, user: str, command: str) -> None:
    fix = forbidden_fix(namespace, refused_for(user, namespace))
    assert command in fix
    assert user in fix
    # Outside the shipped namespace the Role itself is missing too.
    assert (f"defines that Role in {SCHEDULER_LEASE_NAMESPACE}" in fix) is (namespace != SCHEDULER_LEASE_NAMESPACE)


def test_the_fix_without_a_user_in_the_message_still_gives_the_command_shape() -> None:
    fix = forbidden_fix(SCHEDULER_LEASE_NAMESPACE, "forbidden")
    assert f"--role={LEASE_ROLE} --serviceaccount=NAMESPACE:NAME" in fix


def test_renewals_are_counted_by_result_and_the_last_success_is_stamped(
    server: FakeApiServer, client: KubeClient
) -> None:
    def count(result: str) -> float:
        return metrics.sample("descheduler_extender_lease_renewals_total", {"result": result})

    before = {result: count(result) for result in ("ok", "forbidden", "error")}
    lease = renewer(client)
    assert lease.renew()
    assert metrics.sample("descheduler_extender_lease_renewed_timestamp_seconds") == WALL.timestamp()
    server.faults.fail_next(1, path="/leases", status=403, message=refused_for(SIDECAR_USER))
    assert not lease.renew()
    server.faults.fail_next(1, path="/leases", status=500)
    assert not lease.renew()
    assert {result: count(result) - before[result] for result in before} == {"ok": 1, "forbidden": 1, "error": 1}


def test_a_replica_that_is_not_ready_counts_no_renewal(client: KubeClient) -> None:
    before = metrics.sample("descheduler_extender_lease_renewals_total", {"result": "ok"})
    assert not renewer(client, ready=lambda: False).renew()
    assert metrics.sample("descheduler_extender_lease_renewals_total", {"result": "ok"}) == before
