"""The executor: a cycle's Plan becomes PodMigrationJobs (one per move, named so a retry never
makes a second job for the same move, and none for a pod that is already moving)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

import structlog

from descheduler import metrics
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.objects import (
    ANNOTATION_CYCLE,
    ANNOTATION_REASON,
    ANNOTATION_SOURCE_NODE,
    ANNOTATION_STRATEGY,
    ANNOTATION_WORKLOAD,
    ANNOTATION_WORKLOAD_UID,
    JOBS,
    LABEL_POD_UID,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ObjectError,
    PodMigrationJob,
    PodMigrationJobSpec,
    PodReference,
    parse_job,
)
from descheduler.model import JOB_POD_USAGE_ANNOTATION, Pod
from descheduler.plan import Migration, Plan
from descheduler.policy import Policy
from descheduler.snapshot import Snapshot
from descheduler.timestamps import format_time

log = structlog.get_logger(__name__)

MAX_NAME = 63  # the job name is also a label value on its Reservation
_HASH_CHARS = 10


def job_name(pod_name: str, pod_uid: str, cycle: str) -> str:
    """Deterministic from the pod's UID and the cycle; the pod's name in front for people."""
    digest = hashlib.sha256(f"{pod_uid}/{cycle}".encode()).hexdigest()[:_HASH_CHARS]
    head = pod_name[: MAX_NAME - _HASH_CHARS - 1].rstrip("-.")
    return f"{head}-{digest}" if head else digest


def cycle_id(plan: Plan) -> str:
    """A cycle is identified by the instant it evaluated."""
    return format_time(plan.now)


def _workload(pod: Pod | None, snapshot: Snapshot) -> tuple[str, str]:
    """("Kind namespace/name", uid) of the pod's controller, or ("", "")."""
    if pod is None or pod.owner is None:
        return "", ""
    return f"{pod.owner.kind} {pod.namespace}/{pod.owner.name}", pod.owner.uid


def job_body(move: Migration, pod: Pod | None, cycle: str, policy: Policy, snapshot: Snapshot) -> dict[str, Any]:
    uid = move.uid or (pod.uid if pod is not None else "")
    workload, workload_uid = _workload(pod, snapshot)
    spec = PodMigrationJobSpec(
        pod_ref=PodReference(namespace=move.pod.namespace, name=move.pod.name, uid=uid),
        mode=move.mode,
        target_node=move.target_node or "",
        ttl=policy.migration.ttl,
        eviction_policy=policy.migration.eviction_policy,
        strategy=move.strategy,
        reason=move.reason,
    )
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if uid:
        labels[LABEL_POD_UID] = uid
    annotations = {
        ANNOTATION_STRATEGY: move.strategy,
        ANNOTATION_REASON: move.reason,
        ANNOTATION_SOURCE_NODE: move.source_node,
        ANNOTATION_CYCLE: cycle,
    }
    if workload_uid:
        annotations[ANNOTATION_WORKLOAD] = workload
        annotations[ANNOTATION_WORKLOAD_UID] = workload_uid
    measured = snapshot.pod_usage.get(f"{move.pod.namespace}/{move.pod.name}")
    if measured is not None and measured.usage:
        annotations[JOB_POD_USAGE_ANNOTATION] = json.dumps(measured.usage.to_quantities(), separators=(",", ":"))
    return {
        "apiVersion": PodMigrationJob.model_fields["api_version"].default,
        "kind": "PodMigrationJob",
        "metadata": {
            "name": job_name(move.pod.name, uid or f"{move.pod.namespace}/{move.pod.name}", cycle),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec.wire(),
    }


class Executor:
    """`submit(plan, snapshot)` creates a job per planned move and returns the jobs' names.

    `stop`, when given, is set while this replica's work is stopping (the Lease lost, shutting
    down): no job is created then, so a cycle that outlasted the Lease (its listing waiting on an
    apiserver without etcd) does not submit moves next to the new leader's."""

    def __init__(
        self, api_client: Any, policy: Callable[[], Policy] | Policy, *, stop: threading.Event | None = None
    ) -> None:
        self.api = MigrationApi(api_client)
        self._policy = policy
        self._stop = stop

    def _current_policy(self) -> Policy:
        return self._policy() if callable(self._policy) else self._policy

    def submit(self, plan: Plan, snapshot: Snapshot) -> list[str]:
        """Jobs for the plan's moves, created or found already created for this cycle. Raises
        ApiFailure when the live jobs cannot be listed (nothing is created then: a duplicate
        move is worse than a late one)."""
        policy = self._current_policy()
        if policy.dry_run:
            if plan.migrations:
                log.info("dryRun: no migration job created", moves=len(plan.migrations))
            return []
        cycle = cycle_id(plan)
        moving: dict[str, str] = {}
        for obj in self.api.list_jobs():
            try:
                job = parse_job(obj)
            except ObjectError as err:
                log.warning("ignoring an unreadable PodMigrationJob", error=str(err))
                continue
            if not job.terminal:
                ref = job.spec.pod_ref
                moving[ref.uid or f"{ref.namespace}/{ref.name}"] = job.name
                moving[f"{ref.namespace}/{ref.name}"] = job.name
        pods = {p.key: p for p in snapshot.pods}
        names: list[str] = []
        for move in plan.migrations:
            if self._stop is not None and self._stop.is_set():
                log.warning("work stopped: no further migration job created", moves=len(plan.migrations) - len(names))
                break
            key = str(move.pod)
            pod = pods.get(key)
            uid = move.uid or (pod.uid if pod is not None else "")
            body = job_body(move, pod, cycle, policy, snapshot)
            name = body["metadata"]["name"]
            bound = log.bind(
                pod=key,
                node=move.source_node,
                target=move.target_node,
                strategy=move.strategy,
                reason=move.reason,
                job=name,
            )
            existing = moving.get(uid) or moving.get(key)
            if existing is not None:
                if existing == name:
                    names.append(name)  # this cycle's job, submitted before: a retry
                else:
                    bound.info("pod is already moving; no second job", existing=existing)
                continue
            try:
                self.api.create_object(JOBS, body)
            except ApiFailure as failure:
                if failure.already_exists:
                    names.append(name)
                    continue
                bound.warning("could not create the migration job", error=str(failure))
                continue
            moving[uid or key] = moving[key] = name
            metrics.MIGRATIONS.labels(move.strategy, "submitted").inc()
            bound.info("migration job created", mode=move.mode)
            names.append(name)
        return names
