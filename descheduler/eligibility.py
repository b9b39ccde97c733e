"""Which pods may ever be moved (lownodeload.md §2), shared by every strategy."""

from __future__ import annotations

from datetime import datetime

from descheduler.model import (
    ANNOTATION_EVICT,
    ANNOTATION_EVICTION_COST,
    MAX_EVICTION_COST,
    SYSTEM_CRITICAL_PRIORITY,
    Pod,
)
from descheduler.policy import EvictorArgs
from descheduler.snapshot import Snapshot

_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")


def hard_refusal(pod: Pod) -> str | None:
    """Rules no switch or annotation overrides."""
    if pod.is_daemonset:
        return "daemonset pod"
    if pod.is_mirror:
        return "mirror pod"
    if pod.is_static:
        return "static pod"
    if pod.deleting:
        return "pod is being deleted"
    if pod.terminal:
        return f"pod has finished ({pod.phase})"
    if pod.annotations.get(ANNOTATION_EVICTION_COST, "").strip() == str(MAX_EVICTION_COST):
        return f"eviction cost is {MAX_EVICTION_COST} (never evict)"
    return None


def eviction_refusal(pod: Pod, snapshot: Snapshot, args: EvictorArgs, now: datetime | None = None) -> str | None:
    """Why this pod may never be moved, or None. The evict annotation overrides the switchable checks."""
    hard = hard_refusal(pod)
    if hard is not None:
        return hard
    if ANNOTATION_EVICT in pod.annotations:
        return None
    if args.namespaces is not None and not args.namespaces.allows(pod.namespace):
        return f"namespace {pod.namespace} is excluded by the evictor"
    if args.label_selector is not None and not args.label_selector.matches(pod.labels):
        return f"labels do not match evictor labelSelector {args.label_selector}"
    if pod.owner is None and not args.evict_bare_pods:
        return "bare pod: no controller would recreate it (evictBarePods is off)"
    critical = (pod.priority or 0) >= SYSTEM_CRITICAL_PRIORITY or pod.priority_class_name in _CRITICAL_CLASSES
    if critical and not args.evict_system_critical_pods:
        return "system-critical pod (evictSystemCriticalPods is off)"
    if args.priority_threshold is not None and (pod.priority or 0) >= args.priority_threshold:
        return f"priority {pod.priority or 0} ≥ priorityThreshold {args.priority_threshold}"
    if pod.has_local_storage and not args.evict_local_storage_pods:
        return "uses local storage (emptyDir/hostPath; evictLocalStoragePods is off)"
    if pod.has_pvc and args.ignore_pvc_pods:
        return "uses a PersistentVolumeClaim (ignorePvcPods is on)"
    when = now or snapshot.now
    if args.min_pod_age is not None and pod.created is not None and when - pod.created < args.min_pod_age:
        age = int((when - pod.created).total_seconds())
        return f"younger than minPodAge ({age}s < {int(args.min_pod_age.total_seconds())}s)"
    replicas = snapshot.replicas(pod)
    if replicas is not None and replicas < args.min_replicas:
        return f"workload has {replicas} replica(s) < minReplicas {args.min_replicas}"
    return None
