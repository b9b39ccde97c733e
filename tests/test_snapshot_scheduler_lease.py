"""The scheduler Lease in a snapshot file: `snapshot save` names the Lease it looked for on the List
and saves the Lease when it exists; every format loads both back onto the Snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from descheduler import snapshot_file
from descheduler.snapshot import SCHEDULER_LEASE_ANNOTATION, SchedulerLease, Snapshot, load_snapshot
from descheduler.snapshot_file import SCHEDULER_LEASE_ERROR_ANNOTATION

REF = "descheduler-system/descheduler-scheduler"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}}


def lease(namespace: str = "descheduler-system", name: str = "descheduler-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"descheduler.dev/scheduler-names": "load-aware-scheduler"},
        },
        "spec": {
            "holderIdentity": "extender-1",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-01-15T11:00:00.000000Z",
            "renewTime": "2026-01-15T11:59:57.123456Z",
        },
    }


def saved(path: Path, objects: list[dict[str, Any]], annotations: dict[str, str] | None = None) -> Snapshot:
    with snapshot_file.writing(path, "2026-01-15T12:00:00Z", annotations) as write:
        for obj in objects:
            write(msgspec.json.encode(obj))
    return load_snapshot(path)


@pytest.mark.parametrize("suffix", snapshot_file.SUFFIXES)
def test_every_format_carries_the_lease_and_the_name_looked_for(tmp_path: Path, suffix: str) -> None:
    snapshot = saved(tmp_path / f"cluster{suffix}", [NODE, lease()], {SCHEDULER_LEASE_ANNOTATION: REF})
    assert snapshot.scheduler_lease == SchedulerLease(REF, lease())
    assert snapshot.warnings == ()  # a Lease is a known kind, not "ignored objects of unknown kind"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_lease_looked_for_and_not_found_is_a_ref_without_an_object(tmp_path: Path, suffix: str) -> None:
    snapshot = saved(tmp_path / f"cluster{suffix}", [NODE], {SCHEDULER_LEASE_ANNOTATION: REF})
    assert snapshot.scheduler_lease == SchedulerLease(REF)


@pytest.mark.parametrize("suffix", [".json", ".yaml.gz"])
def test_a_lease_that_could_not_be_read_keeps_why(tmp_path: Path, suffix: str) -> None:
    why = "GET /apis/coordination.k8s.io/v1/namespaces/descheduler-system/leases/descheduler-scheduler: 403 Forbidden"
    annotations = {SCHEDULER_LEASE_ANNOTATION: REF, SCHEDULER_LEASE_ERROR_ANNOTATION: why}
    snapshot = saved(tmp_path / f"cluster{suffix}", [NODE], annotations)
    assert snapshot.scheduler_lease == SchedulerLease(REF, error=why)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_without_the_annotation_no_lease_is_kept(tmp_path: Path, suffix: str) -> None:
    snapshot = saved(tmp_path / f"cluster{suffix}", [NODE, lease()])
    assert snapshot.scheduler_lease is None
    assert snapshot.warnings == ()


def test_only_the_lease_looked_for_is_the_scheduler_lease(tmp_path: Path) -> None:
    others = [lease(name="descheduler"), lease(namespace="kube-system")]
    annotations = {SCHEDULER_LEASE_ANNOTATION: "team-a/scheduler"}
    snapshot = saved(tmp_path / "cluster.json", [NODE, *others, lease("team-a", "scheduler")], annotations)
    assert snapshot.scheduler_lease == SchedulerLease("team-a/scheduler", lease("team-a", "scheduler"))


@pytest.mark.parametrize("dump", ["json", "yaml"])
def test_a_list_read_whole_carries_the_lease_too(tmp_path: Path, dump: str) -> None:
    """kubectl's pretty-printed files are read whole, not streamed: the same Lease comes out."""
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {SCHEDULER_LEASE_ANNOTATION: REF}},
        "items": [NODE, lease()],
    }
    path = tmp_path / f"cluster.{dump}"
    path.write_text(json.dumps(document, indent=2) if dump == "json" else yaml.safe_dump(document))
    assert load_snapshot(path).scheduler_lease == SchedulerLease(REF, lease())


def test_the_demo_snapshot_looked_for_no_lease() -> None:
    demo = Path(__file__).resolve().parent.parent / "descheduler" / "demo" / "snapshot.yaml"
    assert load_snapshot(demo).scheduler_lease is None
