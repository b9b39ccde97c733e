"""The scheduler side's presence: a coordination.k8s.io/v1 Lease (`SCHEDULER_LEASE`) renewed while
the extender answers, so the migration controller knows Reservations are honoured (migration.md §3).

A heartbeat, not an election: every replica renews the same Lease with its own identity, and the
Lease is fresh while any of them serves. A replica that is not ready skips its renewal; one that
stops simply stops renewing (it does not clear the Lease, which another replica may be keeping).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from descheduler.errors import ClusterUnreachableError
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.migration.objects import SCHEDULER_LEASE
from descheduler.periodic import Periodic
from descheduler.timestamps import format_micro

log = logging.getLogger(__name__)

LEASE_DURATION: Final = 15
RENEW_PERIOD: Final = 5.0


class SchedulerLease:
    """Renews Lease `name` in `namespace` every `period` seconds while `ready()` (creating it if absent)."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        identity: str,
        *,
        ready: Callable[[], bool] = lambda: True,
        name: str = SCHEDULER_LEASE,
        duration: int = LEASE_DURATION,
        period: float = RENEW_PERIOD,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.identity = identity
        self.name = name
        self.duration = duration
        self.period = period
        self.ready = ready
        self._wall = wall_clock
        self._loop = Periodic(
            self.renew, period, name="extender-lease", failure="extender: Lease renewal error", log=log
        )
        self._last_problem = ""

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"

    def renew(self) -> bool:
        """One renewal (or creation); False when not ready or the write failed (logged once per cause)."""
        if not self.ready():
            return False
        try:
            self._renew()
        except (KubeApiError, ClusterUnreachableError) as err:
            problem = str(err)
            if problem != self._last_problem:
                log.warning("extender: renewing Lease %s/%s failed: %s", self.namespace, self.name, problem)
            self._last_problem = problem
            return False
        self._last_problem = ""
        return True

    def _renew(self) -> None:
        now = format_micro(self._wall())
        for _ in range(3):  # another replica renewed in between: read again
            try:
                lease: dict[str, Any] = msgspec.json.decode(self.client.request("GET", f"{self.path}/{self.name}"))
            except KubeApiError as err:
                if err.status != 404:
                    raise
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(now, now),
                }
                try:
                    self.client.request("POST", self.path, body=body)
                    return
                except KubeApiError as create_err:
                    if create_err.status != 409:
                        raise
                    continue
            spec = lease.get("spec") or {}
            lease["spec"] = {**spec, **self._spec(now, spec.get("acquireTime") or now)}
            try:
                self.client.request("PUT", f"{self.path}/{self.name}", body=lease)
                return
            except KubeApiError as err:
                if err.status != 409:
                    raise
        raise ClusterUnreachableError(f"Lease {self.namespace}/{self.name} kept changing while renewing it")

    def _spec(self, now: str, acquired: str) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.duration,
            "acquireTime": acquired,
            "renewTime": now,
        }

    # ---------------------------------------------------------------- thread

    def start(self) -> SchedulerLease:
        self._loop.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._loop.stop(timeout)
