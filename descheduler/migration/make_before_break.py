"""The MakeBeforeBreak driver (migration.md §3, last paragraph): for a workload that cannot lose its
only pod, the replacement is started first, by the workload's own controller, and the pod goes only
once it is Ready.

Its steps, in order: reserve and wait for the scheduler side to hold the room (as ReservationFirst
does), `start_replacement` (the move's label on the Deployment's pod template starts a rollout),
follow the replacement onto the Reservation and to Ready (as ReservationFirst does), then
`await_pod_gone` (the rollout removes the pod). At the ttl, `expire` undoes a rollout whose
replacement is not Ready, so the pod stays and the workload is left as it was. The decisions are in
`rollout_steps`.
"""

from __future__ import annotations

from typing import Any

from descheduler.events import ObjectRef
from descheduler.migration import rollout_steps, steps
from descheduler.migration.api import ApiFailure, FetchedPod
from descheduler.migration.driving import Driving, Lost
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.reservation_first import ReservationFirst
from descheduler.migration.steps import Hold, Stage
from descheduler.model import Pod


class MakeBeforeBreak:
    """Drives MakeBeforeBreak jobs; reserving and following the replacement are `reservation_first`'s steps."""

    def __init__(self, driving: Driving, reservation_first: ReservationFirst) -> None:
        self.driving = driving
        self.api = driving.api
        self.reservation_first = reservation_first

    def step(self, handle: JobHandle, stage: Stage, reads: PassReads) -> bool:
        """Take `stage`; True when it moved the job on and the next step may follow at once."""
        match stage:
            case "Reserve":
                return self.reservation_first.reserve(handle, reads)
            case "AwaitAcknowledged":
                return self.reservation_first.await_acknowledged(handle, reads)
            case "StartReplacement":
                return self.start_replacement(handle, reads)
            case "AwaitBound":
                return self._await_bound(handle, reads)
            case "AwaitReady":
                return self.driving.await_ready(handle, reads)
            case "AwaitPodGone":
                return self.await_pod_gone(handle, reads)
        raise AssertionError(f"a MakeBeforeBreak job has no step {stage!r}")

    def _rollout_objects(self, pod: Pod) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The pod's ReplicaSet and the Deployment that controls it, read now (None: not found)."""
        if pod.owner is None or pod.owner.kind != "ReplicaSet":
            return None, None
        replicaset = self.api.get_workload("ReplicaSet", pod.namespace, pod.owner.name)
        refs = ((replicaset or {}).get("metadata") or {}).get("ownerReferences") or ()
        owner = next((r for r in refs if r.get("controller") and r.get("kind") == "Deployment"), None)
        if owner is None:
            return replicaset, None
        deployment = self.api.get_workload("Deployment", pod.namespace, str(owner.get("name")))
        if deployment is not None and deployment["metadata"].get("uid") != owner.get("uid"):
            deployment = None  # another Deployment of that name
        return replicaset, deployment

    def start_replacement(self, handle: JobHandle, reads: PassReads) -> bool:
        """Start the rollout that makes the replacement: the move's label on the Deployment's pod
        template (already there: started by an earlier pass or instance, which did not record it)."""
        driving = self.driving
        fetched = driving.pod_or_fail(handle, reads)
        if fetched is None:
            return False
        pod = fetched.pod
        try:
            replicaset, deployment = self._rollout_objects(pod)
            if deployment is None or not rollout_steps.rollout_started(deployment, pod.uid):
                refusal = rollout_steps.rollout_refusal(pod, replicaset, deployment)
                snapshot = reads.snapshot()
                if refusal is None and snapshot is not None:
                    refusal = rollout_steps.budget_hold(pod, snapshot.pdbs_for(pod))
                if refusal is not None:
                    if isinstance(refusal, Hold):
                        driving.retry_later(handle, reads.now, driving.budget_backoff)
                    return driving.apply(handle, refusal, reads)
                assert deployment is not None
                deployment = self.api.replace_deployment(rollout_steps.with_rollout_label(deployment, pod.uid))
                self._descheduled(handle, fetched)
        except ApiFailure as failure:
            if not failure.forbidden:
                raise
            # Not granted (deploy/base alone): wait and look again, so the move goes on once it is.
            driving.retry_later(handle, reads.now, driving.budget_backoff)
            return driving.apply(handle, rollout_steps.rollout_forbidden(handle.job, str(failure), reads.now), reads)
        name = f"Deployment {pod.namespace}/{deployment['metadata']['name']}"
        return driving.apply(handle, rollout_steps.replacement_started(handle.job, name, reads.now), reads)

    def _await_bound(self, handle: JobHandle, reads: PassReads) -> bool:
        """The replacement on the Reservation, as ReservationFirst follows it; but when kube-scheduler's
        filters refused the reserved node for it, the rollout is undone at once and the pod stays
        (it would otherwise run wherever it lands, or stay Pending beside the pod it was to replace)."""
        name, reservation = self.reservation_first.reservation_of(handle)
        refused = steps.refused_by_filters(reservation) if reservation is not None else None
        if refused is None:
            return self.reservation_first.follow_replacement(handle, reads, name, reservation)
        try:
            undone = self._undo_rollout(handle, self.driving.live_pod(handle))
        except ApiFailure as failure:
            if not failure.forbidden:
                raise
            undone = f"the rollout could not be undone ({failure})"
        self.driving.transition(handle, rollout_steps.refused_rolled_back(refused, undone), reads.now)
        return False

    def _undo_rollout(self, handle: JobHandle, live: FetchedPod | Lost) -> str:
        """Put the Deployment's template back as the moved pod's ReplicaSet has it, if the rollout is
        still this move's; what was done, in words ("" when there was nothing to undo)."""
        if not isinstance(live, FetchedPod):
            return ""
        replicaset, deployment = self._rollout_objects(live.pod)
        uid = handle.job.status.pod_uid or handle.job.spec.pod_ref.uid
        if deployment is None or not rollout_steps.rollout_started(deployment, uid):
            return ""
        self.api.replace_deployment(rollout_steps.rolled_back(deployment, replicaset))
        handle.log().warning("rollout undone: its replacement cannot go to the reserved node")
        return f"the rollout was undone: pod {live.pod.key} stays on node {live.pod.node_name}"

    def _descheduled(self, handle: JobHandle, fetched: FetchedPod) -> None:
        """The pod's Descheduled Event, written when the rollout that replaces it starts."""
        if self.driving.recorder is not None:
            pod = fetched.pod
            ref = ObjectRef("Pod", pod.name, pod.namespace, pod.uid)
            self.driving.recorder.normal(ref, "Descheduled", steps.descheduled_message(handle.job, "Replaced"))

    def await_pod_gone(self, handle: JobHandle, reads: PassReads) -> bool:
        """The replacement is Ready: done once the rollout has removed the pod."""
        live = self.driving.live_pod(handle)
        if not isinstance(live, Lost):
            return False
        self.driving.transition(handle, rollout_steps.pod_replaced(handle.job, live.why, reads.now), reads.now)
        return False

    def expire(self, handle: JobHandle, reads: PassReads) -> None:
        """Past its ttl: undo a rollout whose replacement is not Ready (the pod stays), else end the
        job as it stands (rollout_steps.rollout_expiry)."""
        job = handle.job
        live = self.driving.live_pod(handle)
        present = not isinstance(live, Lost)
        replicaset = deployment = None
        try:
            if isinstance(live, FetchedPod):
                replicaset, deployment = self._rollout_objects(live.pod)
            uid = job.status.pod_uid or job.spec.pod_ref.uid
            ours = deployment is not None and rollout_steps.rollout_started(deployment, uid)
            ready = job.status.has("ReplacementReady")
            outcome = rollout_steps.rollout_expiry(
                job, reads.now, pod_present=present, ours=ours, replacement_ready=ready
            )
            if outcome == "RollBack":
                assert deployment is not None
                self.api.replace_deployment(rollout_steps.rolled_back(deployment, replicaset))
                handle.log().warning("rollout undone: its replacement was not Ready in time")
                outcome = rollout_steps.rolled_back_failure(job)
        except ApiFailure as failure:
            if not failure.forbidden:
                raise
            outcome = rollout_steps.rollout_expiry_forbidden(job, str(failure))  # retrying would never end the job
        self.driving.transition(handle, outcome, reads.now)
