"""The extender: answers filter and prioritize for one pod at a time, on the latest refreshed state.

A request reads the current state once and answers from it: decoding, mapping the names to rows
and encoding the answer take no lock; the decision itself (a few vectorised passes over the node
table) holds the state's own lock, which changes to that state (bindings, Reservations) also
take, so every answer is consistent. Changes and state replacements are serialised by a second
lock that no request takes: a refresher thread rebuilds the state off the request path when the
source changed, applies to it the changes seen meanwhile and swaps it in with one assignment;
requests already running finish on the state they started with, and none waits for the swap.
While it rebuilds, the refresher steps aside whenever a request is being answered (`yielding.RequestsFirst`:
it waits at its next function call, keeping a minimum share of the time; the first build, which no
request could be answered from anyway, runs straight through), and gives the GIL back
every `REBUILD_SWITCH_INTERVAL` seconds, so a request arriving mid-rebuild waits about that long,
not CPython's default 5 ms per switch.
Reservation changes are written into the current state as they arrive (`apply_reservation`), and only then
is a Pending Reservation acknowledged, so the migration controller never evicts before the
answers hold the room. With a `ReservationWriter` the extender also serves kube-scheduler's bind
verb: it consumes (or fails) the pod's Reservation and binds the pod (`reservations`). With
`SchedulerNames`, a pod whose schedulerName the extender does not announce is warned about, once a name.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec
import numpy as np

from descheduler import metrics
from descheduler.decode import DecodeError
from descheduler.errors import ClusterUnreachableError, InputError
from descheduler.extender import protocol
from descheduler.extender.binding import CODES as BIND_CODES
from descheduler.extender.binding import bind_refusal
from descheduler.extender.decisions import refuse_everywhere, steering, waive_load
from descheduler.extender.protocol import ExtenderBindingResult, Request, RequestError
from descheduler.extender.reservations import Acknowledger, BindError, ReservationRecord, ReservationWriter
from descheduler.extender.scheduler_names import SchedulerNames
from descheduler.extender.sources import ClusterSource
from descheduler.extender.state import AssumedPods, Candidates, ClusterState, apply_reservation, release_pod
from descheduler.extender.yielding import RequestsFirst
from descheduler.kube.client import KubeApiError
from descheduler.model import Pod, Reservation
from descheduler.periodic import Periodic
from descheduler.policy import SchedulingArgs
from descheduler.scheduling import build_table, predicates
from descheduler.scheduling.predicates import claimable
from descheduler.scheduling.quota import DEFAULT_PARENT_LABEL, DEFAULT_QUOTA_LABEL, QuotaBook

log = logging.getLogger(__name__)

for _code in BIND_CODES:  # every reason shows from the start, at 0
    metrics.EXTENDER_BINDS_REFUSED.labels(_code)

POD_CACHE_SIZE = 256
REBUILD_SWITCH_INTERVAL = 0.0005  # seconds: how long a request may wait for the GIL while the state is rebuilt


@dataclass(frozen=True, slots=True)
class RefreshTiming:
    """How often the state may be rebuilt."""

    interval: float = 1.0  # at most this often when the source changed
    max_age: float = 30.0  # at least this often anyway: metric ages move with the clock
    # and never so often that rebuilding takes more than this share of a core: a build's CPU time, not
    # its wall time, which a busy machine or requests sharing the GIL stretch (a 24 ms build took 18 s
    # on a loaded CI machine, and the wall-time rule then held the next one off for 72 s)
    build_share: float = 0.25
    stale_after: float = 120.0  # a state this old, with refreshes failing, makes the extender not ready


class Extender:
    """The kube-scheduler extender over a `ClusterSource`, with the policy's scheduling arguments."""

    def __init__(
        self,
        source: ClusterSource,
        args: SchedulingArgs,
        *,
        timing: RefreshTiming | None = None,
        assumed_ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        writer: ReservationWriter | None = None,
        quota_labels: tuple[str, str] = (DEFAULT_QUOTA_LABEL, DEFAULT_PARENT_LABEL),
        scheduler_names: SchedulerNames | None = None,
    ) -> None:
        self.source = source
        self.scheduler_names = scheduler_names  # None: no check (a snapshot file: no Reservations anyway)
        self.quota_labels = quota_labels  # (pod label naming its quota, quota label naming its parent)
        self._args = args
        self.timing = timing or RefreshTiming()
        self._clock = clock
        self._lock = threading.Lock()  # changes and state swaps, in order; never taken by a request
        self._refresh_lock = threading.Lock()
        self.requests_first = RequestsFirst()  # a rebuild steps aside while requests are answered
        self._state: ClusterState | None = None
        self._assumed = AssumedPods(assumed_ttl)
        self._pods: OrderedDict[bytes, Pod] = OrderedDict()
        self._last_build = 0.0
        self._last_error: str | None = None
        self._rebuild = False  # the arguments changed: rebuild at the next refresh, whatever the timing
        self._refresher = Periodic(
            self.refresh, 0.1, name="extender-refresh", failure="extender: refresh loop error", log=log
        )
        self.writer = writer
        self._acknowledger = Acknowledger(writer, self._wrote_reservation) if writer is not None else None
        # Reservation changes seen (name -> record or None, monotonic time): re-applied to a state
        # whose snapshot may have been read before them.
        self._reservation_changes: dict[str, tuple[Reservation | None, float]] = {}
        self._leaving: dict[str, float] = {}  # pod UID -> when seen leaving, until a rebuild shows it
        self._gone: dict[str, tuple[Pod, float]] = {}  # pod UID -> the pod and when seen gone, likewise
        self._recent_lock = threading.Lock()
        source.watch_bindings(self.observe_binding)
        source.watch_reservations(self.observe_reservation)
        source.watch_leaving(self.observe_leaving)

    # ---------------------------------------------------------------- state

    @property
    def args(self) -> SchedulingArgs:
        return self._args

    def set_args(self, args: SchedulingArgs) -> None:
        """New scheduling arguments (a reloaded policy): the next refresh rebuilds the table with them."""
        with self._lock:
            self._args = args
            self._rebuild = True

    @property
    def state(self) -> ClusterState | None:
        return self._state

    def not_ready(self) -> str | None:
        """None when the answers can be trusted, else why not (for /readyz; requests get 503 only
        before the first state). A state older than `timing.stale_after` whose refreshes fail is
        not ready: kube-scheduler then skips the (ignorable) extender instead of acting on it."""
        state = self._state
        if state is None:
            waiting = self.source.not_ready() or self._last_error or "the first snapshot is being read"
            return f"no cluster state yet: {waiting}"
        age = self._clock() - state.taken_at
        if self._last_error is not None and age > self.timing.stale_after:
            return f"cluster state is {age:.0f}s old; refreshing it fails: {self._last_error}"
        return None

    def refresh(self, force: bool = False) -> bool:
        """Rebuild the state when the source changed and the timing allows; True when it did.

        A source that cannot be read leaves the last state in force (logged once per new error).
        """
        with self._refresh_lock:
            current = self._state
            now = self._clock()
            if not force and not self._rebuild and current is not None:
                age = now - current.taken_at
                wait = max(self.timing.interval, self._last_build / self.timing.build_share)
                if age < wait or (age < self.timing.max_age and self.source.generation() == current.generation):
                    return False
            problem = self.source.not_ready()
            if problem is not None:
                self._failed(f"source not ready: {problem}")
                return False
            started = self._clock()
            cpu_started = time.thread_time()
            generation = self.source.generation()
            switch = sys.getswitchinterval()
            sys.setswitchinterval(min(switch, REBUILD_SWITCH_INTERVAL))
            # The first build steps aside for no request: until it is swapped in, every request is
            # answered at once that there is no state yet. It also compiles the name kernels (once a
            # process): seconds of imports and compilation that the hook, called at every Python call,
            # would slow several times over.
            stepping_aside: contextlib.AbstractContextManager[None] = (
                self.requests_first.yielding() if current is not None else contextlib.nullcontext()
            )
            try:
                with stepping_aside:
                    snapshot = self.source.snapshot()
                    args = self._args
                    table = build_table(snapshot, args)
                    quota = QuotaBook.of(snapshot, *self.quota_labels)
                    state = ClusterState(
                        table, generation, started, current.names if current is not None else None, quota
                    )
            except (InputError, ClusterUnreachableError) as err:
                self._failed(str(err))
                return False
            except Exception as err:  # a bug in one refresh must not end the refresher
                log.exception("extender: refreshing the cluster state failed")
                self._failed(f"refresh failed: {err}")
                return False
            finally:
                sys.setswitchinterval(switch)
            self._last_build = time.thread_time() - cpu_started
            with self._lock:
                if args is not self._args:
                    return False  # the policy changed while building: the next refresh uses the new one
                # The new state is not served yet: no request can see it half updated.
                self._assumed.carry_over(state, self._clock())
                self._carry_reservations(state)
                self._state = state  # the swap: requests from now on answer from the new state
                self._rebuild = False
                metrics.EXTENDER_ASSUMED_PODS.set(len(self._assumed))
            self._offer(state, state.table.snapshot.reservations)
            metrics.EXTENDER_REFRESHES.labels("success").inc()
            metrics.EXTENDER_NODES.set(table.size)
            if self._last_error is not None:
                log.info("extender: cluster state readable again")
            self._last_error = None
            return True

    def _failed(self, why: str) -> None:
        metrics.EXTENDER_REFRESHES.labels("error").inc()
        if why != self._last_error:
            log.warning("extender: keeping the last cluster state: %s", why)
        self._last_error = why

    def observe_binding(self, pod: Pod, node: str) -> None:
        """A pod was bound: count it on its node until a snapshot includes it."""
        with self._lock:
            state = self._state
            if state is None:
                return  # the first snapshot, when it comes, will include it
            with state.lock:
                self._assumed.add(pod, node, self._clock(), state)
            metrics.EXTENDER_ASSUMED_PODS.set(len(self._assumed))

    def observe_reservation(self, name: str, reservation: Reservation | None) -> None:
        """A Reservation changed (None: deleted): the answering state counts it from now on; a Pending
        one is then offered for acknowledgement."""
        with self._lock:
            self._reservation_changes[name] = (reservation, self._clock())
            state = self._state
            if state is not None:
                with state.lock:
                    apply_reservation(state, name, reservation)
        if state is not None and reservation is not None:
            self._offer(state, [reservation])

    def _carry_reservations(self, state: ClusterState) -> None:
        """Under the lock: changes seen since the new state's snapshot was read, applied to it."""
        self._leaving = {uid: seen for uid, seen in self._leaving.items() if seen >= state.taken_at}
        state.table.leaving.update(self._leaving)
        self._gone = {uid: (pod, seen) for uid, (pod, seen) in self._gone.items() if seen >= state.taken_at}
        for pod, _ in self._gone.values():
            release_pod(state, pod)
        keep = {}
        for name, (reservation, seen) in self._reservation_changes.items():
            if seen >= state.taken_at:
                keep[name] = (reservation, seen)
                apply_reservation(state, name, reservation)
        self._reservation_changes = keep

    def _offer(self, state: ClusterState, reservations: Sequence[Reservation]) -> None:
        """Pending Reservations the state holds room for (their node is in its table) go to be
        acknowledged; those whose TTL has run out unconsumed, to be marked Expired."""
        if self._acknowledger is None:
            return
        index, now = state.table.index, state.table.snapshot.now
        expired = [r for r in reservations if r.past_ttl(now)]
        held = [r for r in reservations if r.phase == "Pending" and r.holds_room and r.node_name in index]
        self._acknowledger.offer([r for r in held if r not in expired])
        self._acknowledger.expire(expired, now)

    # ---------------------------------------------------------------- refresher thread

    def start(self, poll: float = 0.1) -> Extender:
        """Refresh in the background (every `poll` seconds the source's generation is checked)."""
        if self._acknowledger is not None:
            self._acknowledger.start()
        self._refresher.period = poll
        self._refresher.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._refresher.stop(timeout)
        if self._acknowledger is not None:
            self._acknowledger.stop(timeout)

    # ---------------------------------------------------------------- requests

    def filter(self, body: bytes) -> bytes:
        """An ExtenderArgs body in, an ExtenderFilterResult body out (RequestError for a bad request)."""
        with self.requests_first.serving():
            return self._filter(body)

    def _filter(self, body: bytes) -> bytes:
        request, state, candidates = self._prepare(body, seen=False)
        left_out: list[Reservation] = []
        with state.lock:
            state.asked_about(request.pod)
            over_quota = state.quota.admit(request.pod) if state.quota is not None else None
            if over_quota is not None:
                decision = refuse_everywhere(candidates.rows.size, over_quota)
            else:
                decision = state.shapes.filter(request.pod, state.view, candidates.rows)
                if decision.steered < 0 and state.table.snapshot.reservations:
                    left_out = _rooms_left_out(request, state, candidates)
                waived = waive_load(decision) if not candidates.unknown else None
                if waived is not None:
                    decision = waived
                    self._waived(request.pod, state)
        if left_out and self.writer is not None:
            for reservation in left_out:
                self._refuse(self.writer, reservation, request.pod)
        texts, pieces = state.reason_texts(decision.reasons)
        if candidates.spans is not None:  # a compact array of known names: the answer written in one pass
            answer, names, answered = state.filter_answer(candidates.spans, candidates.rows, decision, pieces)
            state.remember(names, answered)
            return answer
        # Names the table does not know pass (as a node without metrics does), unless the pod was
        # steered to its Reservation: then every other node is refused.
        passed = np.full(candidates.size, decision.steered < 0, dtype=np.bool_)
        passed[candidates.positions if candidates.positions is not None else slice(None)] = decision.passed
        refused = ~decision.passed
        failed_rows, reasons = candidates.rows[refused], decision.reason[refused]
        hopeless = np.array(decision.unresolvable, dtype=np.bool_)[reasons]
        failed = _failed_map(state, failed_rows[~hopeless], reasons[~hopeless], texts)
        extra = [(q, texts[decision.steered]) for _, q in candidates.unknown] if decision.steered >= 0 else []
        unresolvable = _failed_map(state, failed_rows[hopeless], reasons[hopeless], texts, extra)
        if request.node_items is not None:
            items = [item for item, ok in zip(request.node_items, passed.tolist(), strict=True) if ok]
            head = b'{"Nodes":' + msgspec.json.encode(protocol.NodeList(items=items)) + b',"NodeNames":null'
        else:
            names = _names_json(state, candidates, passed)
            state.remember(names, _subset(candidates, passed))
            head = b'{"Nodes":null,"NodeNames":' + names
        return head + b',"FailedNodes":' + failed + b',"FailedAndUnresolvableNodes":' + unresolvable + b',"Error":""}'

    def _waived(self, pod: Pod, state: ClusterState) -> None:
        """Said and counted: the load filter refused every node kube-scheduler passed for the pod, and
        those are passed (`decisions.waive_load`). Under the state's lock."""
        owner = bool(predicates.owned_reservations(pod, state.view))
        metrics.EXTENDER_LOAD_FILTER_WAIVED.labels("owner" if owner else "other").inc()
        log.info(
            "extender: every node kube-scheduler passed for pod %s is over its load thresholds: passing them, as "
            "kube-scheduler alone would, rather than keep the pod Pending",
            pod.key,
        )

    def _refuse(self, writer: ReservationWriter, reservation: Reservation, pod: Pod) -> None:
        """Fail the Reservation whose node kube-scheduler's filters left out for its replacement (written
        before the answer, so the bind that follows finds no room holding the pod elsewhere). A write
        that fails is logged; the next filter call for the pod tries again."""
        try:
            writer.refuse(reservation.name, reservation, pod, self._wrote_reservation)
        except (KubeApiError, ClusterUnreachableError, msgspec.ValidationError, DecodeError) as err:
            log.warning("extender: could not fail Reservation %s, refused for %s: %s", reservation.name, pod.key, err)

    def prioritize(self, body: bytes) -> bytes:
        """An ExtenderArgs body in, a HostPriorityList body out."""
        with self.requests_first.serving():
            return self._prioritize(body)

    def _prioritize(self, body: bytes) -> bytes:
        request, state, candidates = self._prepare(body, seen=True)
        with state.lock:
            state.asked_about(request.pod)
            node_scores = state.shapes.scores(request.pod, state.view, candidates.rows)
        if candidates.spans is not None:  # a compact array of known names, or our filter's answer
            return state.host_priorities(candidates.spans, node_scores)
        # Otherwise each HostPriority as two pre-encoded pieces; names the table lacks score 0 in their places.
        pieces = np.empty(2 * candidates.size, dtype=object)
        hosts, scored = pieces[0::2], pieces[1::2]
        known = candidates.positions if candidates.positions is not None else slice(None)
        hosts[known] = state.hosts.take(candidates.rows)
        scored[known] = state.scored.take(node_scores)
        for position, quoted in candidates.unknown:
            hosts[position], scored[position] = b'{"Host":' + quoted + b',"Score":', state.scored[0]
        return b"[" + b"".join(pieces.tolist())[:-1] + b"]"

    def bind(self, body: bytes) -> bytes:
        """An ExtenderBindingArgs body in, an ExtenderBindingResult body out: the pod and the node are read
        fresh and checked (`binding.bind_refusal`), then the pod's Reservation is consumed (or failed) and
        the pod bound; any refusal or failure is the result's Error."""
        args = protocol.decode_binding(body)
        key = f"{args.PodNamespace}/{args.PodName}"
        if self.writer is None:
            error = "this extender answers from a snapshot file: it cannot bind pods"
        else:
            try:
                error = self._bind(self.writer, args.PodNamespace, args.PodName, args.PodUID, args.Node)
            except BindError as err:
                error = str(err)
        if error:
            log.info("extender: bind %s to %s: %s", key, args.Node, error)
        return msgspec.json.encode(ExtenderBindingResult(Error=protocol.printable(error)))

    def _bind(self, writer: ReservationWriter, namespace: str, name: str, uid: str, node_name: str) -> str:
        """Bind after the checks; the refusal's words when one fails, "" when bound."""
        key = f"{namespace}/{name}"
        try:
            pod = writer.read_pod(namespace, name)
            node = writer.read_node(node_name)
        except (KubeApiError, ClusterUnreachableError, msgspec.ValidationError, DecodeError) as err:
            raise BindError(f"could not read pod {key} or node {node_name} to check the binding: {err}") from None
        served = self.scheduler_names.names if self.scheduler_names is not None else None
        refusal = bind_refusal(pod, uid, key, node, node_name, served)
        if refusal is not None:
            metrics.EXTENDER_BINDS_REFUSED.labels(refusal.code).inc()
            log.warning("extender: refused to bind pod %s to node %s: %s", key, node_name, refusal)
            return f"refused to bind pod {key} to node {node_name}: {refusal}"
        assert pod is not None
        writer.bind(pod, node_name, self._wrote_reservation, self._claimable)
        return ""

    def _claimable(self, reservation: Reservation) -> bool:
        state = self._state
        return state is None or claimable(reservation, state.table)

    def observe_leaving(self, pod: Pod, gone: bool = False) -> None:
        """A pod started terminating or is gone (`gone`): the rooms held for its replacement may be taken at
        once, before the next rebuild shows it (the replacement is placed within milliseconds); a pod gone
        gives back its requests at once too, as kube-scheduler's own cache does on the same watch event,
        so a pod waiting for that room is not refused the node it is retried on."""
        with self._lock:
            seen = self._clock()
            self._leaving[pod.uid] = seen
            if gone:
                self._gone[pod.uid] = (pod, seen)
                self._assumed.forget(pod.key)
            state = self._state
            if state is not None:
                with state.lock:
                    state.table.leaving.add(pod.uid)
                    if gone:
                        release_pod(state, pod)
                    elif state.quota is not None:
                        state.quota.gone(pod)
                    state.shapes.all_changed()

    def _wrote_reservation(self, raw: dict[str, object]) -> None:
        """The bind verb consumed or failed a Reservation, or its TTL ran out: the state stops counting its
        room at once."""
        record = ReservationRecord.of(dict(raw))
        self.observe_reservation(record.name, record.reservation)

    def _prepare(self, body: bytes, *, seen: bool) -> tuple[Request, ClusterState, Candidates]:
        """The request decoded and its names as rows of the newest state, which it is then answered
        from; no lock is taken: a state, once served, is only ever replaced. `seen`: the names are
        likely an answer of ours (prioritize after filter), so look them up first."""
        state = self._state
        if state is None:
            raise RequestError(self.not_ready() or "not ready", status=503)
        split = protocol.split_envelope(body)
        if split is not None:  # the layout kube-scheduler sends: no pass over the names to find the pod
            try:
                pod = self._pod(split[0])
            except RequestError:
                pass  # decoded in full below, for the message about the whole body
            else:
                found = state.candidates(split[1], None, seen=seen)
                if found is not None:
                    return Request(pod, split[0], None, split[1], None), state, found
        pod_raw, nodes_raw, names_raw = protocol.decode_envelope(body)
        pod = self._pod(pod_raw)
        if names_raw is not None:
            # A NodeNames array the state has seen (typically the filter's answer, sent back to
            # prioritize), or one of names it knows as Go writes them, needs no decoding.
            found = state.candidates(names_raw, None, seen=seen)
            if found is None:
                found = state.candidates(names_raw, protocol.decode_names(names_raw))
            assert found is not None
            return Request(pod, pod_raw, None, names_raw, None), state, found
        assert nodes_raw is not None
        names, items = protocol.decode_nodes(nodes_raw)
        found = state.candidates(b"", names)
        assert found is not None
        return Request(pod, pod_raw, names, b"", items), state, found

    def _pod(self, raw: bytes) -> Pod:
        """The decoded pod, cached by its JSON: filter and prioritize carry the same pod."""
        with self._recent_lock:
            pod = self._pods.get(raw)
        if pod is None:
            pod = protocol.decode_pod(raw)
            with self._recent_lock:
                self._pods[raw] = pod
                while len(self._pods) > POD_CACHE_SIZE:
                    self._pods.popitem(last=False)
            if self.scheduler_names is not None:  # once per decoded pod: prioritize sends the same bytes
                self.scheduler_names.check(pod)
        return pod


# kube-scheduler stops filtering once it has found this many feasible nodes, or a share of the
# cluster if larger (numFeasibleNodesToFind, minFeasibleNodesToFind, pkg/scheduler/schedule_one.go):
# with fewer candidates than this, it has tried every node, and a node left out was refused.
MIN_FEASIBLE_NODES_TO_FIND: Final = 100


def _rooms_left_out(request: Request, state: ClusterState, candidates: Candidates) -> list[Reservation]:
    """The Available Reservations steering this pod (its own, claimable) whose node kube-scheduler's
    filters left out of the candidates: none unless it tried every node (fewer candidates than it stops
    at), and none for a pod nominated to a node (kube-scheduler then tries that node alone)."""
    if candidates.size >= MIN_FEASIBLE_NODES_TO_FIND or b'"nominatedNodeName"' in request.pod_raw:
        return []
    _, steer = steering(request.pod, state.view)
    if not steer:
        return []
    index, asked = state.table.index, set(candidates.rows.tolist())
    return [r for r in steer if index[r.node_name] not in asked]


def _failed_map(
    state: ClusterState,
    rows: np.ndarray,
    reasons: np.ndarray,
    texts: list[bytes],
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> bytes:
    """A FailedNodesMap as JSON, from pre-encoded `,"name":` pieces and the reasons' JSON strings;
    `extra` adds (quoted name, JSON reason) pairs for names the table does not know."""
    if not rows.size and not extra:
        return b"{}"
    pieces = np.empty(2 * rows.size, dtype=object)
    pieces[0::2] = state.keyed.take(rows)
    encoded = np.empty(len(texts), dtype=object)
    encoded[:] = texts
    pieces[1::2] = encoded[reasons]
    tail = [b"," + quoted + b":" + reason for quoted, reason in extra]
    return b"{" + b"".join(pieces.tolist() + tail)[1:] + b"}"


def _names_json(state: ClusterState, candidates: Candidates, passed: np.ndarray) -> bytes:
    """The NodeNames that passed, in request order, as a JSON array."""
    if not candidates.unknown:
        pieces = state.quoted.take(candidates.rows[passed])
    else:
        assert candidates.positions is not None
        merged = np.empty(candidates.size, dtype=object)
        merged[candidates.positions] = state.quoted.take(candidates.rows)
        for position, quoted in candidates.unknown:
            merged[position] = quoted
        pieces = merged[passed]
    return b"[" + b",".join(pieces.tolist()) + b"]"


def _subset(candidates: Candidates, passed: np.ndarray) -> Candidates:
    """The candidates that passed, as the next request naming exactly them will need them."""
    if not candidates.unknown:
        return Candidates(candidates.rows[passed], None, (), int(passed.sum()))
    assert candidates.positions is not None
    new_position = np.cumsum(passed) - 1
    keep_known = passed[candidates.positions]
    unknown = tuple((int(new_position[p]), q) for p, q in candidates.unknown if passed[p])
    positions = new_position[candidates.positions[keep_known]]
    return Candidates(candidates.rows[keep_known], positions, unknown, int(passed.sum()))
