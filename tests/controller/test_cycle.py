"""The controller's planning cycle over the demo snapshot: skip on unreadable data, dry-run,
submission, and strategy state carried from one cycle to the next."""

from __future__ import annotations

from datetime import datetime

from descheduler import metrics
from descheduler.cli import demo_snapshot_path
from descheduler.controller.cycle import PlanningLoop, SourceError
from descheduler.plan import Plan
from descheduler.policy import Policy, parse_policy
from descheduler.snapshot import Snapshot, load_snapshot, load_snapshot_objects

DEMO = load_snapshot(demo_snapshot_path())

POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
dryRun: {dry_run}
strategies:
  - name: LowNodeLoad
    args:
      highThresholds: {{cpu: 70}}
      lowThresholds: {{cpu: 45}}
      anomalyCondition: {{consecutiveAbnormalities: 2}}
"""


def policy(dry_run: bool = False) -> Policy:
    return parse_policy(POLICY.format(dry_run=str(dry_run).lower()))


class Source:
    def __init__(self) -> None:
        self.problem: str | None = None
        self.error: str | None = None

    def not_ready(self) -> str | None:
        return self.problem

    def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
        if self.error:
            raise SourceError(self.error)
        return DEMO


class Recorder:
    def __init__(self) -> None:
        self.plans: list[Plan] = []

    def submit(self, plan: Plan, snapshot: Snapshot) -> list[str]:
        self.plans.append(plan)
        return [f"job-{m.pod.name}" for m in plan.migrations]


def loop(source: Source, mover: Recorder, p: Policy) -> PlanningLoop:
    return PlanningLoop(source, mover, lambda: p, lambda: DEMO.now)


def cycles(result: str) -> float:
    return metrics.sample("descheduler_cycles_total", {"result": result})


def test_no_cycle_on_an_unsynced_cache_or_an_unreadable_load_source() -> None:
    source, mover = Source(), Recorder()
    controller = loop(source, mover, policy())
    before = cycles("skipped")
    source.problem = "cache not synced: pods"
    assert controller.run_cycle().skipped_reason == "cache not synced: pods"
    source.problem, source.error = None, "metrics.k8s.io: 503 Service Unavailable"
    result = controller.run_cycle()
    assert result.plan is None and result.skipped_reason.startswith("metrics.k8s.io")
    assert mover.plans == []
    assert cycles("skipped") == before + 2


def test_state_carries_across_cycles_and_moves_are_submitted_once_debounced() -> None:
    mover = Recorder()
    controller = loop(Source(), mover, policy())
    first = controller.run_cycle()
    assert first.plan is not None and first.plan.migrations == ()  # hot once: not yet
    assert {n.name: n.hot_cycles for n in first.plan.nodes if n.node_class == "high"} == {"node-a": 1, "node-b": 1}
    second = controller.run_cycle()
    assert second.plan is not None and len(second.plan.migrations) == 2
    assert second.submitted == [f"job-{m.pod.name}" for m in second.plan.migrations]
    assert len(mover.plans) == 1


def test_dry_run_plans_but_submits_nothing() -> None:
    mover = Recorder()
    controller = loop(Source(), mover, policy(dry_run=True))
    controller.run_cycle()
    result = controller.run_cycle()
    assert result.plan is not None and len(result.plan.migrations) == 2
    assert result.submitted == [] and mover.plans == []
    assert metrics.sample("descheduler_nodes", {"class": "high"}) == 2


def test_a_reclaim_writes_an_event_on_the_borrowing_elastic_quota() -> None:
    from pathlib import Path

    from descheduler.events import EventRecorder
    from descheduler.fakecluster.apiserver import FakeApiServer
    from descheduler.policy import load_policy

    root = Path(__file__).resolve().parents[2]
    quota_demo = load_snapshot(root / "descheduler" / "demo" / "quota.yaml")
    quota_policy = load_policy(root / "config" / "examples" / "quota-reclaim-demo.yaml")

    class QuotaSource(Source):
        def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
            return quota_demo

    with FakeApiServer() as server, server.api_client() as api:
        for q in quota_demo.quotas:  # the quotas' namespaces exist in a real cluster
            if not server.store.exists("namespaces", q.namespace):
                server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": q.namespace}})
        loop = PlanningLoop(
            QuotaSource(), Recorder(), lambda: quota_policy, lambda: quota_demo.now, recorder=EventRecorder(api)
        )
        result = loop.run_cycle()
        assert result.plan is not None and result.submitted
        events = [e for e in server.store.list("events") if e["involvedObject"]["kind"] == "ElasticQuota"]
    lender = result.plan.migrations[0].quota
    assert lender is not None
    assert [(e["involvedObject"]["name"], e["reason"]) for e in events] == [(lender.name, "Reclaim")]
    assert str(result.plan.migrations[0].pod) in events[0]["message"]


def test_a_reclaim_without_progress_writes_a_warning_event_on_the_waiting_quota_and_counts_it() -> None:
    from datetime import timedelta

    from descheduler.events import EventRecorder
    from descheduler.fakecluster.apiserver import FakeApiServer
    from tests.quota_builders import NOW, node, pod, policy_text, quota

    def world(gone: bool) -> Snapshot:
        team_a = (
            [pod("a-new", "team-a", node="n1", cpu=2, age=5)] if gone else [pod("a-old", "team-a", node="n1", cpu=2)]
        )
        objects = [
            node("n1", cpu="4"),
            quota("team-a", min={"cpu": 0}),
            quota("team-b", min={"cpu": 4}),
            pod("b-0", "team-b", node="n1", cpu=2),
            *team_a,
            pod("train", "team-b", cpu=2, age=600),
        ]
        return load_snapshot_objects(objects, NOW + timedelta(seconds=90 if gone else 0))

    snapshots = [world(gone=False), world(gone=True)]

    class Worlds(Source):
        def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
            return snapshots.pop(0)

    labels = {"group": "team-b", "lender": "team-a"}
    before = metrics.sample("descheduler_quota_reclaim_no_progress_total", labels)
    with FakeApiServer() as server, server.api_client() as api:
        for name in ("team-a", "team-b"):
            server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        times = [NOW, NOW + timedelta(seconds=90)]
        planning = PlanningLoop(
            Worlds(), Recorder(), lambda: parse_policy(policy_text()), lambda: times.pop(0), recorder=EventRecorder(api)
        )
        first = planning.run_cycle()
        assert first.plan is not None and [str(m.pod) for m in first.plan.migrations] == ["team-a/a-old"]
        planning.run_cycle()
        events = [e for e in server.store.list("events") if e["reason"] == "QuotaReclaimNoProgress"]
    assert metrics.sample("descheduler_quota_reclaim_no_progress_total", labels) == before + 1
    assert [(e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events] == [
        ("Warning", "ElasticQuota", "team-b")
    ]
    assert "team-a/a-old" in events[0]["message"] and "team-b/train still pending" in events[0]["message"]
