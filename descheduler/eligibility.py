"""Which pods may ever be moved (lownodeload.md §2), shared by every strategy.

Each rule is a refusal code defined here with its words: `hard_refusal` holds the rules no switch
or annotation overrides, `eviction_refusal` adds the ones the evictor's switches and the evict
annotation control. Both return a `Refusal` (or None), never text.
"""

from __future__ import annotations

from datetime import datetime

from descheduler.model import (
    ANNOTATION_EVICT,
    ANNOTATION_EVICTION_COST,
    MAX_EVICTION_COST,
    SYSTEM_CRITICAL_PRIORITY,
    Pod,
    Workload,
)
from descheduler.policy import EvictorArgs
from descheduler.refusal import Refusal, define
from descheduler.snapshot import Snapshot

_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")

# Rules no switch or annotation overrides.
DAEMONSET_POD = define("DaemonSetPod", "daemonset pod")
MIRROR_POD = define("MirrorPod", "mirror pod")
STATIC_POD = define("StaticPod", "static pod")
POD_DELETING = define("PodDeleting", "pod is being deleted")
POD_FINISHED = define("PodFinished", "pod has finished ({phase})", brief="pod has finished")
NEVER_EVICT = define("NeverEvict", "eviction cost is {cost} (never evict)")
# Its replacement could run on no other node: kube-scheduler's VolumeBinding filter would keep it Pending.
PINNED_BY_VOLUME = define("PinnedByVolume", "pinned by volume {subject}", brief="pinned by volume")
# Its controller's template sets spec.nodeName: the replacement is created on that node, past any scheduler.
PINNED_BY_TEMPLATE = define(
    "PinnedByTemplate", "pinned by its template's spec.nodeName {subject}", brief="pinned by its template's nodeName"
)
VOLUMES_UNREADABLE = define(
    "VolumesUnreadable",
    "uses a PersistentVolumeClaim, and where its volume may run is unknown ({why})",
    brief="uses a PersistentVolumeClaim whose volume cannot be read",
)

# Rules of the evictor's switches (the evict annotation overrides them).
NAMESPACE_EXCLUDED = define(
    "EvictorNamespaces", "namespace {subject} is excluded by the evictor", brief="namespace excluded by the evictor"
)
LABELS_NOT_SELECTED = define(
    "EvictorLabelSelector",
    "labels do not match evictor labelSelector {selector}",
    brief="labels do not match evictor labelSelector",
)
BARE_POD = define("BarePod", "bare pod: no controller would recreate it (evictBarePods is off)")
SYSTEM_CRITICAL = define("SystemCritical", "system-critical pod (evictSystemCriticalPods is off)")
PRIORITY_THRESHOLD = define(
    "PriorityThreshold", "priority {priority} ≥ priorityThreshold {threshold}", brief="priority ≥ priorityThreshold"
)
LOCAL_STORAGE = define("LocalStorage", "uses local storage (emptyDir/hostPath; evictLocalStoragePods is off)")
PVC_POD = define("PersistentVolumeClaim", "uses a PersistentVolumeClaim (ignorePvcPods is on)")
MIN_POD_AGE = define("MinPodAge", "younger than minPodAge ({age}s < {min_age}s)", brief="younger than minPodAge")
MIN_REPLICAS = define(
    "MinReplicas",
    "workload has {replicas} replica(s) < minReplicas {min_replicas}",
    brief="fewer replicas than minReplicas",
)


def hard_refusal(pod: Pod) -> Refusal | None:
    """Rules no switch or annotation overrides."""
    if pod.is_daemonset:
        return Refusal(code=DAEMONSET_POD)
    if pod.is_mirror:
        return Refusal(code=MIRROR_POD)
    if pod.is_static:
        return Refusal(code=STATIC_POD)
    if pod.deleting:
        return Refusal(code=POD_DELETING)
    if pod.terminal:
        return Refusal(code=POD_FINISHED, facts={"phase": pod.phase})
    if pod.annotations.get(ANNOTATION_EVICTION_COST, "").strip() == str(MAX_EVICTION_COST):
        return Refusal(code=NEVER_EVICT, facts={"cost": MAX_EVICTION_COST})
    return None


def volume_refusal(pod: Pod, snapshot: Snapshot) -> Refusal | None:
    """A pod whose volumes keep it on its node (no annotation overrides it: the move would strand
    its replacement), or whose claims' volumes could not be read (a 403 on them)."""
    if not pod.has_pvc:
        return None
    if snapshot.volumes_unreadable:
        return Refusal(code=VOLUMES_UNREADABLE, facts={"why": snapshot.volumes_unreadable})
    volume = snapshot.pinned_by(pod)
    return Refusal(code=PINNED_BY_VOLUME, subject=volume.name) if volume is not None else None


def template_refusal(pod: Pod, snapshot: Snapshot) -> Refusal | None:
    """A pod whose controller's template names its node (scheduling-core.md §2 item 1): a move
    could only put its replacement back there."""
    workload = snapshot.workloads.get(pod.owner.uid) if pod.owner is not None else None
    if workload is None or not workload.template_node_name:
        return None
    return Refusal(code=PINNED_BY_TEMPLATE, subject=workload.template_node_name)


def eviction_refusal(pod: Pod, snapshot: Snapshot, args: EvictorArgs, now: datetime | None = None) -> Refusal | None:
    """Why this pod may never be moved, or None. The evict annotation overrides the switchable checks."""
    hard = hard_refusal(pod) or volume_refusal(pod, snapshot) or template_refusal(pod, snapshot)
    if hard is not None:
        return hard
    if ANNOTATION_EVICT in pod.annotations:
        return None
    if args.namespaces is not None and not args.namespaces.allows(pod.namespace):
        return Refusal(code=NAMESPACE_EXCLUDED, subject=pod.namespace)
    if args.label_selector is not None and not args.label_selector.matches(pod.labels):
        return Refusal(code=LABELS_NOT_SELECTED, facts={"selector": str(args.label_selector)})
    if pod.owner is None and not args.evict_bare_pods:
        return Refusal(code=BARE_POD)
    critical = (pod.priority or 0) >= SYSTEM_CRITICAL_PRIORITY or pod.priority_class_name in _CRITICAL_CLASSES
    if critical and not args.evict_system_critical_pods:
        return Refusal(code=SYSTEM_CRITICAL)
    if args.priority_threshold is not None and (pod.priority or 0) >= args.priority_threshold:
        return Refusal(
            code=PRIORITY_THRESHOLD, facts={"priority": pod.priority or 0, "threshold": args.priority_threshold}
        )
    if pod.has_local_storage and not args.evict_local_storage_pods:
        return Refusal(code=LOCAL_STORAGE)
    if pod.has_pvc and args.ignore_pvc_pods:
        return Refusal(code=PVC_POD)
    when = now or snapshot.now
    if args.min_pod_age is not None and pod.created is not None and when - pod.created < args.min_pod_age:
        age = int((when - pod.created).total_seconds())
        return Refusal(code=MIN_POD_AGE, facts={"age": age, "min_age": int(args.min_pod_age.total_seconds())})
    replicas = snapshot.replicas(pod)
    if replicas is not None and replicas < args.min_replicas and not moves_first(pod, snapshot, args):
        return Refusal(code=MIN_REPLICAS, facts={"replicas": replicas, "min_replicas": args.min_replicas})
    return None


def deployment_of(pod: Pod, snapshot: Snapshot) -> Workload | None:
    """The Deployment that owns the pod's ReplicaSet, when the snapshot holds both."""
    if pod.owner is None or pod.owner.kind != "ReplicaSet":
        return None
    replicaset = snapshot.workloads.get(pod.owner.uid)
    owner = replicaset.owner if replicaset is not None else None
    if owner is None or owner.kind != "Deployment":
        return None
    deployment = snapshot.workloads.get(owner.uid)
    return deployment if deployment is not None and deployment.kind == "Deployment" else None


def moves_first(pod: Pod, snapshot: Snapshot, args: EvictorArgs) -> bool:
    """Whether the policy moves this pod make-before-break: makeBeforeBreak is on, and the pod is the
    only one of a Deployment its selector takes, whose strategy starts the replacement first."""
    wanted = args.make_before_break
    if not wanted.enabled:
        return False
    deployment = deployment_of(pod, snapshot)
    if deployment is None or deployment.replicas != 1 or not deployment.starts_first:
        return False
    selector = wanted.deployment_selector
    return selector is None or selector.matches(deployment.labels)
