"""What a Deployment's strategy promises a rollout does (descheduler.rollout), as the Deployment
controller resolves it (ResolveFenceposts), and which pods the policy moves make-before-break."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.rollout import fenceposts, starts_first
from tests.builders import Obj, node, pod, uid
from tests.test_eligibility import refusal


@pytest.mark.parametrize(
    ("strategy", "replicas", "expected"),
    [
        (None, 1, (1, 0)),  # the defaults, 25% and 25%: surge rounds up, unavailable down
        ({}, 4, (1, 1)),
        ({"type": "RollingUpdate"}, 10, (3, 2)),
        ({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}, 1, (0, 1)),  # both 0: one may go
        ({"rollingUpdate": {"maxSurge": "100%", "maxUnavailable": "0%"}}, 1, (1, 0)),
        ({"rollingUpdate": {"maxSurge": 2, "maxUnavailable": 1}}, 1, (2, 1)),
        ({"type": "Recreate"}, 1, None),
        ({"rollingUpdate": {"maxSurge": "x"}}, 1, None),
        ({"rollingUpdate": {"maxSurge": True}}, 1, None),
    ],
)
def test_fenceposts_resolve_as_the_deployment_controller_does(
    strategy: dict[str, Any] | None, replicas: int, expected: tuple[int, int] | None
) -> None:
    assert fenceposts(strategy, replicas) == expected


def test_starts_first_needs_a_surge_no_unavailability_and_no_pause() -> None:
    assert starts_first(None, 1, paused=False)
    assert not starts_first(None, 1, paused=True)
    assert not starts_first({"rollingUpdate": {"maxUnavailable": 1}}, 1, paused=False)
    assert not starts_first({"rollingUpdate": {"maxSurge": 0}}, 1, paused=False)
    assert not starts_first({"type": "Recreate"}, 1, paused=False)


def _deployment(replicas: int = 1, strategy: Obj | None = None, labels: dict[str, str] | None = None) -> list[Obj]:
    """Deployment web and its ReplicaSet web-1 (the pods' owner)."""
    deploy: Obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": uid("Deployment", "default", "web"),
            "labels": labels or {},
        },
        "spec": {"replicas": replicas, **({"strategy": strategy} if strategy is not None else {})},
    }
    replicaset: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "uid": uid("ReplicaSet", "default", "web-1"),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": deploy["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": replicas},
    }
    return [deploy, replicaset]


def _only_pod() -> Obj:
    return pod("p", "n1", owner="web-1", labels={"app": "web"})


MBB = {"makeBeforeBreak": {"enabled": True}}


def test_the_only_pod_of_a_deployment_moves_first_when_the_policy_says_so() -> None:
    kept = "workload has 1 replica(s) < minReplicas 2"
    assert refusal(_only_pod(), node("n2"), *_deployment()) == kept
    assert refusal(_only_pod(), node("n2"), *_deployment(), **MBB) is None
    # The selector picks Deployments by their labels.
    chosen = {"makeBeforeBreak": {"enabled": True, "deploymentSelector": {"tier": "front"}}}
    assert refusal(_only_pod(), node("n2"), *_deployment(), **chosen) == kept
    assert refusal(_only_pod(), node("n2"), *_deployment(labels={"tier": "front"}), **chosen) is None


@pytest.mark.parametrize(
    "objects",
    [
        _deployment(strategy={"type": "Recreate"}),
        _deployment(strategy={"rollingUpdate": {"maxUnavailable": 1}}),
        _deployment()[1:],  # the ReplicaSet without its Deployment
    ],
)
def test_a_deployment_whose_rollout_would_take_the_pod_down_first_is_kept(objects: list[Obj]) -> None:
    assert refusal(_only_pod(), node("n2"), *objects, **MBB) == "workload has 1 replica(s) < minReplicas 2"


def test_a_bare_replicaset_or_statefulset_pod_is_kept() -> None:
    lone = pod("p", "n1", owner="db", owner_kind="StatefulSet")
    assert refusal(lone, node("n2"), **MBB) == "workload has 1 replica(s) < minReplicas 2"
    assert refusal(pod("p", "n1"), node("n2"), **MBB) == "workload has 1 replica(s) < minReplicas 2"
