"""kube-scheduler's default in-tree plugins, on raw Kubernetes objects, for the simulated cluster.

Written apart from the product's scheduling core (nothing here comes from descheduler.scheduling,
.model, .snapshot or .quantity), so the simulation can catch a fit bug in the product instead of
repeating it. Behaviour follows the kube-scheduler documentation and plugin sources (v1.36):

Filters, in kube-scheduler's order: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity
(nodeSelector + required node affinity), NodeResourcesFit, the volume filters (VolumeRestrictions
ReadWriteOncePod, NodeVolumeLimits, VolumeBinding, VolumeZone: `stock_volumes`), PodTopologySpread
(DoNotSchedule: matchLabelKeys, minDomains, nodeAffinityPolicy, nodeTaintsPolicy), InterPodAffinity
(required affinity and anti-affinity, the existing pods' anti-affinity included; namespaces,
namespaceSelector, matchLabelKeys, mismatchLabelKeys), DynamicResources (an allocated claim's node
selector, `stock_volumes`). NodePorts is `scheduler.HostPortUse`.
Scores (0–100 each, default weights): NodeResourcesFit LeastAllocated ×1 (cpu, memory),
NodeResourcesBalancedAllocation ×1, TaintToleration ×3, NodeAffinity ×2, InterPodAffinity ×2.

Beyond kube-scheduler itself:
- Reservations (our CRD, unknown to kube-scheduler) that hold room count as requested on their node;
- a node whose Ready condition is not True carries node.kubernetes.io/not-ready:NoSchedule (or
  unreachable, when Unknown), as the node lifecycle controller would taint it.
Left out: PodTopologySpread ScheduleAnyway scoring and the cluster-default spread constraints;
InterPodAffinity scoring counts the incoming pod's preferred terms only (not the existing pods'
preferred terms nor their required affinity at hardPodAffinityWeight); ImageLocality; what
`stock_volumes` leaves out; preemption.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from descheduler.fakecluster.stock_terms import (
    LabelSelector,
    QuantityError,
    node_selector_term_matches,
    parse_quantity,
    requirement_matches,
    to_units,
)
from descheduler.fakecluster.stock_volumes import StorageObjects, VolumeCycle, VolumeUse

__all__ = [
    "LabelSelector",
    "QuantityError",
    "StockScheduler",
    "StorageObjects",
    "node_selector_term_matches",
    "parse_quantity",
    "pod_requests",
    "requirement_matches",
    "summary",
    "to_units",
]

MAX_NODE_SCORE: Final = 100
DEFAULT_MILLI_CPU_REQUEST: Final = 100  # schedutil.DefaultMilliCPURequest, for scoring only
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
WEIGHTS: Final[Mapping[str, int]] = {  # the default KubeSchedulerConfiguration's score weights
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "InterPodAffinity": 2,
}
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
ROOM_HOLDING_PHASES: Final = frozenset({"Pending", "Available"})
_BLOCKING = ("NoSchedule", "NoExecute")

Raw = Mapping[str, Any]


def _resource_list(raw: Raw | None) -> dict[str, int]:
    return {name: to_units(name, value) for name, value in (raw or {}).items()}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def _max(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        if value > into.get(name, 0):
            into[name] = value


def pod_requests(pod: Raw, *, non_zero: bool = False) -> dict[str, int]:
    """resourcehelper.PodRequests: the containers' sum (sidecars included), at least each init
    container (with the sidecars started before it), plus overhead. `non_zero`: a container that
    requests no cpu or memory counts 100m / 200Mi (scoring's GetNonzeroRequests)."""
    spec = pod.get("spec") or {}

    def container(c: Raw) -> dict[str, int]:
        requests = _resource_list((c.get("resources") or {}).get("requests"))
        if non_zero:
            requests.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
            requests.setdefault("memory", DEFAULT_MEMORY_REQUEST)
        return requests

    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        _add(total, container(c))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        own = container(c)
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _max(init_max, sidecars)
        else:
            with_sidecars = dict(own)
            _add(with_sidecars, sidecars)
            _max(init_max, with_sidecars)
    _max(total, init_max)
    _add(total, _resource_list(spec.get("overhead")))
    return total


# --- records --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}" if self.value else f"{{{self.key}}}"


def tolerates(tolerations: Iterable[Raw], taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint for any of them: empty effect = all effects, empty key with
    Exists = every taint, operator defaults to Equal."""
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        key = t.get("key") or ""
        if key and key != taint.key:
            continue
        operator = t.get("operator") or "Equal"
        if operator == "Exists":
            return True
        if operator == "Equal" and key and (t.get("value") or "") == taint.value:
            return True
    return False


@dataclass(frozen=True, slots=True)
class StockNode:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Mapping[str, int]

    @classmethod
    def of(cls, raw: Raw) -> StockNode:
        spec, status = raw.get("spec") or {}, raw.get("status") or {}
        taints = [Taint(t["key"], t.get("value") or "", t.get("effect") or "") for t in spec.get("taints") or ()]
        ready = next((c.get("status") for c in status.get("conditions") or () if c.get("type") == "Ready"), "True")
        if ready != "True":
            key = UNREACHABLE_TAINT if ready == "Unknown" else NOT_READY_TAINT
            if not any(t.key == key and t.effect == "NoSchedule" for t in taints):
                taints.append(Taint(key, "", "NoSchedule"))
        return cls(
            name=raw["metadata"]["name"],
            labels=dict(raw["metadata"].get("labels") or {}),
            taints=tuple(taints),
            unschedulable=bool(spec.get("unschedulable")),
            allocatable=_resource_list(status.get("allocatable")),
        )


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A PodAffinityTerm, with the namespaces it selects resolved against the pod that carries it."""

    selector: LabelSelector | None
    topology_key: str
    namespaces: frozenset[str] | None  # None: every namespace

    @classmethod
    def of(
        cls,
        raw: Raw,
        own_namespace: str,
        namespace_labels: Mapping[str, Mapping[str, str]],
        own_labels: Mapping[str, str] | None = None,
    ) -> AffinityTerm:
        """`own_labels`: the labels of the pod carrying the term, for matchLabelKeys / mismatchLabelKeys."""
        listed = set(raw.get("namespaces") or ())
        ns_selector = LabelSelector.of(raw.get("namespaceSelector"))
        namespaces: frozenset[str] | None
        if ns_selector is not None and not ns_selector.match_labels and not ns_selector.expressions:
            namespaces = None
        elif ns_selector is not None:
            namespaces = frozenset(
                listed | {n for n, labels in namespace_labels.items() if ns_selector.matches(labels)}
            )
        else:
            namespaces = frozenset(listed or {own_namespace})
        selector = LabelSelector.with_label_keys(
            raw.get("labelSelector"),
            own_labels or {},
            raw.get("matchLabelKeys") or (),
            raw.get("mismatchLabelKeys") or (),
        )
        return cls(selector, raw.get("topologyKey") or "", namespaces)

    def matches(self, pod: StockPod) -> bool:
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return self.selector is not None and self.selector.matches(pod.labels)


@dataclass(slots=True)
class StockPod:
    namespace: str
    name: str
    labels: Mapping[str, str]
    node: str
    requests: dict[str, int]
    non_zero: tuple[int, int]  # cpu, memory, as scoring counts them
    terminating: bool
    anti_affinity: tuple[AffinityTerm, ...]  # required
    raw: Raw = field(repr=False)

    @classmethod
    def of(cls, raw: Raw, namespace_labels: Mapping[str, Mapping[str, str]]) -> StockPod:
        meta = raw["metadata"]
        namespace = meta.get("namespace") or "default"
        requests = pod_requests(raw)
        requests["pods"] = 1
        scored = pod_requests(raw, non_zero=True)
        anti = ((raw.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
        labels = dict(meta.get("labels") or {})
        terms = tuple(
            AffinityTerm.of(t, namespace, namespace_labels, labels)
            for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        )
        return cls(
            namespace=namespace,
            name=meta["name"],
            labels=labels,
            node=(raw.get("spec") or {}).get("nodeName") or "",
            requests=requests,
            non_zero=(scored.get("cpu", 0), scored.get("memory", 0)),
            terminating=bool(meta.get("deletionTimestamp")),
            anti_affinity=terms,
            raw=raw,
        )


def _terminal(raw: Raw) -> bool:
    return (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def holds_room(reservation: Raw) -> bool:
    """A Reservation that keeps room on its node: Pending or Available, not consumed, on a node."""
    spec, status = reservation.get("spec") or {}, reservation.get("status") or {}
    return (
        (status.get("phase") or "Pending") in ROOM_HOLDING_PHASES
        and not status.get("consumedBy")
        and bool(spec.get("nodeName"))
    )


# --- one pod's scheduling cycle -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Spread:
    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    self_match: int
    counts: Mapping[str, int]  # domain -> matching pods in it
    min_match: int


@dataclass(frozen=True, slots=True)
class _Cycle:
    """What PreFilter computes once for the pod."""

    pod: StockPod
    spec: Raw
    node_selector: Mapping[str, str]
    required_terms: Sequence[Raw] | None
    own_anti: tuple[AffinityTerm, ...]
    anti_taken: tuple[frozenset[str], ...]  # per own anti-affinity term: domains a matching pod holds
    affinity: tuple[AffinityTerm, ...]
    affinity_domains: tuple[frozenset[str], ...]  # per affinity term: domains a matching pod holds
    affinity_self_exempt: bool
    existing_anti: frozenset[tuple[str, str]]  # (topology key, domain) that existing pods forbid the pod
    released: Mapping[str, Mapping[str, int]]  # node -> room of Reservations the pod may use
    spreads: tuple[_Spread, ...]
    volumes: VolumeCycle | None = None  # the volume and DRA PreFilters, for a pod with claims


class StockScheduler:
    """kube-scheduler's default Filter and Score plugins over one snapshot; `place` accounts a binding."""

    def __init__(
        self,
        nodes: Iterable[Raw],
        pods: Iterable[Raw],
        reservations: Iterable[Raw] = (),
        namespaces: Iterable[Raw] = (),
        memo: dict[tuple[str, str], StockPod] | None = None,
        storage: StorageObjects | None = None,
    ) -> None:
        """`memo`: StockPods by uid and resourceVersion from the call before, replaced by this one's
        (as `load_snapshot_objects`' pod_memo), so an unchanged pod is not parsed again; pods with
        required anti-affinity, whose terms depend on namespace labels, are always parsed.
        `storage`: the PVCs, PVs, StorageClasses, CSINodes and ResourceClaims the volume filters read."""
        parsed: dict[tuple[str, str], StockPod] = {}
        self.storage = storage if storage is not None else StorageObjects()
        self._volume_use: VolumeUse | None = None
        self.namespace_labels: dict[str, Mapping[str, str]] = {
            ns["metadata"]["name"]: dict(ns["metadata"].get("labels") or {}) for ns in namespaces
        }
        self.nodes: dict[str, StockNode] = {}
        for raw in nodes:
            found = StockNode.of(raw)
            self.nodes[found.name] = found
        self.names = sorted(self.nodes)
        self.requested: dict[str, dict[str, int]] = {name: {} for name in self.names}
        self.non_zero: dict[str, list[int]] = {name: [0, 0] for name in self.names}
        self.pods_by_namespace: dict[str, list[StockPod]] = defaultdict(list)
        self.anti_holders: list[StockPod] = []
        self.held: dict[str, tuple[str, dict[str, int]]] = {}  # Reservation -> (node, room it holds)
        for raw in pods:
            node = (raw.get("spec") or {}).get("nodeName")
            if node in self.nodes and not _terminal(raw):
                self._account(self._pod(raw, memo or {}, parsed))
        if memo is not None:
            memo.clear()
            memo.update(parsed)
        for reservation in reservations:
            node = reservation["spec"]["nodeName"] if holds_room(reservation) else ""
            if node in self.requested:
                room = _resource_list(reservation["spec"].get("resources"))
                self.held[reservation["metadata"]["name"]] = (node, room)
                _add(self.requested[node], room)

    def _pod(
        self, raw: Raw, memo: Mapping[tuple[str, str], StockPod], parsed: dict[tuple[str, str], StockPod]
    ) -> StockPod:
        meta = raw["metadata"]
        key = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
        found = memo.get(key)
        if found is None:
            found = StockPod.of(raw, self.namespace_labels)
        if all(key) and not found.anti_affinity:
            parsed[key] = found
        return found

    def _account(self, pod: StockPod) -> None:
        _add(self.requested[pod.node], pod.requests)
        self.non_zero[pod.node][0] += pod.non_zero[0]
        self.non_zero[pod.node][1] += pod.non_zero[1]
        self.pods_by_namespace[pod.namespace].append(pod)
        if pod.anti_affinity:
            self.anti_holders.append(pod)

    def place(self, pod: Raw, node: str) -> None:
        """Account a binding: the pod runs on `node` from now on (the scheduler cache's assume)."""
        found = StockPod.of(pod, self.namespace_labels)
        found.node = node
        self._account(found)
        if self._volume_use is not None:
            self._volume_use.place(pod, node)

    @property
    def volume_use(self) -> VolumeUse:
        """The claims and CSI volumes the assigned pods hold, built when a pod with claims first asks."""
        if self._volume_use is None:
            self._volume_use = VolumeUse(self.storage)
            for pods in self.pods_by_namespace.values():
                for pod in pods:
                    self._volume_use.place(pod.raw, pod.node)
        return self._volume_use

    def _pods(self, namespaces: frozenset[str] | None) -> Iterable[StockPod]:
        if namespaces is None:
            for pods in self.pods_by_namespace.values():
                yield from pods
        else:
            for namespace in namespaces:
                yield from self.pods_by_namespace.get(namespace, ())

    def _domains(self, term: AffinityTerm, exclude: StockPod) -> frozenset[str]:
        """The topology domains (values of the term's key) where a pod the term selects runs."""
        out: set[str] = set()
        for other in self._pods(term.namespaces):
            if other.name == exclude.name and other.namespace == exclude.namespace:
                continue
            value = self.nodes[other.node].labels.get(term.topology_key)
            if value is not None and term.matches(other):
                out.add(value)
        return frozenset(out)

    def _affinity_domains(self, terms: Sequence[AffinityTerm], exclude: StockPod) -> tuple[frozenset[str], ...]:
        """Per required affinity term, the domains holding a pod that matches *every* term (an
        existing pod counts for the pod's affinity only when it satisfies all its terms)."""
        if not terms:
            return ()
        out: list[set[str]] = [set() for _ in terms]
        for other in self._pods(terms[0].namespaces):
            if (other.name == exclude.name and other.namespace == exclude.namespace) or not all(
                term.matches(other) for term in terms
            ):
                continue
            labels = self.nodes[other.node].labels
            for found, term in zip(out, terms, strict=True):
                value = labels.get(term.topology_key)
                if value is not None:
                    found.add(value)
        return tuple(frozenset(found) for found in out)

    def _cycle(self, raw: Raw, own: Iterable[str] = ()) -> _Cycle:
        pod = StockPod.of(raw, self.namespace_labels)
        released: dict[str, dict[str, int]] = defaultdict(dict)
        for name in own:
            if name in self.held:
                node, room = self.held[name]
                _add(released[node], room)
        spec = raw.get("spec") or {}
        affinity = spec.get("affinity") or {}
        required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
        required_terms = required.get("nodeSelectorTerms") if required else None
        pod_affinity = tuple(
            AffinityTerm.of(t, pod.namespace, self.namespace_labels, pod.labels)
            for t in (affinity.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        )
        affinity_domains = self._affinity_domains(pod_affinity, pod)
        # The first pod of a group whose affinity selects itself: no pod matches yet, it may go anywhere.
        self_exempt = (
            bool(pod_affinity) and not any(affinity_domains) and all(term.matches(pod) for term in pod_affinity)
        )
        existing_anti: set[tuple[str, str]] = set()
        for holder in self.anti_holders:
            for term in holder.anti_affinity:
                value = self.nodes[holder.node].labels.get(term.topology_key)
                if value is not None and term.matches(pod):
                    existing_anti.add((term.topology_key, value))
        node_selector = dict(spec.get("nodeSelector") or {})
        cycle_base = _Cycle(
            pod=pod,
            spec=spec,
            node_selector=node_selector,
            required_terms=required_terms,
            own_anti=pod.anti_affinity,
            anti_taken=tuple(self._domains(term, pod) for term in pod.anti_affinity),
            affinity=pod_affinity,
            affinity_domains=affinity_domains,
            affinity_self_exempt=self_exempt,
            existing_anti=frozenset(existing_anti),
            released=released,
            spreads=(),
        )
        volumes = None
        if spec.get("volumes") or spec.get("resourceClaims"):
            volumes = VolumeCycle.of(raw, self.storage, self.volume_use)
        return replace(cycle_base, spreads=self._spreads(cycle_base), volumes=volumes)

    def _spreads(self, cycle: _Cycle) -> tuple[_Spread, ...]:
        """PodTopologySpread's PreFilter (podtopologyspread/filtering.go calPreFilterState, common.go):
        per constraint, matching pods per domain over the nodes that carry every constraint's key
        and pass the constraint's node inclusion policies (nodeAffinityPolicy Honor: the pod's node
        selector and required affinity; nodeTaintsPolicy Honor: its NoSchedule/NoExecute taints
        tolerated). Terminating pods and pods of other namespaces do not count; matchLabelKeys add
        the pod's own values to the selector."""
        constraints = [
            c
            for c in cycle.spec.get("topologySpreadConstraints") or ()
            if (c.get("whenUnsatisfiable") or "DoNotSchedule") == "DoNotSchedule"
        ]
        if not constraints:
            return ()
        keys = [c["topologyKey"] for c in constraints]
        keyed = [n for n in self.nodes.values() if all(k in n.labels for k in keys)]
        tolerations = cycle.spec.get("tolerations") or ()
        affinity_ok = {n.name for n in keyed if self._node_affinity(cycle, n) is None}
        taints_ok = {
            n.name for n in keyed if not any(t.effect in _BLOCKING and not tolerates(tolerations, t) for t in n.taints)
        }
        out = []
        for c in constraints:
            key = c["topologyKey"]
            selector = LabelSelector.with_label_keys(
                c.get("labelSelector"), cycle.pod.labels, c.get("matchLabelKeys") or ()
            )
            eligible = {n.name for n in keyed}
            if (c.get("nodeAffinityPolicy") or "Honor") == "Honor":
                eligible &= affinity_ok
            if (c.get("nodeTaintsPolicy") or "Ignore") == "Honor":
                eligible &= taints_ok
            counts = dict.fromkeys((self.nodes[name].labels[key] for name in eligible), 0)
            for other in self.pods_by_namespace.get(cycle.pod.namespace, ()):
                if other.terminating or other.node not in eligible:
                    continue
                if selector is not None and selector.matches(other.labels):
                    counts[self.nodes[other.node].labels[key]] += 1
            min_domains = int(c.get("minDomains") or 1)
            # Fewer eligible domains than minDomains: the global minimum is taken as 0.
            min_match = min(counts.values()) if counts and len(counts) >= min_domains else 0
            self_match = int(selector is not None and selector.matches(cycle.pod.labels))
            out.append(_Spread(int(c["maxSkew"]), key, selector, self_match, counts, min_match))
        return tuple(out)

    # --- filters, each returning kube-scheduler's reason or None --------------------------

    @staticmethod
    def _node_affinity(cycle: _Cycle, node: StockNode) -> str | None:
        reason = "node(s) didn't match Pod's node affinity/selector"
        if any(node.labels.get(k) != v for k, v in cycle.node_selector.items()):
            return reason
        terms = cycle.required_terms
        if terms is not None and not any(node_selector_term_matches(t, node.name, node.labels) for t in terms):
            return reason
        return None

    def _reason(self, cycle: _Cycle, node: StockNode) -> str | None:
        tolerations = cycle.spec.get("tolerations") or ()
        if node.unschedulable and not tolerates(tolerations, Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")):
            return "node(s) were unschedulable"
        wanted = cycle.spec.get("nodeName")
        if wanted and wanted != node.name:
            return "node(s) didn't match the requested node name"
        for taint in node.taints:
            if taint.effect in _BLOCKING and not tolerates(tolerations, taint):
                return f"node(s) had untolerated taint {taint}"
        if cycle.node_selector or cycle.required_terms is not None:
            found = self._node_affinity(cycle, node)
            if found is not None:
                return found
        found = self._fit(cycle.pod, node, cycle.released.get(node.name, {}))
        if found is not None:
            return found
        if cycle.volumes is not None:
            found = cycle.volumes.reason(node.name, node.labels, node.allocatable, self._volume_use)
            if found is not None:
                return found
        for spread in cycle.spreads:
            domain = node.labels.get(spread.topology_key)
            if domain is None:
                return "node(s) didn't match pod topology spread constraints (missing required label)"
            if spread.counts.get(domain, 0) + spread.self_match - spread.min_match > spread.max_skew:
                return "node(s) didn't match pod topology spread constraints"
        if cycle.existing_anti or cycle.affinity or cycle.own_anti:
            found = self._inter_pod_affinity(cycle, node)
            if found is not None:
                return found
        return cycle.volumes.claim_reason(node.name, node.labels) if cycle.volumes is not None else None

    def _fit(self, pod: StockPod, node: StockNode, released: Mapping[str, int]) -> str | None:
        requested = self.requested[node.name]
        if released:
            requested = {name: value - released.get(name, 0) for name, value in requested.items()}
        if requested.get("pods", 0) + 1 > node.allocatable.get("pods", 0):
            return "Too many pods"
        for name in sorted(pod.requests):
            need = pod.requests[name]
            if name == "pods" or need <= 0:
                continue
            if need > node.allocatable.get(name, 0) - requested.get(name, 0):
                return f"Insufficient {name}"
        return None

    def _inter_pod_affinity(self, cycle: _Cycle, node: StockNode) -> str | None:
        labels = node.labels
        if any(labels.get(key) == value for key, value in cycle.existing_anti):
            return "node(s) didn't satisfy existing pods anti-affinity rules"
        for term, taken in zip(cycle.affinity, cycle.affinity_domains, strict=True):
            value = labels.get(term.topology_key)
            if (value is None or value not in taken) and not cycle.affinity_self_exempt:
                return "node(s) didn't match pod affinity rules"
        for term, taken in zip(cycle.own_anti, cycle.anti_taken, strict=True):
            value = labels.get(term.topology_key)
            if value is not None and value in taken:
                return "node(s) didn't match pod anti-affinity rules"
        return None

    # --- the public surface --------------------------------------------------------------

    def feasible(self, pod: Raw, own: Iterable[str] = ()) -> list[str]:
        """The nodes every filter accepts, by name. `own`: Reservations whose room the pod may use
        (what a reservation plugin's PreFilter restores; kube-scheduler alone knows none)."""
        cycle = self._cycle(pod, own)
        return [name for name in self.names if self._reason(cycle, self.nodes[name]) is None]

    def why_not(self, pod: Raw, node: str, own: Iterable[str] = ()) -> str | None:
        """The first filter's refusal of `node` for the pod, None when it passes."""
        found = self.nodes.get(node)
        if found is None:
            return "node(s) not found"
        return self._reason(self._cycle(pod, own), found)

    def refusals(self, pod: Raw, own: Iterable[str] = ()) -> dict[str, str]:
        """node -> why, for every refused node."""
        cycle = self._cycle(pod, own)
        out = {}
        for name in self.names:
            reason = self._reason(cycle, self.nodes[name])
            if reason is not None:
                out[name] = reason
        return out

    def plugin_scores(self, pod: Raw, names: Sequence[str]) -> dict[str, dict[str, int]]:
        """plugin -> node -> its normalized score (0–100), unweighted."""
        found = StockPod.of(pod, self.namespace_labels)
        spec = pod.get("spec") or {}
        nodes = [self.nodes[n] for n in names]
        return {
            "NodeResourcesFit": {n.name: self._least_allocated(found, n) for n in nodes},
            "NodeResourcesBalancedAllocation": {n.name: self._balanced(found, n) for n in nodes},
            "TaintToleration": _normalize(
                {n.name: _intolerable_preferences(spec.get("tolerations") or (), n) for n in nodes}, reverse=True
            ),
            "NodeAffinity": _normalize({n.name: _preferred_node_affinity(spec, n) for n in nodes}, reverse=False),
            "InterPodAffinity": _min_max(self._preferred_pod_affinity(found, nodes)),
        }

    def scores(self, pod: Raw, names: Sequence[str]) -> dict[str, int]:
        """node -> the weighted sum of every score plugin."""
        out = dict.fromkeys(names, 0)
        for plugin, by_node in self.plugin_scores(pod, names).items():
            weight = WEIGHTS[plugin]
            for name, value in by_node.items():
                out[name] += weight * value
        return out

    def pick(self, pod: Raw, own: Iterable[str] = ()) -> str | None:
        """The feasible node with the highest total score; ties by name (kube-scheduler picks at random)."""
        names = self.feasible(pod, own)
        if not names:
            return None
        totals = self.scores(pod, names)
        return min(names, key=lambda name: (-totals[name], name))

    # --- scores ----------------------------------------------------------------------------

    def _least_allocated(self, pod: StockPod, node: StockNode) -> int:
        """(allocatable − requested) × 100 / allocatable per resource, cpu and memory weighted 1,
        on non-zero requests; a resource over its allocatable scores 0."""
        total = weights = 0
        for i, name in enumerate(("cpu", "memory")):
            alloc = node.allocatable.get(name, 0)
            if alloc == 0:
                continue
            requested = self.non_zero[node.name][i] + pod.non_zero[i]
            total += 0 if requested > alloc else (alloc - requested) * MAX_NODE_SCORE // alloc
            weights += 1
        return total // weights if weights else 0

    def _balanced(self, pod: StockPod, node: StockNode) -> int:
        """(1 − the standard deviation of the cpu and memory requested fractions) × 100, fractions capped at 1."""
        fractions = []
        for name in ("cpu", "memory"):
            alloc = node.allocatable.get(name, 0)
            if alloc == 0:
                continue
            requested = self.requested[node.name].get(name, 0) + pod.requests.get(name, 0)
            fractions.append(min(requested / alloc, 1.0))
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
        return int((1 - std) * MAX_NODE_SCORE)

    def _preferred_pod_affinity(self, pod: StockPod, nodes: Sequence[StockNode]) -> dict[str, int]:
        """+weight per existing pod a preferred affinity term selects in the node's domain, −weight
        for a preferred anti-affinity term."""
        affinity = (pod.raw.get("spec") or {}).get("affinity") or {}
        weighted: list[tuple[int, AffinityTerm]] = []
        for kind, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
            for entry in (affinity.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ():
                term = AffinityTerm.of(
                    entry.get("podAffinityTerm") or {}, pod.namespace, self.namespace_labels, pod.labels
                )
                weighted.append((sign * int(entry.get("weight") or 0), term))
        out = {n.name: 0 for n in nodes}
        if not weighted:
            return out
        per_domain: list[dict[str, int]] = []
        for weight, term in weighted:
            counts: dict[str, int] = defaultdict(int)
            for other in self._pods(term.namespaces):
                value = self.nodes[other.node].labels.get(term.topology_key)
                if value is not None and term.matches(other):
                    counts[value] += weight
            per_domain.append(counts)
        for n in nodes:
            for (_, term), counts in zip(weighted, per_domain, strict=True):
                value = n.labels.get(term.topology_key)
                if value is not None:
                    out[n.name] += counts.get(value, 0)
        return out


def _intolerable_preferences(tolerations: Sequence[Raw], node: StockNode) -> int:
    """PreferNoSchedule taints not tolerated by a toleration of effect PreferNoSchedule or any."""
    usable = [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    return sum(1 for t in node.taints if t.effect == "PreferNoSchedule" and not tolerates(usable, t))


def _preferred_node_affinity(spec: Raw, node: StockNode) -> int:
    """The sum of the weights of the preferred node-affinity terms the node matches."""
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return sum(
        int(entry.get("weight") or 0)
        for entry in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        if node_selector_term_matches(entry.get("preference") or {}, node.name, node.labels)
    )


def _normalize(scores: Mapping[str, int], *, reverse: bool) -> dict[str, int]:
    """helper.DefaultNormalizeScore: scale to 0–100 by the highest; `reverse` turns it upside down."""
    highest = max(scores.values(), default=0)
    if highest == 0:
        return dict.fromkeys(scores, MAX_NODE_SCORE if reverse else 0)
    out = {}
    for name, value in scores.items():
        scaled = MAX_NODE_SCORE * value // highest
        out[name] = MAX_NODE_SCORE - scaled if reverse else scaled
    return out


def _min_max(scores: Mapping[str, int]) -> dict[str, int]:
    """InterPodAffinity's NormalizeScore: 100 × (score − min) / (max − min), all 0 when equal."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 0)
    return {name: MAX_NODE_SCORE * (value - low) // (high - low) for name, value in scores.items()}


def summary(total: int, refusals: Mapping[str, str]) -> str:
    """kube-scheduler's FitError text: "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable."."""
    counts: dict[str, int] = defaultdict(int)
    for reason in refusals.values():
        counts[reason] += 1
    detail = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"0/{total} nodes are available: {detail}."
