"""The extender: answers filter and prioritize for one pod at a time, on the latest refreshed state.

Requests are decoded outside the lock; the decision itself (a few vectorised passes over the
node table) runs under one lock, which also guards the assumed-pods ledger. Python runs one
thread at a time anyway, so the lock costs no throughput and keeps every answer consistent.
A refresher thread rebuilds the state off the request path when the source changed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import msgspec
import numpy as np

from descheduler import metrics
from descheduler.errors import ClusterUnreachableError, InputError
from descheduler.extender import protocol
from descheduler.extender.decisions import extender_scores, filter_rows
from descheduler.extender.protocol import MAX_EXTENDER_PRIORITY, Request, RequestError
from descheduler.extender.sources import ClusterSource
from descheduler.extender.state import AssumedPods, Candidates, ClusterState
from descheduler.model import Pod
from descheduler.policy import SchedulingArgs
from descheduler.scheduling import build_table

log = logging.getLogger(__name__)

POD_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class RefreshTiming:
    """How often the state may be rebuilt."""

    interval: float = 1.0  # at most this often when the source changed
    max_age: float = 30.0  # at least this often anyway: metric ages move with the clock
    build_share: float = 0.25  # and never so often that rebuilding takes more than this share of a core
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
    ) -> None:
        self.source = source
        self._args = args
        self.timing = timing or RefreshTiming()
        self._clock = clock
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._state: ClusterState | None = None
        self._assumed = AssumedPods(assumed_ttl)
        self._pods: OrderedDict[bytes, Pod] = OrderedDict()
        self._last_build = 0.0
        self._last_error: str | None = None
        self._rebuild = False  # the arguments changed: rebuild at the next refresh, whatever the timing
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        source.watch_bindings(self.observe_binding)

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
            generation = self.source.generation()
            try:
                snapshot = self.source.snapshot()
                args = self._args
                table = build_table(snapshot, args)
                state = ClusterState(table, generation, started)
            except (InputError, ClusterUnreachableError) as err:
                self._failed(str(err))
                return False
            except Exception as err:  # a bug in one refresh must not end the refresher
                log.exception("extender: refreshing the cluster state failed")
                self._failed(f"refresh failed: {err}")
                return False
            self._last_build = self._clock() - started
            with self._lock:
                if args is not self._args:
                    return False  # the policy changed while building: the next refresh uses the new one
                self._assumed.carry_over(state, self._clock())
                self._state = state
                self._rebuild = False
                metrics.EXTENDER_ASSUMED_PODS.set(len(self._assumed))
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
            self._assumed.add(pod, node, self._clock(), state)
            metrics.EXTENDER_ASSUMED_PODS.set(len(self._assumed))

    # ---------------------------------------------------------------- refresher thread

    def start(self, poll: float = 0.1) -> Extender:
        """Refresh in the background (every `poll` seconds the source's generation is checked)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, args=(poll,), name="extender-refresh", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self, poll: float) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # keep refreshing whatever one attempt did
                log.exception("extender: refresh loop error")
            self._stop.wait(poll)

    # ---------------------------------------------------------------- requests

    def filter(self, body: bytes) -> bytes:
        """An ExtenderArgs body in, an ExtenderFilterResult body out (RequestError for a bad request)."""
        with self._answer(body) as (request, state, candidates):
            decision = filter_rows(request.pod, state.view, state.facts, candidates.rows)
            # Names the table does not know pass (as a node without metrics does), unless the pod was
            # steered to its Reservation: then every other node is refused.
            passed = np.full(candidates.size, decision.steered < 0, dtype=np.bool_)
            passed[candidates.positions if candidates.positions is not None else slice(None)] = decision.passed
            refused = ~decision.passed
            failed_rows, reasons = candidates.rows[refused], decision.reason[refused]
            texts = [msgspec.json.encode(text) for text in decision.reasons]
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

    def prioritize(self, body: bytes) -> bytes:
        """An ExtenderArgs body in, a HostPriorityList body out."""
        with self._answer(body) as (request, state, candidates):
            node_scores = extender_scores(request.pod, state.view, candidates.rows)
            pieces = state.hosts.take(candidates.rows * (MAX_EXTENDER_PRIORITY + 1) + node_scores)
        if candidates.unknown:
            merged = np.empty(candidates.size, dtype=object)
            assert candidates.positions is not None
            merged[candidates.positions] = pieces
            for position, quoted in candidates.unknown:
                merged[position] = b'{"Host":' + quoted + b',"Score":0}'
            pieces = merged
        return b"[" + b",".join(pieces.tolist()) + b"]"

    @contextmanager
    def _answer(self, body: bytes) -> Iterator[tuple[Request, ClusterState, Candidates]]:
        """Decode outside the lock; then, holding it, the newest state and the request's candidate rows."""
        request = self._decode(body)
        with self._lock:
            state = self._answering()
            candidates = self._candidates(state, request)
            state.asked_about(request.pod)
            yield request, state, candidates

    def _decode(self, body: bytes) -> Request:
        state = self._state
        if state is None:
            raise RequestError(self.not_ready() or "not ready", status=503)
        pod_raw, nodes_raw, names_raw = protocol.decode_envelope(body)
        pod = self._pod(pod_raw)
        if names_raw is not None:
            # A NodeNames array the state has seen (typically the filter's answer, sent back to
            # prioritize) needs no decoding: its rows are cached by its bytes.
            with self._lock:
                known = state.candidates(names_raw, None) is not None
            return Request(pod, pod_raw, None if known else protocol.decode_names(names_raw), names_raw, None)
        assert nodes_raw is not None
        names, items = protocol.decode_nodes(nodes_raw)
        return Request(pod, pod_raw, names, b"", items)

    def _answering(self) -> ClusterState:
        """The newest state (under the lock); once there is one, it is only ever replaced."""
        state = self._state
        if state is None:
            raise RequestError(self.not_ready() or "not ready", status=503)
        return state

    @staticmethod
    def _candidates(state: ClusterState, request: Request) -> Candidates:
        found = state.candidates(request.names_raw, request.names)
        if found is None:  # recognised by an older state, replaced since: decode the names after all
            found = state.candidates(request.names_raw, protocol.decode_names(request.names_raw))
        assert found is not None
        return found

    def _pod(self, raw: bytes) -> Pod:
        """The decoded pod, cached by its JSON: filter and prioritize carry the same pod."""
        pod = self._pods.get(raw)
        if pod is None:
            pod = protocol.decode_pod(raw)
            self._pods[raw] = pod
            if len(self._pods) > POD_CACHE_SIZE:
                self._pods.popitem(last=False)
        return pod


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
