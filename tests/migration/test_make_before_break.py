"""MakeBeforeBreak end to end on the simulated cluster (its Deployment controller rolls out as
kube-controller-manager's does; tests/fakecluster/test_deployment_rollout.py): the only pod of a
Deployment on a hot node is moved with a Ready pod at every moment, onto its Reservation's node; a
replacement that never gets Ready leaves the pod and the Deployment as they were; a controller that
restarts mid-move finishes it; and what an autoscaler, a GitOps tool and a budget change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.workloads import template_hash
from descheduler.migration.api import MigrationApi
from descheduler.migration.controller import MigrationController
from descheduler.migration.presence import Route, SchedulerPresence, never_without
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import parse_policy
from descheduler.rollout import LABEL_REPLACES
from tests.migration.conftest import NS, POLICY, Harness, node, pdb, start_cluster

DEPLOYMENT = "deployments.apps"
POD_UID = "uid-pod-solo"


def _template(readiness_gate: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "solo",
                "image": "example.com/solo:1",
                "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
            }
        ]
    }
    if readiness_gate:
        # Nothing sets this condition: a pod made from the template is never Ready (the pod already
        # running was made Ready before the gate was there).
        spec["readinessGates"] = [{"conditionType": "example.com/never"}]
    return {"metadata": {"labels": {"app": "solo"}}, "spec": spec}


def objects(strategy: dict[str, Any] | None = None, readiness_gate: bool = False) -> list[dict[str, Any]]:
    """node-a runs only solo (one replica) at about 70% cpu: hot; node-b…d are idle and twice its size."""
    template = _template(readiness_gate)
    hashed = template_hash(template)
    rs_template = copy.deepcopy(template)
    rs_template["metadata"]["labels"]["pod-template-hash"] = hashed
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "solo", "namespace": NS, "uid": "uid-deploy-solo", "generation": 1},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "solo"}},
            "template": template,
            **({"strategy": strategy} if strategy else {}),
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
        },
    }
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"solo-{hashed}",
            "namespace": NS,
            "uid": "uid-rs-solo",
            "labels": rs_template["metadata"]["labels"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "solo",
                    "uid": "uid-deploy-solo",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "solo", "pod-template-hash": hashed}},
            "template": rs_template,
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"solo-{hashed}-aaaaa",
            "namespace": NS,
            "uid": POD_UID,
            "labels": dict(rs_template["metadata"]["labels"]),
            "creationTimestamp": "2026-01-15T10:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"solo-{hashed}",
                    "uid": "uid-rs-solo",
                    "controller": True,
                }
            ],
        },
        "spec": {**copy.deepcopy(template["spec"]), "nodeName": "node-a"},
        "status": {
            "phase": "Running",
            "startTime": "2026-01-15T10:00:00Z",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "Ready", "status": "True"},
                *([{"type": "example.com/never", "status": "True"}] if readiness_gate else []),
            ],
        },
    }
    return [
        node("node-a"),
        *(node(n, cpu="16") for n in ("node-b", "node-c", "node-d")),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        deployment,
        replicaset,
        pod,
    ]


def cluster(objs: list[dict[str, Any]]) -> SimulatedCluster:
    return start_cluster(objs, **SOLO_USAGE)


def policy(make_before_break: bool = True, ttl: str = "2m", retention: str = "1h") -> Any:
    text = POLICY.format(ttl=ttl, eviction_policy="Eviction", bucket=1, extra=f"  jobRetention: {retention}\n")
    switch = "true" if make_before_break else "false"
    return parse_policy(
        text.replace(
            "evictor: {minReplicas: 2}", f"evictor: {{minReplicas: 2, makeBeforeBreak: {{enabled: {switch}}}}}"
        )
    )


# The replacement is Ready 5 s after it starts: the old pod must outlive that.
SOLO_USAGE: dict[str, Any] = {"app": "solo", "cpu_fraction": 2.5, "ready_delay": 5}


@pytest.fixture
def harness(make_harness: Any) -> Any:
    def make(objs: list[dict[str, Any]] | None = None, **policy_args: Any) -> Harness:
        return make_harness(objs or objects(), policy(**policy_args), **SOLO_USAGE)

    return make


def solo_pods(h: Harness) -> list[dict[str, Any]]:
    return h.active_pods("solo")


def ready_solo(h: Harness) -> int:
    return len(h.ready_pods("solo"))


def plan_and_submit(h: Harness) -> str:
    plan, _ = plan_cycle(h.snapshot(), h.policy)
    assert [(m.pod.name, m.mode) for m in plan.migrations] == [(solo_pods(h)[0]["metadata"]["name"], "MakeBeforeBreak")]
    [name] = h.submit(plan)
    return name


def run_sampling(h: Harness, name: str, seconds: float, controller: Any = None) -> list[int]:
    """Drive the job to an end (or `seconds`), sampling the Ready solo pods after every step."""
    samples: list[int] = []

    def done() -> bool:
        samples.append(ready_solo(h))
        return h.phase(name) in ("Succeeded", "Failed", "Aborted")

    h.run(controller or h.controller(), seconds, until=done, tick=0.5)
    return samples


def deployment(h: Harness) -> dict[str, Any]:
    return h.cluster.store.get(DEPLOYMENT, "solo", NS)


def run_until_rollout(h: Harness, controller: Any) -> None:
    """Drive the move until the Deployment's template carries its label (its rollout began)."""
    h.run(
        controller,
        30,
        until=lambda: deployment(h)["spec"]["template"]["metadata"]["labels"].get(LABEL_REPLACES) == POD_UID,
        tick=0.5,
    )


def test_without_make_before_break_the_only_pod_is_kept(harness: Any) -> None:
    h = harness(make_before_break=False)
    plan, _ = plan_cycle(h.snapshot(), h.policy)
    assert plan.migrations == ()
    assert any("minReplicas" in skip.reason for skip in plan.skipped)


def test_the_only_pod_moves_with_a_ready_pod_at_every_moment(harness: Any) -> None:
    h = harness()
    old = solo_pods(h)[0]["metadata"]["name"]
    name = plan_and_submit(h)
    samples = run_sampling(h, name, 120)
    job = h.job(name)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert min(samples) >= 1, samples  # 0 unready moments
    [new] = solo_pods(h)
    assert new["metadata"]["name"] != old
    assert new["spec"]["nodeName"] == job["status"]["targetNode"] != "node-a"
    assert new["metadata"]["labels"][LABEL_REPLACES] == POD_UID
    assert job["status"]["newPodRef"]["name"] == new["metadata"]["name"]
    assert [c["type"] for c in job["status"]["conditions"]] == [
        "ReservationCreated",
        "ReservationScheduled",
        "ReplacementStarted",
        "ReplacementBound",
        "ReplacementReady",
        "Evicted",
    ]
    assert h.evictions() == 0  # the rollout removed the pod; nothing was evicted
    assert deployment(h)["spec"]["replicas"] == 1  # replicas are never written
    assert [e["reason"] for e in h.events("Pod", old)] == ["Descheduled"]


def test_evict_first_leaves_the_workload_without_a_ready_pod_for_a_while(harness: Any) -> None:
    """The baseline the mode removes: the same move as ReservationFirst (minReplicas 1)."""
    h = harness(make_before_break=False)
    h.policy = parse_policy(
        POLICY.format(ttl="2m", eviction_policy="Eviction", bucket=1, extra="").replace(
            "evictor: {minReplicas: 2}", "evictor: {minReplicas: 1}"
        )
    )
    plan, _ = plan_cycle(h.snapshot(), h.policy)
    assert [m.mode for m in plan.migrations] == ["ReservationFirst"]
    [name] = h.submit(plan)
    samples = run_sampling(h, name, 120)
    assert h.phase(name) == "Succeeded"
    assert samples.count(0) * 0.5 >= 5  # at least the replacement's ready delay without a Ready pod


def test_a_replacement_that_never_gets_ready_leaves_everything_as_it_was(harness: Any) -> None:
    h = harness(objects(readiness_gate=True), ttl="1m")
    old = solo_pods(h)[0]
    before = copy.deepcopy(deployment(h)["spec"]["template"])
    name = plan_and_submit(h)
    samples = run_sampling(h, name, 150)
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Failed", "ReplacementNotReady"), job["status"]
    assert "stays on node node-a" in job["status"]["message"]
    assert min(samples) == 1
    assert deployment(h)["spec"]["template"] == before  # the template as it was
    h.cluster.advance(10)
    [kept] = solo_pods(h)
    assert kept["metadata"]["uid"] == old["metadata"]["uid"]  # the replacement is gone, the pod stays
    assert not h.reservations()
    # The undone rollout counts as a move of the workload: the cooldown keeps the next cycle off it.
    plan, _ = plan_cycle(h.snapshot(), h.policy)
    assert plan.migrations == ()
    assert any("cooldown" in skip.reason for skip in plan.skipped), plan.skipped


def test_a_reserved_node_kube_schedulers_filters_refuse_undoes_the_rollout_at_once(harness: Any) -> None:
    h = harness(objects(readiness_gate=True))
    old = solo_pods(h)[0]
    before = copy.deepcopy(deployment(h)["spec"]["template"])
    name = plan_and_submit(h)
    controller = h.controller()
    run_until_rollout(h, controller)
    # The extender saw the replacement's filter call without the reserved node, and said so on the Reservation.
    [reservation] = h.reservations()
    reservation["status"] = {
        **reservation["status"],
        "phase": "Failed",
        "reason": "ReservedNodeRefused",
        "message": "kube-scheduler's filters refused reserved node node-b for the replacement shop/solo-x",
    }
    h.cluster.store.update(reservation, subresource="status")
    controller.reconcile_once()
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Failed", "ReservedNodeRefused"), job["status"]
    assert job["status"]["message"].endswith(
        f"the rollout was undone: pod {NS}/{old['metadata']['name']} stays on node node-a"
    )
    assert deployment(h)["spec"]["template"] == before  # not left running wherever it lands, nor Pending
    assert not h.reservations()
    h.cluster.advance(10)
    [kept] = solo_pods(h)
    assert kept["metadata"]["uid"] == old["metadata"]["uid"]


def test_a_controller_restarted_mid_move_finishes_it(harness: Any) -> None:
    h = harness()
    name = plan_and_submit(h)
    first = h.controller()
    run_until_rollout(h, first)
    assert any(c["type"] == "ReplacementStarted" for c in h.job(name)["status"]["conditions"])
    samples = run_sampling(h, name, 120, controller=h.controller())  # a new instance: nothing in memory
    assert h.phase(name) == "Succeeded"
    assert min(samples) >= 1


def test_a_rollout_started_but_not_recorded_is_adopted(harness: Any) -> None:
    """A controller that labelled the template and stopped before writing ReplacementStarted: the next
    one finds its label there and does not change the template again."""
    h = harness()
    name = plan_and_submit(h)
    controller = h.controller()
    h.cluster.server.faults.fail_next(1, path=r"/podmigrationjobs/[^/]+/status$", verb="update", status=500)
    run_until_rollout(h, controller)
    generation = deployment(h)["metadata"]["generation"]
    samples = run_sampling(h, name, 120, controller=h.controller())
    assert h.phase(name) == "Succeeded", h.job(name)["status"]
    assert deployment(h)["metadata"]["generation"] == generation
    assert min(samples) >= 1


def test_an_autoscaler_that_scaled_the_deployment_since_the_plan_fails_the_job_untouched(harness: Any) -> None:
    h = harness()
    name = plan_and_submit(h)
    h.cluster.store.modify(DEPLOYMENT, "solo", NS, lambda d: d["spec"].update(replicas=2))
    h.cluster.advance(5)
    run_sampling(h, name, 30)
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Failed", "NotSingleReplica")
    assert LABEL_REPLACES not in deployment(h)["spec"]["template"]["metadata"]["labels"]


def test_a_gitops_tool_that_reapplies_replicas_does_not_disturb_the_move(harness: Any) -> None:
    """A tool that owns `replicas` writes 1 again and again: the move never changes it."""
    h = harness()
    name = plan_and_submit(h)
    controller = h.controller()

    def reapply() -> bool:
        h.cluster.store.modify(DEPLOYMENT, "solo", NS, lambda d: d["spec"].update(replicas=1))
        return h.phase(name) in ("Succeeded", "Failed", "Aborted")

    h.run(controller, 120, until=reapply, tick=0.5)
    assert h.phase(name) == "Succeeded"


def test_a_gitops_tool_that_reverts_the_template_fails_the_job_and_keeps_the_pod(harness: Any) -> None:
    """A tool that owns the whole template takes the label off mid-move: the Deployment rolls back to
    the pod's ReplicaSet, and the job says so at its ttl instead of fighting."""
    h = harness(objects(readiness_gate=True), ttl="1m")
    old = solo_pods(h)[0]["metadata"]["uid"]
    name = plan_and_submit(h)
    controller = h.controller()
    run_until_rollout(h, controller)

    def revert(d: dict[str, Any]) -> None:
        del d["spec"]["template"]["metadata"]["labels"][LABEL_REPLACES]

    h.cluster.store.modify(DEPLOYMENT, "solo", NS, revert)
    samples = run_sampling(h, name, 120, controller=controller)
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Failed", "RolloutChanged"), job["status"]
    assert min(samples) == 1
    h.cluster.advance(10)
    assert [p["metadata"]["uid"] for p in solo_pods(h)] == [old]


def test_a_budget_that_would_not_let_the_pod_go_holds_the_move(harness: Any) -> None:
    """minAvailable 2 of a one-replica Deployment: even beside its Ready replacement the pod may not
    go. The plan leaves it; a budget made after the plan holds the job until its ttl, untouched."""
    h = harness([*objects(), pdb("solo", 2)])
    plan, _ = plan_cycle(h.snapshot(), h.policy)
    assert plan.migrations == ()
    assert any("PodDisruptionBudget" in skip.reason for skip in plan.skipped), plan.skipped
    h = harness(ttl="1m")
    name = plan_and_submit(h)
    h.cluster.store.create(pdb("solo", 2))
    h.cluster.advance(2)
    run_sampling(h, name, 90)
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Aborted", "Timeout"), job["status"]
    assert LABEL_REPLACES not in deployment(h)["spec"]["template"]["metadata"]["labels"]


def test_a_budget_of_one_lets_the_move_through(harness: Any) -> None:
    h = harness([*objects(), pdb("solo", 1)])
    name = plan_and_submit(h)
    samples = run_sampling(h, name, 120)
    assert h.phase(name) == "Succeeded", h.job(name)["status"]
    assert min(samples) >= 1


def test_without_a_reservation_aware_scheduler_the_move_waits_and_ends_untouched(harness: Any) -> None:
    """Where another move would evict without a Reservation (reservationScheduler Absent), a
    MakeBeforeBreak move waits: nothing would keep its replacement off the source. At its ttl it is
    Aborted with the pod and the Deployment as they were."""
    h = harness(ttl="1m")
    h.policy = parse_policy(
        POLICY.format(
            ttl="1m", eviction_policy="Eviction", bucket=1, extra="  reservationScheduler: {expect: Absent}\n"
        ).replace("evictor: {minReplicas: 2}", "evictor: {minReplicas: 2, makeBeforeBreak: {enabled: true}}")
    )
    name = plan_and_submit(h)
    controller = MigrationController(
        h.api, lambda: h.policy, h.snapshot, h.now, h.recorder, presence=SchedulerPresence(MigrationApi(h.api))
    )
    samples = run_sampling(h, name, 90, controller=controller)
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Aborted", "Timeout"), job["status"]
    created = next(c for c in job["status"]["conditions"] if c["type"] == "ReservationCreated")
    assert created["status"] == "False" and "needs a reservation-aware scheduler" in created["message"]
    assert not h.reservations()
    assert LABEL_REPLACES not in deployment(h)["spec"]["template"]["metadata"]["labels"]
    assert min(samples) == 1 and h.evictions() == 0


def test_never_without_turns_only_make_before_break_moves_into_waits() -> None:
    route = Route("Without", "no Lease", "absent")
    assert never_without(route, "MakeBeforeBreak").way == "Wait"
    assert never_without(route, "ReservationFirst") == route
    assert never_without(Route("Reservation", ""), "MakeBeforeBreak").way == "Reservation"


def test_an_autoscaler_that_scales_up_mid_move_lets_the_rollout_finish(harness: Any) -> None:
    """Scaled to two replicas once the rollout started: the rollout takes both new pods to Ready; the
    move still ends when its own replacement is Ready on the target and the moved pod is gone."""
    h = harness()
    name = plan_and_submit(h)
    controller = h.controller()
    run_until_rollout(h, controller)
    h.cluster.store.modify(DEPLOYMENT, "solo", NS, lambda d: d["spec"].update(replicas=2))
    samples = run_sampling(h, name, 120, controller=controller)
    assert h.phase(name) == "Succeeded", h.job(name)["status"]
    assert min(samples) >= 1
    h.cluster.advance(20)
    pods = solo_pods(h)
    assert len(pods) == 2 and all(p["metadata"]["labels"][LABEL_REPLACES] == POD_UID for p in pods)
