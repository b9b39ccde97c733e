"""The resources the cache lists and watches: where each lives in the API and how its JSON becomes
one of the narrow records of `descheduler.model` (through the converters of `descheduler.decode`).

A kind is named like RBAC and kubectl name it: `pods`, `deployments.apps`,
`elasticquotas.scheduling.sigs.k8s.io`. Records are keyed `namespace/name` (namespaced kinds)
or `name` (cluster-scoped kinds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from descheduler import decode
from descheduler.model import NodeUsage, PodUsage

T = TypeVar("T")

# A Koordinator NodeMetric as the cache holds it: the node's usage (None until first reported) and its pods'.
NodeMetricRecord = tuple[NodeUsage | None, tuple[PodUsage, ...]]


class RawListMeta(msgspec.Struct, rename="camel", kw_only=True):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class RawList(msgspec.Struct, Generic[T], kw_only=True):
    """A list response: `metadata` and `items`, each item of the kind's raw shape."""

    metadata: RawListMeta = msgspec.field(default_factory=RawListMeta)
    items: list[T] | None = None


class RawWatchEvent(msgspec.Struct, kw_only=True):
    """One line of a watch stream; `object` stays raw until its type says how to read it."""

    type: str
    object: msgspec.Raw = msgspec.Raw(b"null")


class RawTypedEvent(msgspec.Struct, Generic[T], kw_only=True):
    """One line of a watch stream with its object decoded in the kind's raw shape."""

    type: str
    object: T


class RawStatus(msgspec.Struct, kw_only=True):
    """A `Status` (watch ERROR events, error bodies)."""

    code: int = 0
    reason: str = ""
    message: str = ""


class RawBookmarkMeta(msgspec.Struct, kw_only=True):
    resource_version: str = msgspec.field(default="", name="resourceVersion")


class RawBookmark(msgspec.Struct, kw_only=True):
    """A BOOKMARK's object: only its resourceVersion counts. The real server sends an empty object of
    the kind (a Pod with `spec.containers: null`), which need not fit the kind's raw shape."""

    metadata: RawBookmarkMeta = msgspec.field(default_factory=RawBookmarkMeta)


class RawMetaOnly(msgspec.Struct, kw_only=True):
    """Just the metadata: bookmarks, and the key and version of an object that failed to decode."""

    metadata: decode.RawObjectMeta = msgspec.field(default_factory=decode.RawObjectMeta)


class RawNamespace(msgspec.Struct, kw_only=True):
    metadata: decode.RawObjectMeta


@dataclass(frozen=True, slots=True)
class ResourceKind:
    """One listed-and-watched resource and its decoding."""

    name: str
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    raw_type: type[Any]
    to_record: Callable[[Any], Any]
    # A missing API (404: the CRD is not installed) is an empty list and a warning, not a failure.
    optional: bool = False
    # A kind we may be refused (403): an empty list and a warning, not a failure; the snapshot says
    # it could not be read (`Snapshot.volumes_unreadable`, `Snapshot.unreadable`), and what needs it
    # is not moved.
    may_be_forbidden: bool = False
    # A cheaper shape for lists and watch events, and its converter (`listed_record`), which raises
    # decode.Refit for an object that must be decoded in `raw_type` instead; None: `raw_type`.
    listed_type: type[Any] | None = None
    listed_record: Callable[[Any], Any] = field(default=None, repr=False)  # type: ignore[assignment]
    list_decoder: msgspec.json.Decoder[Any] = field(init=False, repr=False, compare=False)
    item_decoder: msgspec.json.Decoder[Any] = field(init=False, repr=False, compare=False)
    event_decoder: msgspec.json.Decoder[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        listed = self.listed_type or self.raw_type
        if self.listed_type is None:
            object.__setattr__(self, "listed_record", self.to_record)
        object.__setattr__(self, "list_decoder", msgspec.json.Decoder(RawList[listed]))  # type: ignore[valid-type]
        object.__setattr__(self, "item_decoder", msgspec.json.Decoder(self.raw_type))
        object.__setattr__(self, "event_decoder", msgspec.json.Decoder(RawTypedEvent[listed]))  # type: ignore[valid-type]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The collection across all namespaces."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"

    def key(self, meta: decode.RawObjectMeta) -> str:
        return f"{meta.namespace}/{meta.name}" if self.namespaced else meta.name

    def record(self, raw: Any) -> Any:
        """The narrow record of a decoded raw object; raises decode.DecodeError on a bad field."""
        return self.to_record(raw)


def _namespace_labels(raw: RawNamespace) -> dict[str, str]:
    return raw.metadata.labels or {}


def _node_metric(raw: decode.RawKoordNodeMetric) -> NodeMetricRecord:
    node, pods = decode.usage_from_node_metric(raw)
    return node, tuple(pods)


def _workload(kind: str) -> Callable[[decode.RawWorkload], Any]:
    return lambda raw: decode.workload_from_raw(raw, kind)


def _quota(group: str) -> Callable[[decode.RawElasticQuota], Any]:
    return lambda raw: decode.quota_from_raw(raw, group)


NODES = "nodes"
PODS = "pods"
NAMESPACES = "namespaces"
PDBS = "poddisruptionbudgets.policy"
PVCS = "persistentvolumeclaims"
PVS = "persistentvolumes"
STORAGE_CLASSES = "storageclasses.storage.k8s.io"
CSI_NODES = "csinodes.storage.k8s.io"
RESOURCE_CLAIMS = "resourceclaims.resource.k8s.io"
DEPLOYMENTS = "deployments.apps"
REPLICASETS = "replicasets.apps"
STATEFULSETS = "statefulsets.apps"
DAEMONSETS = "daemonsets.apps"
QUOTAS_SIGS = "elasticquotas.scheduling.sigs.k8s.io"
QUOTAS_X = "elasticquotas.scheduling.x-k8s.io"
MIGRATION_JOBS = "podmigrationjobs.descheduler.dev"
RESERVATIONS = "reservations.descheduler.dev"
NODE_METRICS = "nodemetrics.slo.koordinator.sh"

WORKLOADS = (DEPLOYMENTS, REPLICASETS, STATEFULSETS, DAEMONSETS)
QUOTAS = (QUOTAS_SIGS, QUOTAS_X)

KINDS: dict[str, ResourceKind] = {
    k.name: k
    for k in (
        ResourceKind(NODES, "", "v1", "nodes", "Node", False, decode.RawNode, decode.node_from_raw),
        ResourceKind(
            PODS,
            "",
            "v1",
            "pods",
            "Pod",
            True,
            decode.RawPod,
            decode.pod_from_raw,
            listed_type=decode.RawListedPod,
            listed_record=decode.pod_from_listed,
        ),
        ResourceKind(NAMESPACES, "", "v1", "namespaces", "Namespace", False, RawNamespace, _namespace_labels),
        ResourceKind(
            PDBS,
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            True,
            decode.RawPDB,
            decode.pdb_from_raw,
        ),
        ResourceKind(
            PVCS,
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            True,
            decode.RawPVC,
            decode.pvc_from_raw,
            may_be_forbidden=True,
        ),
        ResourceKind(
            PVS,
            "",
            "v1",
            "persistentvolumes",
            "PersistentVolume",
            False,
            decode.RawPV,
            decode.pv_from_raw,
            may_be_forbidden=True,
        ),
        ResourceKind(
            STORAGE_CLASSES,
            "storage.k8s.io",
            "v1",
            "storageclasses",
            "StorageClass",
            False,
            decode.RawStorageClass,
            decode.storage_class_from_raw,
            may_be_forbidden=True,
        ),
        ResourceKind(
            CSI_NODES,
            "storage.k8s.io",
            "v1",
            "csinodes",
            "CSINode",
            False,
            decode.RawCSINode,
            decode.csi_node_from_raw,
            may_be_forbidden=True,
        ),
        # A cluster without DynamicResources (404) has no claims: nothing needs them.
        ResourceKind(
            RESOURCE_CLAIMS,
            "resource.k8s.io",
            "v1",
            "resourceclaims",
            "ResourceClaim",
            True,
            decode.RawResourceClaim,
            decode.resource_claim_from_raw,
            optional=True,
            may_be_forbidden=True,
        ),
        *(
            ResourceKind(name, "apps", "v1", name.split(".")[0], kind, True, decode.RawWorkload, _workload(kind))
            for name, kind in zip(WORKLOADS, ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"), strict=True)
        ),
        *(
            ResourceKind(
                name,
                name.split(".", 1)[1],
                "v1alpha1",
                "elasticquotas",
                "ElasticQuota",
                True,
                decode.RawElasticQuota,
                _quota(name.split(".", 1)[1]),
                optional=True,
            )
            for name in QUOTAS
        ),
        ResourceKind(
            MIGRATION_JOBS,
            "descheduler.dev",
            "v1alpha1",
            "podmigrationjobs",
            "PodMigrationJob",
            False,
            decode.RawMigrationJob,
            decode.migration_job_from_raw,
            optional=True,
        ),
        ResourceKind(
            RESERVATIONS,
            "descheduler.dev",
            "v1alpha1",
            "reservations",
            "Reservation",
            False,
            decode.RawReservation,
            decode.reservation_from_raw,
            optional=True,
        ),
        ResourceKind(
            NODE_METRICS,
            "slo.koordinator.sh",
            "v1alpha1",
            "nodemetrics",
            "NodeMetric",
            False,
            decode.RawKoordNodeMetric,
            _node_metric,
            optional=True,
        ),
    )
}

# What a planning cycle reads; NODE_METRICS is added when the policy's load source is nodeMetric.
CLUSTER_KINDS: tuple[str, ...] = (
    NODES,
    PODS,
    NAMESPACES,
    PDBS,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    CSI_NODES,
    RESOURCE_CLAIMS,
    *WORKLOADS,
    *QUOTAS,
    MIGRATION_JOBS,
    RESERVATIONS,
)


def resolve(names: Iterable[str]) -> list[ResourceKind]:
    """The kinds for these names, in order; an unknown name is a ValueError listing the known ones."""
    out = []
    for name in names:
        kind = KINDS.get(name)
        if kind is None:
            raise ValueError(f"unknown resource {name!r}; known: {', '.join(KINDS)}")
        if kind not in out:
            out.append(kind)
    return out
