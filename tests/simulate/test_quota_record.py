"""The simulation record's quota accounting, from the API objects: a quota's used is the requests of its
bound, unfinished, non-terminating pods (a parent's, its subtree's); a pod that was Pending is timed
from creation to Running, or counted as still Pending."""

from __future__ import annotations

from typing import Any

from descheduler.policy import default_policy
from descheduler.simulate.record import SimulationRecord

T0 = 1_768_478_400.0  # 2026-01-15T12:00:00Z


def _stamp(seconds: float) -> str:
    from descheduler.fakecluster.apiserver.clock import rfc3339

    return rfc3339(T0 + seconds)


def _quota(name: str, namespace: str, cpu_min: str, parent: str = "") -> dict[str, Any]:
    labels = {"quota.scheduling.koordinator.sh/parent": parent} if parent else {}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"min": {"cpu": cpu_min, "memory": "1Gi"}, "max": {"cpu": "16", "memory": "64Gi"}},
    }


def _pod(
    name: str,
    namespace: str,
    cpu: str,
    *,
    node: str = "n1",
    created: float = -60.0,
    started: float | None = -60.0,
    labels: dict[str, str] | None = None,
    terminating: bool = False,
    phase: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": labels or {},
        "creationTimestamp": _stamp(created),
    }
    if terminating:
        meta["deletionTimestamp"] = _stamp(0)
    status: dict[str, Any] = {"phase": phase or ("Running" if started is not None else "Pending")}
    if started is not None:
        status["startTime"] = _stamp(started)
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    return {"metadata": meta, "spec": {**spec, **({"nodeName": node} if node else {})}, "status": status}


def _record() -> SimulationRecord:
    return SimulationRecord(default_policy(), began=T0)


def test_used_counts_bound_live_pods_only() -> None:
    record = _record()
    pods = [
        _pod("a", "team-a", "1"),
        _pod("b", "team-a", "2"),
        _pod("going", "team-a", "4", terminating=True),
        _pod("done", "team-a", "4", phase="Succeeded"),
        _pod("waiting", "team-a", "4", node="", started=None),
    ]
    record.on_pods(T0 + 10, pods, [_quota("team-a", "team-a", "4")])
    assert record.quotas["team-a"].used["cpu"] == [(10.0, 3000)]
    assert record.quotas["team-a"].used["memory"] == [(10.0, 2 * 1024**3)]


def test_a_pod_belongs_to_the_quota_its_label_names_else_the_only_one_in_its_namespace() -> None:
    record = _record()
    label = {"quota.scheduling.koordinator.sh/name": "team-b"}
    pods = [_pod("x", "shared", "1", labels=label), _pod("y", "team-a", "2"), _pod("z", "shared", "4")]
    quotas = [_quota("team-a", "team-a", "4"), _quota("team-b", "team-b", "4"), _quota("team-c", "shared", "4")]
    record.on_pods(T0, pods, quotas)
    assert {name: series.now()["cpu"] for name, series in record.quotas.items()} == {
        "team-a": 2000,
        "team-b": 1000,
        "team-c": 4000,
    }


def test_a_parent_quota_counts_its_subtree() -> None:
    record = _record()
    quotas = [_quota("org", "org", "8"), _quota("team-a", "team-a", "4", parent="org")]
    record.on_pods(T0, [_pod("a", "team-a", "1"), _pod("o", "org", "2")], quotas)
    assert (record.quotas["org"].now()["cpu"], record.quotas["team-a"].now()["cpu"]) == (3000, 1000)


def test_used_keeps_only_its_changes_and_the_report_holds_the_last_to_the_end() -> None:
    record = _record()
    quotas = [_quota("team-a", "team-a", "4")]
    record.on_pods(T0, [_pod("a", "team-a", "1")], quotas)
    record.on_pods(T0 + 5, [_pod("a", "team-a", "1")], quotas)
    record.on_pods(T0 + 10, [_pod("a", "team-a", "1"), _pod("b", "team-a", "1")], quotas)
    record.sampled = 30.0
    assert record.quota_report()["quotas"]["team-a"]["used"]["cpu"] == [[0.0, 1000], [10.0, 2000], [30.0, 2000]]


def test_a_pod_that_was_pending_is_timed_from_creation_to_running() -> None:
    record = _record()
    quotas = [_quota("team-b", "team-b", "8")]
    old = _pod("old", "team-b", "1")  # running since before the run: never waited
    waiting = _pod("w", "team-b", "1", node="", created=20, started=None)
    record.on_pods(T0 + 30, [old, waiting], quotas)
    record.on_pods(T0 + 90, [old, _pod("w", "team-b", "1", created=20, started=87)], quotas)
    record.on_pods(T0 + 95, [old, _pod("late", "team-b", "1", node="", created=60, started=None)], quotas)
    record.sampled = 100.0
    waits = record.quota_report()
    assert [(w["pod"], w["seconds"], w["state"]) for w in waits["podWaits"]] == [
        ("team-b/w", 67.0, "Running"),
        ("team-b/late", None, "Pending"),
    ]
    summary = waits["quotaWaits"]["team-b"]
    assert (summary["running"], summary["stillPending"], summary["pendingFor"]) == (1, 1, [40.0])


def test_a_pod_deleted_before_it_ran_is_not_still_pending() -> None:
    record = _record()
    quotas = [_quota("team-b", "team-b", "8")]
    record.on_pods(T0 + 10, [_pod("w", "team-b", "1", node="", created=5, started=None)], quotas)
    record.on_pods(T0 + 20, [], quotas)
    summary = record.quota_report()["quotaWaits"]["team-b"]
    assert (summary["stillPending"], summary["deleted"]) == (0, 1)
