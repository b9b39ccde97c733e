"""kube-scheduler's pod-level hard rules (scheduling-core.md §2, items 5–7): NodePorts, required
pod affinity (InterPodAffinity) and topology spread (PodTopologySpread, DoNotSchedule).

Each has the shape of its plugin: what depends only on the pod is found once (PreFilter: the pods
matching its selector counted per node, the domains of a topology key), then every node is answered
from arrays (Filter). Where pods count: where the view puts them (moves planned this cycle count
where they land, `ClusterView.location`), else where a move under way takes them (an active job's
target), else their node. The moved pod's old self does not count for spread (kube-scheduler skips
terminating pods there) but does for pod affinity (its affinity counts keep them); and a pod holds
its host ports where it runs until it is gone, as well as where it lands. The per-node counts are
found once per table and selector (`NodeTable.rule_cache`); the moves a view assumes correct them,
pod by pod.

`predicates.checks` runs these with the other predicates; the extender does not (kube-scheduler
has run them already, on fresher data, before it calls us).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from descheduler.labels import LabelSelector
from descheduler.model import HostPort, Pod, PodAffinityTerm, SpreadConstraint
from descheduler.refusal import Refusal, define
from descheduler.scheduling.table import BoolArray, IntArray, NodeTable
from descheduler.scheduling.view import ClusterView

if TYPE_CHECKING:
    from descheduler.snapshot import Snapshot

# subject: the port ("9100/TCP"); facts: other (the pod holding it).
NODE_PORTS = define("NodePorts", "host port {subject} in use by {other}", brief="host port {subject} in use")
# facts: key (the topology key's short name), selector, domain, skew, max_skew.
SPREAD_SKEW = define(
    "PodTopologySpread",
    "{key} spread {selector}: {domain} would have skew {skew} > maxSkew {max_skew}",
    brief="{key} spread {selector} would exceed maxSkew",
)
# subject: the topology key the node has no label for.
SPREAD_NO_LABEL = define(
    "PodTopologySpreadNoLabel", "topology spread: node has no {subject} label", brief="no {subject} label (spread)"
)
# facts: selector, key, domain.
POD_AFFINITY = define(
    "PodAffinity", "pod affinity: no pod matching {selector} in {key}={domain}", brief="pod affinity {selector}"
)
POD_AFFINITY_NO_LABEL = define(
    "PodAffinityNoLabel", "pod affinity: node has no {subject} label", brief="no {subject} label (pod affinity)"
)
# subject: the rule and the field the core does not model ("PodTopologySpread: … nodeTaintsPolicy 'X'").
RULE_NOT_JUDGED = define("RuleNotJudged", "{subject}: a rule the planner does not model, so the pod stays")

# kube-scheduler's own words (its plugins' reasons), for an answer given to it.
FOR_SCHEDULER: Mapping[str, Callable[[Refusal], str]] = {
    NODE_PORTS: lambda r: "node(s) didn't have free ports for the requested pod ports",
    SPREAD_SKEW: lambda r: "node(s) didn't match pod topology spread constraints",
    SPREAD_NO_LABEL: lambda r: "node(s) didn't match pod topology spread constraints (missing required label)",
    POD_AFFINITY: lambda r: "node(s) didn't match pod affinity rules",
    POD_AFFINITY_NO_LABEL: lambda r: "node(s) didn't match pod affinity rules",
}


def short_key(key: str) -> str:
    """ "topology.kubernetes.io/zone" -> "zone", for words."""
    return key.rsplit("/", 1)[-1]


# --- where pods count ------------------------------------------------------------------------


def _landing(table: NodeTable) -> dict[str, str]:
    """Pod key -> the target of the active job moving it (its replacement will run there), while the
    pod still runs: once it is terminating, its replacement is a pod of the snapshot itself, and
    the old pod holds its ports where it is until it is gone."""
    found = table.rule_cache.get("landing")
    if found is None:
        found = {}
        if table.snapshot.jobs:
            by_key = _by_key(table)
            for job in table.snapshot.jobs:
                key = f"{job.pod.namespace}/{job.pod.name}"
                moving = by_key.get(key)
                if job.active and job.target_node in table.index and moving is not None and not moving.deleting:
                    found[key] = job.target_node
        table.rule_cache["landing"] = found
    assert isinstance(found, dict)
    return found


def _by_key(table: NodeTable) -> dict[str, Pod]:
    found = table.rule_cache.get("by key")
    if found is None:
        found = table.rule_cache["by key"] = {p.key: p for p in table.snapshot.pods}
    assert isinstance(found, dict)
    return found


def _by_namespace(table: NodeTable) -> dict[str, list[Pod]]:
    found = table.rule_cache.get("by namespace")
    if found is None:
        found = {}
        for p in table.snapshot.pods:
            found.setdefault(p.namespace, []).append(p)
        table.rule_cache["by namespace"] = found
    assert isinstance(found, dict)
    return found


def _by_label(table: NodeTable, namespace: str, key: str) -> dict[str, list[Pod]]:
    """The namespace's pods by their value of label `key` (found once per table, namespace and key):
    a selector's first matchLabels pair narrows the pods it must be tried on."""
    cache_key = ("by label", namespace, key)
    found = table.rule_cache.get(cache_key)
    if found is None:
        found = {}
        for p in _by_namespace(table).get(namespace, []):
            value = p.labels.get(key)
            if value is not None:
                found.setdefault(value, []).append(p)
        table.rule_cache[cache_key] = found
    assert isinstance(found, dict)
    return found


def _base_node(table: NodeTable, pod: Pod) -> str:
    """Where a pod counts before the view's own moves."""
    return _landing(table).get(pod.key, pod.node_name)


def _node_of(view: ClusterView, pod: Pod) -> str:
    found = view.location.get(pod.key)
    return found if found is not None else _base_node(view.table, pod)


def _pod_counts(
    view: ClusterView,
    cache_key: Hashable,
    pods: Iterable[Pod],
    matches: Callable[[Pod], bool],
    incoming: Pod,
    *,
    keep_self: bool = False,
) -> IntArray:
    """Per node, the pods that `matches` selects, where they count (see the module's note); the
    incoming pod's old self not at all, unless `keep_self` (it counts on its node: a rule that counts
    terminating pods sees it there while it leaves)."""
    table = view.table
    n = table.size
    base = table.rule_cache.get(cache_key)
    if base is None:
        rows = [table.index.get(_base_node(table, p), n) for p in pods if matches(p)]
        base = np.bincount(np.array(rows, dtype=np.int64), minlength=n + 1)[:n]
        table.rule_cache[cache_key] = base
    assert isinstance(base, np.ndarray)
    counts: IntArray = base.copy()

    def add(node: str, sign: int) -> None:
        row = table.index.get(node)
        if row is not None:
            counts[row] += sign

    # The view's moves of the pods `matches` selects, and the incoming pod's old self: both are among
    # `pods` when it is a list (walked instead of indexing every pod of the snapshot by key).
    location = view.location
    own: Pod | None
    if isinstance(pods, Sequence):
        moves = [(p, node) for p in pods if (node := location.get(p.key)) is not None]
        own = next((p for p in pods if p.key == incoming.key), None)
    else:
        by_key = _by_key(table)
        moves = [(by_key.get(key), node) for key, node in location.items()]
        own = by_key.get(incoming.key)
    for moved, node in moves:
        if moved is None or (moved.key == incoming.key and not keep_self) or not matches(moved):
            continue
        add(_base_node(table, moved), -1)
        add(node, 1)
    if own is not None and not keep_self and matches(own):
        add(_base_node(table, own), -1)  # where the base counted it; the view's move of it is skipped above
    return counts


def domains(table: NodeTable, key: str) -> tuple[IntArray, list[str]]:
    """Per node, the index of its value of label `key` in the returned values (-1: no such label)."""
    found = table.rule_cache.get(("domains", key))
    if found is None:
        ids = np.full(table.size, -1, dtype=np.int64)
        values = list(table.label_index().get(key, {}).items())
        for i, (_, rows) in enumerate(values):
            ids[rows] = i
        found = table.rule_cache[("domains", key)] = (ids, [value for value, _ in values])
    assert isinstance(found, tuple)
    return found


def term_namespaces(owner_namespace: str, term: PodAffinityTerm, snapshot: Snapshot) -> set[str]:
    """The namespaces a term's selector looks in (its owner's own when it names none)."""
    if term.namespace_selector is not None:
        namespaces = {n for n, labels in snapshot.namespaces.items() if term.namespace_selector.matches(labels)}
        namespaces.update(term.namespaces)
        return namespaces
    return set(term.namespaces) or {owner_namespace}


# --- NodePorts ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PortsCheck:
    """kube-scheduler's NodePorts (framework/plugins/nodeports/node_ports.go): per node, the first of
    the pod's host ports another pod there holds (HostPortInfo.CheckConflict)."""

    taken: dict[int, tuple[int, str]]  # row -> (index of the pod's port, the pod holding it)
    passed: BoolArray


def _port_holders(table: NodeTable) -> list[Pod]:
    found = table.rule_cache.get("port holders")
    if found is None:
        # Terminating pods still hold their ports in kube-scheduler's NodeInfo; finished ones do not.
        found = table.rule_cache["port holders"] = [p for p in table.snapshot.pods if p.host_ports and not p.terminal]
    assert isinstance(found, list)
    return found


def ports_check(pod: Pod, view: ClusterView) -> PortsCheck:
    table = view.table
    wanted: tuple[HostPort, ...] = pod.host_ports
    taken: dict[int, tuple[int, str]] = {}
    for other in _port_holders(table):
        if other.key == pod.key:
            continue
        # A pod that moves holds its ports where it runs until it is gone (kube-scheduler's NodeInfo
        # keeps terminating pods) and, through its replacement, where it lands.
        for node in {other.node_name, _node_of(view, other)}:
            row = table.index.get(node)
            if row is None or row in taken:
                continue
            for i, want in enumerate(wanted):
                if any(want.conflicts(held) for held in other.host_ports):
                    taken[row] = (i, other.key)
                    break
    passed = np.ones(table.size, dtype=np.bool_)
    passed[list(taken)] = False
    return PortsCheck(taken, passed)


def ports_refusal(pod: Pod, check: PortsCheck, row: int) -> Refusal:
    i, other = check.taken[row]
    return Refusal(code=NODE_PORTS, subject=str(pod.host_ports[i]), facts={"other": other})


# --- InterPodAffinity: the pod's required affinity -----------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityCheck:
    """The pod's required affinity terms (framework/plugins/interpodaffinity/filtering.go,
    satisfyPodAffinity): per node, the first term it fails (-1: none), and whether for lack of
    the term's topology label."""

    first: IntArray
    no_label: BoolArray
    passed: BoolArray


def _term_matches(term: PodAffinityTerm, namespaces: set[str], pod: Pod) -> bool:
    """AffinityTerm.Matches; a nil selector matches no pod."""
    return term.label_selector is not None and pod.namespace in namespaces and term.label_selector.matches(pod.labels)


def affinity_check(pod: Pod, view: ClusterView) -> AffinityCheck:
    table = view.table
    terms = pod.affinity
    spaces = [term_namespaces(pod.namespace, term, table.snapshot) for term in terms]

    def matches_all(other: Pod) -> bool:
        # Existing pods count when they match every term (updateWithAffinityTerms); kube-scheduler's
        # affinity counts do not skip terminating pods, only finished ones.
        return not other.terminal and all(_term_matches(t, s, other) for t, s in zip(terms, spaces, strict=True))

    key = ("affinity", pod.namespace, terms)
    # Only pods in a namespace every term looks in can match them all.
    by_namespace = _by_namespace(table)
    candidates = (p for ns in set.intersection(*spaces) for p in by_namespace.get(ns, ()))  # read on a miss only
    # The moved pod's old self counts where it runs: kube-scheduler's affinity counts include
    # terminating pods, and the replacement is scheduled while it terminates.
    counts = _pod_counts(view, key, candidates, matches_all, pod, keep_self=True)
    n = table.size
    first = np.full(n, -1, dtype=np.int64)
    no_label = np.zeros(n, dtype=np.bool_)
    missing_pods = np.zeros(n, dtype=np.bool_)
    first_missing = np.full(n, -1, dtype=np.int64)
    any_match = False
    for i, term in enumerate(terms):
        ids, values = domains(table, term.topology_key)
        has = ids >= 0
        per_domain = np.bincount(ids[has], weights=counts[has], minlength=len(values))
        any_match = any_match or bool(per_domain.sum() > 0)
        absent = ~has
        no_label |= absent & (first < 0)
        first[absent & (first < 0)] = i
        lacking = has & (np.append(per_domain, 0)[ids] <= 0)
        first_missing[lacking & (first_missing < 0)] = i
        missing_pods |= lacking
    # The first pod of a group that has affinity to itself: no pod anywhere matches the terms and
    # the pod matches them itself, so a node with every topology label will do.
    first_of_group = not any_match and all(_term_matches(t, s, pod) for t, s in zip(terms, spaces, strict=True))
    if not first_of_group:
        take = (first < 0) & missing_pods
        first[take] = first_missing[take]
    return AffinityCheck(first, no_label, first < 0)


def affinity_refusal(pod: Pod, check: AffinityCheck, row: int, table: NodeTable) -> Refusal:
    term = pod.affinity[int(check.first[row])]
    if check.no_label[row]:
        return Refusal(code=POD_AFFINITY_NO_LABEL, subject=term.topology_key)
    domain = table.snapshot.node_by_name[table.names[row]].labels.get(term.topology_key, "")
    facts = {"selector": str(term.label_selector), "key": term.topology_key, "domain": domain}
    return Refusal(code=POD_AFFINITY, facts=facts)


# --- PodTopologySpread, DoNotSchedule ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpreadCheck:
    """The pod's DoNotSchedule constraints (framework/plugins/podtopologyspread/filtering.go and
    common.go): per node, the first constraint it fails (-1: none) and the skew it would have."""

    first: IntArray
    skew: IntArray
    passed: BoolArray


def _spread_selector_counts(selector: LabelSelector | None) -> bool:
    """countPodsMatchSelector counts nothing for an empty (or nil) selector."""
    return selector is not None and not selector.is_empty


def spread_check(pod: Pod, view: ClusterView, node_affinity: BoolArray, tolerated: BoolArray) -> SpreadCheck:
    """`node_affinity`: the nodes the pod's nodeSelector and required node affinity accept;
    `tolerated`: the nodes whose NoSchedule/NoExecute taints it tolerates (nodeInclusionPolicies)."""
    table = view.table
    n = table.size
    constraints: tuple[SpreadConstraint, ...] = pod.spread
    found = [domains(table, c.topology_key) for c in constraints]
    # Only nodes with every constraint's topology label count (nodeLabelsMatchSpreadConstraints).
    labelled = np.ones(n, dtype=np.bool_)
    for ids, _ in found:
        labelled &= ids >= 0
    first = np.full(n, -1, dtype=np.int64)
    skews = np.zeros(n, dtype=np.int64)
    for i, (c, (ids, values)) in enumerate(zip(constraints, found, strict=True)):
        eligible = labelled.copy()
        if c.honor_node_affinity:
            eligible &= node_affinity
        if c.honor_node_taints:
            eligible &= tolerated
        selector = c.selector
        if _spread_selector_counts(selector):
            assert selector is not None

            def matches(other: Pod, selector: LabelSelector = selector, namespace: str = pod.namespace) -> bool:
                # The pod's namespace only; terminating and finished pods do not count
                # (countPodsMatchSelector, #87621).
                return (
                    other.namespace == namespace
                    and not other.deleting
                    and not other.terminal
                    and selector.matches(other.labels)
                )

            if selector.match_labels:
                key, value = selector.match_labels[0]
                tried = _by_label(table, pod.namespace, key).get(value, [])
            else:
                tried = _by_namespace(table).get(pod.namespace, [])
            counts = _pod_counts(view, ("spread", pod.namespace, selector), tried, matches, pod)
        else:
            counts = np.zeros(n, dtype=np.int64)
        at = ids[eligible]
        per_domain = np.bincount(at, weights=counts[eligible], minlength=len(values)).astype(np.int64)
        present = np.zeros(len(values), dtype=np.bool_)
        present[at] = True
        domain_count = int(present.sum())
        # minMatchNum: the global minimum over the eligible domains, 0 when they are fewer than minDomains.
        global_min = int(per_domain[present].min()) if domain_count and domain_count >= c.min_domains else 0
        self_match = int(selector is not None and selector.matches(pod.labels))
        has = ids >= 0
        # Indexed by domain, -1 (no label) reading the 0 appended.
        skew = np.where(has, np.append(per_domain, 0)[ids] + self_match - global_min, 0)
        fails = ~has | (skew > c.max_skew)
        fresh = fails & (first < 0)
        first[fresh] = i
        skews[fresh] = skew[fresh]
    return SpreadCheck(first, skews, first < 0)


def spread_refusal(pod: Pod, check: SpreadCheck, row: int, table: NodeTable) -> Refusal:
    c = pod.spread[int(check.first[row])]
    domain = table.snapshot.node_by_name[table.names[row]].labels.get(c.topology_key)
    if domain is None:
        return Refusal(code=SPREAD_NO_LABEL, subject=c.topology_key)
    facts: dict[str, str | int] = {
        "key": short_key(c.topology_key),
        "selector": str(c.selector) if c.selector is not None else "<none>",
        "domain": domain,
        "skew": int(check.skew[row]),
        "max_skew": c.max_skew,
    }
    return Refusal(code=SPREAD_SKEW, facts=facts)
