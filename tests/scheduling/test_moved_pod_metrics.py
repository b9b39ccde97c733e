"""A node metric taken before a move still holds the moved pod's load: the planner must not read that
load as system load once the pod is gone (scheduling-core.md §4), or the source looks hot again
until the next report and a needless second move is planned."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from descheduler.errors import InputError
from descheduler.migration.executor import job_body
from descheduler.model import JOB_POD_USAGE_ANNOTATION
from descheduler.plan import Migration, PodKey
from tests.builders import NOW, classes, lnl_policy, loaded_node, migration_job, plan, policy, snapshot, ts, uid

# hot: a (1 cpu) and b (4 cpu), node metric 5 cpu = 62.5% > high 60%, taken at NOW over 30 s.
HOT = loaded_node("hot", [("a", "1"), ("b", "4")])
COOL = loaded_node("cool", [])


def moved(evicted_ago: float, *, usage: str | None = '{"cpu":"1","memory":"1Gi"}') -> dict[str, Any]:
    """A Succeeded job that evicted pod a from hot `evicted_ago` seconds before NOW."""
    job = migration_job("job-a", "a", "cool", phase="Succeeded")
    job["spec"]["podRef"]["uid"] = uid("pod", "default", "a")
    job["metadata"]["annotations"] = {"descheduler.dev/source-node": "hot"}
    if usage is not None:
        job["metadata"]["annotations"][JOB_POD_USAGE_ANNOTATION] = usage
    at = ts(NOW - timedelta(seconds=evicted_ago))
    job["status"]["conditions"] = [{"type": "Evicted", "status": "True", "lastTransitionTime": at}]
    return job


def without_pod_a(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cluster after a is gone: no pod a, no pod metric of a, the node metric unchanged."""
    return [o for o in objects if not (o["kind"] in ("Pod", "PodMetrics") and o["metadata"]["name"] == "a")]


def test_gone_pod_evicted_within_the_metric_window_no_longer_loads_its_source() -> None:
    objs = [*without_pod_a(HOT), *COOL, moved(evicted_ago=10)]
    assert classes(plan(objs, lnl_policy())) == {"cool": "low", "hot": "normal"}


def test_metric_taken_wholly_after_the_eviction_is_trusted() -> None:
    # Evicted 60 s ago; the 30 s window starts after it: the 5 cpu are real, hot is hot.
    objs = [*without_pod_a(HOT), *COOL, moved(evicted_ago=60)]
    assert classes(plan(objs, lnl_policy()))["hot"] == "high"


def test_pod_still_present_counts_once() -> None:
    # a is still there (its eviction not yet done): its own metric counts it; nothing is taken twice.
    objs = [*HOT, *COOL, moved(evicted_ago=10)]
    assert classes(plan(objs, lnl_policy()))["hot"] == "high"


def test_job_without_recorded_usage_changes_nothing() -> None:
    objs = [*without_pod_a(HOT), *COOL, moved(evicted_ago=10, usage=None)]
    assert classes(plan(objs, lnl_policy()))["hot"] == "high"


@pytest.mark.parametrize("text", ["1 cpu", "[1]", '{"cpu": "lots"}', '{"cpu": null}'])
def test_malformed_usage_annotation_is_an_error_naming_it(text: str) -> None:
    with pytest.raises(InputError) as err:
        snapshot([*HOT, moved(evicted_ago=10, usage=text)])
    assert JOB_POD_USAGE_ANNOTATION in str(err.value)


def test_executor_records_the_pods_measured_usage_on_the_job() -> None:
    snap = snapshot([*HOT, *COOL])
    pod = next(p for p in snap.pods if p.name == "a")
    move = Migration(
        pod=PodKey(namespace="default", name="a"),
        strategy="LowNodeLoad",
        source_node="hot",
        target_node="cool",
        mode="ReservationFirst",
        reason="node hot cpu 62% > high 60%",
    )
    body = job_body(move, pod, "c1", policy(lnl_policy()), snap)
    assert json.loads(body["metadata"]["annotations"][JOB_POD_USAGE_ANNOTATION]) == {"cpu": "1", "memory": "1Gi"}
