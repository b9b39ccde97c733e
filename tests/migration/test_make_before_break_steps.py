"""A MakeBeforeBreak job's state machine (descheduler.migration.steps and rollout_steps): reserve, start the
Deployment's rollout, follow the replacement to Ready, see the pod go; and at the ttl, undo a rollout
whose replacement is not Ready. Pure: each row is one decision from a status and what was read."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.migration import rollout_steps, steps
from descheduler.migration.steps import Hold, Record, Transition
from descheduler.model import PodDisruptionBudget
from descheduler.rollout import LABEL_REPLACES
from tests.migration.test_steps import ACKNOWLEDGED, CREATED_, NOW, job, pod

STARTED = {**ACKNOWLEDGED, "ReplacementStarted": "RolloutStarted"}
BOUND = {**STARTED, "ReplacementBound": "Bound"}
READY = {**BOUND, "ReplacementReady": "Ready"}


def mbb(conditions: dict[str, Any] | None = None, **fields: Any) -> Any:
    return job(conditions, mode="MakeBeforeBreak", **fields)


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ({}, "Reserve"),
        (CREATED_, "AwaitAcknowledged"),
        (ACKNOWLEDGED, "StartReplacement"),  # not "Evict": the pod stays until its replacement is Ready
        (STARTED, "AwaitBound"),
        (BOUND, "AwaitReady"),
        (READY, "AwaitPodGone"),
    ],
)
def test_the_steps_in_order(conditions: dict[str, Any], expected: str) -> None:
    assert steps.next_step(mbb(conditions), NOW, dry_run=False, due=True) == expected


def test_paused_and_dry_run_hold_before_the_rollout_but_not_after() -> None:
    for flags in ({"dry_run": True}, {"dry_run": False}):
        paused = not flags["dry_run"]
        before = steps.next_step(mbb(ACKNOWLEDGED, paused=paused), NOW, due=True, **flags)
        assert isinstance(before, Hold)
        assert steps.next_step(mbb(STARTED, paused=paused), NOW, due=True, **flags) == "AwaitBound"


def test_a_ready_replacement_is_recorded_and_the_job_waits_for_the_pod_to_go() -> None:
    ready = pod("web-x", uid="uid-new", node="node-b", ready=True)
    outcome = steps.readiness(
        mbb(BOUND, newPodRef={"namespace": "shop", "name": "web-x", "uid": "uid-new"}), ready, NOW
    )
    assert isinstance(outcome, Record) and outcome.status.has("ReplacementReady")
    assert "the rollout removes pod shop/web-0 next" in outcome.status.message
    done = rollout_steps.pod_replaced(mbb(READY), "pod shop/web-0 no longer exists", NOW)
    assert (done.phase, done.reason) == ("Succeeded", "Succeeded")
    assert done.status is not None and done.status.condition("Evicted").reason == "Replaced"  # type: ignore[union-attr]


def _objects(
    replicas: int = 1, strategy: dict[str, Any] | None = None, label: str | None = None, **status: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {"app": "web", **({LABEL_REPLACES: label} if label else {})}
    replicaset = {
        "metadata": {
            "name": "web",
            "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "uid-d", "controller": True}],
        },
        "spec": {"template": {"metadata": {"labels": {"app": "web"}}}},
    }
    deployment = {
        "metadata": {"name": "web", "uid": "uid-d", "generation": 2},
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"labels": labels}},
            **({"strategy": strategy} if strategy else {}),
        },
        "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, **status},
    }
    return replicaset, deployment


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        (_objects(), None),
        (_objects(replicas=2), ("Failed", "NotSingleReplica")),  # scaled since the plan (an autoscaler)
        (_objects(strategy={"type": "Recreate"}), ("Failed", "RolloutTakesPodDown")),
        (_objects(strategy={"rollingUpdate": {"maxUnavailable": 1}}), ("Failed", "RolloutTakesPodDown")),
        (_objects(replicas=1, observedGeneration=1), ("Hold", "RolloutInProgress")),
        (_objects(replicas=1, updatedReplicas=0), ("Hold", "RolloutInProgress")),
        (_objects(label="another-move"), ("Hold", "RolloutInProgress")),  # the template is not the pod's
    ],
)
def test_what_a_fresh_read_of_the_deployment_allows(
    objects: tuple[dict[str, Any], dict[str, Any]], expected: tuple[str, str] | None
) -> None:
    refusal = rollout_steps.rollout_refusal(pod(), *objects)
    if expected is None:
        assert refusal is None
    elif expected[0] == "Hold":
        assert isinstance(refusal, Hold) and refusal.reason == expected[1]
    else:
        assert isinstance(refusal, Transition) and (refusal.phase, refusal.reason) == expected


def test_a_paused_deployment_waits_and_a_pod_of_no_deployment_fails() -> None:
    replicaset, deployment = _objects()
    deployment["spec"]["paused"] = True
    paused = rollout_steps.rollout_refusal(pod(), replicaset, deployment)
    assert isinstance(paused, Hold) and paused.reason == "DeploymentPaused"
    lone = rollout_steps.rollout_refusal(pod(), {"metadata": {"name": "web"}}, None)
    assert isinstance(lone, Transition) and lone.reason == "NotADeployment"


def _budget(desired: int, healthy: int) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        namespace="shop", name="web", selector=None, current_healthy=healthy, desired_healthy=desired
    )


def test_a_budget_is_asked_whether_it_lets_the_pod_go_beside_its_ready_replacement() -> None:
    # minAvailable 1 (or maxUnavailable 0) of one pod: with the replacement Ready there are 2 healthy.
    assert rollout_steps.budget_hold(pod(), [_budget(desired=1, healthy=1)]) is None
    held = rollout_steps.budget_hold(pod(), [_budget(desired=2, healthy=1)])
    assert isinstance(held, Hold) and held.reason == "DisruptionBudget" and "wants 2 healthy pods" in held.message


def test_the_rollout_label_and_its_undoing() -> None:
    replicaset, deployment = _objects()
    started = rollout_steps.with_rollout_label(deployment, "uid-pod")
    assert rollout_steps.rollout_started(started, "uid-pod") and not rollout_steps.rollout_started(
        deployment, "uid-pod"
    )
    assert LABEL_REPLACES not in deployment["spec"]["template"]["metadata"]["labels"]  # the read copy is kept
    undone = rollout_steps.rolled_back(started, replicaset)
    assert undone["spec"]["template"] == deployment["spec"]["template"]
    # An earlier move's label, which the pod's ReplicaSet carries, is put back as it was.
    replicaset["spec"]["template"]["metadata"]["labels"][LABEL_REPLACES] = "uid-older"
    assert (
        rollout_steps.rolled_back(started, replicaset)["spec"]["template"]["metadata"]["labels"][LABEL_REPLACES]
        == "uid-older"
    )


@pytest.mark.parametrize(
    ("conditions", "facts", "expected"),
    [
        (ACKNOWLEDGED, {"pod_present": True, "ours": False, "replacement_ready": False}, ("Aborted", "Timeout")),
        (STARTED, {"pod_present": True, "ours": True, "replacement_ready": False}, "RollBack"),
        # A controller that labelled the template and stopped before recording it: still undone.
        (ACKNOWLEDGED, {"pod_present": True, "ours": True, "replacement_ready": False}, "RollBack"),
        (STARTED, {"pod_present": True, "ours": False, "replacement_ready": False}, ("Failed", "RolloutChanged")),
        (READY, {"pod_present": True, "ours": True, "replacement_ready": True}, ("Failed", "PodNotRemoved")),
        (READY, {"pod_present": False, "ours": True, "replacement_ready": True}, ("Succeeded", "Succeeded")),
        (STARTED, {"pod_present": False, "ours": True, "replacement_ready": False}, ("Failed", "Timeout")),
    ],
)
def test_at_the_ttl(conditions: dict[str, Any], facts: dict[str, bool], expected: Any) -> None:
    outcome = rollout_steps.rollout_expiry(mbb(conditions), NOW, **facts)
    if isinstance(expected, str):
        assert outcome == expected
    else:
        assert isinstance(outcome, Transition) and (outcome.phase, outcome.reason) == expected
    failed = rollout_steps.rolled_back_failure(mbb(STARTED))
    assert failed.reason == "ReplacementNotReady" and "stays on node node-a" in failed.message
