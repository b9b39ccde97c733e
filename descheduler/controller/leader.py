"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

A candidate acquires the Lease when it is free (no holder), already its own, or expired; the
holder renews every `retry_period` and gives up when it has not renewed for `renew_deadline`.
Expiry is judged by when *this* process last saw the Lease change, on its own monotonic clock,
not by the holder's renewTime, so clock skew between nodes cannot hand the lease to two replicas.
Writes carry the resourceVersion read, so two candidates racing for a free Lease cannot both win:
the loser gets 409 Conflict. On shutdown the holder releases the Lease (holder cleared, duration
1 s) so a standby takes over within one retry period instead of one lease duration.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from descheduler import metrics
from descheduler.kube import KubeClient, RetryPolicy
from descheduler.timestamps import format_micro

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    namespace: str
    name: str = "descheduler"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs an identity (the pod name)")
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("leader election needs leaseDuration > renewDeadline > retryPeriod > 0")


def election_client(configuration: Any, config: LeaseConfig, qps: float = 5.0) -> KubeClient:
    """The client an elector should talk through: no retries (the elector tries again every retry
    period; a retry with backoff, or waiting out a server's Retry-After, could keep a leader acting
    past its renew deadline while a standby takes over), every call bounded by the renew deadline,
    and a rate limit of its own so that a busy cycle's requests cannot hold a renewal back."""
    return KubeClient.from_configuration(
        configuration, qps=qps, burst=10, timeout=config.renew_deadline, retry=RetryPolicy(max_retries=0)
    )


def _record(lease: Any) -> tuple[str, str, int]:
    """What identifies one state of the Lease: holder, renew time, transitions."""
    spec = lease.spec
    return (
        spec.holder_identity or "",
        spec.renew_time.isoformat() if spec.renew_time else "",
        spec.lease_transitions or 0,
    )


class LeaderElector:
    """Runs the election in `run`; `on_started` is called once on becoming leader, `on_stopped` once
    when leadership ends (lost or released). `is_leader` is safe to read from any thread."""

    def __init__(
        self,
        api_client: Any,
        config: LeaseConfig,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        # Bodies are plain dicts (the client serialises them as they are); replies are V1Lease models.
        self.api: Any = k8s.CoordinationV1Api(api_client)
        self.config = config
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._monotonic = monotonic
        self._wall = wall
        self._leader = threading.Event()
        self._observed: tuple[str, str, int] | None = None  # holder, renewTime, transitions
        self._observed_at = 0.0
        self._resource_version: str | None = None
        self._last_renew = 0.0
        self.lost = False  # leadership was held and lost

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set()

    # ---------------------------------------------------------------- the loop

    def run(self, stop: threading.Event) -> None:
        """Block until `stop` is set (the Lease is then released) or leadership is lost (the caller
        should then exit: Kubernetes restarts the pod as a fresh candidate)."""
        cfg = self.config
        while not stop.is_set():
            if self.step():
                break
            stop.wait(cfg.retry_period)
        if stop.is_set():
            return
        try:
            while not stop.wait(cfg.retry_period):
                if not self.step():
                    return
        finally:
            # Stop the work first, then release: the next leader must not start while this one acts.
            if self.is_leader:
                self._stop_leading()
            if stop.is_set():
                self.release()

    def step(self) -> bool:
        """One round, at the current time of the elector's clocks: acquire (as a candidate) or renew
        (as the leader); returns whether this replica leads after it. `run` calls it every retry
        period; a driver with a clock of its own (the soak run's simulated time) may call it instead.
        Once leadership is lost, `on_stopped` has run and the replica stays a follower: a lost
        leader should exit rather than compete again."""
        cfg = self.config
        if not self.is_leader:
            if self.lost or not self._try_acquire_or_renew():
                return False
            self._last_renew = self._monotonic()
            self._leader.set()
            metrics.LEADER.set(1)
            log.info("became leader", lease=f"{cfg.namespace}/{cfg.name}", identity=cfg.identity)
            self._on_started()
            return True
        if self._try_acquire_or_renew():
            self._last_renew = self._monotonic()
        elif self._monotonic() - self._last_renew > cfg.renew_deadline or not self._holds():
            log.error("lost the leader lease", lease=f"{cfg.namespace}/{cfg.name}", identity=cfg.identity)
            self.lost = True
            self._stop_leading()
        return self.is_leader

    def _stop_leading(self) -> None:
        self._leader.clear()
        metrics.LEADER.set(0)
        self._on_stopped()

    # ---------------------------------------------------------------- one attempt

    def _holds(self) -> bool:
        return self._observed is not None and self._observed[0] == self.config.identity

    def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = self._wall()
        try:
            lease = self.api.read_namespaced_lease(cfg.name, cfg.namespace, _request_timeout=self._call_timeout())
        except ApiException as err:
            if err.status != 404:
                log.warning("reading the leader lease failed", status=err.status, reason=err.reason)
                return False
            return self._create(now)
        except Exception as err:  # connection errors: try again next period
            log.warning("reading the leader lease failed", error=str(err))
            return False
        spec = lease.spec
        record = _record(lease)
        if record != self._observed:
            self._observed = record
            self._observed_at = self._monotonic()
        self._resource_version = lease.metadata.resource_version
        holder, _, transitions = record
        duration = spec.lease_duration_seconds or cfg.lease_duration
        expired = self._observed_at + duration <= self._monotonic()
        if holder and holder != cfg.identity and not expired:
            return False
        acquire = spec.acquire_time if holder == cfg.identity and spec.acquire_time else now
        if holder and holder != cfg.identity:
            transitions += 1
        body = self._body(now, acquire, transitions)
        body["metadata"]["resourceVersion"] = self._resource_version
        return self._write(
            "updating",
            lambda: self.api.replace_namespaced_lease(
                cfg.name, cfg.namespace, body, _request_timeout=self._call_timeout()
            ),
        )

    def _create(self, now: datetime) -> bool:
        cfg = self.config
        body = self._body(now, now, 0)
        return self._write(
            "creating",
            lambda: self.api.create_namespaced_lease(cfg.namespace, body, _request_timeout=self._call_timeout()),
        )

    def _call_timeout(self) -> float:
        """How long one Lease request may take: a leader's call must end by its renew deadline (it
        then stops its work before a standby can take over, one lease duration after the last
        renewal it saw), as client-go bounds each renewal by RenewDeadline; a candidate's within
        the renew deadline too. A hung call must not keep a replica leading past its deadline."""
        cfg = self.config
        if not self.is_leader:
            return cfg.renew_deadline
        return max(0.1, cfg.renew_deadline - (self._monotonic() - self._last_renew))

    def _write(self, what: str, call: Callable[[], Any]) -> bool:
        """One create or update; 409 (another candidate wrote first) and errors are a lost round."""
        try:
            lease = call()
        except ApiException as err:
            if err.status != 409:
                log.warning(f"{what} the leader lease failed", status=err.status, reason=err.reason)
            return False
        except Exception as err:  # connection errors: try again next period
            log.warning(f"{what} the leader lease failed", error=str(err))
            return False
        self._remember(lease)
        return True

    def _remember(self, lease: Any) -> None:
        self._observed = _record(lease)
        self._observed_at = self._monotonic()
        self._resource_version = lease.metadata.resource_version

    def _body(self, now: datetime, acquired: datetime, transitions: int) -> dict[str, Any]:
        cfg = self.config
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": cfg.name, "namespace": cfg.namespace},
            "spec": {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": round(cfg.lease_duration),
                "acquireTime": format_micro(acquired),
                "renewTime": format_micro(now),
                "leaseTransitions": transitions,
            },
        }

    def release(self) -> None:
        """Give the Lease up if this replica holds it (best effort: a failure only delays the standby)."""
        cfg = self.config
        if not self._holds() or self._resource_version is None:
            return
        now = self._wall()
        body = self._body(now, now, self._observed[2] if self._observed else 0)
        body["spec"]["holderIdentity"] = ""
        body["spec"]["leaseDurationSeconds"] = 1
        body["metadata"]["resourceVersion"] = self._resource_version
        try:
            self.api.replace_namespaced_lease(cfg.name, cfg.namespace, body)
            log.info("released the leader lease", lease=f"{cfg.namespace}/{cfg.name}", identity=cfg.identity)
        except Exception as err:
            log.warning("releasing the leader lease failed", error=str(err))
        self._observed = None
