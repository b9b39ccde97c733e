"""What a bind must pass before the extender writes it, whoever sent it (scheduling-core.md §2).

kube-scheduler hands the binding to the extender (`bindVerb`). The bind verb writes a Binding with
the extender's own rights, so it must not take the caller's word that the node is one the pod may
run on: a request that did not come from kube-scheduler's filters (or came from them on a node
that changed since) could otherwise put a pod past a taint, onto a dedicated node, or onto a node
the caller controls. Before binding, the pod and the node are read fresh from the API and checked
for the facts that keep a pod off nodes it must never run on:

- the pod exists with the UID kube-scheduler sent, and is not bound yet;
- its schedulerName is one this extender serves (`--scheduler-name`);
- the node exists and is schedulable (not cordoned, unless the pod tolerates the cordon's taint,
  as kube-scheduler's NodeUnschedulable plugin allows);
- the pod tolerates the node's NoSchedule and NoExecute taints;
- the node's labels match the pod's nodeSelector and required node affinity.

These change rarely, so a fresh read agrees with what kube-scheduler's filters saw; the rules that
depend on the moment (resources, load, spread) stay kube-scheduler's and the filter's. The
Reservation rule (a pod that owns an Available Reservation lands on its node, or is sent back once)
is `reservations.choose_for_binding`'s.
"""

from __future__ import annotations

from typing import Final

from descheduler.extender.scheduler_names import pod_scheduler_name
from descheduler.model import Node, Pod, Taint
from descheduler.refusal import Refusal, define
from descheduler.scheduling.predicates import NODE_AFFINITY, TAINT_NOT_TOLERATED

POD_UNKNOWN: Final = define("BindPodNotFound", "pod {subject} does not exist", brief="pod does not exist")
POD_REPLACED: Final = define(
    "BindPodUIDMismatch",
    "pod {subject} has UID {have}, not the {sent} the bind names (it was deleted and created again)",
    brief="pod UID does not match",
)
POD_BOUND: Final = define(
    "BindPodAlreadyBound", "pod {subject} is already bound to node {node}", brief="pod is already bound"
)
POD_UNSERVED: Final = define(
    "BindSchedulerNameNotServed",
    "pod {subject} has schedulerName {name}, which this extender does not serve (--scheduler-name: {served})",
    brief="schedulerName not served",
)
NODE_UNKNOWN: Final = define("BindNodeNotFound", "node {subject} does not exist", brief="node does not exist")
NODE_CORDONED: Final = define(
    "BindNodeUnschedulable", "node {subject} is cordoned (unschedulable)", brief="node is cordoned"
)

# The taint a cordoned node is treated as having (kube-scheduler's NodeUnschedulable plugin: a pod
# that tolerates it may go there, as DaemonSet pods do).
UNSCHEDULABLE_TAINT: Final = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
_BLOCKING_EFFECTS: Final = ("NoSchedule", "NoExecute")

# Every code this module can refuse with, for the metric's label values.
CODES: Final = (
    POD_UNKNOWN,
    POD_REPLACED,
    POD_BOUND,
    POD_UNSERVED,
    NODE_UNKNOWN,
    NODE_CORDONED,
    TAINT_NOT_TOLERATED,
    NODE_AFFINITY,
)


def bind_refusal(
    pod: Pod | None, sent_uid: str, key: str, node: Node | None, node_name: str, served: frozenset[str] | None
) -> Refusal | None:
    """Why binding pod `key` (as read now: `pod`, None when it does not exist) to node `node_name`
    (as read now: `node`) must not happen, or None. `sent_uid` is the UID kube-scheduler sent (may be
    empty); `served` the schedulerNames this extender serves (None: any)."""
    if pod is None:
        return Refusal(code=POD_UNKNOWN, subject=key)
    if sent_uid and pod.uid and pod.uid != sent_uid:
        return Refusal(code=POD_REPLACED, subject=key, facts={"have": pod.uid, "sent": sent_uid})
    if pod.node_name:
        return Refusal(code=POD_BOUND, subject=key, facts={"node": pod.node_name})
    name = pod_scheduler_name(pod)
    if served is not None and name not in served:
        return Refusal(code=POD_UNSERVED, subject=key, facts={"name": name, "served": ", ".join(sorted(served))})
    if node is None:
        return Refusal(code=NODE_UNKNOWN, subject=node_name)
    if node.unschedulable and not _tolerated(pod, UNSCHEDULABLE_TAINT):
        return Refusal(code=NODE_CORDONED, subject=node.name)
    for taint in node.taints:
        if taint.effect in _BLOCKING_EFFECTS and not _tolerated(pod, taint):
            return Refusal(code=TAINT_NOT_TOLERATED, subject=str(taint))
    for label, value in pod.node_selector.items():
        if node.labels.get(label) != value:
            return Refusal(code=NODE_AFFINITY, subject=f"{label}={value}")
    terms = pod.required_node_affinity
    if terms is not None and not any(term.matches(node.name, node.labels) for term in terms):
        return Refusal(code=NODE_AFFINITY)
    return None


def _tolerated(pod: Pod, taint: Taint) -> bool:
    return any(toleration.tolerates(taint) for toleration in pod.tolerations)
