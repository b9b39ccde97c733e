"""One-shot reads of a live cluster: the Snapshot for `plan --kubeconfig`, and the snapshot file
`snapshot save` writes (README §4.1), which `plan --snapshot` replays with the same `now`."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec
import structlog

from descheduler import snapshot_file
from descheduler.errors import ClusterUnreachableError
from descheduler.kube.client import KubeApiError, KubeClient, RetryPolicy, connect
from descheduler.kube.gcpause import paused_gc
from descheduler.kube.kinds import CLUSTER_KINDS, KINDS, NODES, PODS, RawList, ResourceKind
from descheduler.kube.listing import ContinueExpired, list_pages
from descheduler.loadsource import cache_kinds, reader_for
from descheduler.migration.objects import SCHEDULER_LEASE, SCHEDULER_LEASE_NAMESPACE
from descheduler.policy import Policy
from descheduler.snapshot import SchedulerLease, Snapshot
from descheduler.timestamps import format_time

log = structlog.get_logger(__name__)

# One-shot commands should fail fast on an unreachable cluster rather than retry for long.
ONE_SHOT_RETRY = RetryPolicy(max_retries=2, backoff_cap=2.0)
REDACTED = "<redacted by descheduler snapshot save>"


@contextmanager
def cluster(kubeconfig: Path | None, context: str | None, *, timeout: float = 30.0) -> Iterator[KubeClient]:
    client = connect(kubeconfig, context, timeout=timeout, retry=ONE_SHOT_RETRY)
    try:
        yield client
    finally:
        client.close()


def read_snapshot(
    client: KubeClient,
    policy: Policy,
    now: datetime,
    *,
    scheduler_lease: tuple[str, str] = (SCHEDULER_LEASE_NAMESPACE, SCHEDULER_LEASE),
    sync_timeout: float = 60.0,
) -> Snapshot:
    """Sync a cache of the cluster once, read the policy's load source and the scheduler Lease
    (`scheduler_lease`: namespace, name), and take one Snapshot."""
    from descheduler.kube.cache import ClusterCache  # NumPy with it, which `snapshot save` does not need

    cache = ClusterCache(client, kinds=(*CLUSTER_KINDS, *cache_kinds(policy.load_source)))
    reader = reader_for(policy.load_source, client, cache)
    try:
        cache.start()
        deadline = time.monotonic() + sync_timeout
        while not cache.wait_synced(0.2):
            refused = [f"{name}: {s.error}" for name, s in cache.status().items() if s.code in (401, 403)]
            if refused:
                # Retrying will not grant a permission: say so now rather than after the timeout.
                raise ClusterUnreachableError(f"{client.host} refused to list: {'; '.join(refused)}")
            if time.monotonic() > deadline:
                raise ClusterUnreachableError(
                    f"{client.host}: could not list the cluster within {sync_timeout:g}s: {cache.not_ready()}"
                )
        reading = reader.read(now)
        lease = read_scheduler_lease(client, *scheduler_lease)
        return dataclasses.replace(cache.snapshot(now, reading), scheduler_lease=lease)
    finally:
        cache.stop()
        reader.close()


@dataclass(frozen=True, slots=True)
class SavedSnapshot:
    path: Path
    counts: Mapping[str, int]
    warnings: tuple[str, ...]


def save_snapshot(
    client: KubeClient,
    policy: Policy,
    path: Path,
    now: datetime,
    *,
    scheduler_lease: tuple[str, str] = (SCHEDULER_LEASE_NAMESPACE, SCHEDULER_LEASE),
) -> SavedSnapshot:
    """Write the cluster, one load reading and the scheduler Lease (`scheduler_lease`: namespace,
    name) to `path` as a List annotated with `now` and the Lease looked for (and why it could not be
    read, if so), in the format its suffix names (`descheduler.snapshot_file`), page by page as the
    API lists them."""
    lease = read_scheduler_lease(client, *scheduler_lease)
    annotations = {snapshot_file.SCHEDULER_LEASE_ANNOTATION: lease.ref}
    lease_warnings = []
    if lease.error is not None:
        annotations[snapshot_file.SCHEDULER_LEASE_ERROR_ANNOTATION] = lease.error
        lease_warnings.append(
            f"cannot read the scheduler Lease {lease.ref}: {lease.error}; plans on this snapshot leave out how "
            "ReservationFirst moves would go"
        )
    reader = reader_for(policy.load_source, client)
    counts: Counter[str] = Counter()
    # The GC paused as while the cache lists: what is kept (the load reading's objects and records,
    # the keys written) grows by the object, and every full collection would walk it again.
    with paused_gc():
        try:
            reading = reader.read(now, keep_objects=True, usage=False)
        finally:
            reader.close()
        with snapshot_file.writing(path, format_time(now), annotations) as write:
            warnings = write_cluster(client, write, counts)
            for text in reading.objects:
                data = bytes(text)
                write(data)
                # Most begin with their type (object_text puts it there); only others are decoded for it.
                head = snapshot_file.TYPE_HEAD.match(data)
                counts[head[1].decode() if head is not None else str(_KIND.decode(data).kind)] += 1
            if lease.found is not None:
                write(_ENCODER.encode(_redacted({"apiVersion": LEASE_API_VERSION, "kind": "Lease", **lease.found})))
                counts["Lease"] += 1
    return SavedSnapshot(path, dict(counts), tuple(warnings + list(reading.warnings) + lease_warnings))


LEASE_API_VERSION = "coordination.k8s.io/v1"


def read_scheduler_lease(client: KubeClient, namespace: str, name: str) -> SchedulerLease:
    """The scheduler Lease, read once (GET): the object, none (404), or why it could not be read (a
    403, any other error): a plan without it still plans, it only cannot say how moves would go."""
    ref = f"{namespace}/{name}"
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
    try:
        found = msgspec.json.decode(client.request("GET", path))
    except KubeApiError as error:
        if error.status == 404:
            return SchedulerLease(ref)
        return SchedulerLease(ref, error=str(error))
    except (ClusterUnreachableError, msgspec.DecodeError) as error:
        return SchedulerLease(ref, error=str(error))
    if not isinstance(found, dict):
        return SchedulerLease(ref, error=f"GET {path}: not a Lease object")
    return SchedulerLease(ref, found)


# --- listing for a snapshot file ------------------------------------------------------------
#
# Built-in kinds have nothing at the top but apiVersion, kind, metadata, spec and status, so their
# objects pass through as JSON text: only the metadata is parsed field by field, and msgspec skips
# managedFields (most of a pod's metadata) without building it. Custom resources may have more at
# the top, so they are read as plain data.

_ABSENT = msgspec.Raw(b"")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_ENCODER = msgspec.json.Encoder()
_BUILT_IN_GROUPS = ("", "apps", "policy")


class _PassingMeta(msgspec.Struct, rename="camel", omit_defaults=True):
    """ObjectMeta (meta/v1) field by field as the API sent it, less managedFields."""

    name: str = ""
    generate_name: msgspec.Raw = _ABSENT
    namespace: str = ""
    self_link: msgspec.Raw = _ABSENT
    uid: msgspec.Raw = _ABSENT
    resource_version: msgspec.Raw = _ABSENT
    generation: msgspec.Raw = _ABSENT
    creation_timestamp: msgspec.Raw = _ABSENT
    deletion_timestamp: msgspec.Raw = _ABSENT
    deletion_grace_period_seconds: msgspec.Raw = _ABSENT
    labels: msgspec.Raw = _ABSENT
    annotations: msgspec.Raw = _ABSENT
    owner_references: msgspec.Raw = _ABSENT
    finalizers: msgspec.Raw = _ABSENT


class _PassingObject(msgspec.Struct, rename="camel", omit_defaults=True):
    """A built-in object with its spec and status as JSON text."""

    api_version: str = ""
    kind: str = ""
    metadata: _PassingMeta = msgspec.field(default_factory=_PassingMeta)
    spec: msgspec.Raw = _ABSENT
    status: msgspec.Raw = _ABSENT


_PASSING_PAGE = msgspec.json.Decoder(RawList[_PassingObject])
_PLAIN_PAGE = msgspec.json.Decoder(RawList[dict[str, Any]])
_FIELDS_LIST = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])
_CONTAINER_GROUPS = ("containers", "initContainers", "ephemeralContainers")
_REDACTED_VALUE = msgspec.Raw(_ENCODER.encode(REDACTED))


class _ContainerEnv(msgspec.Struct):
    """A container as far as its env list goes: msgspec skips the rest without building it."""

    env: msgspec.Raw = _ABSENT


class _PodSpecEnvs(msgspec.Struct, rename="camel"):
    """A pod spec as far as its nodeName and its containers' env lists go."""

    node_name: Any = None
    containers: list[_ContainerEnv] | None = None
    init_containers: list[_ContainerEnv] | None = None
    ephemeral_containers: list[_ContainerEnv] | None = None


_POD_SPEC_ENVS = msgspec.json.Decoder(_PodSpecEnvs)
_ENV_KEY = b'"env":'


class _Kind(msgspec.Struct):
    kind: Any = None


_KIND = msgspec.json.Decoder(_Kind)


def write_cluster(
    client: KubeClient,
    write: Callable[[bytes], None],
    counts: Counter[str],
    kinds: Iterable[str] = CLUSTER_KINDS,
    *,
    page_size: int = 500,
) -> list[str]:
    """Write every object of the kinds as the API lists them (apiVersion and kind set, redacted as
    `_redacted` says), counting them by kind; returns warnings. Pods bound to a node that does not
    exist are left out, as the cache leaves them (nodes are listed first)."""
    warnings: list[str] = []
    node_names: set[str] | None = None
    for name in kinds:
        kind = KINDS[name]
        listing = _KindListing(kind, write, node_names if name == PODS else None)
        for attempt in range(3):
            try:
                for page in list_pages(client, kind.path, listing.decode, page_size=page_size):
                    listing.write_page(page)
                break
            except ContinueExpired:
                if attempt == 2:
                    raise ClusterUnreachableError(f"cannot list {name}: the list expired three times") from None
                # Listed again from the start; objects already written are not written twice.
            except KubeApiError as error:
                if error.status == 404 and kind.optional:
                    break  # the CRD is not installed: nothing to save
                if error.status == 403 and kind.may_be_forbidden:
                    warnings.append(f"may not list {name} (403): left out")
                    break
                raise ClusterUnreachableError(f"cannot list {name}: {error}") from None
        if listing.written:
            counts[kind.kind] += len(listing.written)
        if name == NODES:
            node_names = listing.names
        if listing.orphans:
            example, node = next(iter(listing.orphans.items()))
            warnings.append(
                f"{len(listing.orphans)} pod(s) bound to nodes that do not exist (e.g. {example} on {node}): left out"
            )
    return warnings


class _KindListing:
    """The pages of one kind into the file: what was written (by key), pods left out."""

    def __init__(self, kind: ResourceKind, write: Callable[[bytes], None], node_names: set[str] | None) -> None:
        self.kind = kind
        self.write = write
        self.node_names = node_names
        self.passing: msgspec.json.Decoder[RawList[Any]] | None = None
        if kind.group in _BUILT_IN_GROUPS:
            self.passing = _PASSING_PAGE
        self.written: set[str] = set()
        self.names: set[str] = set()
        self.orphans: dict[str, str] = {}  # pod key -> the node it is bound to

    def decode(self, body: bytes) -> RawList[Any]:
        if self.passing is not None:
            try:
                return self.passing.decode(body)
            except msgspec.ValidationError:
                pass  # an object of an unexpected shape: this page as plain data
        return _PLAIN_PAGE.decode(body)

    def write_page(self, page: RawList[Any]) -> None:
        for obj in page.items or ():
            if isinstance(obj, _PassingObject):
                self._write_passing(obj)
            else:
                self._write_plain(obj)

    def _write_passing(self, obj: _PassingObject) -> None:
        meta = obj.metadata
        node = ""
        if obj.spec is not _ABSENT:
            if self.kind.kind == "Pod":
                obj.spec, node = _redacted_pod_spec(bytes(obj.spec))
            elif b'"env"' in bytes(obj.spec):
                obj.spec = _redacted_template_spec(obj.spec)
        if self._skip(meta.namespace, meta.name, node):
            return
        if not obj.api_version:
            obj.api_version, obj.kind = self.kind.api_version, self.kind.kind
        if meta.annotations and _LAST_APPLIED.encode() in bytes(meta.annotations):
            annotations = msgspec.json.decode(meta.annotations)
            if isinstance(annotations, dict):
                annotations.pop(_LAST_APPLIED, None)
                meta.annotations = msgspec.Raw(_ENCODER.encode(annotations))
        self.write(_ENCODER.encode(obj))

    def _write_plain(self, obj: dict[str, Any]) -> None:
        raw_meta = obj.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        spec = obj.get("spec")
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        if self._skip(str(meta.get("namespace") or ""), str(meta.get("name") or ""), node or ""):
            return
        self.write(_ENCODER.encode(_redacted({"apiVersion": self.kind.api_version, "kind": self.kind.kind, **obj})))

    def _skip(self, namespace: str, name: str, node: str) -> bool:
        """Whether to leave the object out: written already (a list started again), or a pod bound
        to a node that does not exist."""
        key = f"{namespace}/{name}"
        if key in self.written:
            return True
        if self.kind.kind == "Node":
            self.names.add(name)
        if self.node_names is not None and node and node not in self.node_names:
            self.orphans[key] = node
            return True
        self.written.add(key)
        return False


def _redacted_pod_spec(text: bytes) -> tuple[msgspec.Raw, str]:
    """A pod spec with its containers' env values redacted, and its nodeName. The spec keeps the
    API's text, each env list replaced where it stands by the list redacted (`_redacted_env`). That
    needs each env list's place: when `"env":` occurs in the text other than once for each env list
    found (whitespace, a repeated key, the key in another field), or a list is not where expected,
    the spec is decoded whole and encoded again instead."""
    try:
        found = _POD_SPEC_ENVS.decode(text)
    except msgspec.ValidationError:  # not the shape of a pod spec: as plain data
        return _plainly_redacted(text)
    node = found.node_name if isinstance(found.node_name, str) else ""
    envs = [
        bytes(container.env)
        for group in (found.containers, found.init_containers, found.ephemeral_containers)
        for container in group or ()
        if container.env is not _ABSENT
    ]
    if not envs and b'"env"' not in text:
        return msgspec.Raw(text), node
    try:
        spliced = _spliced(text, envs)
    except msgspec.ValidationError:  # an env list that is not a list of objects
        spliced = None
    return (msgspec.Raw(spliced), node) if spliced is not None else _plainly_redacted(text)


def _spliced(text: bytes, envs: list[bytes]) -> bytes | None:
    """`text` with each env list in `envs` replaced where its `"env":` key stands by the list
    redacted, or None when the keys are not exactly those lists' (the groups' order in the text is
    not known, so each key takes whichever list left follows it)."""
    if text.count(_ENV_KEY) != len(envs):
        return None
    pieces: list[bytes] = []
    at = 0
    left = list(envs)
    for _ in envs:
        start = text.find(_ENV_KEY, at) + len(_ENV_KEY)
        old = next((env for env in left if text.startswith(env, start)), None)
        if old is None:
            return None
        left.remove(old)
        pieces += (text[at:start], _redacted_env(old))
        at = start + len(old)
    pieces.append(text[at:])
    return b"".join(pieces)


@lru_cache(maxsize=4096)
def _redacted_env(env: bytes) -> bytes:
    """An env list with every value redacted; its entries' other fields pass as the API sent them.
    Remembered by its text: the replicas of a workload have the same env lists."""
    entries = _FIELDS_LIST.decode(env)
    for entry in entries:
        if "value" in entry:
            entry["value"] = _REDACTED_VALUE
    return _ENCODER.encode(entries)


def _plainly_redacted(spec: bytes) -> tuple[msgspec.Raw, str]:
    """A pod spec decoded whole, its env values redacted, and encoded again; and its nodeName."""
    value = msgspec.json.decode(spec)
    _redact_env(value)
    node = value.get("nodeName") if isinstance(value, dict) else None
    return msgspec.Raw(_ENCODER.encode(value)), node if isinstance(node, str) else ""


def _redacted_template_spec(spec: msgspec.Raw) -> msgspec.Raw:
    """A workload's spec with its pod template's env values redacted (workloads are few: decoded whole)."""
    value = msgspec.json.decode(spec)
    _redact_template(value)
    return msgspec.Raw(_ENCODER.encode(value))


def _redacted(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what a shared file must not carry and planning never reads: managed fields, the
    last-applied manifest, and container environment values (they may hold credentials): a pod's,
    and those of a workload's pod template."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(_LAST_APPLIED, None)
    if obj.get("kind") == "Pod":
        _redact_env(obj.get("spec"))
    else:
        _redact_template(obj.get("spec"))
    return obj


def _redact_template(spec: Any) -> None:
    """The env values of the pod template in a workload's spec (`spec.template.spec`), as a pod's."""
    template = spec.get("template") if isinstance(spec, dict) else None
    if isinstance(template, dict):
        _redact_env(template.get("spec"))


def _redact_env(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    for group in _CONTAINER_GROUPS:
        _redact_containers(spec.get(group))


def _redact_containers(containers: Any) -> None:
    for container in containers or ():
        for env in (container.get("env") or ()) if isinstance(container, dict) else ():
            if isinstance(env, dict) and "value" in env:
                env["value"] = REDACTED
