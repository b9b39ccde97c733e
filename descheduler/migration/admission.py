"""Admission facts: what arbitration decides on, read from the API's objects. Pure functions.

The arbiter (`descheduler.migration.arbiter`) judges `JobFacts` and `WorkloadFacts` by the limits
of `descheduler.migration.limits`; this module is where those facts come from, for both callers:

- the migration controller reads its PodMigrationJobs (`job_facts`) and the snapshot's workloads
  (`workload_facts`) before each admission pass;
- the planner's budget (`descheduler.budget`) reads the jobs a snapshot holds (`snapshot_job_facts`)
  and the same `workload_facts`, to look ahead at what the arbiter will admit.

A workload's size is counted in one place, `Snapshot.replicas_of`; its label ("ReplicaSet
shop/web-7d9f5") is made here and is the subject of every workload limit's refusal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import cast

from descheduler.migration.limits import JobFacts, WorkloadFacts
from descheduler.migration.objects import (
    ANNOTATION_CYCLE,
    ANNOTATION_SOURCE_NODE,
    ANNOTATION_WORKLOAD_UID,
    JobPhase,
    PodMigrationJob,
    PodReference,
)
from descheduler.migration.records import condition_time
from descheduler.model import MigrationJob, Pod, PodRef
from descheduler.priority import importance
from descheduler.snapshot import Snapshot

_LONG_AGO = datetime.min.replace(tzinfo=UTC)


def job_facts(job: PodMigrationJob, pods: Mapping[str, Pod]) -> JobFacts:
    """One job as arbitration sees it. `pods` by "namespace/name": the job's pod, when it is still
    the same pod (same UID), fills in what the job does not record yet (source node, workload)."""
    ref = job.spec.pod_ref
    key = f"{ref.namespace}/{ref.name}"
    pod = pods.get(key)
    if pod is not None and (job.status.pod_uid or ref.uid) not in ("", pod.uid):
        pod = None
    annotations = job.metadata.annotations
    workload = job.status.workload.uid if job.status.workload else ""
    workload = workload or annotations.get(ANNOTATION_WORKLOAD_UID, "")
    if not workload and pod is not None and pod.owner is not None:
        workload = pod.owner.uid
    return JobFacts(
        name=job.name,
        namespace=ref.namespace,
        pod=key,
        phase=job.status.phase,
        created=job.metadata.creation_timestamp or _LONG_AGO,
        source_node=job.status.source_node
        or annotations.get(ANNOTATION_SOURCE_NODE, "")
        or (pod.node_name if pod else ""),
        workload=workload,
        cycle=annotations.get(ANNOTATION_CYCLE, ""),
        started=job.status.start_time,
        # A MakeBeforeBreak move disrupts its workload when its rollout starts (the limits count it
        # then, even when the rollout is undone).
        evicted=condition_time(job, "Evicted") or condition_time(job, "ReplacementStarted"),
        rank=importance(pod),
        strategy=job.spec.strategy,
        mode=job.spec.mode,
        successor=successor(job.spec.mode, job.status.new_pod_ref, pods),
    )


def successor(mode: str, replacement: PodRef | PodReference | None, pods: Mapping[str, Pod]) -> str:
    """A MakeBeforeBreak job's replacement's controller (the rollout's new ReplicaSet), found among
    `pods` by "namespace/name" with the same UID; "" for another mode or when not found."""
    if mode != "MakeBeforeBreak" or replacement is None:
        return ""
    pod = pods.get(f"{replacement.namespace}/{replacement.name}")
    if pod is None or pod.owner is None or (replacement.uid and pod.uid != replacement.uid):
        return ""
    return pod.owner.uid


def snapshot_job_facts(job: MigrationJob, pods: Mapping[str, Pod] | None = None) -> JobFacts:
    """A job as a snapshot records it (`Snapshot.jobs`), for the planner's look-ahead. The snapshot
    does not keep the job's cycle: every job it holds was planned by an earlier cycle. `pods` by
    "namespace/name" (at least a MakeBeforeBreak job's replacement) give its `successor`."""
    return JobFacts(
        name=job.name,
        namespace=job.pod.namespace,
        pod=f"{job.pod.namespace}/{job.pod.name}",
        phase=cast(JobPhase, job.phase),
        created=job.created or _LONG_AGO,
        source_node=job.source_node,
        workload=job.workload_uid,
        started=job.started,
        evicted=job.evicted,
        mode=job.mode,
        successor=successor(job.mode, job.replacement, pods or {}),
    )


def workload_facts(snapshot: Snapshot, uids: Iterable[str]) -> dict[str, WorkloadFacts]:
    """The workloads of these controller UIDs: size (`Snapshot.replicas_of`), label and Ready pods.
    A UID the snapshot knows nothing of (no controller with spec.replicas, no pod) is left out."""
    pods: dict[str, list[Pod]] = {uid: [] for uid in uids if uid}
    if not pods:
        return {}
    for pod in snapshot.pods:
        if pod.owner is not None and pod.owner.uid in pods:
            pods[pod.owner.uid].append(pod)
    out = {}
    for uid in sorted(pods):
        facts = workload_of(snapshot, uid, pods[uid])
        if facts is not None:
            out[uid] = facts
    return out


def workload_of(snapshot: Snapshot, uid: str, pods: Sequence[Pod]) -> WorkloadFacts | None:
    """One workload's facts from its pods (those of the snapshot whose controller is `uid`); None
    when nothing is left of it to count (the job's own checks will fail it)."""
    workload = snapshot.workloads.get(uid)
    if not pods and (workload is None or workload.replicas is None):
        return None
    if workload is not None:
        label = f"{workload.kind} {workload.namespace}/{workload.name}"
    else:
        owner = pods[0].owner
        label = f"{owner.kind} {pods[0].namespace}/{owner.name}" if owner is not None else uid
    ready = frozenset(p.key for p in pods if p.ready and not p.deleting and not p.terminal)
    return WorkloadFacts(uid, label, snapshot.replicas_of(uid), ready)
