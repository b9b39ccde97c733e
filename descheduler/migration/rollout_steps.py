"""A MakeBeforeBreak job's decisions (migration.md §3, last paragraph): whether the pod's Deployment
may roll out its replacement, the template change that starts the rollout and the one that undoes
it, and how the job ends. Pure, like `steps`, which decides the order of the steps.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final, Literal

from descheduler.durations import format_duration
from descheduler.migration.objects import PodMigrationJob
from descheduler.migration.records import with_condition
from descheduler.migration.steps import Hold, Record, Transition
from descheduler.model import Pod, PodDisruptionBudget
from descheduler.rollout import LABEL_REPLACES, starts_first
from descheduler.timestamps import format_time


def _template_labels(workload: Mapping[str, Any]) -> dict[str, Any]:
    template = (workload.get("spec") or {}).get("template") or {}
    labels = (template.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def rollout_started(deployment: Mapping[str, Any], pod_uid: str) -> bool:
    """Whether the Deployment's template carries this move's label: its rollout is (or was) this move's."""
    return bool(pod_uid) and _template_labels(deployment).get(LABEL_REPLACES) == pod_uid


def rollout_refusal(
    pod: Pod, replicaset: Mapping[str, Any] | None, deployment: Mapping[str, Any] | None
) -> Hold | Transition | None:
    """Why this pod cannot be moved by a rollout of its Deployment now (Hold: maybe later, before the
    ttl) or ever (Failed); None when the rollout may start. Read fresh, since the plan's snapshot:
    replicas, strategy and pause may have changed (an autoscaler, a GitOps sync, a person)."""
    owner = pod.owner
    if owner is None or owner.kind != "ReplicaSet" or replicaset is None:
        return Transition(
            "Failed", "NotADeployment", f"MakeBeforeBreak moves a Deployment's pod; {pod.key} has no ReplicaSet"
        )
    controller = next(
        (r for r in (replicaset.get("metadata") or {}).get("ownerReferences") or () if r.get("controller")), None
    )
    if controller is None or controller.get("kind") != "Deployment" or deployment is None:
        return Transition(
            "Failed", "NotADeployment", f"MakeBeforeBreak moves a Deployment's pod; ReplicaSet {owner.name} has none"
        )
    name = f"Deployment {pod.namespace}/{controller.get('name')}"
    spec = deployment.get("spec") or {}
    replicas = spec.get("replicas", 1)
    if replicas != 1:
        return Transition(
            "Failed",
            "NotSingleReplica",
            f"{name} has {replicas} replicas now: MakeBeforeBreak moves only the pod of a single-replica Deployment",
        )
    if spec.get("paused"):
        return Hold("DeploymentPaused", f"{name} is paused: a rollout would not start")
    if not starts_first(spec.get("strategy"), 1, paused=False):
        return Transition(
            "Failed",
            "RolloutTakesPodDown",
            f"{name}'s strategy {spec.get('strategy') or {}} would remove its pod before the new one is Ready; "
            "MakeBeforeBreak needs RollingUpdate with maxSurge ≥ 1 and maxUnavailable 0",
        )
    status = deployment.get("status") or {}
    generation = (deployment.get("metadata") or {}).get("generation", 0)
    settled = (
        status.get("observedGeneration", 0) >= generation
        and status.get("replicas", 0) == 1
        and status.get("updatedReplicas", 0) == 1
    )
    if not settled or _template_labels(replicaset).get(LABEL_REPLACES) != _template_labels(deployment).get(
        LABEL_REPLACES
    ):
        return Hold("RolloutInProgress", f"{name} is rolling out: the move waits until that is done")
    return None


def budget_hold(pod: Pod, budgets: Iterable[PodDisruptionBudget]) -> Hold | None:
    """The rollout removes the pod without the eviction API, once its replacement is Ready: the
    budgets that select it are asked first whether they would let it go with one more healthy pod
    beside it (the only state in which the rollout removes it)."""
    for budget in budgets:
        if budget.current_healthy + 1 - budget.desired_healthy < 1:
            return Hold(
                "DisruptionBudget",
                f"PodDisruptionBudget {budget.namespace}/{budget.name} wants {budget.desired_healthy} healthy pods and "
                f"{budget.current_healthy} are: even beside its Ready replacement it would not let pod {pod.key} go",
            )
    return None


def with_rollout_label(deployment: dict[str, Any], pod_uid: str) -> dict[str, Any]:
    """The Deployment (as read) with this move's label on its pod template: the change that starts the rollout."""
    changed = copy.deepcopy(deployment)
    template = changed.setdefault("spec", {}).setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("labels", {})[LABEL_REPLACES] = pod_uid
    return changed


def rolled_back(deployment: Mapping[str, Any], replicaset: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Deployment with its template's move label as the moved pod's ReplicaSet has it (or
    without one): the template the pod was made from, so the rollout returns to that ReplicaSet."""
    changed = copy.deepcopy(dict(deployment))
    labels = changed["spec"]["template"]["metadata"]["labels"]
    before = _template_labels(replicaset or {}).get(LABEL_REPLACES)
    if before is None:
        labels.pop(LABEL_REPLACES, None)
    else:
        labels[LABEL_REPLACES] = before
    return changed


def replacement_started(job: PodMigrationJob, deployment: str, now: datetime) -> Record:
    """The rollout is started: the Deployment's template carries the move's label."""
    pod = job.spec.pod_ref
    message = (
        f"{deployment} rolls out a replacement for pod {pod.namespace}/{pod.name} onto node {job.status.target_node}; "
        "the pod goes once it is Ready"
    )
    status = with_condition(job.status, "ReplacementStarted", now, reason="RolloutStarted", message=message)
    status = status.model_copy(update={"reason": "ReplacementStarted", "message": message})
    return Record(
        status,
        "ReplacementStarted",
        message,
        log="rollout started",
        fields=(("deployment", deployment),),
        progress=True,
    )


# Why a MakeBeforeBreak job waits when the API refuses (403) to let it read or write the pod's
# Deployment or ReplicaSet: deploy/base does not grant that; the component does.
ROLLOUT_FORBIDDEN: Final = "RolloutForbidden"
ROLLOUT_GRANT: Final = "add the component deploy/components/make-before-break (it grants update on deployments)"


def _grant_fix(namespace: str) -> str:
    return (
        f"{ROLLOUT_GRANT}, or bind its ClusterRole descheduler-make-before-break to the descheduler's "
        f"ServiceAccount in namespace {namespace}"
    )


def rollout_forbidden(job: PodMigrationJob, refusal: str, now: datetime) -> Record | Hold:
    """The API refused (403, `refusal`) a read or the write of the rollout: the job waits with the
    pod untouched and tries again later, so it goes on once the grant appears. The condition, the
    Event and the log line that name the fix are written once per refusal; then it only holds."""
    pod = job.spec.pod_ref
    message = (
        f"may not start the rollout that moves pod {pod.namespace}/{pod.name} ({refusal}): "
        f"{_grant_fix(pod.namespace)}; the job waits until its ttl, the pod untouched"
    )
    started = job.status.condition("ReplacementStarted")
    if started is not None and started.reason == ROLLOUT_FORBIDDEN and started.message == message:
        return Hold(ROLLOUT_FORBIDDEN, message)
    status = with_condition(
        job.status, "ReplacementStarted", now, value="False", reason=ROLLOUT_FORBIDDEN, message=message
    )
    return Record(
        status.model_copy(update={"reason": ROLLOUT_FORBIDDEN, "message": message}),
        ROLLOUT_FORBIDDEN,
        message,
        log="make-before-break rollout forbidden; waiting for the grant",
        fields=(("fix", ROLLOUT_GRANT), ("detail", refusal)),
        warning=True,
    )


def rollout_expiry_forbidden(job: PodMigrationJob, refusal: str) -> Transition:
    """A MakeBeforeBreak job past its ttl whose Deployment may not be read or written (403,
    `refusal`): nothing can be checked or undone. Aborted when this job never started a rollout
    (the pod untouched); else Failed, the rollout left as it is."""
    pod = job.spec.pod_ref
    ttl = format_time(job.deadline) if job.deadline else ""
    fix = _grant_fix(pod.namespace)
    if not job.status.has("ReplacementStarted"):
        return Transition(
            "Aborted",
            ROLLOUT_FORBIDDEN,
            f"not done within its ttl of {format_duration(job.spec.ttl)} (by {ttl}): the rollout was never allowed "
            f"({refusal}); {fix}. Pod {pod.namespace}/{pod.name} was not touched",
        )
    return Transition(
        "Failed",
        ROLLOUT_FORBIDDEN,
        f"at its ttl (by {ttl}) the Deployment could not be read or put back ({refusal}): its rollout was left as "
        f"it is; {fix}",
    )


def pod_replaced(job: PodMigrationJob, why: str, now: datetime) -> Transition:
    """The rollout removed the pod after its replacement was Ready: the move is done."""
    ready = job.status.condition("ReplacementReady")
    message = f"{why}; " + (ready.message if ready is not None else f"replacement {_new_pod(job)} is Ready")
    status = with_condition(job.status, "Evicted", now, reason="Replaced", message=why)
    return Transition("Succeeded", "Succeeded", message, status)


def _new_pod(job: PodMigrationJob) -> str:
    ref = job.status.new_pod_ref
    return f"{ref.namespace}/{ref.name}" if ref is not None else "(unknown)"


def rollout_expiry(
    job: PodMigrationJob, now: datetime, *, pod_present: bool, ours: bool, replacement_ready: bool
) -> Transition | Literal["RollBack"]:
    """A MakeBeforeBreak job past its ttl. `pod_present`: the moved pod is still there; `ours`: the
    Deployment's template still carries this move's label; `replacement_ready`: the replacement
    it recorded is Ready. The pod is never left without a Ready pod beside it: a rollout whose
    replacement did not get Ready is rolled back (RollBack), and the pod stays."""
    ttl = format_time(job.deadline) if job.deadline else ""
    pod = job.spec.pod_ref
    key = f"{pod.namespace}/{pod.name}"
    if not pod_present:
        if replacement_ready:
            return pod_replaced(job, f"pod {key} was removed by the rollout", now)
        return Transition("Failed", "Timeout", f"pod {key} is gone but its replacement was not Ready by {ttl}")
    if ours and replacement_ready:
        return Transition(
            "Failed",
            "PodNotRemoved",
            f"replacement {_new_pod(job)} is Ready but the rollout had not removed pod {key} by {ttl}; both run",
        )
    if ours:
        return "RollBack"
    if job.status.has("ReplacementStarted"):
        return Transition(
            "Failed",
            "RolloutChanged",
            f"the Deployment's template no longer carries this move's label (changed by someone else) by {ttl}; "
            f"left as it is, pod {key} untouched by this job",
        )
    return Transition(
        "Aborted",
        "Timeout",
        f"not done within its ttl of {format_duration(job.spec.ttl)} (by {ttl}); the pod was not touched",
    )


def rolled_back_failure(job: PodMigrationJob) -> Transition:
    """The rollout was undone at the ttl: the replacement never got Ready, the pod stays."""
    pod = job.spec.pod_ref
    ttl = format_time(job.deadline) if job.deadline else ""
    return Transition(
        "Failed",
        "ReplacementNotReady",
        f"the replacement was not Ready by {ttl}: the Deployment's template was put back as it was, so the rollout "
        f"returns to the old ReplicaSet; pod {pod.namespace}/{pod.name} stays on node {job.status.source_node}",
    )


def refused_rolled_back(refused: Transition, undone: str) -> Transition:
    """kube-scheduler's filters refused the reserved node for the replacement (`refused`, from
    `steps.refused_by_filters`): the job fails at once, saying what became of the rollout (`undone`;
    "" when it was no longer this move's to undo)."""
    return Transition(refused.phase, refused.reason, f"{refused.message}; {undone}" if undone else refused.message)
