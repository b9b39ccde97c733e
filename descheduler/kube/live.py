"""One-shot reads of a live cluster: the Snapshot for `plan --kubeconfig`, and the snapshot file
`snapshot save` writes (README §4.1), which `plan --snapshot` replays with the same `now`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog
import yaml

from descheduler.errors import ClusterUnreachableError, InputError
from descheduler.kube.cache import ClusterCache
from descheduler.kube.client import KubeApiError, KubeClient, RetryPolicy, connect
from descheduler.kube.kinds import CLUSTER_KINDS, KINDS, NODES, PODS
from descheduler.kube.listing import list_objects
from descheduler.loadsource import cache_kinds, reader_for
from descheduler.policy import Policy
from descheduler.snapshot import SNAPSHOT_TIME_ANNOTATION, Snapshot
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


def read_snapshot(client: KubeClient, policy: Policy, now: datetime, *, sync_timeout: float = 60.0) -> Snapshot:
    """Sync a cache of the cluster once, read the policy's load source, and take one Snapshot."""
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
        return cache.snapshot(now, reading)
    finally:
        cache.stop()
        reader.close()


@dataclass(frozen=True, slots=True)
class SavedSnapshot:
    path: Path
    counts: Mapping[str, int]
    warnings: tuple[str, ...]


def cluster_objects(client: KubeClient, kinds: Iterable[str] = CLUSTER_KINDS) -> tuple[list[dict[str, Any]], list[str]]:
    """Every object of the kinds, as the API has them (apiVersion and kind set), ordered by kind then
    (namespace, name); pods bound to a node that does not exist are left out as the cache leaves them."""
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    node_names: set[str] = set()
    for name in kinds:
        kind = KINDS[name]
        try:
            objects, _ = list_objects(client, kind.path, api_version=kind.api_version, kind=kind.kind)
        except KubeApiError as error:
            if error.status == 404 and kind.optional:
                continue  # the CRD is not installed: nothing to save
            raise ClusterUnreachableError(f"cannot list {name}: {error}") from None
        objects.sort(key=_namespace_and_name)
        if name == NODES:
            node_names = {str((o.get("metadata") or {}).get("name")) for o in objects}
        if name == PODS:
            bound = [o for o in objects if (o.get("spec") or {}).get("nodeName")]
            orphans = [o for o in bound if o["spec"]["nodeName"] not in node_names]
            if orphans:
                example = orphans[0]["metadata"]
                warnings.append(
                    f"{len(orphans)} pod(s) bound to nodes that do not exist (e.g. {example.get('namespace')}/"
                    f"{example.get('name')} on {orphans[0]['spec']['nodeName']}): left out"
                )
                gone = {id(o) for o in orphans}
                objects = [o for o in objects if id(o) not in gone]
        out.extend(_redacted(o) for o in objects)
    return out, warnings


def _namespace_and_name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _redacted(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what a shared file must not carry and planning never reads: managed fields, the
    last-applied manifest, and container environment values (they may hold credentials)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if obj.get("kind") == "Pod":
        spec = obj.get("spec") or {}
        for group in ("containers", "initContainers", "ephemeralContainers"):
            for container in spec.get(group) or ():
                for env in container.get("env") or ():
                    if isinstance(env, dict) and "value" in env:
                        env["value"] = REDACTED
    return obj


def save_snapshot(client: KubeClient, policy: Policy, path: Path, now: datetime) -> SavedSnapshot:
    """Write the cluster and one load reading as a `List` annotated with `now` (YAML, or JSON for .json)."""
    reader = reader_for(policy.load_source, client)
    try:
        reading = reader.read(now, keep_objects=True)
    finally:
        reader.close()
    objects, warnings = cluster_objects(client)
    items = objects + [dict(o) for o in reading.objects]
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {SNAPSHOT_TIME_ANNOTATION: format_time(now)}},
        "items": items,
    }
    _write(path, document)
    counts: dict[str, int] = {}
    for item in items:
        counts[str(item.get("kind"))] = counts.get(str(item.get("kind")), 0) + 1
    return SavedSnapshot(path, counts, tuple(warnings + list(reading.warnings)))


def _write(path: Path, document: Mapping[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as out:
            if path.suffix == ".json":
                json.dump(document, out, indent=1)
                out.write("\n")
            else:
                dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
                yaml.dump(document, out, Dumper=dumper, sort_keys=False, default_flow_style=False)
        temporary.replace(path)  # never leave a half-written snapshot under the real name
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", source=str(path)) from None
