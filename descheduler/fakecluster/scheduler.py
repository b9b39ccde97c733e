"""A simulated kube-scheduler: binds pending pods with our scheduling core, honouring Reservations.

Two modes:
- default: the scheduling core decides (`best_node`), and the scheduler plays the scheduler side of
  the Reservation contract as kube-scheduler with our extender does: it acknowledges the Pending
  Reservations it sees (Available, acknowledgedBy "sim-scheduler"), consumes the one an owner pod
  is bound onto, fails the owner's oldest Available one when an owner pod is bound elsewhere
  (`choose_for_binding`, the extender's own rule), and renews the scheduler Lease;
- `extender=ExtenderConfig(...)`: kube-scheduler's own flow with an HTTP extender, for every pod —
  in-tree filters (node condition, selector and affinity, taints, requests fit, anti-affinity;
  no load filter, no knowledge of Reservations), then POST `filterVerb`, then (with more than one
  node left) POST `prioritizeVerb`, and the node with the highest in-tree score (LeastAllocated on
  requests) plus extender score × weight × 10 wins. With a `bind_verb` the extender binds the pod
  (and consumes its Reservation), as kube-scheduler lets a binder extender do; without one the
  scheduler binds and Reservations are left alone.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import msgspec
import numpy as np
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
from descheduler.migration.objects import SCHEDULER_LEASE
from descheduler.model import Pod
from descheduler.policy import default_policy
from descheduler.policy.scheduling import SchedulingArgs
from descheduler.scheduling import ClusterView, best_node, build_table
from descheduler.scheduling.core import anti_affinity_mask, fit_mask, selector_mask, taint_mask
from descheduler.scheduling.predicates import claimable, owned_reservations
from descheduler.scheduling.table import IntArray
from descheduler.snapshot import load_snapshot_objects
from descheduler.timestamps import format_micro

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAMES = frozenset({"default-scheduler", ""})
MAX_NODE_SCORE = 100  # kube-scheduler's framework.MaxNodeScore
IDENTITY: Final = "sim-scheduler"
RESERVATIONS: Final = "reservations.descheduler.dev"
LEASES: Final = "leases.coordination.k8s.io"


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
    # The scheduler Lease (default mode): renewed in this namespace every RENEW_PERIOD simulated seconds.
    lease_namespace: str = "default"
    _client: HttpExtender | None = field(default=None, repr=False)
    _renewed: float | None = field(default=None, repr=False)

    def _pending(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            p
            for p in pods
            if not (p.get("spec") or {}).get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase", "Pending") == "Pending"
            and (p.get("spec") or {}).get("schedulerName", "") in self.scheduler_names
        ]

    def _objects(self) -> list[dict[str, Any]]:
        objects: list[dict[str, Any]] = []
        for resource in ("nodes", "pods", "nodemetrics.slo.koordinator.sh", "reservations.descheduler.dev"):
            objects += self.store.list(resource)
        if not self.store.count("nodemetrics.slo.koordinator.sh"):
            objects += self.store.list("nodes.metrics.k8s.io") + self.store.list("pods.metrics.k8s.io")
        return objects

    def step(self, now: float) -> list[Binding]:
        if self.extender is None:
            self.renew_lease(now)
            self._acknowledge()
        raw_pending = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in self._pending(self.store.list("pods"))
        }
        if not raw_pending:
            self.unschedulable = {}
            return []
        instant = datetime.fromtimestamp(now, tz=UTC)
        try:
            snapshot = load_snapshot_objects(self._objects(), instant, source="<simulated cluster>")
        except InputError as err:
            log.warning("scheduler: cannot read the cluster: %s", err)
            return []
        view = ClusterView(build_table(snapshot, self.args))
        pending = sorted(
            (p for p in snapshot.pods if p.key in raw_pending),
            key=lambda p: (-(p.priority or 0), p.created or instant, p.key),
        )
        done: list[Binding] = []
        self.unschedulable = {}
        for pod in pending:
            if self.extender is not None:
                binding = self._with_extender(pod, raw_pending[pod.key], view)
                if binding is not None:
                    done.append(binding)
                continue
            choice = best_node(pod, view)
            if choice.node is None:
                self.unschedulable[pod.key] = choice.summary()
                continue
            reservation = self._settle(pod, choice.node, view)
            try:
                bind_pod(self.store, pod.namespace, pod.name, {"target": {"name": choice.node}})
            except ApiError as err:
                log.info("scheduler: binding %s to %s failed: %s", pod.key, choice.node, err)
                continue
            done.append(Binding(pod.namespace, pod.name, choice.node, reservation))
            if reservation or any(r.node_name == choice.node for r in owned_reservations(pod, view)):
                # The reserved room is now the pod's: re-read the cluster so others see it right.
                snapshot = load_snapshot_objects(self._objects(), instant, source="<simulated cluster>")
                view = ClusterView(build_table(snapshot, self.args))
            else:
                view.place(pod, choice.node)
        self.bindings += done
        return done

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
        try:
            if self.store.exists(LEASES, SCHEDULER_LEASE, self.lease_namespace):

                def mutate(obj: dict[str, Any]) -> None:
                    obj["spec"] = {**(obj.get("spec") or {}), **spec}

                self.store.modify(LEASES, SCHEDULER_LEASE, self.lease_namespace, mutate)
            else:
                lease = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": SCHEDULER_LEASE, "namespace": self.lease_namespace},
                    "spec": {**spec, "acquireTime": stamp},
                }
                self.store.create(lease)
        except ApiError as err:
            log.info("scheduler: renewing the scheduler Lease failed: %s", err)

    # ---------------------------------------------------------------- kube-scheduler with an extender

    def _with_extender(self, pod: Pod, raw: dict[str, Any], view: ClusterView) -> Binding | None:
        assert self.extender is not None
        if self._client is None or self._client.config != self.extender:
            self._client = HttpExtender(self.extender)
        client = self._client
        table = view.table
        feasible = in_tree_filter(pod, view)
        rows = [int(r) for r in np.flatnonzero(feasible)]
        if not rows:
            self.unschedulable[pod.key] = f"0/{table.size} nodes are available: in-tree filters"
            return None
        nodes_by_name = {n["metadata"]["name"]: n for n in self.store.list("nodes")}
        candidates = [nodes_by_name[table.names[r]] for r in rows if table.names[r] in nodes_by_name]
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
            names, failed, unresolvable = [table.names[r] for r in rows], {}, {}
        if not names:
            refused = Counter({**failed, **unresolvable}.values())
            detail = ", ".join(f"{n} {reason}" for reason, n in sorted(refused.items(), key=lambda kv: (-kv[1], kv[0])))
            self.unschedulable[pod.key] = f"0/{table.size} nodes are available: {detail}"
            return None
        node = _pick(names, in_tree_scores(pod, view), table.index, extender_scores, self.extender.weight)
        if not self._bind_with_extender(client, pod, raw, node):
            return None
        view.place(pod, node)
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


def in_tree_filter(pod: Pod, view: ClusterView) -> np.ndarray:
    """What kube-scheduler's own filters check: no load filter, and Reservations do not exist for it."""
    table = view.table
    every_reservation = [r for r in table.snapshot.reservations if r.holds_room and r.node_name in table.index]
    mask = table.schedulable & selector_mask(pod, view) & taint_mask(pod, view)
    mask &= fit_mask(pod, view, owned=every_reservation)
    if pod.anti_affinity:
        mask &= anti_affinity_mask(pod, view)
    return mask


def in_tree_scores(pod: Pod, view: ClusterView) -> IntArray:
    """NodeResourcesFit LeastAllocated on requests, cpu and memory weighted equally (0–100)."""
    table = view.table
    cols = [table.column["cpu"], table.column["memory"]]
    alloc = table.alloc[:, cols]
    requested = view.requested[:, cols] + table.load_of(pod).requests[cols]
    least = np.where(alloc > 0, np.maximum(alloc - requested, 0) * MAX_NODE_SCORE // np.maximum(alloc, 1), 0)
    out: IntArray = least.sum(axis=1) // len(cols)
    return out


def _pick(
    names: Sequence[str], in_tree: IntArray, index: Mapping[str, int], extender: Mapping[str, int], weight: int
) -> str:
    """The highest combined score; ties by name (kube-scheduler picks at random among them)."""
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY

    def total(name: str) -> tuple[int, str]:
        row = index.get(name)
        own = int(in_tree[row]) if row is not None else 0
        return (-(own + extender.get(name, 0) * weight * scale), name)

    return min(names, key=total)
