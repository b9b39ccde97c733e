"""The scheduler side's presence: a coordination.k8s.io/v1 Lease (`SCHEDULER_LEASE`) renewed while
the extender answers, so the migration controller knows Reservations are honoured (migration.md §3).

A heartbeat, not an election: every replica renews the same Lease with its own identity, and the
Lease is fresh while any of them serves. A replica that is not ready skips its renewal; one that
stops simply stops renewing (it does not clear the Lease, which another replica may be keeping).
Each renewal also writes the pod schedulerNames the extender serves (`ANNOTATION_SCHEDULER_NAMES`).
The Lease's place is shared with the controller (`--scheduler-lease`, default
`SCHEDULER_LEASE_NAMESPACE/SCHEDULER_LEASE`); a renewal the API refuses (403) logs the RoleBinding
that is missing, since an extender run as a sidecar of an existing kube-scheduler runs as that
scheduler's account, which the shipped RoleBinding does not name.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from descheduler import metrics
from descheduler.errors import ClusterUnreachableError
from descheduler.extender.scheduler_names import LOAD_AWARE_SCHEDULER, annotation_value
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.migration.objects import ANNOTATION_SCHEDULER_NAMES, SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE
from descheduler.periodic import Periodic
from descheduler.timestamps import format_micro

log = logging.getLogger(__name__)

LEASE_DURATION: Final = 15
RENEW_PERIOD: Final = 5.0
# The Role deploy/components/extender-roles grants on the Lease (in SCHEDULER_LEASE_NAMESPACE).
LEASE_ROLE: Final = "descheduler-extender-lease"
_USER = re.compile(r'User "([^"]+)"')
_SERVICE_ACCOUNT = "system:serviceaccount:"


def forbidden_fix(namespace: str, message: str) -> str:
    """What to do about a 403 on the Lease in `namespace`: bind the Role to the user the API
    server's `message` names (`User "…"`), as one kubectl command."""
    match = _USER.search(message)
    user = match.group(1) if match else ""
    if user.startswith(_SERVICE_ACCOUNT):
        account_namespace, _, account = user.removeprefix(_SERVICE_ACCOUNT).partition(":")
        subject, suffix = f"--serviceaccount={account_namespace}:{account}", account
    elif user:
        subject, suffix = f"--user={user}", re.sub(r"[^a-z0-9-]+", "-", user.lower()).strip("-") or "user"
    else:
        subject, suffix = "--serviceaccount=NAMESPACE:NAME", "NAME"
    who = f"the extender's user {user}" if user else "the extender's ServiceAccount"
    fix = (
        f"the Role {LEASE_ROLE} in namespace {namespace} must be bound to {who}: "
        f"kubectl -n {namespace} create rolebinding {LEASE_ROLE}-{suffix} --role={LEASE_ROLE} {subject}"
    )
    if namespace != SCHEDULER_LEASE_NAMESPACE:
        fix += (
            f" (deploy/components/extender-roles defines that Role in {SCHEDULER_LEASE_NAMESPACE}: "
            f"create it in {namespace} too, or keep the Lease in {SCHEDULER_LEASE_NAMESPACE})"
        )
    return fix


class SchedulerLease:
    """Renews Lease `name` in `namespace` every `period` seconds while `ready()` (creating it if absent),
    announcing `scheduler_names` on it."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        identity: str,
        *,
        ready: Callable[[], bool] = lambda: True,
        name: str = SCHEDULER_LEASE,
        scheduler_names: Iterable[str] = (LOAD_AWARE_SCHEDULER,),
        duration: int = LEASE_DURATION,
        period: float = RENEW_PERIOD,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.identity = identity
        self.name = name
        self.scheduler_names = annotation_value(scheduler_names)
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
            forbidden = isinstance(err, KubeApiError) and err.status == 403
            metrics.EXTENDER_LEASE_RENEWALS.labels("forbidden" if forbidden else "error").inc()
            problem = str(err)
            if problem != self._last_problem:
                fix = f"; {forbidden_fix(self.namespace, str(err))}" if forbidden else ""
                log.warning("extender: renewing Lease %s/%s failed: %s%s", self.namespace, self.name, problem, fix)
            self._last_problem = problem
            return False
        metrics.EXTENDER_LEASE_RENEWALS.labels("ok").inc()
        metrics.EXTENDER_LEASE_RENEWED.set(self._wall().timestamp())
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
                    "metadata": {
                        "name": self.name,
                        "namespace": self.namespace,
                        "annotations": {ANNOTATION_SCHEDULER_NAMES: self.scheduler_names},
                    },
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
            metadata = lease.setdefault("metadata", {})
            metadata["annotations"] = {
                **(metadata.get("annotations") or {}),
                ANNOTATION_SCHEDULER_NAMES: self.scheduler_names,
            }
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
        log.info(
            "extender: renewing the scheduler Lease %s/%s as %s, announcing schedulerName %s",
            self.namespace,
            self.name,
            self.identity,
            self.scheduler_names or "(none)",
        )
        self._loop.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._loop.stop(timeout)
