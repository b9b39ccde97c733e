"""The constrained quality scenario (benchmarks/zoned.py) at smoke size: the pods of bitbrains-diurnal,
started where kube-scheduler's hard rules allow, and the rules a replacement would meet."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from benchmarks import zoned
from benchmarks.quality import evictions_by_rule
from benchmarks.scenarios import PODS_PER_NODE, build
from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.scenario import LoadedScenario
from descheduler.fakecluster.scheduler import Scheduler
from descheduler.fakecluster.traces import traces_dir

pytestmark = pytest.mark.skipif(traces_dir() is None, reason="the public traces are not next to the repository")

SMOKE = 8


@pytest.fixture(scope="module")
def built() -> LoadedScenario:
    return build(zoned.FAMILY, SMOKE, seed=1)


def _kind(loaded: LoadedScenario, kind: str) -> list[dict[str, Any]]:
    return [o for o in loaded.objects if o.get("kind") == kind]


def _zones(loaded: LoadedScenario) -> dict[str, str]:
    return {n["metadata"]["name"]: n["metadata"]["labels"][zoned.ZONE_KEY] for n in _kind(loaded, "Node")}


def _volume_place(loaded: LoadedScenario) -> dict[str, str]:
    """Claim name -> the zone or node its volume's node affinity requires."""
    by_volume = {}
    for pv in _kind(loaded, "PersistentVolume"):
        term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
        by_volume[pv["metadata"]["name"]] = term["values"][0]
    return {c["metadata"]["name"]: by_volume[c["spec"]["volumeName"]] for c in _kind(loaded, "PersistentVolumeClaim")}


def test_the_pods_are_bitbrains_diurnals_under_every_rule(built: LoadedScenario) -> None:
    assert len(_kind(built, "Pod")) == SMOKE * PODS_PER_NODE
    rules = Counter(zoned.rule_of(p["metadata"]["name"]) for p in _kind(built, "Pod"))
    assert set(rules) == set(zoned.RULES)
    assert set(_zones(built).values()) == set(zoned.ZONES)


def test_every_pod_starts_where_its_rules_allow(built: LoadedScenario) -> None:
    zones, places = _zones(built), _volume_place(built)
    spread: dict[str, Counter[str]] = defaultdict(Counter)
    ports: Counter[str] = Counter()
    for pod in _kind(built, "Pod"):
        node, rule = pod["spec"]["nodeName"], zoned.rule_of(pod["metadata"]["name"])
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes", [])]
        if rule == "zonal":
            assert zones[node] == places[claims[0]]
        elif rule == "local":
            assert node == places[claims[0]]
        elif rule == "spread":
            spread[pod["metadata"]["labels"]["app"]][zones[node]] += 1
        elif rule == "hostport":
            ports[node] += 1
    assert spread and all(max(c[z] for z in zoned.ZONES) - min(c[z] for z in zoned.ZONES) <= 1 for c in spread.values())
    assert ports and max(ports.values()) == 1


def test_the_stock_scheduler_takes_a_local_pods_replacement_back_to_its_node_only(built: LoadedScenario) -> None:
    store = Store(clock=lambda: 0.0)
    store.load(built.objects)
    stock = Scheduler(store).stock()
    pod = next(p for p in _kind(built, "Pod") if zoned.rule_of(p["metadata"]["name"]) == "local")
    replacement = {**pod, "spec": {k: v for k, v in pod["spec"].items() if k != "nodeName"}}
    refused = stock.refusals(replacement)
    assert set(_zones(built)) - set(refused) == {pod["spec"]["nodeName"]}
    assert "volume node affinity" in refused[next(iter(refused))]


def test_evictions_are_counted_by_the_rule_their_pod_is_under() -> None:
    def move(pod: str) -> tuple[str, dict[str, Any], float, None]:
        return ("job", {"spec": {"podRef": {"name": pod}}}, 0.0, None)

    moves = [move("spread-vm1-c0-abc-0"), move("local-vm2-c0-0"), move("vm3-c0-0"), move("vm4-c0-0")]
    assert evictions_by_rule(moves) == {"local": 1, "none": 2, "spread": 1}
    assert evictions_by_rule([move("vm3-c0-0")]) == {}
