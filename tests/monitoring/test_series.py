"""The series the dashboard and the alerts read, counted where the controller decides: nodes and
hot streaks per node pool, skips by refusal code, the last cycle's time, the interval, dry run,
load-source errors and a rejected policy."""

from __future__ import annotations

import socket
import time
from datetime import datetime
from pathlib import Path

from descheduler import metrics
from descheduler.cli import demo_snapshot_path
from descheduler.controller.cycle import PlanningLoop
from descheduler.controller.reload import PolicyFile
from descheduler.controller.source import ClusterSource
from descheduler.plan import Plan
from descheduler.policy import Policy, parse_policy
from descheduler.snapshot import Snapshot, load_snapshot

DEMO = load_snapshot(demo_snapshot_path())  # node-a and node-b (zone-a) are hot

POOLS = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: 45s
dryRun: {dry_run}
evictor: {{namespaces: {{include: [nowhere]}}}}  # nothing may move: hot nodes stay hot
strategies:
  - name: LowNodeLoad
    args:
      highThresholds: {{cpu: 70}}
      lowThresholds: {{cpu: 45}}
      nodePools: [{pools}]
"""
ZONE_B = "{name: zone-b, nodeSelector: {matchLabels: {topology.kubernetes.io/zone: zone-b}}}"


def policy(pools: str = ZONE_B, dry_run: bool = False) -> Policy:
    return parse_policy(POOLS.format(pools=pools, dry_run=str(dry_run).lower()))


class DemoSource:
    def not_ready(self) -> str | None:
        return None

    def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
        return DEMO


class NoMover:
    def submit(self, plan: Plan, snapshot: Snapshot) -> list[str]:
        raise AssertionError("an evictor that allows no namespace plans no move")


def planning_loop(current: list[Policy]) -> PlanningLoop:
    return PlanningLoop(DemoSource(), NoMover(), lambda: current[0], lambda: DEMO.now)


def pool_nodes(pool: str, node_class: str) -> float | None:
    return metrics.REGISTRY.get_sample_value("descheduler_pool_nodes", {"pool": pool, "class": node_class})


def streak(pool: str) -> float | None:
    return metrics.REGISTRY.get_sample_value("descheduler_pool_hot_streak_cycles", {"pool": pool})


def test_nodes_are_counted_per_pool_and_class() -> None:
    planning_loop([policy()]).run_cycle()
    assert [pool_nodes("default", c) for c in ("high", "low", "normal", "excluded")] == [2, 0, 1, 0]
    assert sum(pool_nodes("zone-b", c) or 0 for c in ("high", "low", "normal", "excluded")) == 4
    assert pool_nodes("zone-b", "high") == 0


def test_the_hot_streak_grows_each_cycle_a_pool_stays_hot_and_is_zero_for_a_cool_pool() -> None:
    controller = planning_loop([policy()])
    for cycle in (1, 2, 3):
        controller.run_cycle()
        assert streak("default") == cycle
        assert streak("zone-b") == 0


def test_a_pool_removed_from_the_policy_disappears_from_the_series() -> None:
    current = [policy(pools="{name: gone, nodeSelector: {matchLabels: {accelerator: a100}}}")]
    controller = planning_loop(current)
    controller.run_cycle()
    assert pool_nodes("gone", "normal") is not None and streak("gone") == 0
    current[0] = policy()
    controller.run_cycle()
    assert pool_nodes("gone", "normal") is None and streak("gone") is None
    assert streak("zone-b") == 0


def test_skips_are_counted_by_strategy_and_refusal_code() -> None:
    labels = {"strategy": "LowNodeLoad", "code": "EvictorNamespaces"}
    before = metrics.sample("descheduler_skips_total", labels)
    result = planning_loop([policy(pools="")]).run_cycle()  # one pool: the hot nodes have low nodes to go to
    assert result.plan is not None
    refused = [s for s in result.plan.skipped if s.code == "EvictorNamespaces"]
    assert refused
    assert metrics.sample("descheduler_skips_total", labels) == before + len(refused)


def test_a_planned_cycle_records_its_wall_time_and_dry_run_state() -> None:
    began = time.time()
    planning_loop([policy(dry_run=True)]).run_cycle()
    assert began <= metrics.sample("descheduler_last_cycle_timestamp_seconds") <= time.time()
    assert metrics.sample("descheduler_dry_run") == 1
    planning_loop([policy(dry_run=False)]).run_cycle()
    assert metrics.sample("descheduler_dry_run") == 0


def test_a_skipped_cycle_leaves_the_last_cycle_time_alone() -> None:
    class Unsynced(DemoSource):
        def not_ready(self) -> str | None:
            return "cache not synced: pods"

    planning_loop([policy()]).run_cycle()
    last = metrics.sample("descheduler_last_cycle_timestamp_seconds")
    PlanningLoop(Unsynced(), NoMover(), policy, lambda: DEMO.now).run_cycle()
    assert metrics.sample("descheduler_last_cycle_timestamp_seconds") == last


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens there once the socket is closed


def test_a_failing_load_source_is_counted_by_its_type() -> None:
    class SyncedCache:
        """The load reading fails before the cache is read; only its readiness is asked."""

        def not_ready(self) -> None:
            return None

    down = (
        POOLS.format(pools="", dry_run="false")
        + f"loadSource: {{type: prometheus, address: 'http://127.0.0.1:{closed_port()}'}}\n"
    )
    current = parse_policy(down)
    source = ClusterSource(None, SyncedCache())  # type: ignore[arg-type]  # the prometheus reader needs no client
    before = metrics.sample("descheduler_load_source_errors_total", {"source": "prometheus"})
    result = PlanningLoop(source, NoMover(), lambda: current, lambda: DEMO.now).run_cycle()
    assert result.plan is None and "load source prometheus" in result.skipped_reason
    assert metrics.sample("descheduler_load_source_errors_total", {"source": "prometheus"}) == before + 1


def test_the_rejected_gauge_follows_the_file_and_the_interval_follows_the_policy(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text(POOLS.format(pools="", dry_run="false"))
    watched = PolicyFile(file)
    assert metrics.sample("descheduler_policy_rejected") == 0
    assert metrics.sample("descheduler_cycle_interval_seconds") == 45
    file.write_text("interval: -5s\n")
    watched.check()
    assert metrics.sample("descheduler_policy_rejected") == 1
    file.write_text(POOLS.format(pools="", dry_run="false"))  # back to the policy in force
    watched.check()
    assert metrics.sample("descheduler_policy_rejected") == 0
    file.write_text(POOLS.format(pools="", dry_run="false").replace("45s", "20s"))
    watched.check()
    assert metrics.sample("descheduler_cycle_interval_seconds") == 20
