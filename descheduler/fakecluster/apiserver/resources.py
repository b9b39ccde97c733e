"""The resource table: every kind the fake API server serves, one line each."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

READ_WRITE_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_ONLY_VERBS = ("get", "list")

POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
# Every kind supports these two field selectors; they come first in an entry's field tuple.
BASE_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource: where it lives in the URL space and how the server treats it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = READ_WRITE_VERBS
    # Custom resources refuse strategic-merge patches (the real server answers 415).
    builtin: bool = True
    # The real server drops status sent on create for kinds with a status subresource.
    clears_status_on_create: bool = False
    extra_fields: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def group_resource(self) -> str:
        """The name used in error messages: `pods`, `deployments.apps`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def field_labels(self) -> tuple[str, ...]:
        return BASE_FIELDS + self.extra_fields

    @property
    def writable(self) -> bool:
        return "create" in self.verbs


def _custom(group: str, version: str, plural: str, kind: str, namespaced: bool, *short: str) -> ResourceType:
    return ResourceType(
        group,
        version,
        plural,
        kind,
        namespaced,
        short,
        ("status",),
        builtin=False,
        clears_status_on_create=True,
    )


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", False, ("ns",), ("status",), extra_fields=("status.phase",)),
    ResourceType("", "v1", "nodes", "Node", False, ("no",), ("status",), extra_fields=("spec.unschedulable",)),
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        ("po",),
        ("status", "binding", "eviction"),
        clears_status_on_create=True,
        extra_fields=POD_FIELDS,
    ),
    ResourceType("", "v1", "events", "Event", True, ("ev",), extra_fields=EVENT_FIELDS),
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ("status",)),
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), ("status",)),
    ResourceType("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, (), ("status",)),
    ResourceType(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        ("deploy",),
        ("status", "scale"),
        clears_status_on_create=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        ("rs",),
        ("status", "scale"),
        clears_status_on_create=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        ("sts",),
        ("status", "scale"),
        clears_status_on_create=True,
    ),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ("status",), clears_status_on_create=True),
    ResourceType(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        ("pdb",),
        ("status",),
        clears_status_on_create=True,
    ),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    _custom("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True, "eq", "eqs"),
    _custom("scheduling.x-k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True, "eq", "eqs"),
    _custom("slo.koordinator.sh", "v1alpha1", "nodemetrics", "NodeMetric", False),
    _custom("descheduler.dev", "v1alpha1", "podmigrationjobs", "PodMigrationJob", False, "pmj"),
    _custom("descheduler.dev", "v1alpha1", "reservations", "Reservation", False),
    # metrics-server's aggregated API: read-only over HTTP; a metrics publisher writes through the store.
    ResourceType("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False, verbs=READ_ONLY_VERBS, builtin=False),
    ResourceType("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", True, verbs=READ_ONLY_VERBS, builtin=False),
)


class ResourceTable:
    """Lookups over a set of resource types: by URL, by apiVersion+kind, or by a kubectl-style name."""

    def __init__(self, resources: Iterable[ResourceType] = RESOURCES) -> None:
        self._all = tuple(resources)
        self._by_path = {(r.group, r.version, r.plural): r for r in self._all}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for r in self._all:
            self._by_kind.setdefault((r.api_version, r.kind), r)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._all)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((api_version, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Group name → versions served, in table order (the first is preferred)."""
        out: dict[str, list[str]] = {}
        for r in self._all:
            versions = out.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [r for r in self._all if r.group == group and r.version == version]

    def resolve(self, ref: str | ResourceType) -> ResourceType:
        """Find a type from `pods`, `Pod`, `po`, `deployments.apps` or `nodes.metrics.k8s.io`.

        Without a group suffix the first match in table order wins, so `nodes` is core/v1 nodes
        and `elasticquotas` is the scheduling.sigs.k8s.io one.
        """
        if isinstance(ref, ResourceType):
            return ref
        name, _, group = ref.partition(".")
        for r in self._all:
            if group and r.group != group:
                continue
            if name in (r.plural, r.kind, r.singular, *r.short_names):
                return r
        raise KeyError(f"unknown resource {ref!r}")
