import pytest

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.traces import trace_scenario, traces_dir

from .conftest import T0

pytestmark = pytest.mark.skipif(
    traces_dir() is None, reason="trace folder ../shared/data/traces not found (set DESCHEDULER_TRACES)"
)


def test_trace_scenario_samples_nodes_and_their_share_of_pods() -> None:
    loaded = trace_scenario(nodes=12, seed=3)
    nodes = [o for o in loaded.objects if o["kind"] == "Node"]
    pods = [o for o in loaded.objects if o["kind"] == "Pod"]
    assert len(nodes) == 12 and all(n["metadata"]["name"].startswith("openb-node-") for n in nodes)
    assert 0 < len(pods) <= round(5193 * 12 / 1523)
    assert all(p["spec"]["nodeName"] in {n["metadata"]["name"] for n in nodes} for p in pods)
    assert loaded.scenario.usage.pods, "memory series rules from the GenAI trace"
    curve = loaded.scenario.usage.default.cpu.diurnal.curve  # type: ignore[union-attr]
    assert len(curve) == 24 and abs(sum(curve) / 24 - 1) < 0.01


def test_trace_scenario_is_deterministic_for_a_seed() -> None:
    assert trace_scenario(nodes=8, seed=5).objects == trace_scenario(nodes=8, seed=5).objects


def test_trace_scenario_runs_and_publishes_usage() -> None:
    with SimulatedCluster(trace_scenario(nodes=8, seed=1), start=T0) as cluster:
        cluster.advance(60)
        metrics = cluster.store.list("nodemetrics.slo.koordinator.sh")
        assert len(metrics) == 8
        assert any(m["status"]["podsMetric"] for m in metrics)
