"""Which pods may ever be moved (lownodeload.md §2), each rule a refusal code with its words."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from descheduler.eligibility import eviction_refusal
from descheduler.policy import EvictorArgs, parse_policy
from descheduler.refusal import Refusal
from tests.builders import NOW, Obj, node, pod, snapshot, workload

POLICY = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"}
NEVER = "scheduling.koordinator.sh/eviction-cost"
EVICT = "descheduler.alpha.kubernetes.io/evict"


def evictor(**fields: Any) -> EvictorArgs:
    return parse_policy(yaml.safe_dump({**POLICY, "evictor": fields})).evictor


def refused(target: Obj, *others: Obj, **fields: Any) -> Refusal | None:
    """The evictor's refusal of `target` (with two replicas of its workload unless others are given)."""
    objs = [node("n1"), target, *(others or [pod("sibling", "n1")])]
    snap = snapshot(objs)
    name = target["metadata"]["name"]
    return eviction_refusal(next(p for p in snap.pods if p.name == name), snap, evictor(**fields))


def refusal(target: Obj, *others: Obj, **fields: Any) -> str | None:
    """Why the evictor refuses `target`, in words."""
    found = refused(target, *others, **fields)
    return None if found is None else str(found)


def test_an_ordinary_replicated_pod_may_move() -> None:
    assert refusal(pod("p", "n1")) is None


@pytest.mark.parametrize(
    ("target", "code", "expected"),
    [
        (pod("p", "n1", owner="agent", owner_kind="DaemonSet"), "DaemonSetPod", "daemonset pod"),
        (pod("p", "n1", annotations={"kubernetes.io/config.mirror": "x"}), "MirrorPod", "mirror pod"),
        (pod("p", "n1", annotations={"kubernetes.io/config.source": "file"}), "StaticPod", "static pod"),
        (pod("p", "n1", deleting=True), "PodDeleting", "pod is being deleted"),
        (pod("p", "n1", phase="Succeeded"), "PodFinished", "pod has finished (Succeeded)"),
        (pod("p", "n1", phase="Failed"), "PodFinished", "pod has finished (Failed)"),
        (pod("p", "n1", annotations={NEVER: "2147483647"}), "NeverEvict", "eviction cost is 2147483647 (never evict)"),
    ],
)
def test_hard_rules_hold_even_with_the_evict_annotation(target: Obj, code: str, expected: str) -> None:
    found = refused(target)
    assert found is not None and found.code == code
    assert refusal(target) == expected
    target["metadata"]["annotations"][EVICT] = "true"
    assert refusal(target) == expected
    assert refusal(target, evictBarePods=True, evictLocalStoragePods=True, evictSystemCriticalPods=True) == expected


EMPTY_DIR = [{"name": "scratch", "emptyDir": {}}]
HOST_PATH = [{"name": "logs", "hostPath": {"path": "/var/log"}}]
PVC = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


@pytest.mark.parametrize(
    ("target", "switch", "code", "expected"),
    [
        (
            pod("p", "n1", owner=None),
            {"evictBarePods": True},
            "BarePod",
            "bare pod: no controller would recreate it (evictBarePods is off)",
        ),
        (
            pod("p", "n1", priority=2_000_000_000),
            {"evictSystemCriticalPods": True},
            "SystemCritical",
            "system-critical pod (evictSystemCriticalPods is off)",
        ),
        (
            pod("p", "n1", volumes=EMPTY_DIR),
            {"evictLocalStoragePods": True},
            "LocalStorage",
            "uses local storage (emptyDir/hostPath; evictLocalStoragePods is off)",
        ),
        (
            pod("p", "n1", volumes=HOST_PATH),
            {"evictLocalStoragePods": True},
            "LocalStorage",
            "uses local storage (emptyDir/hostPath; evictLocalStoragePods is off)",
        ),
    ],
)
def test_switchable_rules(target: Obj, switch: dict[str, bool], code: str, expected: str) -> None:
    found = refused(target)
    assert found is not None and found.code == code
    assert refusal(target) == expected
    assert refusal(target, **switch) is None


def test_pvc_pods_move_unless_ignore_pvc_pods() -> None:
    assert refusal(pod("p", "n1", volumes=PVC)) is None
    assert (
        refusal(pod("p", "n1", volumes=PVC), ignorePvcPods=True) == "uses a PersistentVolumeClaim (ignorePvcPods is on)"
    )


def test_priority_threshold_is_inclusive() -> None:
    assert refusal(pod("p", "n1", priority=1000), priorityThreshold=1000) == "priority 1000 ≥ priorityThreshold 1000"
    assert refusal(pod("p", "n1", priority=999), priorityThreshold=1000) is None


def test_min_pod_age() -> None:
    young = pod("p", "n1", created=NOW - timedelta(minutes=2))
    assert refusal(young, minPodAge="5m") == "younger than minPodAge (120s < 300s)"
    assert refusal(young, minPodAge="1m") is None


def test_min_replicas_counts_pods_sharing_the_owner_when_the_workload_is_absent() -> None:
    assert refusal(pod("p", "n1"), pod("other", "n1", owner="db")) == "workload has 1 replica(s) < minReplicas 2"
    assert refusal(pod("p", "n1"), pod("sibling", "n1")) is None


def test_min_replicas_prefers_the_controllers_spec_replicas() -> None:
    # Two pods exist, but the ReplicaSet is being scaled to 1: it is a single-replica workload.
    assert (
        refusal(pod("p", "n1"), pod("sibling", "n1"), workload("web", 1)) == "workload has 1 replica(s) < minReplicas 2"
    )
    assert refusal(pod("p", "n1"), pod("other", "n1", owner="db"), workload("web", 3)) is None


def test_label_selector_and_namespaces() -> None:
    selector = {"matchLabels": {"movable": "yes"}}
    assert refusal(pod("p", "n1"), labelSelector=selector) == "labels do not match evictor labelSelector movable=yes"
    assert refusal(pod("p", "n1", labels={"movable": "yes"}), labelSelector=selector) is None
    assert (
        refusal(pod("p", "n1"), namespaces={"exclude": ["default"]}) == "namespace default is excluded by the evictor"
    )
    assert refusal(pod("p", "n1"), namespaces={"include": ["default"]}) is None


def test_evict_annotation_overrides_the_switchable_rules() -> None:
    forced = pod("p", "n1", owner=None, priority=2_000_000_000, volumes=EMPTY_DIR, annotations={EVICT: "true"})
    assert refusal(forced, pod("x", "n1", owner="db"), minPodAge="1000h", priorityThreshold=1) is None


def test_a_pod_whose_template_names_its_node_is_pinned_even_with_the_evict_annotation() -> None:
    # The replacement would be created on n1 directly (scheduling-core.md §2 item 1).
    pinned = workload("web", 2)
    pinned["spec"]["template"] = {"spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}
    target = pod("p", "n1", annotations={EVICT: "true"})
    found = refused(target, pod("sibling", "n1"), pinned)
    assert found is not None and found.code == "PinnedByTemplate"
    assert str(found) == "pinned by its template's spec.nodeName n1"
    assert refusal(target, pod("sibling", "n1"), workload("web", 2)) is None
