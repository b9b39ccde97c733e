"""Building and changing our objects: a job's status (conditions, phases), a Reservation's body."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from descheduler.migration.objects import (
    API_VERSION,
    LABEL_JOB,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    Condition,
    ConditionStatus,
    ConditionType,
    ControllerReference,
    PodMigrationJob,
    PodMigrationJobStatus,
    PodReference,
    ReservationOwner,
    ReservationSpec,
    ReservationTemplate,
)
from descheduler.model import Pod
from descheduler.rollout import LABEL_REPLACES

MIN_RESERVATION_TTL = timedelta(seconds=1)


def with_condition(
    status: PodMigrationJobStatus,
    kind: ConditionType,
    now: datetime,
    *,
    value: ConditionStatus = "True",
    reason: str = "",
    message: str = "",
) -> PodMigrationJobStatus:
    """The status with condition `kind` set; its transition time moves only when its value changes."""
    old = status.condition(kind)
    when = old.last_transition_time if old is not None and old.status == value else now
    new = Condition(type=kind, status=value, reason=reason, message=message, last_transition_time=when)
    kept = [c for c in status.conditions if c.type != kind]
    return status.model_copy(update={"conditions": [*kept, new]})


def without_conditions(status: PodMigrationJobStatus, *kinds: ConditionType) -> PodMigrationJobStatus:
    return status.model_copy(update={"conditions": [c for c in status.conditions if c.type not in kinds]})


def condition_time(job: PodMigrationJob, kind: ConditionType) -> datetime | None:
    found = job.status.condition(kind)
    return found.last_transition_time if found is not None and found.status == "True" else None


def reservation_name(job: PodMigrationJob) -> str:
    """One Reservation per job, named after it: creating it twice finds the first."""
    return job.name


def reservation_body(
    job: PodMigrationJob, pod: Pod, raw_pod: dict[str, Any], node: str, now: datetime
) -> dict[str, Any]:
    """Room on `node` for the replacement of `pod`: its requests, its controller as owner, its
    scheduling constraints, for what is left of the job's TTL."""
    spec = raw_pod.get("spec") or {}
    first = job.spec.mode == "MakeBeforeBreak"
    if first:
        # The rollout's new pod: a ReplicaSet not made yet, so matched by the label the rollout puts on
        # it. It may take the room at once: the moved pod goes only after it is Ready.
        owner = ReservationOwner(
            controller=ControllerReference(api_version="apps/v1", kind="ReplicaSet", namespace=pod.namespace),
            label_selector={"matchLabels": {LABEL_REPLACES: pod.uid}},
        )
    elif pod.owner is not None:
        refs = (raw_pod.get("metadata") or {}).get("ownerReferences") or []
        api_version = next((str(r.get("apiVersion") or "") for r in refs if r.get("uid") == pod.owner.uid), "")
        owner = ReservationOwner(
            controller=ControllerReference(
                api_version=api_version,
                kind=pod.owner.kind,
                name=pod.owner.name,
                uid=pod.owner.uid,
                namespace=pod.namespace,
            )
        )
    else:
        # A bare pod has no controller to recreate it; whoever recreates it will use its labels.
        owner = ReservationOwner(label_selector={"matchLabels": dict(pod.labels)})
    resources: dict[str, str | int] = dict(pod.requests.to_quantities())
    resources.setdefault("pods", "1")
    deadline = job.deadline
    ttl = max(MIN_RESERVATION_TTL, deadline - now) if deadline is not None else job.spec.ttl
    template = ReservationTemplate(
        node_selector=dict(spec.get("nodeSelector") or {}),
        affinity=spec.get("affinity") or None,
        tolerations=list(spec.get("tolerations") or []),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        priority=spec.get("priority"),
        scheduler_name=str(spec.get("schedulerName") or ""),
    )
    body = ReservationSpec(
        node_name=node,
        resources=resources,
        owners=[owner],
        template=template,
        ttl=ttl,
        replaces=PodReference(namespace=pod.namespace, name=pod.name, uid=pod.uid),
        replacement_first=first,
    )
    meta: dict[str, Any] = {
        "name": reservation_name(job),
        "labels": {MANAGED_BY_LABEL: MANAGED_BY, LABEL_JOB: job.name},
    }
    if job.metadata.uid:
        # The job owns its Reservation: deleting the job lets the garbage collector remove it too.
        meta["ownerReferences"] = [
            {
                "apiVersion": API_VERSION,
                "kind": "PodMigrationJob",
                "name": job.name,
                "uid": job.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": False,
            }
        ]
    return {"apiVersion": API_VERSION, "kind": "Reservation", "metadata": meta, "spec": body.wire()}


def owner_uid(obj: dict[str, Any]) -> str:
    """The UID of the object's controller owner, or ""."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""
