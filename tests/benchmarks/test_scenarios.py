"""The quality benchmark's scenario families (benchmarks/scenarios.py) at smoke size: built bound,
deterministic, requests departing from usage as stated, usage series read from the traces."""

from __future__ import annotations

import csv
import gzip
import random
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from benchmarks import scenarios
from benchmarks.scenarios import FAMILIES, build, describe
from descheduler.fakecluster.pods import pod_key, pod_requests
from descheduler.fakecluster.scenario import LoadedScenario
from descheduler.fakecluster.traces import trace_scenario, traces_dir
from descheduler.fakecluster.usage import models_for, usage_units
from descheduler.quantity import to_units

pytestmark = pytest.mark.skipif(traces_dir() is None, reason="the public traces are not next to the repository")

SMOKE = 8
DERIVED = ("bitbrains", "bitbrains-diurnal", "genai-memory")


@pytest.fixture(scope="module")
def built() -> dict[str, LoadedScenario]:
    return {family: build(family, SMOKE, seed=1) for family in FAMILIES}


def _kind(loaded: LoadedScenario, kind: str) -> list[dict[str, Any]]:
    return [o for o in loaded.objects if o.get("kind") == kind]


def _limits(pod: dict[str, Any]) -> dict[str, int]:
    """Declared limits, else the provisioned size the annotation keeps (Bitbrains)."""
    limits = pod["spec"]["containers"][0]["resources"].get("limits")
    if limits is None:
        text = pod["metadata"]["annotations"][scenarios.PROVISIONED]
        limits = dict(item.split("=") for item in text.split(", "))
    return {r: to_units(r, v) for r, v in limits.items()}


def _day_usage(loaded: LoadedScenario, pod: dict[str, Any], resource: str) -> np.ndarray:
    """The pod's usage every 5 minutes of the day, by the simulator's own usage functions."""
    spec, start = loaded.scenario.usage, loaded.scenario.start
    assert start is not None
    model = models_for(spec, pod["metadata"]["namespace"], pod["metadata"]["labels"])[resource]
    request = pod_requests(pod)[resource]
    return np.array(
        [
            usage_units(model, resource, request, instant=start + t, elapsed=t, key=pod_key(pod), seed=1)
            for t in range(0, 86_400, scenarios.STEP)
        ]
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_builds_at_smoke_size(built: dict[str, LoadedScenario], family: str) -> None:
    loaded = built[family]
    assert len(_kind(loaded, "Node")) == SMOKE
    assert _kind(loaded, "Pod")
    assert loaded.scenario.start == scenarios.START.timestamp()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_pod_starts_bound_to_a_node_of_the_scenario(built: dict[str, LoadedScenario], family: str) -> None:
    loaded = built[family]
    nodes = {n["metadata"]["name"] for n in _kind(loaded, "Node")}
    assert all(p["spec"].get("nodeName") in nodes for p in _kind(loaded, "Pod"))


@pytest.mark.parametrize("family", DERIVED)
def test_the_stock_scheduler_fits_every_node_by_requests(built: dict[str, LoadedScenario], family: str) -> None:
    loaded = built[family]
    requested: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pod in _kind(loaded, "Pod"):
        r = pod_requests(pod)
        requested[pod["spec"]["nodeName"]][0] += r["cpu"]
        requested[pod["spec"]["nodeName"]][1] += r["memory"]
    for node in _kind(loaded, "Node"):
        alloc = node["status"]["allocatable"]
        cpu, memory = requested[node["metadata"]["name"]]
        assert cpu <= to_units("cpu", alloc["cpu"]) and memory <= to_units("memory", alloc["memory"])
    # Spread, not packed: every node holds pods.
    assert len(requested) == SMOKE


@pytest.mark.parametrize("family", DERIVED)
def test_every_pod_has_its_own_usage_rule(built: dict[str, LoadedScenario], family: str) -> None:
    loaded = built[family]
    series = {r.selector["matchLabels"][scenarios.SERIES_LABEL] for r in loaded.scenario.usage.pods}
    pods = _kind(loaded, "Pod")
    assert len(series) == len(loaded.scenario.usage.pods) == len(pods)
    assert {p["metadata"]["labels"][scenarios.SERIES_LABEL] for p in pods} == series
    # The ReplicaSet's replacement pods carry the same label, so they keep the series.
    for rs in _kind(loaded, "ReplicaSet"):
        assert rs["spec"]["template"]["metadata"]["labels"][scenarios.SERIES_LABEL] in series


@pytest.mark.parametrize("family", FAMILIES)
def test_the_same_seed_builds_the_same_scenario(built: dict[str, LoadedScenario], family: str) -> None:
    again = build(family, SMOKE, seed=1)
    assert again.objects == built[family].objects
    assert again.scenario == built[family].scenario


@pytest.mark.parametrize("family", DERIVED)
def test_another_seed_builds_another_scenario(built: dict[str, LoadedScenario], family: str) -> None:
    assert build(family, SMOKE, seed=2).objects != built[family].objects


@pytest.mark.parametrize(("family", "resource"), [(f, "cpu") for f in DERIVED[:2]] + [(f, "memory") for f in DERIVED])
def test_some_pods_use_far_more_than_they_ask_and_some_far_less(
    built: dict[str, LoadedScenario], family: str, resource: str
) -> None:
    loaded = built[family]
    ratios = [_day_usage(loaded, pod, resource).max() / pod_requests(pod)[resource] for pod in _kind(loaded, "Pod")]
    assert any(r > 2 for r in ratios)
    assert any(r < 0.5 for r in ratios)


@pytest.mark.parametrize("family", ["bitbrains", "bitbrains-diurnal"])
def test_a_bitbrains_request_is_a_quantile_of_its_first_hours_floored(
    built: dict[str, LoadedScenario], family: str
) -> None:
    loaded = built[family]
    first = scenarios.FIRST_HOURS * 3600 // scenarios.STEP
    for pod in _kind(loaded, "Pod"):
        for resource, floor, rounding in (("cpu", scenarios.CPU_FLOOR, 2), ("memory", scenarios.MEMORY_FLOOR, 1024)):
            request = pod_requests(pod)[resource]
            hours = _day_usage(loaded, pod, resource)[:first]
            limit = _limits(pod)[resource]
            # A quantile lies within the samples (the series are rounded to m and Ki); else the floor or the limit.
            within = hours.min() - rounding <= request <= hours.max() + rounding
            assert within or request in (floor, limit), pod_key(pod)


def test_a_bitbrains_pod_declares_no_limits_and_notes_its_provisioned_size(
    built: dict[str, LoadedScenario],
) -> None:
    vms = {f"vm{vm.vm}": vm for vm in scenarios.bitbrains_vms(traces_dir())}  # type: ignore[arg-type]
    for pod in _kind(built["bitbrains"], "Pod"):
        assert "limits" not in pod["spec"]["containers"][0]["resources"]
        vm = vms[pod["metadata"]["name"].split("-")[0]]
        assert _limits(pod) == {"cpu": round(vm.cores * 1000), "memory": round(vm.memory_capacity / 1024) * 1024}


def test_a_genai_pod_declares_its_memory_limit(built: dict[str, LoadedScenario]) -> None:
    for pod in _kind(built["genai-memory"], "Pod"):
        limit = pod["spec"]["containers"][0]["resources"]["limits"]["memory"]
        assert to_units("memory", limit) in {g * 2**30 for g in scenarios.GENAI_LIMITS_GI}


def _bitbrains_rows(vm: int) -> list[dict[str, str]]:
    folder = traces_dir()
    assert folder is not None
    path = folder / scenarios.BITBRAINS / scenarios.BITBRAINS_FILE
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["vm"] == str(vm)]


def test_a_bitbrains_pods_memory_is_its_vms_series_in_the_trace_file(built: dict[str, LoadedScenario]) -> None:
    loaded = built["bitbrains"]
    pod = next(p for p in _kind(loaded, "Pod") if p["metadata"]["name"].endswith("-c0-0"))
    vm = int(pod["metadata"]["name"].removeprefix("vm").split("-")[0])
    usage = _day_usage(loaded, pod, "memory")
    by_slot: dict[int, list[float]] = defaultdict(list)
    for row in _bitbrains_rows(vm):
        slot = round((int(row["timestamp_s"]) - scenarios.BITBRAINS_DAY0) / scenarios.STEP)
        by_slot[slot].append(float(row["memory_usage_kb"]))
    checked = [s for s in range(1, scenarios.DAY_STEPS) if len(by_slot.get(s, ())) == 1]
    assert len(checked) > 200
    for slot in checked:
        assert usage[slot] == round(by_slot[slot][0]) * 1024, slot


def test_a_genai_pods_memory_is_its_containers_utilisation_of_its_limit(built: dict[str, LoadedScenario]) -> None:
    loaded = built["genai-memory"]
    pod = next(p for p in _kind(loaded, "Pod") if p["metadata"]["name"].endswith("-c0-0"))
    index = int(pod["metadata"]["name"].removeprefix("genai").split("-")[0])
    name, _ = scenarios.genai_memory(traces_dir())[index]  # type: ignore[arg-type]
    folder = traces_dir()
    assert folder is not None
    samples: list[tuple[float, float]] = []
    first = float("inf")
    with gzip.open(folder / scenarios.GENAI / "pod_memory_util_anon.csv.gz", "rt", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            first = min(first, float(row["timestamp_anon"]))
            if row["container_ip"] == name:
                samples.append((float(row["timestamp_anon"]), float(row["value"])))
    limit = _limits(pod)["memory"]
    usage = _day_usage(loaded, pod, "memory")
    for bucket in (0, 50, 200):
        values = [max(0.0, v) for t, v in samples if int((t - first) // scenarios.STEP) == bucket]
        assert values
        assert abs(usage[bucket] - sum(values) / len(values) * limit) <= 1024, bucket


def test_bitbrains_diurnal_is_bitbrains_times_the_day_shape(built: dict[str, LoadedScenario]) -> None:
    rule = built["bitbrains-diurnal"].scenario.usage.pods[0]
    assert rule.cpu is not None and rule.cpu.diurnal is not None
    curve = rule.cpu.diurnal.curve
    assert abs(sum(curve) / len(curve) - 1) < 0.01
    assert max(curve) > 1.5 and min(curve) < 0.8


def test_pods_play_both_days_and_more_pods_than_vms_reuse_a_vm_later_in_its_trace() -> None:
    folder = traces_dir()
    assert folder is not None
    vms = scenarios.bitbrains_vms(folder)
    pods = scenarios._bitbrains_pods(folder, len(vms) + 1, random.Random(1), None)
    assert len(pods) == 2 * len(vms)
    by_name = {p.name: p for p in pods}
    vm = vms[0]
    assert len(vm.memory) == scenarios.SERIES_STEPS == 2 * scenarios.DAY_STEPS
    offset = scenarios.DAY_STEPS // 2  # two copies: the second starts 12 h later, wrapping round
    assert np.array_equal(by_name[f"vm{vm.vm}-c0"].memory, vm.memory)
    assert np.array_equal(by_name[f"vm{vm.vm}-c1"].memory, np.roll(vm.memory, -offset))


def test_more_pods_than_genai_containers_rotate_a_containers_series() -> None:
    folder = traces_dir()
    assert folder is not None
    containers = scenarios.genai_memory(folder)
    pods = scenarios._genai_pods(
        folder,
        len(containers) + 1,
        random.Random(1),
    )
    by_name = {p.name: p for p in pods}
    c0, c1 = by_name["genai0-c0"], by_name["genai0-c1"]
    fractions = containers[0][1]
    half = len(fractions) // 2
    assert np.allclose(c0.memory / c0.memory_limit, fractions)
    assert np.allclose(c1.memory / c1.memory_limit, np.roll(fractions, -half))


def test_openb_is_the_trace_scenario_starting_at_the_benchmarks_midnight(built: dict[str, LoadedScenario]) -> None:
    original = trace_scenario(nodes=SMOKE, seed=1)
    assert built["openb"].objects == original.objects
    assert built["openb"].scenario.usage == original.scenario.usage


def test_a_pod_the_stock_scheduler_cannot_place_is_left_unbound() -> None:
    node = scenarios._node("only", 1000, 2**30)
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        }
        for name, cpu in (("fits", "600m"), ("too-big", "2"))
    ]
    assert scenarios.place([node], pods) == {"default/fits": "only"}


def test_an_unknown_family_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="allowed: bitbrains, bitbrains-diurnal, genai-memory, openb"):
        build("alibaba", SMOKE, seed=1)
    with pytest.raises(ValueError, match="allowed"):
        describe("alibaba")


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_says_what_is_real_and_what_is_derived(family: str) -> None:
    text = describe(family)
    assert text.startswith(f"{family}:")
    assert "real" in text.lower() and "derived" in text.lower()
