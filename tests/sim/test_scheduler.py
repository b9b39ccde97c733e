from typing import Any

from descheduler.sim.apiserver import Store
from descheduler.sim.scheduler import Binding, Scheduler

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
    assert "low" in next(iter(scheduler.unschedulable)) and "0/1 nodes fit" in next(
        iter(scheduler.unschedulable.values())
    )


def test_other_schedulers_pods_are_left_alone(store: Store) -> None:
    other = pod("p")
    other["spec"]["schedulerName"] = "someone-else"
    store.load([node("n1"), other])
    assert Scheduler(store).step(T0) == []


def test_cordoned_nodes_get_no_pods(store: Store) -> None:
    store.load([node("n1", unschedulable=True), node("n2"), pod("p")])
    Scheduler(store).step(T0)
    assert _nodes(store) == {"p": "n2"}


def _reservation(name: str, node_name: str, app: str, cpu: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node_name,
            "resources": {"cpu": cpu, "memory": "1Gi"},
            "owners": [{"labelSelector": {"matchLabels": {"app": app}}}],
        },
        "status": {"phase": "Available"},
    }


def test_a_pod_owning_a_reservation_goes_to_its_node_and_consumes_it(store: Store) -> None:
    store.load([node("n1"), node("n2"), _reservation("r1", "n2", "web"), pod("p", app="web")])
    assert Scheduler(store).step(T0) == [Binding("default", "p", "n2", "r1")]
    status = store.get("reservations.descheduler.dev", "r1")["status"]
    assert status == {"phase": "Consumed", "consumedBy": "p"}


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
