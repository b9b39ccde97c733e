"""The checks every bind passes (descheduler/extender/binding.py), rule by rule, on records."""

from __future__ import annotations

import pytest

from descheduler.extender.binding import bind_refusal
from descheduler.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration

SERVED = frozenset({"load-aware-scheduler"})


def _pod(**fields: object) -> Pod:
    return Pod(namespace="ns", name="p", uid="u1", scheduler_name="load-aware-scheduler", **fields)  # type: ignore[arg-type]


def _code(pod: Pod | None, node: Node | None, uid: str = "u1", served: frozenset[str] | None = SERVED) -> str:
    refusal = bind_refusal(pod, uid, "ns/p", node, "n1", served)
    return refusal.code if refusal is not None else ""


TAINTED = Node(name="n1", taints=(Taint(key="gpu", value="a100", effect="NoSchedule"),))


@pytest.mark.parametrize(
    ("tolerations", "code"),
    [
        ((), "TaintNotTolerated"),
        ((Toleration(key="gpu", operator="Exists"),), ""),
        ((Toleration(operator="Exists"),), ""),  # an empty key with Exists tolerates every taint
        ((Toleration(key="gpu", value="a100"),), ""),  # no effect: every effect
        ((Toleration(key="gpu", value="h100"),), "TaintNotTolerated"),
        ((Toleration(key="gpu", value="a100", effect="NoExecute"),), "TaintNotTolerated"),
        ((Toleration(value="a100"),), "TaintNotTolerated"),  # Equal with an empty key matches nothing
    ],
)
def test_taints_are_tolerated_by_the_kubernetes_rule(tolerations: tuple[Toleration, ...], code: str) -> None:
    assert _code(_pod(tolerations=tolerations), TAINTED) == code


def test_a_prefer_no_schedule_taint_does_not_keep_a_pod_off() -> None:
    node = Node(name="n1", taints=(Taint(key="descheduler.dev/moving-off", effect="PreferNoSchedule"),))
    assert _code(_pod(), node) == ""


def test_a_cordoned_node_takes_only_pods_that_tolerate_the_cordon() -> None:
    cordoned = Node(name="n1", unschedulable=True)
    assert _code(_pod(), cordoned) == "BindNodeUnschedulable"
    cordon = Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")
    assert _code(_pod(tolerations=(cordon,)), cordoned) == ""


def test_node_selector_and_required_affinity_read_the_nodes_labels_and_name() -> None:
    node = Node(name="n1", labels={"zone": "a", "tier": "7"})
    assert _code(_pod(node_selector={"zone": "a"}), node) == ""
    assert _code(_pod(node_selector={"zone": "b"}), node) == "NodeAffinity"
    above = NodeSelectorTerm(match_expressions=(NodeSelectorRequirement(key="tier", operator="Gt", values=("5",)),))
    named = NodeSelectorTerm(
        match_fields=(NodeSelectorRequirement(key="metadata.name", operator="In", values=("n2",)),)
    )
    assert _code(_pod(required_node_affinity=(above,)), node) == ""
    assert _code(_pod(required_node_affinity=(named,)), node) == "NodeAffinity"
    assert _code(_pod(required_node_affinity=(named, above)), node) == ""  # terms are ORed
    assert _code(_pod(required_node_affinity=()), node) == "NodeAffinity"  # no term matches nothing


def test_the_pod_must_exist_unbound_with_the_uid_sent_and_a_served_scheduler_name() -> None:
    node = Node(name="n1")
    assert _code(None, node) == "BindPodNotFound"
    assert _code(_pod(), node, uid="u0") == "BindPodUIDMismatch"
    assert _code(_pod(), node, uid="") == ""  # kube-scheduler always sends it; an empty one is not a mismatch
    assert _code(_pod(node_name="n2"), node) == "BindPodAlreadyBound"
    assert _code(Pod(namespace="ns", name="p", uid="u1"), node) == "BindSchedulerNameNotServed"
    assert _code(Pod(namespace="ns", name="p", uid="u1"), node, served=None) == ""
    assert _code(_pod(), None) == "BindNodeNotFound"


def test_every_refusal_reads_as_a_sentence() -> None:
    refusal = bind_refusal(Pod(namespace="ns", name="p", uid="u1"), "u1", "ns/p", Node(name="n1"), "n1", SERVED)
    assert str(refusal) == (
        "pod ns/p has schedulerName default-scheduler, which this extender does not serve "
        "(--scheduler-name: load-aware-scheduler)"
    )
