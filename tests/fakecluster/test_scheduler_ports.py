"""The simulated kube-scheduler's NodePorts (`scheduler.HostPortUse`, written apart from the product's
core): a pod is not bound where a host port it wants is taken, by kube-scheduler's
HostPortInfo.CheckConflict rule (0.0.0.0 or an empty hostIP conflicts with every address)."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.scheduler import NODE_PORTS_REASON, HostPortUse, Scheduler

from .conftest import T0, node, pod


def with_ports(obj: dict[str, Any], *ports: tuple[str, str, int]) -> dict[str, Any]:
    obj["spec"]["containers"][0]["ports"] = [
        {"containerPort": port, "hostPort": port, "protocol": protocol, "hostIP": ip} for ip, protocol, port in ports
    ]
    return obj


@pytest.mark.parametrize(
    ("wanted", "held", "conflict"),
    [
        (("127.0.0.1", "UDP", 8080), ("127.0.0.1", "UDP", 9090), False),
        (("127.0.0.1", "UDP", 8080), ("127.0.0.1", "UDP", 8080), True),
        (("127.0.0.1", "TCP", 8080), ("127.0.0.2", "TCP", 8080), False),
        (("127.0.0.1", "UDP", 8080), ("127.0.0.1", "TCP", 8080), False),
        (("0.0.0.0", "TCP", 8001), ("127.0.0.1", "TCP", 8001), True),
        (("127.0.0.1", "TCP", 8001), ("0.0.0.0", "TCP", 8001), True),
        (("", "", 8001), ("10.0.0.1", "TCP", 8001), True),
    ],
)
def test_conflicts_as_node_ports_test_go(
    wanted: tuple[str, str, int], held: tuple[str, str, int], conflict: bool
) -> None:
    # Cases from kube-scheduler's nodeports/node_ports_test.go (TestNodePorts).
    use = HostPortUse([with_ports(pod("holder", node_name="n1", phase="Running"), held)])
    assert use.refusals(with_ports(pod("p"), wanted)) == ({"n1": NODE_PORTS_REASON} if conflict else {})


def test_a_pod_is_not_bound_where_its_host_port_is_taken_nor_twice_in_one_pass(store: Store) -> None:
    holder = with_ports(pod("holder", node_name="n1", phase="Running"), ("", "TCP", 9100))
    store.load(
        [
            node("n1"),
            node("n2"),
            holder,
            with_ports(pod("a"), ("", "TCP", 9100)),
            with_ports(pod("b"), ("", "TCP", 9100)),
        ]
    )
    scheduler = Scheduler(store)
    scheduler.step(T0)
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in store.list("pods")}
    assert sorted([placed["a"], placed["b"]]) == ["", "n2"]
    assert set(scheduler.unschedulable.values()) == {
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    }
