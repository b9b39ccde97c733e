"""Decode raw Kubernetes JSON (or YAML-loaded dicts) into the planner's records.

The raw shapes below name only the fields we read; msgspec skips the rest without building
them, which is what makes decoding a 150,000-pod list cheap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from operator import attrgetter
from typing import Any, TypeVar

import msgspec

from descheduler.durations import parse_duration
from descheduler.labels import LabelSelector, Requirement
from descheduler.model import (
    ANNOTATION_CONFIG_SOURCE,
    ANNOTATION_DELETION_COST,
    ANNOTATION_EVICT,
    ANNOTATION_EVICTION_COST,
    ANNOTATION_MIRROR,
    ANNOTATION_OVER_MAX_SINCE,
    ANNOTATION_PREFER_NO_EVICTION,
    ANNOTATION_RAW_ALLOCATABLE,
    ANNOTATION_USAGE_THRESHOLDS,
    ANY_IP,
    DEFAULT_TTL,
    JOB_POD_USAGE_ANNOTATION,
    JOB_SOURCE_NODE_ANNOTATION,
    JOB_WORKLOAD_UID_ANNOTATION,
    AggregatedUsage,
    CSINode,
    ElasticQuota,
    EphemeralVolume,
    HostPort,
    MigrationJob,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeUsage,
    OwnerRef,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PodDisruptionBudget,
    PodRef,
    PodResourceClaim,
    PodUsage,
    QoSClass,
    Reservation,
    ReservationOwner,
    ResourceClaim,
    SpreadConstraint,
    StorageClass,
    Taint,
    Toleration,
    Workload,
)
from descheduler.quantity import QuantityError, to_units
from descheduler.resources import EMPTY, Resources
from descheduler.rollout import starts_first

Quantity = str | int | float
ResourceList = dict[str, Quantity]

# Annotations worth keeping on records; the rest (e.g. last-applied-configuration) is dropped.
_POD_ANNOTATIONS = frozenset(
    {
        ANNOTATION_EVICT,
        ANNOTATION_PREFER_NO_EVICTION,
        ANNOTATION_DELETION_COST,
        ANNOTATION_EVICTION_COST,
        ANNOTATION_MIRROR,
        ANNOTATION_CONFIG_SOURCE,
        "gang.scheduling.koordinator.sh/name",
    }
)
_NODE_ANNOTATIONS = frozenset({ANNOTATION_RAW_ALLOCATABLE, ANNOTATION_USAGE_THRESHOLDS})


class DecodeError(ValueError):
    """A field of an object could not be decoded; `field` is its path inside the object."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class _Raw(msgspec.Struct, rename="camel", kw_only=True, gc=False):
    """Raw API shape: camelCase keys, unknown fields ignored; never in a reference cycle, so not GC-tracked."""


class RawOwnerReference(_Raw):
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class RawMetaFields(_Raw):
    """The metadata both pod shapes (`RawPod`, `RawListedPod`) read alike."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    generation: int = 0
    resource_version: str = ""


class RawObjectMeta(RawMetaFields):
    owner_references: list[RawOwnerReference] | None = None


class RawResourceRequirements(_Raw):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class RawContainerPort(_Raw):
    container_port: int = 0
    host_port: int = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")  # not camel case's "hostIp"


class RawContainer(_Raw):
    name: str = ""
    resources: RawResourceRequirements | None = None
    restart_policy: str | None = None
    ports: list[RawContainerPort] | None = None


class RawToleration(_Raw):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""


class RawNodeSelectorRequirement(_Raw):
    key: str
    operator: str
    values: list[str] | None = None


class RawNodeSelectorTerm(_Raw):
    match_expressions: list[RawNodeSelectorRequirement] | None = None
    match_fields: list[RawNodeSelectorRequirement] | None = None


class RawNodeSelector(_Raw):
    node_selector_terms: list[RawNodeSelectorTerm] = []


class RawNodeAffinity(_Raw):
    required_during_scheduling_ignored_during_execution: RawNodeSelector | None = None


class RawPodAffinityTerm(_Raw):
    label_selector: dict[str, Any] | None = None
    topology_key: str = ""
    namespaces: list[str] | None = None
    namespace_selector: dict[str, Any] | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class RawPodAntiAffinity(_Raw):
    """podAffinity or podAntiAffinity: only the required terms are hard rules."""

    required_during_scheduling_ignored_during_execution: list[RawPodAffinityTerm] | None = None


class RawAffinity(_Raw):
    node_affinity: RawNodeAffinity | None = None
    pod_affinity: RawPodAntiAffinity | None = None
    pod_anti_affinity: RawPodAntiAffinity | None = None


class RawSpreadConstraint(_Raw):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class RawVolume(_Raw):
    name: str = ""
    empty_dir: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None
    persistent_volume_claim: dict[str, Any] | None = None
    ephemeral: dict[str, Any] | None = None
    # Inline disks whose same-disk conflicts VolumeRestrictions checks (not modelled: the pod stays).
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None


class RawPodResourceClaim(_Raw):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class RawSpecFields(_Raw):
    """The pod spec both pod shapes (`RawPod`, `RawListedPod`) read alike."""

    node_name: str = ""
    overhead: ResourceList | None = None
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    scheduler_name: str = ""
    node_selector: dict[str, str] | None = None
    volumes: list[RawVolume] | None = None
    resource_claims: list[RawPodResourceClaim] | None = None


class RawPodSpec(RawSpecFields):
    containers: list[RawContainer] = []
    init_containers: list[RawContainer] | None = None
    affinity: RawAffinity | None = None
    tolerations: list[RawToleration] | None = None
    topology_spread_constraints: list[RawSpreadConstraint] | None = None


class RawCondition(_Raw):
    type: str
    status: str = ""
    last_transition_time: datetime | None = None


class RawPodStatus(_Raw):
    phase: str = ""
    conditions: list[RawCondition] | None = None


class RawPod(_Raw):
    metadata: RawObjectMeta
    spec: RawPodSpec = msgspec.field(default_factory=RawPodSpec)
    status: RawPodStatus = msgspec.field(default_factory=RawPodStatus)


class RawNamespace(_Raw):
    metadata: RawObjectMeta = msgspec.field(default_factory=RawObjectMeta)


class RawTaint(_Raw):
    key: str
    value: str = ""
    effect: str = ""


class RawNodeSpec(_Raw):
    unschedulable: bool = False
    taints: list[RawTaint] | None = None


class RawNodeStatus(_Raw):
    allocatable: ResourceList | None = None
    capacity: ResourceList | None = None
    conditions: list[RawCondition] | None = None


class RawNode(_Raw):
    metadata: RawObjectMeta
    spec: RawNodeSpec = msgspec.field(default_factory=RawNodeSpec)
    status: RawNodeStatus = msgspec.field(default_factory=RawNodeStatus)


class RawTemplateSpec(_Raw):
    node_name: str = ""


class RawPodTemplate(_Raw):
    spec: RawTemplateSpec | None = None


class RawWorkloadSpec(_Raw):
    replicas: int | None = None
    template: RawPodTemplate | None = None
    strategy: dict[str, Any] | None = None  # a Deployment's
    paused: bool = False


class RawWorkload(_Raw):
    metadata: RawObjectMeta
    spec: RawWorkloadSpec = msgspec.field(default_factory=RawWorkloadSpec)


class RawPDBSpec(_Raw):
    selector: dict[str, Any] | None = None
    unhealthy_pod_eviction_policy: str | None = None


class RawPDBStatus(_Raw):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    observed_generation: int = 0


class RawPDB(_Raw):
    metadata: RawObjectMeta
    spec: RawPDBSpec = msgspec.field(default_factory=RawPDBSpec)
    status: RawPDBStatus = msgspec.field(default_factory=RawPDBStatus)


class RawPVCSpec(_Raw):
    volume_name: str = ""
    storage_class_name: str | None = None
    access_modes: list[str] | None = None


class RawPVCStatus(_Raw):
    phase: str = ""


class RawPVC(_Raw):
    metadata: RawObjectMeta
    spec: RawPVCSpec = msgspec.field(default_factory=RawPVCSpec)
    status: RawPVCStatus = msgspec.field(default_factory=RawPVCStatus)


class RawVolumeNodeAffinity(_Raw):
    required: RawNodeSelector | None = None


class RawCSIVolumeSource(_Raw):
    driver: str = ""
    volume_handle: str = ""


class RawPVSpec(_Raw):
    node_affinity: RawVolumeNodeAffinity | None = None
    csi: RawCSIVolumeSource | None = None


class RawPV(_Raw):
    metadata: RawObjectMeta
    spec: RawPVSpec = msgspec.field(default_factory=RawPVSpec)


class RawTopologyRequirement(_Raw):
    key: str = ""
    values: list[str] | None = None


class RawTopologyTerm(_Raw):
    match_label_expressions: list[RawTopologyRequirement] | None = None


class RawStorageClass(_Raw):
    metadata: RawObjectMeta
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[RawTopologyTerm] | None = None


class RawVolumeNodeResources(_Raw):
    count: int | None = None


class RawCSINodeDriver(_Raw):
    name: str = ""
    allocatable: RawVolumeNodeResources | None = None


class RawCSINodeSpec(_Raw):
    drivers: list[RawCSINodeDriver] | None = None


class RawCSINode(_Raw):
    metadata: RawObjectMeta
    spec: RawCSINodeSpec = msgspec.field(default_factory=RawCSINodeSpec)


class RawAllocationResult(_Raw):
    node_selector: RawNodeSelector | None = None


class RawResourceClaimStatus(_Raw):
    allocation: RawAllocationResult | None = None


class RawResourceClaim(_Raw):
    metadata: RawObjectMeta
    status: RawResourceClaimStatus = msgspec.field(default_factory=RawResourceClaimStatus)


class RawContainerMetrics(_Raw):
    name: str = ""
    usage: ResourceList | None = None


class RawNodeMetrics(_Raw):
    """metrics.k8s.io/v1beta1 NodeMetrics."""

    metadata: RawObjectMeta
    timestamp: datetime
    window: str = ""
    usage: ResourceList | None = None


class RawPodMetrics(_Raw):
    """metrics.k8s.io/v1beta1 PodMetrics."""

    metadata: RawObjectMeta
    timestamp: datetime
    window: str = ""
    containers: list[RawContainerMetrics] | None = None


class RawResourceMap(_Raw):
    resources: ResourceList | None = None


class RawAggregatedUsage(_Raw):
    duration: str = ""
    usage: dict[str, RawResourceMap] | None = None


class RawKoordNodeMetricInfo(_Raw):
    node_usage: RawResourceMap | None = None
    system_usage: RawResourceMap | None = None
    aggregated_node_usages: list[RawAggregatedUsage] | None = None


class RawKoordPodMetricInfo(_Raw):
    namespace: str = ""
    name: str = ""
    pod_usage: RawResourceMap | None = None


class RawKoordNodeMetricStatus(_Raw):
    update_time: datetime | None = None
    node_metric: RawKoordNodeMetricInfo | None = None
    pods_metric: list[RawKoordPodMetricInfo] | None = None


class RawKoordCollectPolicy(_Raw):
    report_interval_seconds: int | None = None
    aggregate_duration_seconds: int | None = None


class RawKoordNodeMetricSpec(_Raw):
    metric_collect_policy: RawKoordCollectPolicy | None = None


class RawKoordNodeMetric(_Raw):
    """slo.koordinator.sh/v1alpha1 NodeMetric."""

    metadata: RawObjectMeta
    spec: RawKoordNodeMetricSpec = msgspec.field(default_factory=RawKoordNodeMetricSpec)
    status: RawKoordNodeMetricStatus = msgspec.field(default_factory=RawKoordNodeMetricStatus)


class RawElasticQuotaSpec(_Raw):
    min: ResourceList | None = None
    max: ResourceList | None = None


class RawElasticQuota(_Raw):
    metadata: RawObjectMeta
    spec: RawElasticQuotaSpec = msgspec.field(default_factory=RawElasticQuotaSpec)


class RawReservationOwnerController(_Raw):
    kind: str = ""
    name: str = ""
    uid: str = ""


class RawReservationOwner(_Raw):
    controller: RawReservationOwnerController | None = None
    label_selector: dict[str, Any] | None = None


class RawReservationSpec(_Raw):
    node_name: str = ""
    resources: ResourceList | None = None
    owners: list[RawReservationOwner] | None = None
    replaces: RawPodRef | None = None
    replacement_first: bool = False
    ttl: str | int | None = None


class RawReservationStatus(_Raw):
    phase: str = "Pending"
    consumed_by: str = ""


class RawReservation(_Raw):
    metadata: RawObjectMeta
    spec: RawReservationSpec = msgspec.field(default_factory=RawReservationSpec)
    status: RawReservationStatus = msgspec.field(default_factory=RawReservationStatus)


class RawPodRef(_Raw):
    namespace: str = ""
    name: str = ""
    uid: str = ""


class RawMigrationJobSpec(_Raw):
    pod_ref: RawPodRef = msgspec.field(default_factory=RawPodRef)
    mode: str = "ReservationFirst"
    target_node: str = ""
    strategy: str = ""
    reason: str = ""


class RawWorkloadRef(_Raw):
    kind: str = ""
    name: str = ""
    uid: str = ""


class RawMigrationJobStatus(_Raw):
    phase: str = "Pending"
    source_node: str = ""
    workload: RawWorkloadRef | None = None
    start_time: datetime | None = None
    conditions: list[RawCondition] | None = None
    new_pod_ref: RawPodRef | None = None


class RawMigrationJob(_Raw):
    metadata: RawObjectMeta
    spec: RawMigrationJobSpec = msgspec.field(default_factory=RawMigrationJobSpec)
    status: RawMigrationJobStatus = msgspec.field(default_factory=RawMigrationJobStatus)


# --- helpers -------------------------------------------------------------------------------

RawT = TypeVar("RawT", bound=_Raw)
T = TypeVar("T")


def convert(obj: Mapping[str, Any], raw_type: type[RawT]) -> RawT:
    """Convert a loaded dict into a raw shape; errors name the field path."""
    try:
        return msgspec.convert(obj, raw_type)
    except msgspec.ValidationError as exc:
        raise _field_error(exc) from None


def decode_json(decoder: msgspec.json.Decoder[RawT], text: bytes | msgspec.Raw) -> RawT:
    """Decode one object's JSON text into a raw shape; errors name the field path, as `convert`'s do."""
    try:
        return decoder.decode(text)
    except msgspec.ValidationError as exc:
        raise _field_error(exc) from None


def _field_error(exc: msgspec.ValidationError) -> DecodeError:
    message, _, path = str(exc).partition(" - at `$")
    return DecodeError(path.rstrip("`").lstrip("."), message)


def resources(raw: Mapping[str, Quantity] | None, field: str) -> Resources:
    if not raw:
        return EMPTY
    out: dict[str, int] = {}
    for name, value in raw.items():
        try:
            out[name] = to_units(name, value)
        except QuantityError as exc:
            raise DecodeError(f"{field}.{name}", str(exc)) from None
    return Resources(out)


def _selector(raw: Mapping[str, Any] | None, field: str) -> LabelSelector | None:
    if raw is None:
        return None
    try:
        return LabelSelector.from_dict(raw, field)
    except ValueError as exc:
        raise DecodeError("", str(exc)) from None


def _controller(meta: RawObjectMeta) -> OwnerRef | None:
    return _controller_of(meta.owner_references)


def _controller_of(references: list[RawOwnerReference] | None) -> OwnerRef | None:
    for ref in references or ():
        if ref.controller:
            return OwnerRef(kind=ref.kind, name=ref.name, uid=ref.uid, controller=True)
    return None


def _keep(annotations: dict[str, str] | None, keys: frozenset[str]) -> dict[str, str]:
    if not annotations or keys.isdisjoint(annotations):  # most pods: none kept (a C-level check)
        return {}
    return {k: v for k, v in annotations.items() if k in keys}


def _seconds(duration: str) -> int:
    """A Go duration ("5m0s", "30s", "1h") in whole seconds; 0 when empty or unparsable."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    total, number = 0.0, ""
    i = 0
    while i < len(duration):
        ch = duration[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = duration[i : i + 2] if duration[i : i + 2] in units else ch
        if unit not in units or not number:
            return 0
        total += float(number) * units[unit]
        number = ""
        i += len(unit)
    return int(total) if not number else int(float(number))


# --- pods ----------------------------------------------------------------------------------


def _units(raw: Mapping[str, Quantity] | None, field: str) -> dict[str, int]:
    """A ResourceList as a plain dict of integer units, zeros dropped (the hot path builds no Resources)."""
    if not raw:
        return {}
    out: dict[str, int] = {}
    try:
        for name, value in raw.items():
            units = to_units(name, value)
            if units:
                out[name] = units
    except QuantityError as exc:
        raise DecodeError(f"{field}.{name}", str(exc)) from None
    return out


def _container_resources(c: RawContainer, group: str, index: int) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits); a limit without a request defaults the request, as the API server does.

    The field path (`spec.<group>[<index>]…`) is only spelled out for an error message."""
    res = c.resources
    if res is None:
        return {}, {}
    try:
        limits = _units(res.limits, "limits")
        requests = _units(res.requests, "requests")
    except DecodeError as exc:
        raise DecodeError(f"spec.{group}[{index}].resources.{exc.field}", exc.message) from None
    for name, units in limits.items():
        if name not in requests:
            requests[name] = units
    return requests, limits


def _add_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, units in other.items():
        total[name] = total.get(name, 0) + units


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, units in other.items():
        if units > total.get(name, 0):
            total[name] = units


def pod_resources(spec: RawPodSpec) -> tuple[Resources, Resources, QoSClass]:
    """Effective pod requests and limits by the Kubernetes rule, and the QoS class.

    Per resource: max(sum of app containers + sidecars, largest init container + the sidecars
    started before it) + overhead. Sidecars are init containers with restartPolicy Always.
    Summed in plain dicts: this runs once per pod of every list and watch event.
    """
    return _resources_of(spec.containers, spec.init_containers, spec.overhead)


def _resources_of(
    containers: list[RawContainer], init_containers: list[RawContainer] | None, overhead_raw: ResourceList | None
) -> tuple[Resources, Resources, QoSClass]:
    """`pod_resources` of a spec's parts."""
    if len(containers) == 1 and not init_containers and not overhead_raw:
        # Most pods: one container, whose dicts are fresh and ours (nothing to sum).
        req, lim = _container_resources(containers[0], "containers", 0)
        return Resources.adopt(req), Resources.adopt(lim), _qos([(req, lim)])
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    qos_parts: list[tuple[dict[str, int], dict[str, int]]] = []
    for i, c in enumerate(containers):
        req, lim = _container_resources(c, "containers", i)
        _add_into(requests, req)
        _add_into(limits, lim)
        qos_parts.append((req, lim))
    if init_containers:
        sidecar_req: dict[str, int] = {}
        sidecar_lim: dict[str, int] = {}
        init_req: dict[str, int] = {}
        init_lim: dict[str, int] = {}
        for i, c in enumerate(init_containers):
            req, lim = _container_resources(c, "initContainers", i)
            qos_parts.append((req, lim))
            if c.restart_policy == "Always":
                _add_into(sidecar_req, req)
                _add_into(sidecar_lim, lim)
                _max_into(init_req, sidecar_req)
                _max_into(init_lim, sidecar_lim)
            else:
                step_req, step_lim = dict(sidecar_req), dict(sidecar_lim)
                _add_into(step_req, req)
                _add_into(step_lim, lim)
                _max_into(init_req, step_req)
                _max_into(init_lim, step_lim)
        _add_into(requests, sidecar_req)
        _add_into(limits, sidecar_lim)
        _max_into(requests, init_req)
        _max_into(limits, init_lim)
    if overhead_raw:
        overhead = _units(overhead_raw, "spec.overhead")
        _add_into(requests, overhead)
        # Overhead is added to limits only for resources that have a limit (Kubernetes rule).
        _add_into(limits, {k: v for k, v in overhead.items() if k in limits})
    # Both dicts are ours and hold only positive units (zeros are dropped as they are read).
    return Resources.adopt(requests), Resources.adopt(limits), _qos(qos_parts)


def _qos(parts: list[tuple[dict[str, int], dict[str, int]]]) -> QoSClass:
    """Kubernetes GetPodQOS over cpu and memory."""
    any_set = False
    guaranteed = True
    for requests, limits in parts:
        for name in ("cpu", "memory"):
            request, limit = requests.get(name, 0), limits.get(name, 0)
            if request or limit:
                any_set = True
            if not limit or request != limit:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _node_affinity(affinity: RawAffinity | None) -> tuple[NodeSelectorTerm, ...] | None:
    if affinity is None or affinity.node_affinity is None:
        return None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return None
    return _selector_terms(required, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")


def _selector_terms(required: RawNodeSelector, field: str) -> tuple[NodeSelectorTerm, ...]:
    """A NodeSelector's terms; `field` names the selector in errors."""
    return tuple(
        NodeSelectorTerm(
            match_expressions=_requirements(t.match_expressions, f"{field}.nodeSelectorTerms[{i}]"),
            match_fields=_requirements(t.match_fields, f"{field}.nodeSelectorTerms[{i}]"),
        )
        for i, t in enumerate(required.node_selector_terms)
    )


_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _requirements(raw: list[RawNodeSelectorRequirement] | None, field: str) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for r in raw or ():
        if r.operator not in _NODE_OPERATORS:
            raise DecodeError(f"{field}.operator", f"{r.operator!r} is not one of {', '.join(_NODE_OPERATORS)}")
        out.append(NodeSelectorRequirement(key=r.key, operator=r.operator, values=tuple(r.values or ())))  # type: ignore[arg-type]
    return tuple(out)


def _anti_affinity(affinity: RawAffinity | None) -> tuple[PodAffinityTerm, ...]:
    if affinity is None or affinity.pod_anti_affinity is None:
        return ()
    return _pod_terms(affinity.pod_anti_affinity, "spec.affinity.podAntiAffinity")


def _pod_affinity(affinity: RawAffinity | None) -> tuple[PodAffinityTerm, ...]:
    if affinity is None or affinity.pod_affinity is None:
        return ()
    return _pod_terms(affinity.pod_affinity, "spec.affinity.podAffinity")


def _pod_terms(raw: RawPodAntiAffinity, where: str) -> tuple[PodAffinityTerm, ...]:
    terms = raw.required_during_scheduling_ignored_during_execution or ()
    field = f"{where}.requiredDuringSchedulingIgnoredDuringExecution"
    return tuple(
        PodAffinityTerm(
            label_selector=_selector(t.label_selector, f"{field}[{i}].labelSelector"),
            topology_key=t.topology_key,
            namespaces=tuple(t.namespaces or ()),
            namespace_selector=_selector(t.namespace_selector, f"{field}[{i}].namespaceSelector"),
            match_label_keys=tuple(t.match_label_keys or ()),
            mismatch_label_keys=tuple(t.mismatch_label_keys or ()),
        )
        for i, t in enumerate(terms)
    )


def _with_label_keys(
    selector: LabelSelector | None, labels: Mapping[str, str], match: tuple[str, ...], mismatch: tuple[str, ...] = ()
) -> LabelSelector | None:
    """`matchLabelKeys` as `key In (the pod's value)`, `mismatchLabelKeys` as `key NotIn (…)`, ANDed
    into the selector; a key the pod has no label for is ignored (the API server's merge for pod
    affinity, podtopologyspread/common.go mergeLabelSetWithSelector for spread; merging twice
    changes nothing). A nil selector stays nil: it matches no pod."""
    extra = [Requirement(k, "In", (labels[k],)) for k in match if k in labels]
    extra += [Requirement(k, "NotIn", (labels[k],)) for k in mismatch if k in labels]
    if selector is None or not extra:
        return selector
    return LabelSelector(selector.match_labels, (*selector.match_expressions, *extra))


def _merged_terms(terms: tuple[PodAffinityTerm, ...], labels: Mapping[str, str]) -> tuple[PodAffinityTerm, ...]:
    if not any(t.match_label_keys or t.mismatch_label_keys for t in terms):
        return terms
    return tuple(
        msgspec.structs.replace(
            t,
            label_selector=_with_label_keys(t.label_selector, labels, t.match_label_keys, t.mismatch_label_keys),
            match_label_keys=(),
            mismatch_label_keys=(),
        )
        for t in terms
    )


_POLICIES = ("Honor", "Ignore")


def _spread(raw: list[RawSpreadConstraint] | None) -> tuple[tuple[SpreadConstraint, ...], str]:
    """The DoNotSchedule constraints (ScheduleAnyway only scores), and the first one whose field
    values the core does not model, named ("" when none): that pod is not moved, never guessed at."""
    out: list[SpreadConstraint] = []
    unjudged = ""
    for i, c in enumerate(raw or ()):
        if c.when_unsatisfiable == "ScheduleAnyway":
            continue
        field = f"spec.topologySpreadConstraints[{i}]"
        problem = ""
        if c.when_unsatisfiable != "DoNotSchedule":
            problem = f"whenUnsatisfiable {c.when_unsatisfiable!r}"
        elif c.node_affinity_policy not in (None, *_POLICIES):
            problem = f"nodeAffinityPolicy {c.node_affinity_policy!r}"
        elif c.node_taints_policy not in (None, *_POLICIES):
            problem = f"nodeTaintsPolicy {c.node_taints_policy!r}"
        elif c.max_skew < 1 or not c.topology_key or (c.min_domains is not None and c.min_domains < 1):
            problem = f"maxSkew {c.max_skew}, topologyKey {c.topology_key!r}, minDomains {c.min_domains}"
        if problem:
            unjudged = unjudged or f"PodTopologySpread: {field} {problem}"
            continue
        out.append(
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=_selector(c.label_selector, f"{field}.labelSelector"),
                min_domains=c.min_domains or 1,
                honor_node_affinity=c.node_affinity_policy != "Ignore",
                honor_node_taints=c.node_taints_policy == "Honor",
                match_label_keys=tuple(c.match_label_keys or ()),
            )
        )
    return tuple(out), unjudged


def _merged_spread(spread: tuple[SpreadConstraint, ...], labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    if not any(c.match_label_keys for c in spread):
        return spread
    return tuple(
        msgspec.structs.replace(
            c, selector=_with_label_keys(c.selector, labels, c.match_label_keys), match_label_keys=()
        )
        for c in spread
    )


def _host_ports(raw: list[RawContainerPort] | None) -> tuple[HostPort, ...]:
    """The ports of one container bound on the node; empty hostIP and protocol as kube-scheduler's
    HostPortInfo sanitizes them (0.0.0.0, TCP)."""
    return tuple(
        HostPort(port=p.host_port, protocol=p.protocol or "TCP", ip=p.host_ip or ANY_IP)
        for p in raw or ()
        if p.host_port > 0
    )


def pod_host_ports(containers: list[RawContainer], init_containers: list[RawContainer] | None) -> tuple[HostPort, ...]:
    """kube-scheduler's GetHostPorts (pkg/scheduler/util/utils.go, read by NodePorts in
    framework/plugins/nodeports/node_ports.go): the app containers' host ports and those of init
    containers with restartPolicy Always, which run for the pod's whole life."""
    out: list[HostPort] = []
    for c in init_containers or ():
        if c.restart_policy == "Always":
            out.extend(_host_ports(c.ports))
    for c in containers:
        if c.ports:
            out.extend(_host_ports(c.ports))
    return tuple(out)


def _tolerations(raw: list[RawToleration] | None) -> tuple[Toleration, ...]:
    if not raw:
        return ()
    return tuple(Toleration(key=t.key, operator=t.operator or "Equal", value=t.value, effect=t.effect) for t in raw)


def _conditions(raw: list[RawCondition] | None) -> tuple[datetime | None, bool]:
    """(when the pod was scheduled, whether it is ready) by its conditions."""
    scheduled_at = None
    ready = False
    for cond in raw or ():
        if cond.status == "True":
            if cond.type == "PodScheduled":
                scheduled_at = cond.last_transition_time
            elif cond.type == "Ready":
                ready = True
    return scheduled_at, ready


def pod_from_raw(raw: RawPod) -> Pod:
    spec = raw.spec
    requests, limits, qos = pod_resources(spec)
    affinity = spec.affinity
    # Evaluated in this order, so a pod with several bad fields is named by the same one each time.
    node_affinity = _node_affinity(affinity)
    anti_affinity = _anti_affinity(affinity)
    pod_affinity = _pod_affinity(affinity)
    spread = _spread(spec.topology_spread_constraints)
    return _pod(
        raw.metadata,
        spec,
        raw.status.phase,
        _conditions(raw.status.conditions),
        (requests, limits, qos),
        _controller(raw.metadata),
        node_affinity,
        anti_affinity,
        _tolerations(spec.tolerations),
        (pod_affinity, pod_host_ports(spec.containers, spec.init_containers), *spread),
    )


# (required pod affinity, host ports, spread constraints, the rule the core cannot judge)
PodRules = tuple[tuple[PodAffinityTerm, ...], tuple[HostPort, ...], tuple[SpreadConstraint, ...], str]
_NO_RULES: PodRules = ((), (), (), "")


def _pod(
    meta: RawMetaFields,
    spec: RawSpecFields,
    phase: str,
    conditions: tuple[datetime | None, bool],
    resources: tuple[Resources, Resources, QoSClass],
    owner: OwnerRef | None,
    node_affinity: tuple[NodeSelectorTerm, ...] | None,
    anti_affinity: tuple[PodAffinityTerm, ...],
    tolerations: tuple[Toleration, ...],
    rules: PodRules = _NO_RULES,
) -> Pod:
    """The record from the parts both pod shapes decode alike and the parts decoded already;
    `rules`: (required pod affinity, host ports, spread constraints, what is unjudged)."""
    local_storage = pvc = False
    claims: tuple[str, ...] = ()
    ephemeral: tuple[EphemeralVolume, ...] = ()
    inline_disk = ""
    for volume in spec.volumes or ():  # one loop, not two any() generators: most pods have a volume
        if volume.empty_dir is not None or volume.host_path is not None:
            local_storage = True
        claim = volume.persistent_volume_claim
        if claim is not None:
            pvc = True
            claim_name = claim.get("claimName")
            if isinstance(claim_name, str) and claim_name:
                claims += (claim_name,)
        elif volume.ephemeral is not None:
            pvc = True
            ephemeral += (_ephemeral(volume.name, volume.ephemeral),)
        elif not inline_disk:
            inline_disk = _inline_disk(volume)
    requests, limits, qos = resources
    scheduled_at, ready = conditions
    annotations = meta.annotations  # most pods: none kept, told without a call
    kept = {} if not annotations or _POD_ANNOTATIONS.isdisjoint(annotations) else _keep(annotations, _POD_ANNOTATIONS)
    labels = meta.labels or {}
    pod_affinity, host_ports, spread, unjudged = rules
    if inline_disk and not unjudged:
        unjudged = f"VolumeRestrictions: inline {inline_disk} (same-disk conflicts are not modelled)"
    resource_claims = _resource_claims(spec.resource_claims) if spec.resource_claims else ()
    if anti_affinity:
        anti_affinity = _merged_terms(anti_affinity, labels)
    if pod_affinity:
        pod_affinity = _merged_terms(pod_affinity, labels)
    if spread:
        spread = _merged_spread(spread, labels)
    # By position (see Pod): tests/kube/test_listed_pod_decode.py checks this order against Pod's fields.
    return Pod(
        meta.namespace or "default",  # namespace
        meta.name,  # name
        meta.uid,  # uid
        spec.node_name,  # node_name
        phase or ("Running" if spec.node_name else "Pending"),  # phase
        labels,  # labels
        kept,  # annotations
        owner,  # owner
        requests,  # requests
        limits,  # limits
        spec.priority,  # priority
        spec.priority_class_name,  # priority_class_name
        spec.preemption_policy or "",  # preemption_policy
        spec.scheduler_name,  # scheduler_name
        qos,  # qos
        meta.creation_timestamp,  # created
        scheduled_at,  # scheduled_at
        meta.deletion_timestamp is not None,  # deleting
        ready,  # ready
        spec.node_selector or {},  # node_selector
        node_affinity,  # required_node_affinity
        anti_affinity,  # anti_affinity
        tolerations,  # tolerations
        local_storage,  # has_local_storage
        pvc,  # has_pvc
        host_ports,  # host_ports
        spread,  # spread
        pod_affinity,  # affinity
        unjudged,  # unjudged
        claims,  # claims
        ephemeral,  # ephemeral
        resource_claims,  # resource_claims
    )


_INLINE_DISKS = (
    ("gce_persistent_disk", "gcePersistentDisk"),
    ("aws_elastic_block_store", "awsElasticBlockStore"),
    ("rbd", "rbd"),
    ("iscsi", "iscsi"),
)


def _inline_disk(volume: RawVolume) -> str:
    """ "<kind> volume <name>" for an inline disk VolumeRestrictions checks for same-disk conflicts, else ""."""
    for attribute, kind in _INLINE_DISKS:
        if getattr(volume, attribute) is not None:
            return f"{kind} volume {volume.name}"
    return ""


def _ephemeral(name: str, source: dict[str, Any]) -> EphemeralVolume:
    """A generic ephemeral volume and the StorageClass its claim template names (None: the default)."""
    template = source.get("volumeClaimTemplate")
    spec = template.get("spec") if isinstance(template, dict) else None
    storage_class = spec.get("storageClassName") if isinstance(spec, dict) else None
    return EphemeralVolume(name=name, storage_class=storage_class if isinstance(storage_class, str) else None)


def _resource_claims(raw: list[RawPodResourceClaim]) -> tuple[PodResourceClaim, ...]:
    return tuple(
        PodResourceClaim(
            name=c.name,
            claim_name=c.resource_claim_name or "",
            template_name=c.resource_claim_template_name or "",
        )
        for c in raw
    )


# --- pods as the cache lists and watches them ----------------------------------------------
#
# The pods of one workload share their containers' resources, owner, tolerations and affinity
# (not their containers as a whole: each mounts its own service-account token volume). The
# cache's shape keeps those parts as raw JSON text, and each is decoded once per distinct text,
# not once per pod: the records for a text are remembered (the memos below). Any part that does not fit
# its typed shape raises `Refit`, and the caller decodes the object again as a `RawPod`, so a bad
# object is named exactly as `pod_from_raw` names it.
#
# The status conditions are raw text too, although pods share them less (each condition's time is
# when that pod got there): of some five conditions, each a struct of two strings and a datetime,
# the record keeps one time and one flag. Read lazily, a pod's conditions cost less than decoded
# eagerly even when no other pod has the same text (measured at 150,000 pods), and far less when one has.

_NULL = msgspec.Raw(b"null")
_MEMO_LIMIT = 8192  # distinct texts remembered per part; past it a memo starts afresh
_UNSEEN = object()
# (required node affinity, required pod anti-affinity, required pod affinity)
Affinities = tuple[tuple[NodeSelectorTerm, ...] | None, tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...]]
_NO_AFFINITY: Affinities = (None, (), ())


class Refit(Exception):
    """The object does not fit the cache's fast shape: decode it as the kind's full raw shape."""


class RawListedPodMeta(RawMetaFields):
    """RawObjectMeta with ownerReferences as raw text."""

    owner_references: msgspec.Raw = _NULL


class RawListedContainer(_Raw):
    """RawContainer with its resources and ports as raw text."""

    name: str = ""
    resources: msgspec.Raw = _NULL
    restart_policy: str | None = None
    ports: msgspec.Raw = _NULL


class RawListedPodSpec(RawSpecFields):
    """RawPodSpec with the containers' resources, affinity and tolerations as raw text."""

    containers: list[RawListedContainer] = []
    init_containers: list[RawListedContainer] | None = None
    affinity: msgspec.Raw = _NULL
    tolerations: msgspec.Raw = _NULL
    topology_spread_constraints: msgspec.Raw = _NULL


class RawListedPodStatus(_Raw):
    """RawPodStatus with the conditions as raw text."""

    phase: str = ""
    conditions: msgspec.Raw = _NULL


class RawListedPod(_Raw):
    """A pod in the cache's shape (`pod_from_listed`)."""

    metadata: RawListedPodMeta
    spec: RawListedPodSpec = msgspec.field(default_factory=RawListedPodSpec)
    status: RawListedPodStatus = msgspec.field(default_factory=RawListedPodStatus)


_RESOURCES = msgspec.json.Decoder(RawResourceRequirements | None)
_RESOURCES_TEXT = attrgetter("resources")
_PAIR = b"\0".join
_OWNER_REFERENCES = msgspec.json.Decoder(list[RawOwnerReference] | None)
_AFFINITY = msgspec.json.Decoder(RawAffinity | None)
_TOLERATIONS = msgspec.json.Decoder(list[RawToleration] | None)
_CONDITIONS = msgspec.json.Decoder(list[RawCondition] | None)
_PORTS = msgspec.json.Decoder(list[RawContainerPort] | None)
_SPREAD = msgspec.json.Decoder(list[RawSpreadConstraint] | None)

_resources_memo: dict[Any, tuple[Resources, Resources, QoSClass]] = {}
_owner_memo: dict[bytes, OwnerRef | None] = {}
_affinity_memo: dict[bytes, Affinities] = {}
_ports_memo: dict[bytes, tuple[HostPort, ...]] = {}
_spread_memo: dict[bytes, tuple[tuple[SpreadConstraint, ...], str]] = {}
_tolerations_memo: dict[bytes, tuple[Toleration, ...]] = {}
_conditions_memo: dict[bytes, tuple[datetime | None, bool]] = {}
_NO_CONDITIONS: tuple[datetime | None, bool] = (None, False)
# (required pod affinity, host ports, spread constraints, the rule the core cannot judge)


def _typed(decoder: msgspec.json.Decoder[T], raw: msgspec.Raw) -> T:
    try:
        return decoder.decode(raw)
    except msgspec.MsgspecError:
        raise Refit from None


def _remember(memo: dict[Any, T], key: Any, value: T) -> T:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


def _container(listed: RawListedContainer) -> RawContainer:
    return RawContainer(
        name=listed.name, resources=_typed(_RESOURCES, listed.resources), restart_policy=listed.restart_policy
    )


def pod_from_listed(raw: RawListedPod) -> Pod:
    """`pod_from_raw` of the same object, in the cache's shape; raises Refit when a raw part does not fit."""
    meta, spec = raw.metadata, raw.spec
    # First every raw part is read (a part that does not fit must win over a DecodeError, as in
    # `RawPod`, whose typed decode comes first); then what may raise DecodeError, in pod_from_raw's order.
    containers: list[RawContainer] = []
    init_containers: list[RawContainer] | None = None
    overhead = spec.overhead
    listed, listed_init = spec.containers, spec.init_containers
    count = len(listed)
    if count == 1 and listed_init is None:  # most pods
        resources_key: Any = bytes(listed[0].resources)
    elif count == 2 and listed_init is None:
        # A container and its sidecar: both texts in one copy, apart by a NUL (which no JSON text
        # holds outside a string, and a raw part ends outside one), not the general key below.
        resources_key = _PAIR((listed[0].resources, listed[1].resources))
    else:
        resources_key = (
            tuple(map(bytes, map(_RESOURCES_TEXT, listed))),
            None if listed_init is None else tuple((bytes(c.resources), c.restart_policy) for c in listed_init),
        )
    resources = None if overhead else _resources_memo.get(resources_key)
    if resources is None:
        containers = [_container(c) for c in listed]
        init_containers = None if listed_init is None else [_container(c) for c in listed_init]
    # An absent part is the default object itself: no text to look up.
    owner: OwnerRef | None = None
    if meta.owner_references is not _NULL:
        owner_key = bytes(meta.owner_references)
        found = _owner_memo.get(owner_key, _UNSEEN)
        if found is _UNSEEN:
            references = _typed(_OWNER_REFERENCES, meta.owner_references)
            owner = _remember(_owner_memo, owner_key, _controller_of(references))
        else:
            owner = found  # type: ignore[assignment]
    tolerations: tuple[Toleration, ...] = ()
    if spec.tolerations is not _NULL:
        tolerations_key = bytes(spec.tolerations)
        remembered = _tolerations_memo.get(tolerations_key)
        if remembered is None:
            raw_tolerations = _typed(_TOLERATIONS, spec.tolerations)
            tolerations = _remember(_tolerations_memo, tolerations_key, _tolerations(raw_tolerations))
        else:
            tolerations = remembered
    conditions = _NO_CONDITIONS
    status = raw.status
    if status.conditions is not _NULL:
        conditions_key = bytes(status.conditions)
        conditions = _conditions_memo.get(conditions_key)  # type: ignore[assignment]
        if conditions is None:
            raw_conditions = _typed(_CONDITIONS, status.conditions)
            conditions = _remember(_conditions_memo, conditions_key, _conditions(raw_conditions))
    affinity = _NO_AFFINITY
    raw_affinity = None
    if spec.affinity is not _NULL:
        affinity_key = bytes(spec.affinity)
        affinity = _affinity_memo.get(affinity_key)  # type: ignore[assignment]
        if affinity is None:
            raw_affinity = _typed(_AFFINITY, spec.affinity)
    host_ports = _listed_host_ports(listed, listed_init)
    spread: tuple[tuple[SpreadConstraint, ...], str] = ((), "")
    if spec.topology_spread_constraints is not _NULL:
        spread_key = bytes(spec.topology_spread_constraints)
        spread = _spread_memo.get(spread_key)  # type: ignore[assignment]
        if spread is None:
            raw_spread = _typed(_SPREAD, spec.topology_spread_constraints)
    if resources is None:
        resources = _resources_of(containers, init_containers, overhead)
        if not overhead:
            _remember(_resources_memo, resources_key, resources)
    if affinity is None:
        node_affinity = _node_affinity(raw_affinity)
        anti_affinity = _anti_affinity(raw_affinity)
        affinity = _remember(_affinity_memo, affinity_key, (node_affinity, anti_affinity, _pod_affinity(raw_affinity)))
    if spread is None:
        spread = _remember(_spread_memo, spread_key, _spread(raw_spread))
    rules = (affinity[2], host_ports, *spread)
    return _pod(meta, spec, status.phase, conditions, resources, owner, affinity[0], affinity[1], tolerations, rules)


def _listed_host_ports(
    listed: list[RawListedContainer], listed_init: list[RawListedContainer] | None
) -> tuple[HostPort, ...]:
    """`pod_host_ports` of the cache's shape, each container's ports text decoded once."""
    out: tuple[HostPort, ...] = ()
    for c in (*(c for c in listed_init or () if c.restart_policy == "Always"), *listed):
        if c.ports is _NULL:
            continue
        key = bytes(c.ports)
        found = _ports_memo.get(key)
        if found is None:
            found = _remember(_ports_memo, key, _host_ports(_typed(_PORTS, c.ports)))
        out += found
    return out


# --- nodes and the rest ---------------------------------------------------------------------


def node_from_raw(raw: RawNode) -> Node:
    meta = raw.metadata
    annotations = _keep(meta.annotations, _NODE_ANNOTATIONS)
    allocatable = resources(raw.status.allocatable or raw.status.capacity, "status.allocatable")
    overlay = annotations.get(ANNOTATION_RAW_ALLOCATABLE)
    if overlay:
        # Koordinator's raw-allocatable overlays allocatable when it parses; a bad one is ignored.
        try:
            parsed = json.loads(overlay)
            if isinstance(parsed, dict):
                allocatable = Resources({**allocatable, **{k: to_units(k, v) for k, v in parsed.items()}})
        except (ValueError, QuantityError, TypeError):
            pass
    ready = True
    for cond in raw.status.conditions or ():
        if cond.type == "Ready":
            ready = cond.status == "True"
    return Node(
        name=meta.name,
        uid=meta.uid,
        labels=meta.labels or {},
        annotations=annotations,
        taints=tuple(Taint(key=t.key, value=t.value, effect=t.effect) for t in raw.spec.taints or ()),
        unschedulable=raw.spec.unschedulable,
        ready=ready,
        allocatable=allocatable,
        created=meta.creation_timestamp,
    )


def workload_from_raw(raw: RawWorkload, kind: str) -> Workload:
    meta = raw.metadata
    replicas = raw.spec.replicas
    if replicas is None and kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        replicas = 1  # the API server's default
    return Workload(
        kind=kind,
        namespace=meta.namespace or "default",
        name=meta.name,
        uid=meta.uid,
        replicas=replicas,
        owner=_controller(meta),
        labels=meta.labels or {},
        starts_first=kind == "Deployment" and starts_first(raw.spec.strategy, replicas or 0, raw.spec.paused),
        template_node_name=_template_node_name(raw.spec.template),
    )


def _template_node_name(template: RawPodTemplate | None) -> str:
    return template.spec.node_name if template is not None and template.spec is not None else ""


def pdb_from_raw(raw: RawPDB) -> PodDisruptionBudget:
    meta, status = raw.metadata, raw.status
    return PodDisruptionBudget(
        namespace=meta.namespace or "default",
        name=meta.name,
        selector=_selector(raw.spec.selector, "spec.selector"),
        disruptions_allowed=status.disruptions_allowed,
        current_healthy=status.current_healthy,
        desired_healthy=status.desired_healthy,
        expected_pods=status.expected_pods,
        generation=meta.generation,
        observed_generation=status.observed_generation,
        unhealthy_pod_eviction_policy=raw.spec.unhealthy_pod_eviction_policy or "IfHealthyBudget",
    )


ANNOTATION_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANNOTATION_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANNOTATION_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANNOTATION_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
# VolumeZone's topologyLabels (pkg/scheduler/framework/plugins/volumezone/volume_zone.go).
VOLUME_TOPOLOGY_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)


def pvc_from_raw(raw: RawPVC) -> PersistentVolumeClaim:
    meta, spec = raw.metadata, raw.spec
    annotations = meta.annotations or {}
    # component-helpers' GetPersistentVolumeClaimClass: the beta annotation wins over the field.
    storage_class = annotations.get(ANNOTATION_BETA_STORAGE_CLASS, spec.storage_class_name or "")
    return PersistentVolumeClaim(
        namespace=meta.namespace or "default",
        name=meta.name,
        volume_name=spec.volume_name,
        phase=raw.status.phase or "Pending",
        storage_class=storage_class,
        access_modes=tuple(spec.access_modes or ()),
        selected_node=annotations.get(ANNOTATION_SELECTED_NODE, ""),
    )


def pv_from_raw(raw: RawPV) -> PersistentVolume:
    meta, spec = raw.metadata, raw.spec
    affinity = spec.node_affinity
    required = affinity.required if affinity is not None else None
    labels = meta.labels or {}
    return PersistentVolume(
        name=meta.name,
        node_affinity=None if required is None else _selector_terms(required, "spec.nodeAffinity.required"),
        zone_labels={k: labels[k] for k in VOLUME_TOPOLOGY_LABELS if k in labels},
        csi_driver=spec.csi.driver if spec.csi is not None else "",
        csi_handle=spec.csi.volume_handle if spec.csi is not None else "",
    )


def storage_class_from_raw(raw: RawStorageClass) -> StorageClass:
    meta = raw.metadata
    annotations = meta.annotations or {}
    default = annotations.get(ANNOTATION_DEFAULT_CLASS, annotations.get(ANNOTATION_BETA_DEFAULT_CLASS, ""))
    terms = tuple(
        NodeSelectorTerm(
            match_expressions=tuple(
                NodeSelectorRequirement(key=r.key, operator="In", values=tuple(r.values or ()))
                for r in t.match_label_expressions or ()
            )
        )
        for t in raw.allowed_topologies or ()
    )
    return StorageClass(
        name=meta.name,
        provisioner=raw.provisioner,
        wait_for_first_consumer=raw.volume_binding_mode == "WaitForFirstConsumer",
        allowed_topologies=terms,
        default=default == "true",
        created=meta.creation_timestamp,
    )


def csi_node_from_raw(raw: RawCSINode) -> CSINode:
    limits = {
        d.name: d.allocatable.count
        for d in raw.spec.drivers or ()
        if d.allocatable is not None and d.allocatable.count is not None
    }
    return CSINode(name=raw.metadata.name, limits=limits)


def resource_claim_from_raw(raw: RawResourceClaim) -> ResourceClaim:
    meta, allocation = raw.metadata, raw.status.allocation
    selector = allocation.node_selector if allocation is not None else None
    return ResourceClaim(
        namespace=meta.namespace or "default",
        name=meta.name,
        allocated=allocation is not None,
        node_selector=None if selector is None else _selector_terms(selector, "status.allocation.nodeSelector"),
    )


def node_usage_from_metrics(raw: RawNodeMetrics) -> NodeUsage:
    return NodeUsage(
        node=raw.metadata.name,
        timestamp=raw.timestamp,
        usage=resources(raw.usage, "usage"),
        source="metrics.k8s.io",
        window_seconds=_seconds(raw.window),
    )


def pod_usage_from_metrics(raw: RawPodMetrics) -> PodUsage:
    total: dict[str, int] = {}
    for i, c in enumerate(raw.containers or ()):
        # One plain dict summed in place, the field path spelled out only for an error (a snapshot
        # file holds one PodMetrics per pod).
        try:
            _add_into(total, _units(c.usage, ""))
        except DecodeError as exc:
            raise DecodeError(f"containers[{i}].usage{exc.field}", exc.message) from None
    return PodUsage(
        namespace=raw.metadata.namespace or "default",
        name=raw.metadata.name,
        timestamp=raw.timestamp,
        usage=Resources.adopt({k: v for k, v in total.items() if v}) if total else EMPTY,
        source="metrics.k8s.io",
    )


def usage_from_node_metric(raw: RawKoordNodeMetric) -> tuple[NodeUsage | None, list[PodUsage]]:
    """Koordinator NodeMetric: the node's usage (None when never reported) and its pods' usage."""
    status = raw.status
    info = status.node_metric
    if status.update_time is None or info is None or info.node_usage is None:
        return None, []
    aggregated = []
    for i, agg in enumerate(info.aggregated_node_usages or ()):
        for kind, value in (agg.usage or {}).items():
            aggregated.append(
                AggregatedUsage(
                    aggregation=kind,
                    duration_seconds=_seconds(agg.duration),
                    usage=resources(value.resources, f"status.nodeMetric.aggregatedNodeUsages[{i}].usage.{kind}"),
                )
            )
    policy = raw.spec.metric_collect_policy
    node = NodeUsage(
        node=raw.metadata.name,
        timestamp=status.update_time,
        usage=resources(info.node_usage.resources, "status.nodeMetric.nodeUsage.resources"),
        source="NodeMetric",
        report_interval_seconds=(policy.report_interval_seconds or 0) if policy else 0,
        system_usage=(
            resources(info.system_usage.resources, "status.nodeMetric.systemUsage.resources")
            if info.system_usage is not None
            else None
        ),
        aggregated=tuple(aggregated),
    )
    pods = [
        PodUsage(
            namespace=p.namespace or "default",
            name=p.name,
            timestamp=status.update_time,
            usage=resources(p.pod_usage.resources if p.pod_usage else None, f"status.podsMetric[{i}].podUsage"),
            source="NodeMetric",
        )
        for i, p in enumerate(status.pods_metric or ())
    ]
    return node, pods


def quota_from_raw(raw: RawElasticQuota, api_group: str) -> ElasticQuota:
    meta = raw.metadata
    return ElasticQuota(
        namespace=meta.namespace or "default",
        name=meta.name,
        api_group=api_group,
        min=resources(raw.spec.min, "spec.min"),
        max=resources(raw.spec.max, "spec.max") if raw.spec.max is not None else None,
        labels=meta.labels or {},
        annotations={k: v for k, v in (meta.annotations or {}).items() if k == ANNOTATION_OVER_MAX_SINCE},
    )


def reservation_from_raw(raw: RawReservation) -> Reservation:
    replaced = raw.spec.replaces
    owners = []
    for i, o in enumerate(raw.spec.owners or ()):
        ctl = o.controller
        owners.append(
            ReservationOwner(
                kind=ctl.kind if ctl else "",
                name=ctl.name if ctl else "",
                uid=ctl.uid if ctl else "",
                label_selector=_selector(o.label_selector, f"spec.owners[{i}].labelSelector"),
            )
        )
    return Reservation(
        name=raw.metadata.name,
        node_name=raw.spec.node_name,
        resources=resources(raw.spec.resources, "spec.resources"),
        owners=tuple(owners),
        phase=raw.status.phase,
        consumed_by=raw.status.consumed_by,
        replaces=PodRef(namespace=replaced.namespace, name=replaced.name, uid=replaced.uid) if replaced else None,
        replacement_first=raw.spec.replacement_first,
        expires=_expires(raw.metadata.creation_timestamp, raw.spec.ttl),
    )


def _expires(created: datetime | None, ttl: str | int | None) -> datetime | None:
    """When a Reservation's unconsumed room is released: creation + spec.ttl (the CRD's default, 5m,
    when unset)."""
    if created is None:
        return None
    try:
        return created + parse_duration(ttl if ttl is not None else DEFAULT_TTL)
    except ValueError as err:
        raise DecodeError("spec.ttl", str(err)) from None


def migration_job_from_raw(raw: RawMigrationJob) -> MigrationJob:
    ref = raw.spec.pod_ref
    status = raw.status
    annotations = raw.metadata.annotations or {}
    # A MakeBeforeBreak move disrupts its workload when its rollout starts (the limits count it then,
    # even when the rollout is undone).
    evicted = next(
        (
            c.last_transition_time
            for kind in ("Evicted", "ReplacementStarted")
            for c in status.conditions or ()
            if c.type == kind and c.status == "True"
        ),
        None,
    )
    return MigrationJob(
        name=raw.metadata.name,
        pod=PodRef(namespace=ref.namespace, name=ref.name, uid=ref.uid),
        mode=raw.spec.mode,
        target_node=raw.spec.target_node,
        phase=status.phase,
        strategy=raw.spec.strategy,
        reason=raw.spec.reason,
        created=raw.metadata.creation_timestamp,
        source_node=status.source_node or annotations.get(JOB_SOURCE_NODE_ANNOTATION, ""),
        workload_uid=(status.workload.uid if status.workload else "")
        or annotations.get(JOB_WORKLOAD_UID_ANNOTATION, ""),
        started=status.start_time,
        evicted=evicted,
        pod_usage=_job_pod_usage(annotations.get(JOB_POD_USAGE_ANNOTATION)),
        replacement=PodRef(namespace=new.namespace, name=new.name, uid=new.uid)
        if (new := status.new_pod_ref)
        else None,
    )


def _job_pod_usage(text: str | None) -> Resources:
    if not text:
        return EMPTY
    field = f"metadata.annotations[{JOB_POD_USAGE_ANNOTATION}]"
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or not all(isinstance(v, str | int) for v in raw.values()):
        raise DecodeError(field, 'expected a JSON object of resource quantities, e.g. {"cpu": "1200m"}')
    return resources(raw, field)
