"""Narrow, immutable records of the Kubernetes objects the planner reads.

Decoded from raw API JSON by `descheduler.decode`; only the fields we use are kept.
The per-pod and per-node records are `gc=False`: immutable trees that can never be part of a
reference cycle, so the cyclic GC need not walk the 150,000 of them a big cluster keeps cached.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

import msgspec

from descheduler.labels import LabelSelector
from descheduler.resources import EMPTY, Resources

QoSClass = Literal["Guaranteed", "Burstable", "BestEffort"]
PriorityBand = Literal["koord-prod", "koord-mid", "koord-batch", "koord-free", "none"]

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
MAX_EVICTION_COST = 2_147_483_647

# Annotations and labels we read (design README §4.5).
ANNOTATION_EVICT = "descheduler.alpha.kubernetes.io/evict"
ANNOTATION_PREFER_NO_EVICTION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
ANNOTATION_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
ANNOTATION_EVICTION_COST = "scheduling.koordinator.sh/eviction-cost"
ANNOTATION_MIRROR = "kubernetes.io/config.mirror"
ANNOTATION_CONFIG_SOURCE = "kubernetes.io/config.source"
ANNOTATION_RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"
ANNOTATION_USAGE_THRESHOLDS = "scheduling.koordinator.sh/usage-thresholds"
ANNOTATION_OVER_MAX_SINCE = "descheduler.dev/over-max-since"
# On PodMigrationJobs (written by the executor): the pod's node, its controller's UID and its
# measured usage when the move was planned (JSON ResourceList).
JOB_SOURCE_NODE_ANNOTATION = "descheduler.dev/source-node"
JOB_WORKLOAD_UID_ANNOTATION = "descheduler.dev/workload-uid"
JOB_POD_USAGE_ANNOTATION = "descheduler.dev/pod-usage"
LABEL_PRIORITY_CLASS = "koordinator.sh/priority-class"
LABEL_QUOTA_NAME = "quota.scheduling.koordinator.sh/name"
LABEL_QUOTA_PARENT = "quota.scheduling.koordinator.sh/parent"
LABEL_QUOTA_PREEMPTIBLE = "quota.scheduling.koordinator.sh/preemptible"
LABEL_HOSTNAME = "kubernetes.io/hostname"


class OwnerRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    kind: str
    name: str
    uid: str
    controller: bool = False


class Taint(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    key: str
    value: str = ""
    effect: str = ""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class Toleration(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """The standard Kubernetes rule (k8s.io/api/core/v1 Toleration.ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # An empty key is only valid with Exists; Equal with an empty key matches nothing.
        return bool(self.key) and self.value == taint.value


class NodeSelectorRequirement(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    def matches(self, value: str | None) -> bool:
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if value is None or len(self.values) != 1:
            return False
        have, want = _go_int(value), _go_int(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _go_int(text: str) -> int | None:
    """A label value as Go's strconv.ParseInt(text, 10, 64) reads it: an optional sign and decimal
    digits only (Python's int() also takes underscores and surrounding spaces), within int64."""
    if _GO_INT.fullmatch(text) is None:
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


class NodeSelectorTerm(msgspec.Struct, frozen=True, kw_only=True):
    """Requirements are ANDed; an empty term matches nothing (Kubernetes rule)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, name: str, labels: dict[str, str]) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        return all(r.matches(labels.get(r.key)) for r in self.match_expressions) and all(
            r.matches(name if r.key == "metadata.name" else None) for r in self.match_fields
        )


class PodAffinityTerm(msgspec.Struct, frozen=True, kw_only=True):
    """A required pod (anti-)affinity term. `matchLabelKeys`/`mismatchLabelKeys` are merged into the
    selector from the pod's own labels as the decoder builds the pod (as the API server does)."""

    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()  # still to merge (the decoder's memo holds terms before the merge)
    mismatch_label_keys: tuple[str, ...] = ()


class HostPort(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A container port bound on the node (`hostPort`), as kube-scheduler's HostPortInfo keys it:
    an empty hostIP is 0.0.0.0 (every address) and an empty protocol is TCP."""

    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"

    def conflicts(self, other: HostPort) -> bool:
        """kube-scheduler's HostPortInfo.CheckConflict: same protocol and port, on the same address
        or on 0.0.0.0 on either side."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.ip == other.ip or ANY_IP in (self.ip, other.ip)

    def __str__(self) -> str:
        return f"{self.port}/{self.protocol}" + ("" if self.ip == ANY_IP else f" on {self.ip}")


ANY_IP = "0.0.0.0"


class SpreadConstraint(msgspec.Struct, frozen=True, kw_only=True):
    """A topologySpreadConstraint with whenUnsatisfiable DoNotSchedule (ScheduleAnyway is a score).
    `selector` None matches no pod (a nil labelSelector); `matchLabelKeys` are merged into it from
    the pod's own labels as the decoder builds the pod."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    honor_node_affinity: bool = True  # nodeAffinityPolicy Honor (the default)
    honor_node_taints: bool = False  # nodeTaintsPolicy Honor (default Ignore)
    match_label_keys: tuple[str, ...] = ()  # still to merge


class Node(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    name: str
    uid: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    allocatable: Resources = EMPTY
    created: datetime | None = None


class EphemeralVolume(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A generic ephemeral volume: the ephemeral volume controller makes a claim named
    "<pod>-<volume>" from its template for each pod, so a replacement gets a new claim."""

    name: str
    storage_class: str | None = None  # the template's storageClassName; None: the default class

    def claim_of(self, pod_name: str) -> str:
        return f"{pod_name}-{self.name}"


class PodResourceClaim(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An entry of spec.resourceClaims: it names a ResourceClaim, or a template each pod gets its own claim from."""

    name: str
    claim_name: str = ""
    template_name: str = ""


POD_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})  # a pod that will not run again


class Pod(msgspec.Struct, frozen=True, gc=False):
    """A pod. Fields by keyword; the decoder alone passes them by position, in this order (a call
    with more than 15 keywords builds a dict first: ~1 µs a pod of a 150,000-pod list)."""

    namespace: str
    name: str
    uid: str = ""
    node_name: str = ""
    phase: str = "Pending"
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner: OwnerRef | None = None
    requests: Resources = EMPTY
    limits: Resources = EMPTY
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""
    scheduler_name: str = ""
    qos: QoSClass = "BestEffort"
    created: datetime | None = None
    scheduled_at: datetime | None = None
    deleting: bool = False
    ready: bool = False
    node_selector: dict[str, str] = {}
    required_node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    has_local_storage: bool = False
    has_pvc: bool = False
    host_ports: tuple[HostPort, ...] = ()  # of its containers and sidecar init containers
    spread: tuple[SpreadConstraint, ...] = ()  # DoNotSchedule topology spread constraints
    affinity: tuple[PodAffinityTerm, ...] = ()  # required pod affinity
    # A hard rule of kube-scheduler the core cannot judge for this pod (a field value it does not
    # model), named: such a pod is not moved (scheduling-core.md §2). "" when there is none.
    unjudged: str = ""
    # The PersistentVolumeClaims its `persistentVolumeClaim` volumes name, in its namespace, in the
    # order of its volumes; its generic ephemeral volumes are `ephemeral` (their claims are the pod's own).
    claims: tuple[str, ...] = ()
    ephemeral: tuple[EphemeralVolume, ...] = ()
    resource_claims: tuple[PodResourceClaim, ...] = ()  # spec.resourceClaims (DynamicResources)
    # "namespace/name", derived in __post_init__ (any value passed is replaced): a stored field, not
    # a property, since planning reads it several times per pod per cycle.
    key: str = ""

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "key", f"{self.namespace}/{self.name}")

    @property
    def terminal(self) -> bool:
        return self.phase in POD_TERMINAL_PHASES

    @property
    def is_mirror(self) -> bool:
        return ANNOTATION_MIRROR in self.annotations

    @property
    def is_static(self) -> bool:
        return self.annotations.get(ANNOTATION_CONFIG_SOURCE, "api") != "api"

    @property
    def is_daemonset(self) -> bool:
        return self.owner is not None and self.owner.kind == "DaemonSet"


class Workload(msgspec.Struct, frozen=True, kw_only=True):
    """A pod controller: Deployment, ReplicaSet, StatefulSet, DaemonSet (or another kind)."""

    kind: str
    namespace: str
    name: str
    uid: str = ""
    replicas: int | None = None
    owner: OwnerRef | None = None
    labels: dict[str, str] = {}
    # A Deployment whose rollout starts a new pod before removing an old one and keeps every replica
    # available (descheduler.rollout.starts_first): what a make-before-break move relies on.
    starts_first: bool = False
    # spec.template.spec.nodeName: its pods are created on that node, past the scheduler.
    template_node_name: str = ""


class PodDisruptionBudget(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    selector: LabelSelector | None  # None (nil) matches no pod; an empty selector matches all
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    generation: int = 0
    observed_generation: int = 0
    unhealthy_pod_eviction_policy: str = "IfHealthyBudget"

    def selects(self, pod: Pod) -> bool:
        return self.selector is not None and pod.namespace == self.namespace and self.selector.matches(pod.labels)


class PersistentVolumeClaim(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    volume_name: str = ""  # spec.volumeName: the PersistentVolume it is bound to ("" while unbound)
    phase: str = "Pending"
    # Its StorageClass (the beta annotation, else spec.storageClassName; "" for none), as
    # component-helpers' GetPersistentVolumeClaimClass reads it.
    storage_class: str = ""
    access_modes: tuple[str, ...] = ()
    selected_node: str = ""  # annotation volume.kubernetes.io/selected-node: provisioning for that node

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class PersistentVolume(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    # spec.nodeAffinity.required.nodeSelectorTerms (ORed); None: the volume may be used on any node.
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    # Its zone and region labels (VolumeZone's topologyLabels), the others left out.
    zone_labels: dict[str, str] = {}
    csi_driver: str = ""  # spec.csi.driver
    csi_handle: str = ""  # spec.csi.volumeHandle

    def allows(self, node: Node) -> bool:
        """Whether a pod using this volume may run on the node (VolumeBinding's node affinity check)."""
        terms = self.node_affinity
        return terms is None or any(t.matches(node.name, node.labels) for t in terms)


class StorageClass(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    provisioner: str = ""
    wait_for_first_consumer: bool = False  # volumeBindingMode WaitForFirstConsumer (the API's default: Immediate)
    # allowedTopologies as node selector terms of In requirements (ORed); () allows every node.
    allowed_topologies: tuple[NodeSelectorTerm, ...] = ()
    default: bool = False  # annotated storageclass.kubernetes.io/is-default-class: "true"
    created: datetime | None = None


class CSINode(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # the node's
    limits: dict[str, int] = {}  # driver -> spec.drivers[].allocatable.count, for drivers that set one


class ResourceClaim(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    allocated: bool = False  # status.allocation is set
    # status.allocation.nodeSelector's terms (ORed); None: the devices are usable on every node.
    node_selector: tuple[NodeSelectorTerm, ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class AggregatedUsage(msgspec.Struct, frozen=True, kw_only=True):
    aggregation: str  # avg | p50 | p90 | p95 | p99
    duration_seconds: int
    usage: Resources


class NodeUsage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One node's measured usage as the load source reported it."""

    node: str
    timestamp: datetime
    usage: Resources
    source: str
    window_seconds: int = 0
    report_interval_seconds: int = 0
    system_usage: Resources | None = None
    aggregated: tuple[AggregatedUsage, ...] = ()

    def aggregate(self, aggregation: str, duration_seconds: int | None) -> Resources | None:
        """The aggregate of this type; the one for `duration_seconds` when given, else the longest."""
        found = [a for a in self.aggregated if a.aggregation == aggregation]
        if duration_seconds is not None:
            found = [a for a in found if a.duration_seconds == duration_seconds]
        return max(found, key=lambda a: a.duration_seconds).usage if found else None


class PodUsage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    namespace: str
    name: str
    timestamp: datetime
    usage: Resources
    source: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class ElasticQuota(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    api_group: str
    min: Resources = EMPTY
    max: Resources | None = None  # a key absent from max is unlimited; None: no max at all
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class ReservationOwner(msgspec.Struct, frozen=True, kw_only=True):
    """Matches a pod when every field it sets matches."""

    kind: str = ""
    name: str = ""
    uid: str = ""
    label_selector: LabelSelector | None = None

    def matches(self, pod: Pod) -> bool:
        if self.kind or self.name or self.uid:
            owner = pod.owner
            if owner is None:
                return False
            if (self.kind and owner.kind != self.kind) or (self.name and owner.name != self.name):
                return False
            if self.uid and owner.uid != self.uid:
                return False
        return self.label_selector is None or self.label_selector.matches(pod.labels)


DEFAULT_TTL = timedelta(minutes=5)  # a PodMigrationJob's and a Reservation's spec.ttl when unset


class Reservation(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    node_name: str
    resources: Resources
    owners: tuple[ReservationOwner, ...] = ()
    phase: str = "Pending"
    consumed_by: str = ""
    replaces: PodRef | None = None  # the moved pod whose replacement the room is for
    replacement_first: bool = False  # MakeBeforeBreak: the replacement starts while that pod runs
    expires: datetime | None = None  # creation + spec.ttl: unconsumed room is released then

    @property
    def holds_room(self) -> bool:
        return self.phase in ("Pending", "Available") and not self.consumed_by and bool(self.node_name)

    def past_ttl(self, now: datetime) -> bool:
        """Still holding room at `now` although its TTL has run out (whoever marks it Expired first:
        the migration controller's sweeper or the extender)."""
        return self.holds_room and self.expires is not None and now >= self.expires

    def owned_by(self, pod: Pod) -> bool:
        return any(owner.matches(pod) for owner in self.owners)


class PodRef(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    uid: str = ""


class MigrationJob(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    pod: PodRef
    mode: str = "ReservationFirst"
    target_node: str = ""
    phase: str = "Pending"
    strategy: str = ""
    reason: str = ""
    created: datetime | None = None
    # What arbitration counts (migration.md §5), so the planner does not plan moves it would hold back.
    source_node: str = ""
    workload_uid: str = ""  # the moved pod's controller
    started: datetime | None = None  # admitted: Running since
    evicted: datetime | None = None
    replacement: PodRef | None = None  # status.newPodRef
    # The moved pod's measured usage when planned: its node's metric still holds it for a while
    # after the pod is gone (scheduling-core.md §4).
    pod_usage: Resources = EMPTY

    @property
    def active(self) -> bool:
        return self.phase in ("Pending", "Running")
