"""No limit is ever exceeded, counted from the PodMigrationJobs in the API after every pass."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from descheduler.plan import Migration, Plan, PodKey
from descheduler.policy import workload_limit

from .conftest import JOBS, NS, Harness, make_policy, node, pdb, replicaset, running_pod

APPS = ("web", "api", "batch")
PLACEMENT = {
    "web": ["node-a", "node-a", "node-b", "node-b"],
    "api": ["node-a", "node-b", "node-b", "node-c"],
    "batch": ["node-a", "node-c", "node-c", "node-c"],
}


def _objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [node(n) for n in ("node-a", "node-b", "node-c", "node-d", "node-e")]
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for app in APPS:
        objects.append(replicaset(app, 4))
        objects += [running_pod(app, i, n) for i, n in enumerate(PLACEMENT[app])]
        objects.append(pdb(app, 4))  # no disruption allowed: admitted jobs stay in flight
    return objects


def _in_flight(h: Harness) -> list[dict[str, Any]]:
    return [j for j in h.cluster.store.list(JOBS) if (j.get("status") or {}).get("phase") == "Running"]


def _check(h: Harness, limits: dict[str, Any]) -> int:
    running = _in_flight(h)
    if "maxMigratingGlobally" in limits:
        assert len(running) <= limits["maxMigratingGlobally"]
    per_node = Counter(j["status"]["sourceNode"] for j in running)
    assert max(per_node.values(), default=0) <= limits.get("maxMigratingPerNode", 2)
    per_workload = Counter(j["status"]["workload"]["uid"] for j in running)
    allowed = workload_limit(limits.get("maxMigratingPerWorkload"), 4)
    assert max(per_workload.values(), default=0) <= allowed
    # Unavailable per workload: pods not Ready, or Ready but migrating.
    unavailable_allowed = workload_limit(limits.get("maxUnavailablePerWorkload"), 4)
    for app in APPS:
        pods = {p["metadata"]["name"]: p for p in h.pods(app) if not p["metadata"].get("deletionTimestamp")}
        ready = {n for n in pods if n in {p["metadata"]["name"] for p in h.ready_pods(app)}}
        moving = {j["spec"]["podRef"]["name"] for j in running if j["status"]["workload"]["name"] == app}
        assert 4 - len(ready - moving) <= unavailable_allowed, (app, sorted(ready), sorted(moving))
    return len(running)


@pytest.mark.parametrize(
    "limits",
    [
        {"maxMigratingGlobally": 3, "maxMigratingPerNode": 2},
        {"maxMigratingPerNode": 1, "maxMigratingPerWorkload": 1},
        {"maxMigratingPerWorkload": 2, "maxUnavailablePerWorkload": 1},
    ],
    ids=["global-3-node-2", "node-1-workload-1", "unavailable-1"],
)
def test_jobs_in_flight_never_exceed_the_limits(make_harness: Callable[..., Harness], limits: dict[str, Any]) -> None:
    h = make_harness(_objects(), make_policy(ttl="30m", bucket=10, **limits))
    moves = []
    for app in APPS:
        for i, source in enumerate(PLACEMENT[app]):
            pod = h.cluster.store.get("pods", f"{app}-{i}", NS)
            moves.append(
                Migration(
                    pod=PodKey(NS, f"{app}-{i}"),
                    uid=pod["metadata"]["uid"],
                    strategy="LowNodeLoad",
                    source_node=source,
                    target_node=None,
                    mode="ReservationFirst",
                    reason="test",
                )
            )
    names = h.submit(Plan(now=h.now(), migrations=tuple(moves)))
    assert len(names) == 12
    controller = h.controller()
    peak = 0
    for _ in range(20):  # every budget is 0: admitted jobs pile up as far as the limits let them
        controller.reconcile_once()
        peak = max(peak, _check(h, limits))
        h.cluster.advance(5)
    assert peak > 0
    waiting = [j for j in h.cluster.store.list(JOBS) if (j.get("status") or {}).get("phase", "Pending") == "Pending"]
    assert waiting and all(j["status"]["reason"].startswith("Max") for j in waiting)

    for app in APPS:  # budgets return: jobs finish, the waiting ones are admitted in turn

        def relax(obj: dict[str, Any]) -> None:
            obj["spec"]["minAvailable"] = 3
            obj["metadata"]["generation"] = 2

        h.cluster.store.modify("poddisruptionbudgets.policy", app, NS, relax)
    for _ in range(200):
        controller.reconcile_once()
        _check(h, limits)
        phases = Counter((j.get("status") or {}).get("phase", "Pending") for j in h.cluster.store.list(JOBS))
        if phases["Succeeded"] == 12:
            break
        h.cluster.advance(3)
    assert phases["Succeeded"] == 12, phases
    h.run(controller, 60, until=lambda: all(len(h.ready_pods(a)) == 4 for a in APPS))
    assert all(len(h.ready_pods(a)) == 4 and len(h.active_pods(a)) == 4 for a in APPS)
