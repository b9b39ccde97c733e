"""Policy reload in the running controller: a valid change takes effect on the next cycle, an
invalid one is rejected (metric, Event on the ConfigMap) while cycles go on with the old policy;
an invalid policy at start-up exits 1 before touching the cluster."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from descheduler import metrics
from descheduler.controller.cycle import PlanningLoop
from descheduler.controller.process import ControllerProcess, Options
from descheduler.controller.reload import PolicyFile
from descheduler.controller.source import ClusterSource
from descheduler.events import EventRecorder, ObjectRef
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario
from descheduler.kube import CLUSTER_KINDS, ClusterCache, connect
from descheduler.migration.executor import Executor
from tests.waiting import wait_for

# Deadlines are derived from the policy's interval (the policy file is re-read before every cycle)
# and the cache's sync, times a generous factor: the test waits on conditions, not on a fast machine.
INTERVAL = 1.0
SYNC = 10.0  # the cache lists every kind and syncs, on a busy two-core machine
SLACK = 5.0
POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: 1s
dryRun: {dry_run}
strategies:
  - name: LowNodeLoad
    args:
      highThresholds: {{cpu: 70}}
      lowThresholds: {{cpu: 45}}
"""
PMJ = "podmigrationjobs.descheduler.dev"


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(load_demo_scenario()) as c:
        c.advance(60)
        yield c


def test_reload_applies_valid_changes_and_rejects_invalid_ones(cluster: SimulatedCluster, tmp_path: Path) -> None:
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(POLICY.format(dry_run="true"))
    kube = connect(cluster.write_kubeconfig(tmp_path / "kubeconfig"))
    recorder = EventRecorder(kube.api_client)
    configmap = ObjectRef("ConfigMap", "descheduler-policy", "default")
    policy_file = PolicyFile(policy_path, on_error=lambda err: recorder.warning(configmap, "InvalidPolicy", str(err)))
    cache = ClusterCache(kube, kinds=CLUSTER_KINDS).start()
    source = ClusterSource(kube, cache)
    current = lambda: policy_file.policy  # noqa: E731
    loop = PlanningLoop(source, Executor(kube.api_client, current), current, lambda: datetime.now(UTC))
    process = ControllerProcess(policy_file, loop, None, None, Options(health_host="127.0.0.1", health_port=0))
    runner = threading.Thread(target=process.run, daemon=True)
    runner.start()
    try:
        wait_for(
            lambda: loop.last is not None and loop.last.plan is not None, SYNC + SLACK * INTERVAL, "a planned cycle"
        )
        assert loop.last is not None and loop.last.plan is not None and loop.last.plan.migrations
        assert cluster.store.list(PMJ) == []  # dry run: planned, nothing written
        policy_path.write_text(POLICY.format(dry_run="false"))
        wait_for(lambda: cluster.store.list(PMJ), SLACK * 2 * INTERVAL, "a job once dryRun is off")
        errors = metrics.sample("descheduler_policy_reload_total", {"result": "error"})
        policy_path.write_text(POLICY.format(dry_run="sometimes").replace("interval: 1s", "interval: -1s"))
        cycles = loop.cycles
        wait_for(lambda: loop.cycles >= cycles + 2, SLACK * 3 * INTERVAL, "two more cycles on the old policy")
        assert metrics.sample("descheduler_policy_reload_total", {"result": "error"}) == errors + 1
        assert policy_file.policy.dry_run is False and policy_file.policy.interval.total_seconds() == 1
        events = [
            e
            for e in cluster.store.list("events", "default")
            if e["involvedObject"]["kind"] == "ConfigMap" and e["reason"] == "InvalidPolicy"
        ]
        assert len(events) == 1
        assert "interval" in events[0]["message"] and "dryRun" in events[0]["message"]
    finally:
        process.stop.set()
        runner.join(40)
        cache.stop()
        source.close()
        kube.close()
    assert not runner.is_alive()


def test_an_invalid_policy_at_start_exits_1_with_every_problem(tmp_path: Path) -> None:
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(POLICY.format(dry_run="maybe").replace("interval: 1s", "interval: soon"))
    result = subprocess.run(
        [sys.executable, "-m", "descheduler", "run", "--policy", str(policy_path), "--kubeconfig", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert f"policy {policy_path} is invalid" in result.stderr
    assert "interval" in result.stderr and "dryRun" in result.stderr
