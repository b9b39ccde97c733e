"""MakeBeforeBreak without the grant (deploy/base alone: no get on ReplicaSets, no get or update on
Deployments): the fake API server refuses those calls with 403 as kube-apiserver's RBAC does. The
job waits with the pod untouched, says the fix once (a condition, an Event, a log line), goes on once
the grant appears, and is Aborted at its ttl when it never does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from descheduler.migration import pass_reads, rollout_steps, steps
from descheduler.migration.steps import Hold, Record, Transition
from descheduler.rollout import LABEL_REPLACES
from tests.migration.conftest import NS, Harness
from tests.migration.test_make_before_break import deployment, plan_and_submit, run_sampling, solo_pods
from tests.migration.test_make_before_break_steps import ACKNOWLEDGED, STARTED, mbb
from tests.migration.test_steps import NOW

FIX = "add the component deploy/components/make-before-break (it grants update on deployments)"
USER = "system:serviceaccount:descheduler-system:descheduler"
WAITING_LOG = "make-before-break rollout forbidden; waiting for the grant"


def refuse_rollouts(h: Harness) -> list[object]:
    """What deploy/base alone refuses the controller: reading the pod's ReplicaSet and its
    Deployment, and writing the Deployment (the messages are kube-apiserver's)."""
    faults = h.cluster.server.faults
    rules = []
    for verb, resource in (("get", "replicasets"), ("get", "deployments"), ("update", "deployments")):
        message = (
            f'{resource}.apps is forbidden: User "{USER}" cannot {verb} resource "{resource}" in API group "apps" '
            f'in the namespace "{NS}"'
        )
        path = rf"/apis/apps/v1/namespaces/[^/]+/{resource}/[^/]+$"
        rules.append(faults.fail_next(1_000_000, path=path, verb=verb, status=403, message=message))
    return rules


def grant(h: Harness, rules: list[object]) -> int:
    """The component is applied: the calls are allowed from now on; how many were refused."""
    return sum(h.cluster.server.faults.cancel(rule) for rule in rules)


def condition(job: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in job["status"]["conditions"] if c["type"] == kind)


@pytest.fixture
def harness(make_harness: Any) -> Any:
    from tests.migration.test_make_before_break import SOLO_USAGE, objects, policy

    def make(**policy_args: Any) -> Harness:
        return make_harness(objects(), policy(**policy_args), **SOLO_USAGE)

    return make


class _Log:
    """Stands in for the jobs' logger: structlog caches its logger, with the stream it was first given,
    on first use, so a capture set up after another test logged would see nothing."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def bind(self, **fields: object) -> _Log:
        return self

    def __getattr__(self, level: str) -> Any:
        return lambda event, *args, **fields: self.lines.append(f"{level} {event} {fields}")


def test_without_the_grant_the_move_waits_says_the_fix_once_and_goes_on_once_granted(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _Log()
    monkeypatch.setattr(pass_reads, "log", log)
    h = harness(ttl="5m")
    before = copy.deepcopy(deployment(h)["spec"]["template"])
    [old] = solo_pods(h)
    rules = refuse_rollouts(h)
    name = plan_and_submit(h)
    controller = h.controller()
    h.run(controller, 90, tick=0.5)  # many passes; the retries back off to a minute apart

    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Running", rollout_steps.ROLLOUT_FORBIDDEN), job[
        "status"
    ]
    assert FIX in job["status"]["message"] and "403" in job["status"]["message"]
    started = condition(job, "ReplacementStarted")
    assert (started["status"], started["reason"]) == ("False", rollout_steps.ROLLOUT_FORBIDDEN)
    [event] = [e for e in h.events("PodMigrationJob", name) if e["reason"] == rollout_steps.ROLLOUT_FORBIDDEN]
    assert event["type"] == "Warning" and FIX in event["message"] and event.get("count", 1) == 1
    said = [line for line in log.lines if WAITING_LOG in line]
    assert len(said) == 1 and FIX in said[0], said
    assert deployment(h)["spec"]["template"] == before  # nothing written, nothing evicted
    assert [p["metadata"]["uid"] for p in solo_pods(h)] == [old["metadata"]["uid"]] and h.evictions() == 0

    refused = grant(h, rules)
    assert refused >= 3  # it kept looking: once at first, then as the backoff allowed
    samples = run_sampling(h, name, 120, controller=controller)
    job = h.job(name)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert condition(job, "ReplacementStarted")["status"] == "True"
    assert min(samples) >= 1
    assert deployment(h)["spec"]["template"]["metadata"]["labels"][LABEL_REPLACES] == old["metadata"]["uid"]


def test_never_granted_the_job_is_aborted_at_its_ttl_with_the_pod_untouched(harness: Any) -> None:
    h = harness(ttl="1m")
    before = copy.deepcopy(deployment(h)["spec"]["template"])
    [old] = solo_pods(h)
    refuse_rollouts(h)
    name = plan_and_submit(h)
    run_sampling(h, name, 120)
    job = h.job(name)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Aborted", rollout_steps.ROLLOUT_FORBIDDEN), job[
        "status"
    ]
    assert "was not touched" in job["status"]["message"] and FIX in job["status"]["message"]
    assert deployment(h)["spec"]["template"] == before
    assert [p["metadata"]["uid"] for p in solo_pods(h)] == [old["metadata"]["uid"]] and h.evictions() == 0
    assert not h.reservations()


# ---------------------------------------------------------------------- the decisions (pure)

REFUSAL = "get replicasets/shop/web: 403 Forbidden: replicasets.apps is forbidden"


def test_the_first_refusal_is_recorded_and_said_then_only_held() -> None:
    first = rollout_steps.rollout_forbidden(mbb(ACKNOWLEDGED), REFUSAL, NOW)
    assert isinstance(first, Record) and first.warning and first.event == rollout_steps.ROLLOUT_FORBIDDEN
    assert FIX in first.message and "namespace shop" in first.message and not first.status.has("ReplacementStarted")
    again = mbb(ACKNOWLEDGED)
    again = again.model_copy(update={"status": first.status})
    assert rollout_steps.rollout_forbidden(again, REFUSAL, NOW) == Hold(rollout_steps.ROLLOUT_FORBIDDEN, first.message)
    assert steps.next_step(again, NOW, dry_run=False, due=True) == "StartReplacement"  # it looks again
    other = rollout_steps.rollout_forbidden(again, "update deployments/shop/web: 403 Forbidden", NOW)
    assert isinstance(other, Record)  # another refusal is said too


@pytest.mark.parametrize(
    ("conditions", "phase"),
    [(ACKNOWLEDGED, "Aborted"), (STARTED, "Failed")],
    ids=["never-started", "started-then-refused"],
)
def test_at_the_ttl_a_refusal_ends_the_job(conditions: dict[str, Any], phase: str) -> None:
    end = rollout_steps.rollout_expiry_forbidden(mbb(conditions), REFUSAL)
    assert isinstance(end, Transition) and (end.phase, end.reason) == (phase, rollout_steps.ROLLOUT_FORBIDDEN)
    assert FIX in end.message
