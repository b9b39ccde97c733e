"""Scheduling predicates for one pod on one node, each answering with a reason or None.

The vectorised `best_node` in `core.py` computes the same answers for all nodes at once; these
scalar versions give the words for the nodes it rejects (a test keeps the two in agreement).
"""

from __future__ import annotations

from collections.abc import Iterator

from descheduler.model import Node, Pod, PodAffinityTerm, Reservation
from descheduler.quantity import format_units
from descheduler.scheduling.table import METRIC_EXPIRED, METRIC_NONE, FloatArray, IntArray, NodeTable
from descheduler.scheduling.view import ClusterView


def node_condition(node: Node) -> str | None:
    if not node.ready:
        return f"node {node.name} is not Ready"
    if node.unschedulable:
        return f"node {node.name} is cordoned (unschedulable)"
    return None


def node_affinity(pod: Pod, node: Node) -> str | None:
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} does not match"
    terms = pod.required_node_affinity
    if terms is not None and not any(t.matches(node.name, node.labels) for t in terms):
        return "required node affinity does not match"
    return None


def taints(pod: Pod, node: Node) -> str | None:
    for taint in node.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in pod.tolerations):
            return f"taint {taint} not tolerated"
    return None


def resources_fit(pod: Pod, node: Node, view: ClusterView) -> str | None:
    table = view.table
    row = table.index[node.name]
    need = table.load_of(pod).requests
    free = table.alloc[row] - view.requested[row] - table.reserved[row] + owned_reserved(pod, node.name, view)
    for name in sorted(set(pod.requests) | {"pods"}):
        col = table.column.get(name)
        want = int(need[col]) if col is not None else pod.requests[name]
        have = int(free[col]) if col is not None else 0
        if want > have:
            held = int(table.reserved[row][col]) if col is not None else 0
            note = f" ({format_units(name, held)} held by reservations)" if held else ""
            free_text = format_units(name, max(have, 0))
            return f"insufficient {name}: requests {format_units(name, want)}, free {free_text}{note}"
    return None


def owned_reservations(pod: Pod, view: ClusterView) -> list[Reservation]:
    """Reservations holding room on a known node that this pod owns and may take (it may use their room)."""
    table = view.table
    return [
        r
        for r in table.snapshot.reservations
        if r.holds_room and r.node_name in table.index and r.owned_by(pod) and claimable(r, table)
    ]


def claimable(reservation: Reservation, table: NodeTable) -> bool:
    """Owner pods may take the room once the pod it was made for is leaving or gone (migration.md §3):
    until then the workload's next pod is another move's replacement, and the room is not its."""
    replaced = reservation.replaces
    return replaced is None or not replaced.uid or not table.running(replaced.uid)


def owned_reserved(pod: Pod, node_name: str, view: ClusterView) -> IntArray:
    """Room on the node held by Reservations this pod owns."""
    total = view.table.vector({})
    for reservation in owned_reservations(pod, view):
        if reservation.node_name == node_name:
            total += view.table.vector(reservation.resources)
    return total


def _term_nodes(pod: Pod, term: PodAffinityTerm, view: ClusterView) -> Iterator[tuple[Pod, str]]:
    """(matching pod, its node) for existing pods that the term selects."""
    if term.label_selector is None:
        return
    snapshot = view.table.snapshot
    if term.namespace_selector is not None:
        namespaces = {n for n, labels in snapshot.namespaces.items() if term.namespace_selector.matches(labels)}
        namespaces.update(term.namespaces)
    else:
        namespaces = set(term.namespaces) or {pod.namespace}
    for other in snapshot.pods:
        if other.key == pod.key or other.terminal or other.namespace not in namespaces:
            continue
        node = view.node_of(other)
        if node and term.label_selector.matches(other.labels):
            yield other, node


def anti_affinity(pod: Pod, node: Node, view: ClusterView) -> str | None:
    snapshot = view.table.snapshot
    for term in pod.anti_affinity:
        domain = node.labels.get(term.topology_key)
        if domain is None:
            continue
        for other, other_node in _term_nodes(pod, term, view):
            if snapshot.node_by_name[other_node].labels.get(term.topology_key) == domain:
                return f"pod anti-affinity: {other.key} already in {term.topology_key}={domain}"
    return None


def load(pod: Pod, node: Node, view: ClusterView, node_fit: bool = True) -> str | None:
    """The load filter (scheduling-core.md §3); with `node_fit`, the pod's own reservations count once."""
    table = view.table
    args = table.args
    row = table.index[node.name]
    state = int(table.metric[row])
    if pod.is_daemonset or state == METRIC_NONE:
        return None
    if state == METRIC_EXPIRED and args.filter_expired_node_metrics:
        if args.enable_schedule_when_node_metrics_expired:
            return None
        age = table.metric_age[row] or 0.0
        return f"node metric expired ({age:.0f}s old > {args.node_metric_expiration_seconds}s)"
    base, thresholds, what = load_basis(pod, row, view)
    if node_fit and not what.startswith("prod"):
        # The node's usage already holds the estimate of a reservation this pod will take over.
        for reservation in owned_reservations(pod, view):
            if reservation.node_name == node.name:
                base = base - table.reservation_estimate(reservation)
    after = base + table.load_of(pod).estimate
    alloc = table.alloc[row]
    for col, name in enumerate(table.resources):
        limit = thresholds[col]
        if limit > 0 and alloc[col] > 0 and after[col] * 100 > limit * alloc[col]:
            percent = after[col] * 100 / alloc[col]
            return f"{what}{name} would reach {percent:.0f}% > threshold {limit:g}%"
    return None


def load_basis(pod: Pod, row: int, view: ClusterView) -> tuple[IntArray, FloatArray, str]:
    """(base usage row, threshold row, label) the load filter uses for this pod on this node."""
    table = view.table
    if table.load_of(pod).prod and table.prod_thresholds[row].any():
        return view.prod_estimated[row], table.prod_thresholds[row], "prod usage: "
    if table.args.aggregated is not None and table.has_aggregated[row]:
        kind = table.args.aggregated.usage_aggregation_type
        return view.aggregated[row], table.aggregated_thresholds[row], f"{kind} usage: "
    return view.estimated[row], table.thresholds[row], "usage: "


def first_failure(pod: Pod, node: Node, view: ClusterView, node_fit: bool = True) -> str | None:
    """The first predicate the node fails for this pod, in scheduling-core.md §2 order."""
    reason = node_condition(node)
    if reason is None and node_fit:
        reason = (
            node_affinity(pod, node)
            or taints(pod, node)
            or resources_fit(pod, node, view)
            or anti_affinity(pod, node, view)
        )
    return reason or load(pod, node, view, node_fit)
