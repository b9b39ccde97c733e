"""The Snapshot: one frozen, indexed view of the cluster that a cycle decides on.

Loaded from files (README §4.1) or built by the cluster cache. A `List`, a multi-document YAML
stream, or a directory of such files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from descheduler import decode, snapshot_file, timestamps
from descheduler.errors import InputError
from descheduler.model import (
    CSINode,
    ElasticQuota,
    MigrationJob,
    Node,
    NodeUsage,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodUsage,
    Reservation,
    ResourceClaim,
    StorageClass,
    Workload,
)
from descheduler.snapshot_file import (
    SCHEDULER_LEASE_ANNOTATION,
    SCHEDULER_LEASE_ERROR_ANNOTATION,
    SNAPSHOT_TIME_ANNOTATION,
    snapshot_files,
)

if TYPE_CHECKING:  # numpy's import alone is a third of loading a snapshot's imports
    from descheduler.podrows import PodRows

__all__ = [
    "SCHEDULER_LEASE_ANNOTATION",
    "SNAPSHOT_TIME_ANNOTATION",
    "OwnerPods",
    "SchedulerLease",
    "Snapshot",
    "load_snapshot",
    "load_snapshot_objects",
]

_WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
_QUOTA_GROUPS = ("scheduling.sigs.k8s.io", "scheduling.x-k8s.io")


@dataclass(frozen=True, slots=True)
class OwnerPods:
    """Every pod of `pods` (the very tuple of the Snapshot it was made for) per controller uid, in
    that tuple's order."""

    pods: tuple[Pod, ...]
    by_owner: Mapping[str, tuple[Pod, ...]]

    def fits(self, pods: tuple[Pod, ...]) -> bool:
        return pods is self.pods


@dataclass(frozen=True, slots=True)
class SchedulerLease:
    """The scheduler Lease as read with the snapshot: which one was looked for (`ref`,
    NAMESPACE/NAME), the object as the API gave it (None: there is none), or why it could not be
    read (`error`)."""

    ref: str
    found: Mapping[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one cycle sees. Build with `Snapshot.build`, which also indexes it."""

    now: datetime
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    pvcs: Mapping[str, PersistentVolumeClaim] = field(default_factory=dict)  # by "namespace/name"
    pvs: Mapping[str, PersistentVolume] = field(default_factory=dict)  # by name
    # Why the claims and volumes could not be read (a 403), "" when they could: pods with claims
    # are then not moved, since where their volumes let them run is unknown.
    volumes_unreadable: str = ""
    storage_classes: Mapping[str, StorageClass] = field(default_factory=dict)  # by name
    csi_nodes: Mapping[str, CSINode] = field(default_factory=dict)  # by node name
    resource_claims: Mapping[str, ResourceClaim] = field(default_factory=dict)  # by "namespace/name"
    # The kinds of the scheduling rules (storageclasses, csinodes, resourceclaims: the kube resource
    # names) that could not be read, and why: a pod that needs one is not judged, so not moved.
    unreadable: Mapping[str, str] = field(default_factory=dict)
    workloads: Mapping[str, Workload] = field(default_factory=dict)  # by uid
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # name -> labels
    node_usage: Mapping[str, NodeUsage] = field(default_factory=dict)  # by node name
    pod_usage: Mapping[str, PodUsage] = field(default_factory=dict)  # by "namespace/name"
    quotas: tuple[ElasticQuota, ...] = ()
    reservations: tuple[Reservation, ...] = ()
    jobs: tuple[MigrationJob, ...] = ()
    warnings: tuple[str, ...] = ()
    # Indexes, derived in `build`.
    node_by_name: Mapping[str, Node] = field(default_factory=dict)
    pods_by_node: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)
    pods_per_owner: Mapping[str, int] = field(default_factory=dict)
    # The pods as the node table's rows, when the cluster cache kept them (a fast path: the table
    # computes them from `pods` otherwise, and ignores rows made for other pods or nodes tuples).
    pod_rows: PodRows | None = field(default=None, compare=False, repr=False)
    # Every pod per controller uid, when the cluster cache kept it (a fast path: the eviction
    # budget groups `pods` itself otherwise, and ignores an index made for another pods tuple).
    owner_pods: OwnerPods | None = field(default=None, compare=False, repr=False)
    # The scheduler Lease, when the snapshot's reader looked for it (`plan` on a cluster or on a file
    # `snapshot save` wrote): what a one-shot plan's landings come from. None: not looked for.
    scheduler_lease: SchedulerLease | None = None

    @classmethod
    def build(
        cls,
        *,
        now: datetime,
        nodes: Iterable[Node],
        pods: Iterable[Pod],
        pdbs: Iterable[PodDisruptionBudget] = (),
        pvcs: Iterable[PersistentVolumeClaim] = (),
        pvs: Iterable[PersistentVolume] = (),
        volumes_unreadable: str = "",
        storage_classes: Iterable[StorageClass] = (),
        csi_nodes: Iterable[CSINode] = (),
        resource_claims: Iterable[ResourceClaim] = (),
        unreadable: Mapping[str, str] | None = None,
        workloads: Iterable[Workload] = (),
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        node_usage: Iterable[NodeUsage] = (),
        pod_usage: Iterable[PodUsage] = (),
        quotas: Iterable[ElasticQuota] = (),
        reservations: Iterable[Reservation] = (),
        jobs: Iterable[MigrationJob] = (),
        warnings: Iterable[str] = (),
        scheduler_lease: SchedulerLease | None = None,
    ) -> Snapshot:
        node_list = tuple(sorted(nodes, key=lambda n: n.name))
        pod_list = tuple(sorted(pods, key=lambda p: (p.namespace, p.name)))
        by_node: dict[str, list[Pod]] = {}
        for pod in pod_list:
            if pod.node_name:
                by_node.setdefault(pod.node_name, []).append(pod)
        owners = Counter(p.owner.uid for p in pod_list if p.owner is not None and not p.terminal)
        ns = dict(namespaces or {})
        for pod in pod_list:
            ns.setdefault(pod.namespace, {})
        return cls(
            now=now,
            nodes=node_list,
            pods=pod_list,
            pdbs=tuple(pdbs),
            pvcs={c.key: c for c in pvcs},
            pvs={v.name: v for v in pvs},
            volumes_unreadable=volumes_unreadable,
            storage_classes={c.name: c for c in storage_classes},
            csi_nodes={c.name: c for c in csi_nodes},
            resource_claims={c.key: c for c in resource_claims},
            unreadable=dict(unreadable or {}),
            workloads={w.uid or f"{w.kind}/{w.namespace}/{w.name}": w for w in workloads},
            namespaces=ns,
            node_usage={u.node: u for u in node_usage},
            pod_usage={u.key: u for u in pod_usage},
            quotas=tuple(quotas),
            reservations=tuple(reservations),
            jobs=tuple(jobs),
            warnings=tuple(warnings),
            node_by_name={n.name: n for n in node_list},
            pods_by_node={k: tuple(v) for k, v in by_node.items()},
            pods_per_owner=dict(owners),
            scheduler_lease=scheduler_lease,
        )

    def replicas_of(self, owner_uid: str) -> int:
        """A workload's size: its spec.replicas when the snapshot holds the controller, else the
        pods (not finished) it owns; 0 when the snapshot knows nothing of it. The one place that
        counts replicas: the evictor's minReplicas, the planner's budget and the arbiter's facts."""
        workload = self.workloads.get(owner_uid)
        if workload is not None and workload.replicas is not None:
            return workload.replicas
        return self.pods_per_owner.get(owner_uid, 0)

    def replicas(self, pod: Pod) -> int | None:
        """The size of the pod's workload (`replicas_of`); None for a pod without a controller."""
        return None if pod.owner is None else self.replicas_of(pod.owner.uid)

    def pdbs_for(self, pod: Pod) -> list[PodDisruptionBudget]:
        return [pdb for pdb in self.pdbs if pdb.selects(pod)]

    def volumes_of(self, pod: Pod) -> list[PersistentVolume]:
        """The PersistentVolumes with a required node affinity that the pod's bound claims use. An
        unbound claim, or one whose volume the snapshot does not hold, restricts nothing here."""
        out = []
        for name in pod.claims:
            claim = self.pvcs.get(f"{pod.namespace}/{name}")
            volume = self.pvs.get(claim.volume_name) if claim is not None and claim.volume_name else None
            if volume is not None and volume.node_affinity is not None:
                out.append(volume)
        return out

    def pinned_by(self, pod: Pod) -> PersistentVolume | None:
        """A volume of the pod that lets it run on no node of the snapshot but its current one
        (a local PersistentVolume), or None: moving it would leave its replacement Pending."""
        for volume in self.volumes_of(pod):
            if not any(volume.allows(n) for n in self.nodes if n.name != pod.node_name):
                return volume
        return None


# --- loading from files -------------------------------------------------------------------


def _parse_time(text: str, what: str, source: str) -> datetime:
    try:
        return timestamps.parse_time(text)
    except ValueError:
        raise InputError(
            f"{text!r} is not an RFC 3339 time (example: 2024-05-01T12:00:00Z)", source=source, field=what
        ) from None


class _HeadMeta(msgspec.Struct):
    name: Any = None
    namespace: Any = None


class _Head(msgspec.Struct, rename="camel"):
    """What an object's JSON says about itself before its kind's shape is chosen."""

    api_version: Any = None
    kind: Any = None
    metadata: _HeadMeta = msgspec.field(default_factory=_HeadMeta)


_HEAD = msgspec.json.Decoder(_Head)
_KNOWN_PREFIXES: dict[bytes, tuple[str, str, str, Any]] = {}  # -> apiVersion, group, kind, handler or None


def _type_prefix(api_version: str, kind: str) -> bytes:
    return b'{"apiVersion":%s,"kind":%s' % (msgspec.json.encode(api_version), msgspec.json.encode(kind))


_LISTED_POD = msgspec.json.Decoder(decode.RawListedPod)


class _Collector:
    """Accumulates decoded objects from many documents."""

    def __init__(self, pod_memo: Mapping[tuple[str, str], Pod] | None = None) -> None:
        self.nodes: list[Node] = []
        self.pods: list[Pod] = []
        self.pod_memo = pod_memo or {}
        self.parsed_pods: dict[tuple[str, str], Pod] = {}  # by uid and resourceVersion
        self.pdbs: list[PodDisruptionBudget] = []
        self.pvcs: list[PersistentVolumeClaim] = []
        self.pvs: list[PersistentVolume] = []
        self.storage_classes: list[StorageClass] = []
        self.csi_nodes: list[CSINode] = []
        self.resource_claims: list[ResourceClaim] = []
        self.workloads: list[Workload] = []
        self.namespaces: dict[str, Mapping[str, str]] = {}
        self.node_usage: dict[str, NodeUsage] = {}
        self.pod_usage: dict[str, PodUsage] = {}
        self.quotas: list[ElasticQuota] = []
        self.reservations: list[Reservation] = []
        self.jobs: list[MigrationJob] = []
        self.warnings: list[str] = []
        self.snapshot_time: datetime | None = None
        self.lease_ref: str | None = None  # the scheduler Lease the List says its writer looked for
        self.lease_error: str | None = None
        self.leases: dict[str, Mapping[str, Any]] = {}  # by namespace/name
        self.pod_origin: dict[str, tuple[str, str]] = {}
        self._unknown: set[str] = set()

    def add(self, obj: Any, source: str, where: str) -> None:
        """One object: plain data (YAML, API dicts) or its JSON text (`msgspec.Raw`)."""
        if isinstance(obj, msgspec.Raw):
            self._add_json(obj, source, where)
            return
        if not isinstance(obj, dict):
            raise InputError(f"expected a Kubernetes object, got {type(obj).__name__}", source=source, where=where)
        if "__list_meta__" in obj:
            list_meta = obj["__list_meta__"] if isinstance(obj["__list_meta__"], dict) else {}
            stamp = (list_meta.get("annotations") or {}).get(SNAPSHOT_TIME_ANNOTATION)
            if stamp:
                self.snapshot_time = _parse_time(str(stamp), f"metadata.annotations.{SNAPSHOT_TIME_ANNOTATION}", source)
            self._add_list_annotations(list_meta.get("annotations") or {})
            return
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise InputError("object has no apiVersion and kind", source=source, where=where)
        raw_meta = obj.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        label = _label(where, kind, meta.get("name"), meta.get("namespace"))
        group = api_version.rpartition("/")[0]
        handler = _HANDLERS.get((group, kind))
        if handler is None:
            self._unknown_kind(api_version, kind, source)
            return
        raw_type, add = handler
        try:
            if add is _add_pod:
                self._add_pod_object(obj)
            else:
                add(self, decode.convert(obj, raw_type), group)
        except decode.DecodeError as exc:
            raise InputError(exc.message, source=source, where=label, field=exc.field) from None
        if add is _add_pod:
            self.pod_origin[self.pods[-1].key] = (source, label)

    def _add_json(self, text: msgspec.Raw, source: str, where: str) -> None:
        """One object from its JSON text, decoded straight into its kind's shape (no dicts);
        malformed JSON raises msgspec.DecodeError."""
        typed = snapshot_file.TYPE_HEAD.match(text)
        known = _KNOWN_PREFIXES.get(typed.group()) if typed is not None else None
        if known is None:
            try:
                head = _HEAD.decode(text)
            except msgspec.ValidationError:  # not an object, or odd metadata: the plain path names it
                self.add(msgspec.json.decode(text), source, where)
                return
            api_version, kind = head.api_version, head.kind
            if not isinstance(api_version, str) or not isinstance(kind, str):
                raise InputError("object has no apiVersion and kind", source=source, where=where)
            group = api_version.rpartition("/")[0]
            known = (api_version, group, kind, _HANDLERS.get((group, kind)))
            if typed is not None and typed.group() == _type_prefix(api_version, kind):
                _KNOWN_PREFIXES[typed.group()] = known
        api_version, group, kind, handler = known
        if handler is None:
            self._unknown_kind(api_version, kind, source)
            return
        raw_type, add = handler
        try:
            if add is _add_pod:
                pod = _pod_from_json(text)
                self.pods.append(pod)
                self.pod_origin[pod.key] = (source, _label(where, kind, pod.name, pod.namespace))
            else:
                add(self, decode.decode_json(_DECODERS[raw_type], text), group)
        except decode.DecodeError as exc:
            meta = _HEAD.decode(text).metadata
            raise InputError(
                exc.message, source=source, where=_label(where, kind, meta.name, meta.namespace), field=exc.field
            ) from None

    def _add_pod_object(self, obj: dict[str, Any]) -> None:
        raw_meta = obj.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        pod = self.pod_memo.get(key) if all(key) else None
        if pod is None:
            pod = decode.pod_from_raw(decode.convert(obj, decode.RawPod))
        if all(key):
            self.parsed_pods[key] = pod
        self.pods.append(pod)

    def _add_list_annotations(self, annotations: Any) -> None:
        if not isinstance(annotations, dict):
            return
        ref, error = annotations.get(SCHEDULER_LEASE_ANNOTATION), annotations.get(SCHEDULER_LEASE_ERROR_ANNOTATION)
        if isinstance(ref, str) and ref:
            self.lease_ref = ref
            self.lease_error = error if isinstance(error, str) and error else None

    def scheduler_lease(self) -> SchedulerLease | None:
        if self.lease_ref is None:
            return None
        return SchedulerLease(self.lease_ref, self.leases.get(self.lease_ref), self.lease_error)

    def _unknown_kind(self, api_version: str, kind: str, source: str) -> None:
        if f"{api_version}/{kind}" not in self._unknown:
            self._unknown.add(f"{api_version}/{kind}")
            self.warnings.append(f"{source}: ignored objects of unknown kind {api_version} {kind}")


def _label(where: str, kind: str, name: Any, namespace: Any) -> str:
    """How an error names the object: its place in the file, kind and name."""
    named = f"{namespace}/{name}" if namespace else str(name)
    return f"{where} ({kind} {named})".strip() if where else f"{kind} {named}"


def _pod_from_json(text: msgspec.Raw) -> Pod:
    """The cache's fast shape first (parts a workload's pods share are decoded once); an object that
    does not fit it is decoded in the full shape, which names a bad field as `pod_from_raw` does."""
    try:
        return decode.pod_from_listed(_LISTED_POD.decode(text))
    except (msgspec.ValidationError, decode.Refit):
        return decode.pod_from_raw(decode.decode_json(_DECODERS[decode.RawPod], text))


def _add_pod(c: _Collector, raw: decode.RawPod, group: str) -> None:
    c.pods.append(decode.pod_from_raw(raw))


def _add_node(c: _Collector, raw: decode.RawNode, group: str) -> None:
    c.nodes.append(decode.node_from_raw(raw))


def _add_namespace(c: _Collector, raw: decode.RawNamespace, group: str) -> None:
    c.namespaces[raw.metadata.name] = raw.metadata.labels or {}


def _add_workload(kind: str) -> Callable[[_Collector, decode.RawWorkload, str], None]:
    def add(c: _Collector, raw: decode.RawWorkload, group: str) -> None:
        c.workloads.append(decode.workload_from_raw(raw, kind))

    return add


def _appended(records: str, convert: Callable[[Any], Any]) -> Callable[[_Collector, Any, str], None]:
    """A handler that appends the converted object to the collector's list `records`."""

    def add(c: _Collector, raw: Any, group: str) -> None:
        getattr(c, records).append(convert(raw))

    return add


def _add_node_metrics(c: _Collector, raw: decode.RawNodeMetrics, group: str) -> None:
    usage = decode.node_usage_from_metrics(raw)
    c.node_usage[usage.node] = usage


def _add_pod_metrics(c: _Collector, raw: decode.RawPodMetrics, group: str) -> None:
    usage = decode.pod_usage_from_metrics(raw)
    c.pod_usage[usage.key] = usage


def _add_node_metric(c: _Collector, raw: decode.RawKoordNodeMetric, group: str) -> None:
    node, pods = decode.usage_from_node_metric(raw)
    if node is not None:
        c.node_usage[node.node] = node
    for pod in pods:
        c.pod_usage[pod.key] = pod


def _add_quota(c: _Collector, raw: decode.RawElasticQuota, group: str) -> None:
    c.quotas.append(decode.quota_from_raw(raw, group))


def _add_reservation(c: _Collector, raw: decode.RawReservation, group: str) -> None:
    c.reservations.append(decode.reservation_from_raw(raw))


def _add_job(c: _Collector, raw: decode.RawMigrationJob, group: str) -> None:
    c.jobs.append(decode.migration_job_from_raw(raw))


def _add_lease(c: _Collector, raw: dict[str, Any], group: str) -> None:
    """Kept as the API's JSON: a plan reads the scheduler Lease's few fields (`lease_presence`)."""
    meta = raw.get("metadata")
    if isinstance(meta, dict):
        c.leases[f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"] = raw


# (group, kind) -> (the raw shape its objects decode into, what adds one to the collector)
_HANDLERS: dict[tuple[str, str], tuple[type[Any], Callable[[_Collector, Any, str], None]]] = {
    ("", "Node"): (decode.RawNode, _add_node),
    ("", "Pod"): (decode.RawPod, _add_pod),
    ("", "Namespace"): (decode.RawNamespace, _add_namespace),
    **{("apps", kind): (decode.RawWorkload, _add_workload(kind)) for kind in _WORKLOAD_KINDS},
    ("policy", "PodDisruptionBudget"): (decode.RawPDB, _appended("pdbs", decode.pdb_from_raw)),
    ("", "PersistentVolumeClaim"): (decode.RawPVC, _appended("pvcs", decode.pvc_from_raw)),
    ("", "PersistentVolume"): (decode.RawPV, _appended("pvs", decode.pv_from_raw)),
    ("storage.k8s.io", "StorageClass"): (
        decode.RawStorageClass,
        _appended("storage_classes", decode.storage_class_from_raw),
    ),
    ("storage.k8s.io", "CSINode"): (decode.RawCSINode, _appended("csi_nodes", decode.csi_node_from_raw)),
    ("resource.k8s.io", "ResourceClaim"): (
        decode.RawResourceClaim,
        _appended("resource_claims", decode.resource_claim_from_raw),
    ),
    ("metrics.k8s.io", "NodeMetrics"): (decode.RawNodeMetrics, _add_node_metrics),
    ("metrics.k8s.io", "PodMetrics"): (decode.RawPodMetrics, _add_pod_metrics),
    ("slo.koordinator.sh", "NodeMetric"): (decode.RawKoordNodeMetric, _add_node_metric),
    **{(group, "ElasticQuota"): (decode.RawElasticQuota, _add_quota) for group in _QUOTA_GROUPS},
    ("descheduler.dev", "Reservation"): (decode.RawReservation, _add_reservation),
    ("descheduler.dev", "PodMigrationJob"): (decode.RawMigrationJob, _add_job),
    ("coordination.k8s.io", "Lease"): (dict, _add_lease),
}
_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {
    raw_type: msgspec.json.Decoder(raw_type) for raw_type, _ in _HANDLERS.values()
}


def load_snapshot(paths: str | Path | Sequence[str | Path], now: datetime | None = None) -> Snapshot:
    """Load a snapshot from files or directories; errors name the file, object and field.

    `now` defaults to the snapshot's recorded time (annotation `descheduler.dev/snapshot-time`
    on a List), else the current time.
    """
    files = [f for p in ([paths] if isinstance(paths, str | Path) else paths) for f in snapshot_files(Path(p))]
    whole: set[Path] = set()
    while True:
        try:
            return _finish(_collect(files, whole), now)
        except snapshot_file.Restart as restart:
            # Rare (a hand-edited or cut-short file): start again, reading that file whole.
            whole.add(restart.path)


def _collect(files: list[Path], whole: set[Path]) -> _Collector:
    collector = _Collector()
    for file in files:
        try:
            for where, obj in snapshot_file.documents(file, whole=file in whole):
                collector.add(obj, str(file), where)
        except msgspec.DecodeError:
            if file in whole:
                raise
            raise snapshot_file.Restart(file) from None  # a line of a streamed file is not JSON
    return collector


def load_snapshot_objects(
    objects: Iterable[Mapping[str, Any] | msgspec.Raw],
    now: datetime,
    source: str = "<objects>",
    pod_memo: dict[tuple[str, str], Pod] | None = None,
) -> Snapshot:
    """Build a snapshot from already-loaded API objects (tests, the simulator). `pod_memo`: pods by uid
    and resourceVersion from the call before, replaced by this call's, so a caller reading the same
    cluster again and again (the simulated scheduler) parses only the pods that changed."""
    collector = _Collector(pod_memo)
    for index, obj in enumerate(objects):
        collector.add(obj if isinstance(obj, msgspec.Raw) else dict(obj), source, f"object {index}")
    if pod_memo is not None:
        pod_memo.clear()
        pod_memo.update(collector.parsed_pods)
    return _finish(collector, now)


def _finish(c: _Collector, now: datetime | None) -> Snapshot:
    names = Counter(n.name for n in c.nodes)
    duplicate = next((name for name, count in names.items() if count > 1), None)
    if duplicate:
        raise InputError(f"node {duplicate!r} appears more than once", field="metadata.name")
    pod_keys = Counter(p.key for p in c.pods)
    duplicate = next((key for key, count in pod_keys.items() if count > 1), None)
    if duplicate:
        source, label = c.pod_origin[duplicate]
        raise InputError(f"pod {duplicate!r} appears more than once", source=source, where=label)
    for pod in c.pods:
        if pod.node_name and pod.node_name not in names:
            source, label = c.pod_origin[pod.key]
            raise InputError(
                f"pod is bound to node {pod.node_name!r}, which is not in the snapshot",
                source=source,
                where=label,
                field="spec.nodeName",
            )
    usage = [u for u in c.node_usage.values() if u.node in names]
    return Snapshot.build(
        now=now or c.snapshot_time or datetime.now(UTC),
        nodes=c.nodes,
        pods=c.pods,
        pdbs=c.pdbs,
        pvcs=c.pvcs,
        pvs=c.pvs,
        storage_classes=c.storage_classes,
        csi_nodes=c.csi_nodes,
        resource_claims=c.resource_claims,
        workloads=c.workloads,
        namespaces=c.namespaces,
        node_usage=usage,
        pod_usage=c.pod_usage.values(),
        quotas=c.quotas,
        reservations=c.reservations,
        jobs=c.jobs,
        warnings=c.warnings,
        scheduler_lease=c.scheduler_lease(),
    )
