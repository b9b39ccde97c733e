"""A simulated kube-scheduler: binds pending pods, honouring Reservations.

kube-scheduler's own part, its in-tree filters and scores, is `stock.StockScheduler`, written apart
from the product's scheduling core so that the simulation checks the core instead of repeating it;
NodePorts, which `stock` leaves out, is `HostPortUse` here, written apart from the core likewise.

Two modes:
- default: kube-scheduler with our scheduler plugin. A pod its ElasticQuota does not admit
  (`scheduling.quota`, Capacity Scheduling's rules) waits; otherwise the in-tree filters (`StockScheduler`, the room
  of the pod's own claimable Reservations given back to it) and the plugin's load filter (the core's
  `load_check`) decide which nodes are feasible; a feasible node the pod holds a Reservation on wins,
  else the highest in-tree score plus the core's load-aware score × `PLUGIN_WEIGHT`. The scheduler
  also plays the scheduler side of the Reservation contract as kube-scheduler with our extender
  does: it acknowledges the Pending Reservations it sees (Available, acknowledgedBy "sim-scheduler"),
  consumes the one an owner pod is bound onto, fails the owner's oldest Available one when an owner
  pod is bound elsewhere (`choose_for_binding`, the extender's own rule), and renews the scheduler
  Lease;
- `extender=ExtenderConfig(...)`: kube-scheduler's own flow with an HTTP extender, for every pod —
  the in-tree filters (`StockScheduler`: no load filter, and every Reservation holding room counts as
  requested on its node), then POST `filterVerb`, then (with more than one node left) POST
  `prioritizeVerb`, and the node with the highest in-tree score plus extender score × weight × 10
  wins. With a `bind_verb` the extender binds the pod (and consumes its Reservation), as
  kube-scheduler lets a binder extender do; without one the scheduler binds and Reservations are
  left alone.
"""

from __future__ import annotations

import copy
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import msgspec
import urllib3

from descheduler.errors import InputError
from descheduler.extender.lease import LEASE_DURATION, RENEW_PERIOD
from descheduler.extender.protocol import (
    MAX_EXTENDER_PRIORITY,
    ExtenderBindingResult,
    ExtenderFilterResult,
    HostPriority,
)
from descheduler.extender.reservations import (
    ReservationRecord,
    acknowledged_status,
    choose_for_binding,
    consumed_status,
    failed_status,
)
from descheduler.fakecluster.apiserver import ApiError, Store
from descheduler.fakecluster.apiserver.binding import bind_pod
from descheduler.fakecluster.stock import MAX_NODE_SCORE, StockPod, StockScheduler, summary
from descheduler.fakecluster.stock_volumes import StorageObjects, read_storage
from descheduler.kube.kinds import QUOTAS
from descheduler.migration.objects import (
    ANNOTATION_SCHEDULER_NAMES,
    DEFAULT_SCHEDULER_NAME,
    SCHEDULER_LEASE,
    SCHEDULER_LEASE_NAMESPACE,
)
from descheduler.model import Pod
from descheduler.policy import default_policy
from descheduler.policy.scheduling import SchedulingArgs
from descheduler.scheduling import ClusterView, build_table, scores
from descheduler.scheduling.predicates import checks, claimable, load_check, owned_reservations
from descheduler.scheduling.quota import QuotaBook
from descheduler.snapshot import Snapshot, load_snapshot_objects
from descheduler.timestamps import format_micro

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAMES = frozenset({"default-scheduler", ""})
# Our score plugin's weight beside the in-tree scores (default mode): load-aware placement leads, as
# the soak's extender weight 5 makes it lead there.
PLUGIN_WEIGHT: Final = 5
IDENTITY: Final = "sim-scheduler"
RESERVATIONS: Final = "reservations.descheduler.dev"
LEASES: Final = "leases.coordination.k8s.io"
STORAGE_RESOURCES: Final = (
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses.storage.k8s.io",
    "csinodes.storage.k8s.io",
    "resourceclaims.resource.k8s.io",
)


@dataclass(frozen=True, slots=True)
class Binding:
    namespace: str
    pod: str
    node: str
    reservation: str = ""


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One `extenders` entry of a KubeSchedulerConfiguration."""

    url_prefix: str
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    bind_verb: str = ""
    weight: int = 1
    node_cache_capable: bool = True
    ignorable: bool = False
    http_timeout: float = 5.0


# kube-scheduler's NodePorts (framework/plugins/nodeports/node_ports.go), on raw pods and apart from
# the product's core as `stock` is: its FitError words.
NODE_PORTS_REASON: Final = "node(s) didn't have free ports for the requested pod ports"
_ANY_IP: Final = "0.0.0.0"


def host_ports(pod: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of the pod's containers and restartPolicy Always init
    containers (schedutil.GetHostPorts), sanitized as HostPortInfo does: "" is 0.0.0.0 and TCP."""
    spec = pod.get("spec") or {}
    containers = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    containers += list(spec.get("containers") or ())
    return [
        (port.get("hostIP") or _ANY_IP, port.get("protocol") or "TCP", int(port["hostPort"]))
        for c in containers
        for port in c.get("ports") or ()
        if int(port.get("hostPort") or 0) > 0
    ]


class HostPortUse:
    """The host ports in use on each node (NodeInfo.UsedPorts: every assigned pod not finished,
    terminating ones included), and which nodes a pod's ports conflict on."""

    def __init__(self, pods: Sequence[Mapping[str, Any]]) -> None:
        self.used: dict[str, set[tuple[str, str, int]]] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                self.place(pod, node)

    def place(self, pod: Mapping[str, Any], node: str) -> None:
        ports = host_ports(pod)
        if ports:
            self.used.setdefault(node, set()).update(ports)

    def refusals(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """node -> NodePorts' reason, for every node where a wanted port is taken (CheckConflict)."""
        wanted = host_ports(pod)
        if not wanted:
            return {}
        return {
            node: NODE_PORTS_REASON
            for node, used in self.used.items()
            if any(_conflicts(want, held) for want in wanted for held in used)
        }


def _conflicts(want: tuple[str, str, int], held: tuple[str, str, int]) -> bool:
    return want[1:] == held[1:] and (want[0] == held[0] or _ANY_IP in (want[0], held[0]))


class ExtenderCallError(Exception):
    """The extender could not be called, answered non-200, or answered something unusable."""


class HttpExtender:
    """kube-scheduler's HTTPExtender (pkg/scheduler/extender.go): POST ExtenderArgs as JSON to
    `<urlPrefix>/<verb>`, read ExtenderFilterResult or HostPriorityList back."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self._http = urllib3.PoolManager(maxsize=2, retries=False, timeout=urllib3.Timeout(total=config.http_timeout))
        self._filter_result = msgspec.json.Decoder(ExtenderFilterResult)
        self._priorities = msgspec.json.Decoder(list[HostPriority])

    def _send(self, verb: str, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> bytes:
        args: dict[str, Any] = {"Pod": pod, "Nodes": None, "NodeNames": None}
        if self.config.node_cache_capable:
            args["NodeNames"] = [n["metadata"]["name"] for n in nodes]
        else:
            args["Nodes"] = {"items": list(nodes)}
        return self._post(verb, args)

    def _post(self, verb: str, args: Mapping[str, Any]) -> bytes:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        try:
            response = self._http.request(
                "POST", url, body=msgspec.json.encode(args), headers={"Content-Type": "application/json"}
            )
        except urllib3.exceptions.HTTPError as err:
            raise ExtenderCallError(f"{verb} at {url}: {err}") from None
        if response.status != 200:
            raise ExtenderCallError(f"failed {verb} with extender at URL {url}, code {response.status}")
        return bytes(response.data)

    def filter(
        self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]
    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """(names that passed, FailedNodes, FailedAndUnresolvableNodes)."""
        if not self.config.filter_verb:
            return [n["metadata"]["name"] for n in nodes], {}, {}
        try:
            result = self._filter_result.decode(self._send(self.config.filter_verb, pod, nodes))
        except msgspec.DecodeError as err:
            raise ExtenderCallError(f"filter answer is not an ExtenderFilterResult: {err}") from None
        if result.Error:
            raise ExtenderCallError(result.Error)
        given = {n["metadata"]["name"] for n in nodes}
        if self.config.node_cache_capable and result.NodeNames is not None:
            passed = list(result.NodeNames)
        elif result.Nodes is not None:
            passed = [msgspec.json.decode(item)["metadata"]["name"] for item in result.Nodes.items or []]
        else:
            passed = []
        stray = [name for name in passed if name not in given]
        if stray:
            raise ExtenderCallError(f"extender claims a filtered node {stray[0]!r} which is not in the input node list")
        return passed, dict(result.FailedNodes or {}), dict(result.FailedAndUnresolvableNodes or {})

    def prioritize(self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        if not self.config.prioritize_verb:
            return {}
        try:
            answer = self._priorities.decode(self._send(self.config.prioritize_verb, pod, nodes))
        except msgspec.DecodeError as err:
            raise ExtenderCallError(f"prioritize answer is not a HostPriorityList: {err}") from None
        return {entry.Host: entry.Score for entry in answer}

    def bind(self, pod: Mapping[str, Any], node: str) -> None:
        """POST ExtenderBindingArgs to `bindVerb`; an Error in the answer is an ExtenderCallError."""
        meta = pod["metadata"]
        args = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta.get("uid", ""), "Node": node}
        answer = self._post(self.config.bind_verb, args)
        try:
            result = msgspec.json.decode(answer, type=ExtenderBindingResult)
        except msgspec.DecodeError as err:
            raise ExtenderCallError(f"bind answer is not an ExtenderBindingResult: {err}") from None
        if result.Error:
            raise ExtenderCallError(result.Error)

    def close(self) -> None:
        self._http.clear()


@dataclass(slots=True)
class Scheduler:
    """Each step: one scheduling pass over the pending pods, highest priority first."""

    store: Store
    args: SchedulingArgs = field(default_factory=lambda: default_policy().scheduling)
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES
    bindings: list[Binding] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)  # pod key -> why, from the last pass
    extender: ExtenderConfig | None = None
    # Called after each binding (extender mode), e.g. to let the extender's cache catch up.
    after_bind: Callable[[Binding], None] | None = None
    # The scheduler Lease (default mode): renewed in this namespace every RENEW_PERIOD simulated seconds,
    # where `descheduler run` reads it by default.
    lease_namespace: str = SCHEDULER_LEASE_NAMESPACE
    _client: HttpExtender | None = field(default=None, repr=False)
    _renewed: float | None = field(default=None, repr=False)
    _stock_pods: dict[tuple[str, str], StockPod] = field(default_factory=dict, repr=False)
    _snapshot_pods: dict[tuple[str, str], Pod] = field(default_factory=dict, repr=False)
    # The pods' write stamp when the last pass found none to place: until they are written, none is.
    _none_pending: tuple[int, ...] = field(default=(), repr=False)
    # The host ports in use, read with the in-tree plugins (`_read`) and kept up as pods are bound.
    _ports: HostPortUse = field(default_factory=lambda: HostPortUse(()), repr=False)

    def _pending(self) -> list[dict[str, Any]]:
        """Copies of the pods this scheduler has to place (read shared: no decode of every pod each
        tick; only the few pending ones are copied to work on)."""
        return [
            copy.deepcopy(p)
            for p in self.store.list("pods", shared=True)
            if not (p.get("spec") or {}).get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase", "Pending") == "Pending"
            and (p.get("spec") or {}).get("schedulerName", "") in self.scheduler_names
        ]

    def _objects(self) -> list[dict[str, Any]]:
        objects: list[dict[str, Any]] = []
        for resource in ("nodes", "pods", "nodemetrics.slo.koordinator.sh", "reservations.descheduler.dev", *QUOTAS):
            objects += self.store.list(resource, shared=True)
        if not self.store.count("nodemetrics.slo.koordinator.sh"):
            objects += self.store.list("nodes.metrics.k8s.io", shared=True)
            objects += self.store.list("pods.metrics.k8s.io", shared=True)
        return objects

    def _snapshot(self, instant: datetime) -> Snapshot:
        """The cluster as it is now (pods unchanged since the last call are not parsed again)."""
        return load_snapshot_objects(
            self._objects(), instant, source="<simulated cluster>", pod_memo=self._snapshot_pods
        )

    def _read(self, instant: datetime) -> tuple[Snapshot, ClusterView, StockScheduler]:
        """The cluster as it is now, as the load-aware core and the in-tree plugins see it."""
        snapshot = self._snapshot(instant)
        self._ports = HostPortUse(self.store.list("pods", shared=True))
        return snapshot, ClusterView(build_table(snapshot, self.args)), self.stock()

    def _in_tree_refusals(self, stock: StockScheduler, raw: dict[str, Any], own: Sequence[str] = ()) -> dict[str, str]:
        """node -> why, by kube-scheduler's in-tree filters: `stock`'s, then NodePorts."""
        refused = stock.refusals(raw, own=own)
        for node, why in self._ports.refusals(raw).items():
            refused.setdefault(node, why)
        return refused

    def step(self, now: float) -> list[Binding]:
        if self.extender is None:
            self.renew_lease(now)
            self._acknowledge()
        written = self.store.written("pods")
        if written == self._none_pending:
            return []
        raw_pending = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in self._pending()}
        if not raw_pending:
            self._none_pending = written
            self.unschedulable = {}
            return []
        instant = datetime.fromtimestamp(now, tz=UTC)
        try:
            snapshot, view, stock = self._read(instant)
        except InputError as err:
            log.warning("scheduler: cannot read the cluster: %s", err)
            return []
        pending = sorted(
            (p for p in snapshot.pods if p.key in raw_pending),
            key=lambda p: (-(p.priority or 0), p.created or instant, p.key),
        )
        done: list[Binding] = []
        self.unschedulable = {}
        quota = QuotaBook.of(snapshot) if self.extender is None else None  # the extender enforces its own
        stale = False  # a Reservation was consumed: re-read the cluster before the next pod
        for pod in pending:
            raw = raw_pending[pod.key]
            if stale:
                _, view, stock = self._read(instant)
                stale = False
            if self.extender is not None:
                binding = self._with_extender(pod, raw, stock)
                if binding is not None:
                    done.append(binding)
                continue
            over_quota = quota.admit(pod) if quota is not None else None
            if over_quota is not None:
                self.unschedulable[pod.key] = summary(len(stock.names), dict.fromkeys(stock.names, str(over_quota)))
                continue
            node = self._choose(pod, raw, view, stock)
            if node is None:
                continue
            reservation = self._settle(pod, node, view)
            try:
                bind_pod(self.store, pod.namespace, pod.name, {"target": {"name": node}})
            except ApiError as err:
                log.info("scheduler: binding %s to %s failed: %s", pod.key, node, err)
                continue
            done.append(Binding(pod.namespace, pod.name, node, reservation))
            if quota is not None:
                quota.bound(pod)
            if reservation or any(r.node_name == node for r in owned_reservations(pod, view)):
                # The reserved room is now the pod's: the next pod sees the cluster re-read.
                stale = True
            else:
                view.place(pod, node)
                stock.place(raw, node)
                self._ports.place(raw, node)
        self.bindings += done
        return done

    def stock(self) -> StockScheduler:
        """kube-scheduler's in-tree plugins over the store as it is now (pods unchanged since the
        last call are not parsed again)."""
        return StockScheduler(
            self.store.list("nodes", shared=True),
            self.store.list("pods", shared=True),
            self.store.list(RESERVATIONS, shared=True),
            self.store.list("namespaces", shared=True),
            memo=self._stock_pods,
            storage=self._storage(),
        )

    def _storage(self) -> StorageObjects:
        """The volume filters' objects in the store; a kind the fake does not serve reads as none."""
        lists: dict[str, list[dict[str, Any]]] = {}
        for resource in STORAGE_RESOURCES:
            try:
                lists[resource.partition(".")[0]] = self.store.list(resource, shared=True)
            except KeyError:
                lists[resource.partition(".")[0]] = []
        return read_storage(lists)

    def _choose(self, pod: Pod, raw: dict[str, Any], view: ClusterView, stock: StockScheduler) -> str | None:
        """Default mode: the in-tree filters and our plugin's load filter; a reserved node wins, else
        the in-tree score plus the load-aware score × PLUGIN_WEIGHT (ties by name)."""
        table = view.table
        owned = owned_reservations(pod, view)
        refused = self._in_tree_refusals(stock, raw, [r.name for r in owned])
        accepted = load_check(pod, view, owned).accepted
        load_refused = [name for name in stock.names if name not in refused and not accepted[table.index[name]]]
        if load_refused:
            found = checks(pod, view, node_fit=False, owned=owned)
            for name in load_refused:
                why = found.refusal(table.index[name])
                refused[name] = why.brief if why is not None else "load-aware filter"
        names = [name for name in stock.names if name not in refused]
        if not names:
            self.unschedulable[pod.key] = summary(len(stock.names), refused)
            return None
        for reservation in owned:
            if reservation.node_name in names:
                return reservation.node_name
        in_tree = stock.scores(raw, names)
        load_aware = scores(pod, view)
        return min(names, key=lambda n: (-(in_tree[n] + PLUGIN_WEIGHT * int(load_aware[table.index[n]])), n))

    # ---------------------------------------------------------------- the Reservation contract

    def _acknowledge(self) -> None:
        """Its state is the store itself: every Pending Reservation is held from the moment it is seen."""
        for raw in self.store.list(RESERVATIONS):
            if (raw.get("status") or {}).get("phase", "Pending") != "Pending":
                continue

            def mutate(obj: dict[str, Any]) -> None:
                status = dict(obj.get("status") or {})
                if status.get("phase", "Pending") == "Pending":
                    obj["status"] = acknowledged_status(status, IDENTITY)

            self._write_status(raw["metadata"]["name"], mutate)

    def _settle(self, pod: Pod, node: str, view: ClusterView) -> str:
        """Before binding: consume the pod's Reservation on `node`, or fail the owner's oldest waiting
        one elsewhere (the extender's rule); returns the name of the one consumed, if any."""
        records = []
        for raw in self.store.list(RESERVATIONS):
            try:
                records.append(ReservationRecord.of(raw))
            except (msgspec.ValidationError, ValueError) as err:
                log.info("scheduler: skipping unreadable Reservation: %s", err)
        choice = choose_for_binding(pod, node, records, lambda r: claimable(r, view.table))
        record = choice.consume or choice.fail
        if record is None:
            return ""
        change = consumed_status if choice.consume else failed_status

        def mutate(obj: dict[str, Any]) -> None:
            obj["status"] = change(dict(obj.get("status") or {}), pod, node)

        self._write_status(record.name, mutate)
        return record.name if choice.consume else ""

    def _write_status(self, name: str, mutate: Callable[[dict[str, Any]], None]) -> None:
        try:
            self.store.modify(RESERVATIONS, name, "", mutate, subresource="status")
        except ApiError as err:
            log.info("scheduler: writing Reservation %s failed: %s", name, err)

    def renew_lease(self, now: float) -> None:
        """Renew the scheduler Lease (every `RENEW_PERIOD`), as the extender does in a cluster; in
        extender mode the simulation's driver calls it, on the simulated clock."""
        if self._renewed is not None and now - self._renewed < RENEW_PERIOD:
            return
        self._renewed = now
        stamp = format_micro(datetime.fromtimestamp(now, tz=UTC))
        spec = {"holderIdentity": IDENTITY, "leaseDurationSeconds": LEASE_DURATION, "renewTime": stamp}
        # The schedulerNames whose pods it places, honouring Reservations (an empty one is the default's).
        served = ",".join(sorted({name or DEFAULT_SCHEDULER_NAME for name in self.scheduler_names}))
        try:
            if self.store.exists(LEASES, SCHEDULER_LEASE, self.lease_namespace):

                def mutate(obj: dict[str, Any]) -> None:
                    obj["spec"] = {**(obj.get("spec") or {}), **spec}
                    metadata = obj.setdefault("metadata", {})
                    metadata["annotations"] = {
                        **(metadata.get("annotations") or {}),
                        ANNOTATION_SCHEDULER_NAMES: served,
                    }

                self.store.modify(LEASES, SCHEDULER_LEASE, self.lease_namespace, mutate)
            else:
                lease = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": SCHEDULER_LEASE,
                        "namespace": self.lease_namespace,
                        "annotations": {ANNOTATION_SCHEDULER_NAMES: served},
                    },
                    "spec": {**spec, "acquireTime": stamp},
                }
                self.store.create(lease)
        except ApiError as err:
            log.info("scheduler: renewing the scheduler Lease failed: %s", err)

    # ---------------------------------------------------------------- kube-scheduler with an extender

    def _with_extender(self, pod: Pod, raw: dict[str, Any], stock: StockScheduler) -> Binding | None:
        assert self.extender is not None
        if self._client is None or self._client.config != self.extender:
            self._client = HttpExtender(self.extender)
        client = self._client
        total = len(stock.names)
        in_tree_refused = self._in_tree_refusals(stock, raw)
        feasible = [name for name in stock.names if name not in in_tree_refused]
        if not feasible:
            self.unschedulable[pod.key] = summary(total, in_tree_refused)
            return None
        nodes_by_name = {n["metadata"]["name"]: n for n in self.store.list("nodes")}
        candidates = [nodes_by_name[name] for name in feasible if name in nodes_by_name]
        extender_scores: dict[str, int] = {}
        try:
            names, failed, unresolvable = client.filter(raw, candidates)
            if len(names) > 1:
                passed = [nodes_by_name[name] for name in names]
                extender_scores = client.prioritize(raw, passed)
        except ExtenderCallError as err:
            if not self.extender.ignorable:
                self.unschedulable[pod.key] = f"extender: {err}"
                return None
            log.info("scheduler: skipping the ignorable extender for %s: %s", pod.key, err)
            names, failed, unresolvable = feasible, {}, {}
        if not names:
            refused = Counter({**failed, **unresolvable}.values())
            detail = ", ".join(f"{n} {reason}" for reason, n in sorted(refused.items(), key=lambda kv: (-kv[1], kv[0])))
            self.unschedulable[pod.key] = f"0/{total} nodes are available: {detail}"
            return None
        node = _pick(names, stock.scores(raw, names), extender_scores, self.extender.weight)
        if not self._bind_with_extender(client, pod, raw, node):
            return None
        stock.place(raw, node)
        self._ports.place(raw, node)
        binding = Binding(pod.namespace, pod.name, node)
        if self.after_bind is not None:
            self.after_bind(binding)
        return binding

    def _bind_with_extender(self, client: HttpExtender, pod: Pod, raw: dict[str, Any], node: str) -> bool:
        """The extender binds when it has a bind verb (an ignorable one that fails: the scheduler
        binds, as kube-scheduler does); else the scheduler binds."""
        assert self.extender is not None
        if self.extender.bind_verb:
            try:
                client.bind(raw, node)
                return True
            except ExtenderCallError as err:
                if not self.extender.ignorable:
                    self.unschedulable[pod.key] = f"binding rejected: extender: {err}"
                    return False
                log.info("scheduler: the ignorable extender did not bind %s: %s", pod.key, err)
        try:
            bind_pod(self.store, pod.namespace, pod.name, {"target": {"name": node}})
        except ApiError as err:
            log.info("scheduler: binding %s to %s failed: %s", pod.key, node, err)
            return False
        return True


def _pick(names: Sequence[str], in_tree: Mapping[str, int], extender: Mapping[str, int], weight: int) -> str:
    """The highest combined score; ties by name (kube-scheduler picks at random among them)."""
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY

    def total(name: str) -> tuple[int, str]:
        return (-(in_tree.get(name, 0) + extender.get(name, 0) * weight * scale), name)

    return min(names, key=total)
