from typing import Any

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.scheduler import Binding, Scheduler

from .conftest import T0, node, pod


def _nodes(store: Store) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in store.list("pods")}


def test_binds_a_pending_pod_and_marks_it_scheduled(store: Store) -> None:
    store.load([node("n1"), pod("p")])
    assert Scheduler(store).step(T0) == [Binding("default", "p", "n1")]
    bound = store.get("pods", "p", "default")
    assert bound["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()


def test_one_pass_accounts_for_its_earlier_bindings(store: Store) -> None:
    # Each node fits exactly one 3-cpu pod: the second pod must go to the other node.
    store.load([node("n1", cpu="4"), node("n2", cpu="4"), pod("a", cpu="3"), pod("b", cpu="3")])
    Scheduler(store).step(T0)
    assert sorted(_nodes(store).values()) == ["n1", "n2"]


def test_higher_priority_pods_are_placed_first(store: Store) -> None:
    store.load([node("n1", cpu="4"), pod("low", cpu="3", priority=0), pod("high", cpu="3", priority=1000)])
    scheduler = Scheduler(store)
    scheduler.step(T0)
    assert _nodes(store) == {"high": "n1", "low": ""}
    # kube-scheduler's FitError wording (the in-tree filters are stock.StockScheduler's)
    assert scheduler.unschedulable == {"default/low": "0/1 nodes are available: 1 Insufficient cpu."}


def test_other_schedulers_pods_are_left_alone(store: Store) -> None:
    other = pod("p")
    other["spec"]["schedulerName"] = "someone-else"
    store.load([node("n1"), other])
    assert Scheduler(store).step(T0) == []


def test_cordoned_nodes_get_no_pods(store: Store) -> None:
    store.load([node("n1", unschedulable=True), node("n2"), pod("p")])
    Scheduler(store).step(T0)
    assert _nodes(store) == {"p": "n2"}


def _reservation(
    name: str, node_name: str, app: str, cpu: str = "2", phase: str = "Available", created: str = "2026-01-15T11:00:00Z"
) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {
            "nodeName": node_name,
            "resources": {"cpu": cpu, "memory": "1Gi"},
            "owners": [{"labelSelector": {"matchLabels": {"app": app}}}],
        },
        "status": {"phase": phase},
    }


def test_a_pod_owning_a_reservation_goes_to_its_node_and_consumes_it(store: Store) -> None:
    store.load([node("n1"), node("n2"), _reservation("r1", "n2", "web"), pod("p", app="web")])
    assert Scheduler(store).step(T0) == [Binding("default", "p", "n2", "r1")]
    status = store.get("reservations.descheduler.dev", "r1")["status"]
    assert status == {
        "phase": "Consumed",
        "consumedBy": "default/p",
        "consumedByUID": store.get("pods", "p", "default")["metadata"]["uid"],
        "message": "pod default/p was bound to node n2",
    }


def test_reserved_room_is_taken_for_other_pods(store: Store) -> None:
    # Without the reservation n2 (empty) would score best; with it only n1 has room.
    busy = pod("y", node_name="n1", phase="Running", ready=True, cpu="1")
    store.load(
        [
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            _reservation("r1", "n2", "web", cpu="3"),
            busy,
            pod("x", app="other", cpu="2"),
        ]
    )
    Scheduler(store).step(T0)
    assert _nodes(store) == {"x": "n1", "y": "n1"}


def test_room_a_pod_took_from_its_reservation_is_counted_once_for_the_next_pod(store: Store) -> None:
    # p consumes r1 on n1 (2 of 4 cpu); q, in the same pass, fits only in the 2 cpu left there: n2 is full.
    full = pod("y", node_name="n2", phase="Running", ready=True, cpu="3")
    store.load(
        [
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            _reservation("r1", "n1", "web", cpu="2"),
            full,
            pod("p", app="web", cpu="2", priority=1000),
            pod("q", app="other", cpu="2"),
        ]
    )
    assert Scheduler(store).step(T0) == [Binding("default", "p", "n1", "r1"), Binding("default", "q", "n1")]


def test_a_pending_reservation_is_acknowledged_by_the_simulated_scheduler(store: Store) -> None:
    store.load([node("n1"), _reservation("r1", "n1", "web", phase="Pending")])
    Scheduler(store).step(T0)
    status = store.get("reservations.descheduler.dev", "r1")["status"]
    assert status == {"phase": "Available", "acknowledgedBy": "sim-scheduler"}


def test_an_owner_pod_bound_elsewhere_fails_the_oldest_waiting_reservation(store: Store) -> None:
    # Both reservations sit on n2, whose room they hold; the pod fits only on n1 (it needs 3 cpu).
    store.load(
        [
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            _reservation("r-new", "n2", "web", cpu="1", created="2026-01-15T11:30:00Z"),
            _reservation("r-old", "n2", "web", cpu="1", created="2026-01-15T11:00:00Z"),
            pod("y", node_name="n2", phase="Running", ready=True, cpu="2", app="other"),
            pod("p", app="web", cpu="3"),
        ]
    )
    assert Scheduler(store).step(T0) == [Binding("default", "p", "n1")]
    failed = store.get("reservations.descheduler.dev", "r-old")["status"]
    assert failed["phase"] == "Failed" and failed["reason"] == "ReplacementElsewhere"
    assert failed["consumedBy"] == "default/p" and failed["message"] == "replacement default/p was bound to node n1"
    assert store.get("reservations.descheduler.dev", "r-new")["status"] == {"phase": "Available"}


def test_the_simulated_scheduler_renews_the_scheduler_lease(store: Store) -> None:
    store.load([node("n1")])
    scheduler = Scheduler(store)
    scheduler.step(T0)
    lease = store.get("leases.coordination.k8s.io", "descheduler-scheduler", "descheduler-system")
    assert lease["spec"]["holderIdentity"] == "sim-scheduler" and lease["spec"]["leaseDurationSeconds"] == 15
    first = lease["spec"]["renewTime"]
    scheduler.step(T0 + 1)
    assert (
        store.get("leases.coordination.k8s.io", "descheduler-scheduler", "descheduler-system")["spec"]["renewTime"]
        == first
    )
    scheduler.step(T0 + 5)
    renewed = store.get("leases.coordination.k8s.io", "descheduler-scheduler", "descheduler-system")["spec"][
        "renewTime"
    ]
    assert renewed == "2026-01-15T12:00:05.000000Z"


def test_the_simulated_scheduler_lists_the_scheduler_names_it_places_on_the_lease(store: Store) -> None:
    store.load([node("n1")])
    Scheduler(store).step(T0)
    lease = store.get("leases.coordination.k8s.io", "descheduler-scheduler", "descheduler-system")
    assert lease["metadata"]["annotations"] == {"descheduler.dev/scheduler-names": "default-scheduler"}


def test_a_renewal_lists_the_configured_names_and_keeps_other_annotations(store: Store) -> None:
    store.load([node("n1")])
    scheduler = Scheduler(store)
    scheduler.step(T0)
    store.modify(
        "leases.coordination.k8s.io",
        "descheduler-scheduler",
        "descheduler-system",
        lambda obj: obj["metadata"]["annotations"].update({"team.example/owner": "sim"}),
    )
    scheduler.scheduler_names = frozenset({"", "default-scheduler", "load-aware-scheduler"})
    scheduler.step(T0 + 5)
    lease = store.get("leases.coordination.k8s.io", "descheduler-scheduler", "descheduler-system")
    assert lease["metadata"]["annotations"] == {
        "descheduler.dev/scheduler-names": "default-scheduler,load-aware-scheduler",
        "team.example/owner": "sim",
    }
