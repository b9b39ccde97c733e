"""Admission facts (descheduler/migration/admission.py): workloads counted once, from one snapshot."""

from __future__ import annotations

from descheduler.migration.admission import workload_facts
from tests.builders import node, pod, snapshot, workload


def test_a_workloads_size_is_its_spec_replicas_else_its_live_pods() -> None:
    snap = snapshot(
        [
            node("n1"),
            workload("web", 5),
            *(pod(f"web-{i}", "n1", owner="web") for i in range(2)),
            *(pod(f"api-{i}", "n1", owner="api") for i in range(3)),
            pod("api-done", "n1", owner="api", phase="Succeeded"),
            pod("api-waiting", owner="api"),  # not Ready: not scheduled
        ]
    )
    web, api = (next(p for p in snap.pods if p.name == name).owner for name in ("web-0", "api-0"))
    assert web is not None and api is not None
    facts = workload_facts(snap, {web.uid, api.uid, "uid-gone", ""})
    assert set(facts) == {web.uid, api.uid}  # nothing of "uid-gone" to count
    assert (facts[web.uid].label, facts[web.uid].replicas) == ("ReplicaSet default/web", 5)
    assert (facts[api.uid].label, facts[api.uid].replicas) == (
        "ReplicaSet default/api",
        4,
    )  # finished pods do not count
    assert facts[api.uid].ready == {"default/api-0", "default/api-1", "default/api-2"}
    assert snap.replicas_of(api.uid) == 4 and snap.replicas_of("uid-gone") == 0
