"""Quality-benchmark scenarios where usage departs from requests (issue 20 §1).

    build(family, nodes, seed) -> LoadedScenario        # family in FAMILIES
    describe(family) -> str                              # what is real and what is derived, for RESULTS.md

- bitbrains: each pod one real Bitbrains Rnd VM (its own cpu and memory series, the file's two days
  of 5-min samples); its request a seeded quantile of its first hours of usage; no limits (the VM's
  provisioned size, an annotation); placed by the request-spreading stock scheduler, so usage skew
  comes only from usage departing from requests.
- bitbrains-diurnal: the same, times the Alibaba 2018 day shape (load ramps and falls).
- genai-memory: memory-bound: the GenAI v2026 per-pod memory-utilisation series as a fraction of
  a seeded memory limit; cpu a modest fraction of its request.
- openb: descheduler.fakecluster.traces.trace_scenario as it is (first-fit packed openb nodes).

The traces are read in place from ../shared/data/traces (traces_dir()), never copied.
"""

from __future__ import annotations

import csv
import gzip
import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from copy import deepcopy
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.baseline import SpreadScheduler
from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.scenario import LoadedScenario, parse_scenario
from descheduler.fakecluster.traces import GENAI, TRACES_ENV, diurnal_curve, trace_scenario, traces_dir
from descheduler.fakecluster.usage import diurnal_factor

FAMILIES: tuple[str, ...] = ("bitbrains", "bitbrains-diurnal", "genai-memory", "openb")
# Families under kube-scheduler's hard rules (benchmarks/zoned.py), run on demand (--family), not in the
# full quality run.
CONSTRAINED: tuple[str, ...] = ("bitbrains-diurnal-zoned",)

START = datetime(2026, 1, 15, 0, 0, tzinfo=UTC)  # benchmarks/quality.py START: the simulated day's midnight
BITBRAINS = "bitbrains-rnd"
BITBRAINS_FILE = "bitbrains_rnd_2013-08-05_2days.csv.gz"
BITBRAINS_DAY0 = 1_375_660_800  # 2013-08-05 00:00 UTC: the first of the file's two days
STEP = 300  # seconds between samples (Bitbrains' own step; GenAI's 57 s samples are averaged into it)
DAY_STEPS = 86_400 // STEP
# A Bitbrains pod plays the file's two days in turn (the quality benchmark runs two simulated days and
# scores the second); a series shorter than the run repeats.
SERIES_STEPS = 2 * DAY_STEPS
SERIES_LABEL = "trace-series"
# A Bitbrains pod's provisioned size, kept as an annotation rather than as limits: see describe().
PROVISIONED = "trace.descheduler.dev/provisioned"
SOURCE = "trace.descheduler.dev/source"  # which trace series a pod follows, from which offset

PODS_PER_NODE = 12
REQUESTED = 0.6  # the cluster's requested share of allocatable
GENAI_REQUESTED = 0.65  # genai-memory: memory requested
FIRST_HOURS = 6  # a request is a quantile of this many first hours of the pod's usage
QUANTILES = (0.2, 0.8)  # each pod's quantile, drawn uniformly (seeded) from this range
FIT = 0.6  # a trace whose peak usage exceeds this share of a node is left out: no node could cool it
CPU_FLOOR = 50  # millicores: the smallest request
MEMORY_FLOOR = 256 * 2**20  # bytes
GENAI_SIZING = (0.33, 3.0)  # genai-memory: the request is also off by this factor (log-uniform, seeded)
OVERHEAD = (100, 256 * 2**20)  # the system's own usage per node (millicores, bytes); the nodes are small
GENAI_LIMITS_GI = (4, 8, 16)  # the memory limit a GenAI pod's utilisation is a fraction of (seeded)
GENAI_CPU_REQUESTS = (250, 500, 1000)  # millicores (seeded)
GENAI_CPU_FRACTION = 0.4  # genai cpu usage: this share of its request, ±10% noise

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PodTrace:
    """One pod's day: usage per STEP (cpu millicores, memory bytes; None: a fraction of the request),
    multipliers applied by the usage model (diurnal), request and limit."""

    name: str
    source: str  # which trace series and offset, for people
    cpu: FloatArray | None
    memory: FloatArray
    cpu_request: int
    memory_request: int
    cpu_limit: int | None
    memory_limit: int
    declared: bool  # the limits are in the pod spec (else only an annotation: see PROVISIONED)


# ------------------------------------------------------------------ reading the traces


def _folder() -> Path:
    folder = traces_dir()
    if folder is None:
        raise FileNotFoundError(f"trace folder ../shared/data/traces not found (set {TRACES_ENV})")
    return folder


@dataclass(frozen=True, slots=True)
class VmTrace:
    vm: int
    cpu: FloatArray  # cores used per STEP over the file's two days
    memory: FloatArray  # bytes used
    cores: float  # provisioned (the largest over the two days)
    memory_capacity: float  # bytes provisioned


def _filled(values: FloatArray) -> FloatArray:
    """Missing samples (NaN) interpolated from their neighbours."""
    known = np.flatnonzero(~np.isnan(values))
    filled: FloatArray = np.interp(np.arange(len(values)), known, values[known])
    return filled


@lru_cache(maxsize=2)
def bitbrains_vms(folder: Path) -> tuple[VmTrace, ...]:
    """Every Bitbrains Rnd VM with a provisioned size, its samples snapped to a 300 s grid from
    2013-08-05 00:00 UTC (the file's jittered timestamps rounded; duplicates averaged; gaps
    interpolated). VMs provisioned with 0 cores or 0 memory (8 of 499) are left out."""
    steps = 2 * DAY_STEPS
    sums: dict[int, FloatArray] = {}
    counts: dict[int, FloatArray] = {}
    cores: dict[int, float] = {}
    capacity: dict[int, float] = {}
    broken: set[int] = set()
    with gzip.open(folder / BITBRAINS / BITBRAINS_FILE, "rt", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            vm = int(row["vm"])
            mhz, n_cores, mem_cap = (
                float(row["cpu_capacity_mhz"]),
                float(row["cpu_cores"]),
                float(row["memory_capacity_kb"]),
            )
            if mhz <= 0 or n_cores <= 0 or mem_cap <= 0:
                broken.add(vm)
                continue
            if vm not in sums:
                sums[vm], counts[vm] = np.zeros((2, steps)), np.zeros(steps)
            i = min(steps - 1, max(0, round((int(row["timestamp_s"]) - BITBRAINS_DAY0) / STEP)))
            sums[vm][0, i] += float(row["cpu_usage_mhz"]) / (mhz / n_cores)
            sums[vm][1, i] += float(row["memory_usage_kb"]) * 1024
            counts[vm][i] += 1
            cores[vm] = max(cores.get(vm, 0.0), n_cores)
            capacity[vm] = max(capacity.get(vm, 0.0), mem_cap * 1024)
    out = []
    for vm in sorted(set(sums) - broken):
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = sums[vm] / counts[vm]
        out.append(VmTrace(vm, _filled(mean[0]), _filled(mean[1]), cores[vm], capacity[vm]))
    return tuple(out)


@lru_cache(maxsize=2)
def genai_memory(folder: Path) -> tuple[tuple[str, FloatArray], ...]:
    """GenAI containers sampled at (nearly) every timestamp (≥ 1400 of 1441), their memory
    utilisation averaged into STEP buckets from the first timestamp (274 buckets, 22.8 h)."""
    by_container: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with gzip.open(folder / GENAI / "pod_memory_util_anon.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            by_container[row["container_ip"]].append((float(row["timestamp_anon"]), float(row["value"])))
    first = min(t for samples in by_container.values() for t, _ in samples)
    last = max(t for samples in by_container.values() for t, _ in samples)
    buckets = int((last - first) // STEP) + 1
    out = []
    for name in sorted(by_container):
        samples = by_container[name]
        if len(samples) < 1400:
            continue
        sums, counts = np.zeros(buckets), np.zeros(buckets)
        for t, v in samples:
            i = int((t - first) // STEP)
            sums[i] += max(0.0, v)
            counts[i] += 1
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((name, _filled(sums / counts)))
    return tuple(out)


# ------------------------------------------------------------------ deriving requests


def derived_request(usage: FloatArray, quantile: float, floor: int) -> int:
    """A request: the quantile of the first FIRST_HOURS of usage, at least `floor`."""
    first = usage[: FIRST_HOURS * 3600 // STEP]
    return max(floor, math.ceil(float(np.quantile(first, quantile))))


def _day_factors(curve: Sequence[float]) -> FloatArray:
    """The diurnal multiplier at each STEP of the series' days (the usage model's own interpolation)."""
    start = START.timestamp()
    return np.array([diurnal_factor(curve, start + i * STEP) for i in range(SERIES_STEPS)])


def _offsets(copies: int, length: int) -> list[int]:
    """Copy k of a series starts k × (length / copies) steps later."""
    return [k * length // copies for k in range(copies)]


def _bitbrains_pods(
    folder: Path, count: int, rng: random.Random, diurnal: tuple[FloatArray, FloatArray] | None
) -> list[PodTrace]:
    """`count` pods from the VMs, copy k of a VM taking the two days that start k × 24 h / copies
    later in the two-day file (wrapping round to its start); the copies, each VM's order and quantile
    drawn from `rng`."""
    vms = bitbrains_vms(folder)
    copies = max(1, math.ceil(count / len(vms)))
    pods: list[PodTrace] = []
    for copy, offset in enumerate(_offsets(copies, DAY_STEPS)):
        for vm in rng.sample(vms, len(vms)):
            quantile = rng.uniform(*QUANTILES)
            window = np.arange(offset, offset + SERIES_STEPS) % len(vm.cpu)
            cpu_limit = round(vm.cores * 1000)
            # cpu above the provisioned cores (the hypervisor reports up to a few % over) is clamped to
            # the limit, as CFS throttling would.
            cpu = np.minimum(vm.cpu[window] * 1000, cpu_limit)
            memory = vm.memory[window]
            seen_cpu, seen_memory = (cpu * diurnal[0], memory * diurnal[1]) if diurnal else (cpu, memory)
            pods.append(
                PodTrace(
                    name=f"vm{vm.vm}-c{copy}",
                    source=f"bitbrains vm {vm.vm} from +{offset * STEP // 3600} h",
                    cpu=cpu,
                    memory=memory,
                    cpu_request=min(cpu_limit, derived_request(seen_cpu, quantile, CPU_FLOOR)),
                    memory_request=min(round(vm.memory_capacity), derived_request(seen_memory, quantile, MEMORY_FLOOR)),
                    cpu_limit=cpu_limit,
                    memory_limit=round(vm.memory_capacity),
                    declared=False,
                )
            )
    return pods


def _genai_pods(folder: Path, count: int, rng: random.Random) -> list[PodTrace]:
    """`count` pods from the GenAI containers; copy k of a container rotated by k × 22.8 h / copies."""
    containers = genai_memory(folder)
    length = len(containers[0][1])
    copies = max(1, math.ceil(count / len(containers)))
    pods: list[PodTrace] = []
    for copy, offset in enumerate(_offsets(copies, length)):
        for index, (name, fractions) in rng.sample(list(enumerate(containers)), len(containers)):
            quantile = rng.uniform(*QUANTILES)
            limit = rng.choice(GENAI_LIMITS_GI) * 2**30
            memory = np.roll(fractions, -offset) * limit
            # Most GenAI series are flat (median range 6% of the limit over the day): a quantile of the
            # first hours alone would equal the usage, so the owner's sizing error is drawn too.
            error = math.exp(rng.uniform(*(math.log(f) for f in GENAI_SIZING)))
            request = round(derived_request(memory, quantile, 0) * error)
            pods.append(
                PodTrace(
                    name=f"genai{index}-c{copy}",
                    source=f"genai container {name} from +{offset * STEP / 3600:.1f} h",
                    cpu=None,
                    memory=memory,
                    cpu_request=rng.choice(GENAI_CPU_REQUESTS),
                    memory_request=min(limit, max(MEMORY_FLOOR, request)),
                    cpu_limit=None,
                    memory_limit=limit,
                    declared=True,
                )
            )
    return pods


# ------------------------------------------------------------------ sizing and placing


def _peak(pod: PodTrace, diurnal: tuple[FloatArray, FloatArray] | None) -> tuple[float, float]:
    """The pod's highest cpu and memory usage over the day (genai cpu: its fraction plus 3 σ of noise)."""
    cpu = pod.cpu if pod.cpu is not None else np.array([pod.cpu_request * GENAI_CPU_FRACTION * 1.3])
    memory = pod.memory
    if diurnal is not None and pod.cpu is not None:
        cpu, memory = cpu * diurnal[0], memory * diurnal[1][: len(memory)]
    return float(cpu.max()), float(memory.max())


def _node_size(pods: Sequence[PodTrace], nodes: int, memory_bound: bool) -> tuple[int, int]:
    """Homogeneous nodes holding the pods' requests at REQUESTED of allocatable (genai-memory: memory
    at GENAI_REQUESTED, cpu at half of REQUESTED), rounded up to 100m and 256Mi."""
    cpu = sum(p.cpu_request for p in pods) / (nodes * (REQUESTED / 2 if memory_bound else REQUESTED))
    memory = sum(p.memory_request for p in pods) / (nodes * (GENAI_REQUESTED if memory_bound else REQUESTED))
    return math.ceil(cpu / 100) * 100, math.ceil(memory / 2**28) * 2**28


def _select(
    candidates: Sequence[PodTrace],
    nodes: int,
    memory_bound: bool,
    diurnal: tuple[FloatArray, FloatArray] | None,
) -> tuple[list[PodTrace], tuple[int, int]]:
    """The first nodes × PODS_PER_NODE candidates whose peak fits FIT of a node, and the node size.
    The size depends on the pods kept, so it is settled in a few rounds."""
    size = _node_size(candidates[: nodes * PODS_PER_NODE], nodes, memory_bound)
    chosen: list[PodTrace] = []
    for _ in range(4):
        chosen = []
        for pod in candidates:
            cpu, memory = _peak(pod, diurnal)
            if cpu <= FIT * size[0] and memory <= FIT * size[1]:
                chosen.append(pod)
                if len(chosen) == nodes * PODS_PER_NODE:
                    break
        new = _node_size(chosen, nodes, memory_bound)
        if new == size:
            break
        size = new
    return chosen, size


def _quantity(resource: str, units: float) -> str:
    return f"{max(0, round(units))}m" if resource == "cpu" else f"{max(0, round(units / 1024))}Ki"


def _node(name: str, cpu: int, memory: int) -> dict[str, Any]:
    allocatable = {"cpu": f"{cpu}m", "memory": f"{memory // 2**20}Mi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_template(pod: PodTrace, labels: dict[str, str]) -> dict[str, Any]:
    """The pod template of `pod`'s workload: its requests (limits declared, or kept as the
    PROVISIONED annotation), its series label and source annotation beside `labels`."""
    requests = {"cpu": f"{pod.cpu_request}m", "memory": _quantity("memory", pod.memory_request)}
    limits = {"memory": _quantity("memory", pod.memory_limit)}
    if pod.cpu_limit is not None:
        limits["cpu"] = f"{pod.cpu_limit}m"
    resources: dict[str, Any] = {"requests": requests}
    annotations = {SOURCE: pod.source}
    if pod.declared:
        resources["limits"] = limits
    else:
        annotations[PROVISIONED] = ", ".join(f"{r}={v}" for r, v in limits.items())
    containers = [{"name": "main", "image": "trace", "resources": resources}]
    return {
        "metadata": {"labels": {**labels, SERIES_LABEL: pod.name}, "annotations": annotations},
        "spec": {"containers": containers},
    }


def template_pod(
    template: dict[str, Any], name: str, namespace: str, owner: dict[str, Any], uid: str
) -> dict[str, Any]:
    """An (unbound) pod of `template`, controlled by `owner` (apiVersion, kind, name, uid)."""
    meta = template["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "labels": dict(meta["labels"]),
            "annotations": dict(meta["annotations"]),
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": deepcopy(template["spec"]),
    }


def _workload(pod: PodTrace, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A one-replica ReplicaSet and its (unbound) pod, labelled with the pod's own series."""
    template = pod_template(pod, {"app": pod.name})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": pod.name, "uid": f"uid-rs-{pod.name}"}
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": pod.name,
            "namespace": namespace,
            "uid": f"uid-rs-{pod.name}",
            "labels": {"app": pod.name},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": pod.name}},
            "template": template,
        },
    }
    return rs, template_pod(template, f"{pod.name}-0", namespace, owner, f"uid-pod-{pod.name}")


def place(
    nodes: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]], others: Sequence[dict[str, Any]] = ()
) -> dict[str, str]:
    """Where the simulated stock scheduler (benchmarks.baseline.SpreadScheduler: spreads by requests,
    knows nothing of usage, honours kube-scheduler's filters on the pods' rules) binds each pod: pod
    key -> node; pods it cannot place are absent. `others`: what the filters read besides nodes and
    pods (PersistentVolumes and their claims)."""
    start = START.timestamp()
    store = Store(clock=lambda: start)
    store.load([*nodes, *others, *pods])
    SpreadScheduler(store).step(start)
    out: dict[str, str] = {}
    for pod in store.list("pods"):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            out[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = node
    return out


def _series(resource: str, values: FloatArray) -> dict[str, Any]:
    return {"values": [_quantity(resource, v) for v in values], "stepSeconds": STEP}


def _assemble(
    family: str,
    nodes: int,
    seed: int,
    candidates: Sequence[PodTrace],
    *,
    memory_bound: bool = False,
    curves: tuple[list[float], list[float]] | None = None,
) -> LoadedScenario:
    diurnal = (_day_factors(curves[0]), _day_factors(curves[1])) if curves else None
    chosen, (node_cpu, node_memory) = _select(candidates, nodes, memory_bound, diurnal)
    namespace = family
    node_objects = [_node(f"node-{i:03d}", node_cpu, node_memory) for i in range(nodes)]
    workloads = {pod.name: _workload(pod, namespace) for pod in chosen}
    bound = place(node_objects, [raw for _, raw in workloads.values()])
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    objects += node_objects
    rules: list[dict[str, Any]] = []
    for pod in chosen:
        rs, raw = workloads[pod.name]
        node = bound.get(f"{namespace}/{raw['metadata']['name']}")
        if node is None:
            continue  # the stock scheduler could not place it: left out rather than pending
        objects += [rs, running_on(raw, node)]
        rules.append(usage_rule(pod, namespace, curves))
    return scenario_of(family, nodes, seed, objects, rules)


def running_on(raw: dict[str, Any], node: str) -> dict[str, Any]:
    """The pod, bound to `node`, Running and Ready."""
    raw["spec"]["nodeName"] = node
    raw["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return raw


def usage_rule(pod: PodTrace, namespace: str, curves: tuple[list[float], list[float]] | None) -> dict[str, Any]:
    """The usage rule of the pods labelled with `pod`'s series: its trace, times the day shapes."""
    rule: dict[str, Any] = {"selector": {"matchLabels": {SERIES_LABEL: pod.name}}, "namespace": namespace}
    rule["memory"] = {"series": _series("memory", pod.memory)}
    if pod.cpu is not None:
        rule["cpu"] = {"series": _series("cpu", pod.cpu)}
    if curves is not None:
        rule["cpu"]["diurnal"] = {"curve": curves[0]}
        rule["memory"]["diurnal"] = {"curve": curves[1]}
    return rule


def scenario_of(
    family: str, nodes: int, seed: int, objects: list[dict[str, Any]], rules: list[dict[str, Any]]
) -> LoadedScenario:
    """The scenario of these objects and usage rules, starting at START."""
    raw_scenario = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Scenario",
        "start": START.isoformat().replace("+00:00", "Z"),
        "seed": seed,
        "snapshot": objects,
        "usage": {
            "default": {
                "cpu": {"fraction": GENAI_CPU_FRACTION, "noise": 0.1},
                "memory": {"fraction": 0.6},
            },
            "systemOverhead": {"cpu": f"{OVERHEAD[0]}m", "memory": f"{OVERHEAD[1] // 2**20}Mi"},
            "pods": rules,
        },
    }
    return parse_scenario(raw_scenario, f"<benchmarks.scenarios {family} nodes={nodes} seed={seed}>")


# ------------------------------------------------------------------ the families


def _bitbrains(nodes: int, seed: int, diurnal: bool) -> LoadedScenario:
    folder = _folder()
    family = "bitbrains-diurnal" if diurnal else "bitbrains"
    rng = random.Random(f"{family}/{seed}")
    curves = (diurnal_curve(folder), diurnal_curve(folder, "mem_util_percent")) if diurnal else None
    factors = (_day_factors(curves[0]), _day_factors(curves[1])) if curves else None
    # Twice the pods needed: some are left out for peaks no node could hold.
    candidates = _bitbrains_pods(folder, 2 * nodes * PODS_PER_NODE, rng, factors)
    return _assemble(family, nodes, seed, candidates, curves=curves)


def _genai(nodes: int, seed: int) -> LoadedScenario:
    folder = _folder()
    rng = random.Random(f"genai-memory/{seed}")
    candidates = _genai_pods(folder, 2 * nodes * PODS_PER_NODE, rng)
    return _assemble("genai-memory", nodes, seed, candidates, memory_bound=True)


def _openb(nodes: int, seed: int) -> LoadedScenario:
    loaded = trace_scenario(nodes=nodes, seed=seed, folder=_folder())
    scenario = loaded.scenario.model_copy(update={"start": START.timestamp()})
    return LoadedScenario(scenario=scenario, objects=loaded.objects, source=loaded.source)


_BUILDERS: dict[str, Callable[[int, int], LoadedScenario]] = {
    "bitbrains": lambda nodes, seed: _bitbrains(nodes, seed, diurnal=False),
    "bitbrains-diurnal": lambda nodes, seed: _bitbrains(nodes, seed, diurnal=True),
    "genai-memory": _genai,
    "openb": _openb,
}


def _zoned(nodes: int, seed: int) -> LoadedScenario:
    from benchmarks.zoned import zoned

    return zoned(nodes, seed)


_BUILDERS["bitbrains-diurnal-zoned"] = _zoned


def build(family: str, nodes: int, seed: int) -> LoadedScenario:
    """A scenario of `family` on `nodes` nodes, the same for the same seed; every pod bound."""
    if family not in _BUILDERS:
        raise ValueError(f"unknown scenario family {family!r}; allowed: {', '.join(FAMILIES + CONSTRAINED)}")
    if nodes < 1:
        raise ValueError(f"nodes must be ≥ 1; got {nodes}")
    return _BUILDERS[family](nodes, seed)


_DESCRIPTIONS: dict[str, str] = {
    "bitbrains": (
        "bitbrains: real — each pod's cpu (cores used) and memory (bytes used) over two days is a real "
        "Bitbrains Rnd VM's (GWA-T-12, 2013-08-05 and 06, 5-min samples; the 8 VMs provisioned with 0 cores or 0 "
        "memory are left out; cpu clamped at the provisioned cores). Derived — the request: a seeded quantile"
        " (uniform in 0.2–0.8 per pod) of the pod's own first 6 hours of usage, at least 50m and 256Mi, so "
        "some pods later use far more than they ask and idle ones far less; each pod is its own one-replica "
        "ReplicaSet; VMs whose peak would exceed 60% of a node are left out (no node could cool them); no "
        "limits are declared: the VM's provisioned cores and memory (median 2 cores and 4Gi, far above their "
        f"use: median 1% and 4.5%) are kept as the annotation {PROVISIONED}, since as limits they exceed the "
        "~1.3-core nodes and the load-aware estimate of a moved pod (85% of its cpu limit) would fit no node;"
        " when more pods than VMs are needed, copy k of a VM takes the two days that start k × 24 h ÷ copies "
        "later in the file's two days, wrapping round to its start. Nodes are homogeneous, sized so the "
        "cluster is 60% requested on cpu "
        "and memory (about 12 pods a node), with a kubelet overhead of 100m and 256Mi each. Placement: the "
        "stock scheduler (spreading by requests, blind to usage) binds every pod before the day starts, so "
        "skew comes only from usage departing from requests."
    ),
    "bitbrains-diurnal": (
        "bitbrains-diurnal: as bitbrains, with each pod's cpu multiplied by the Alibaba 2018 cluster's cpu "
        "day shape and its memory by that cluster's memory day shape (first trace day, hourly means, "
        "normalised to mean 1; cpu runs 0.72–1.67, peaking at 06:00 UTC, memory 0.96–1.03), so load ramps "
        "and falls over the day; the requests are quantiles of the first 6 hours of this multiplied usage "
        "(the quiet night), so the morning peak runs well above them. Real: the VM series and the day shape; "
        "derived: their product, the requests, the node size and the placement, as for bitbrains."
    ),
    "genai-memory": (
        "genai-memory: memory-bound. Real — each pod's memory follows a real Alibaba GenAI v2026 container's "
        "memory-utilisation series (the 141 containers sampled at nearly every minute, averaged into 5-min "
        "steps; 22.8 h long, so the day's last 1.2 h repeat its start, and the second day repeats the "
        "first), read as a fraction of the pod's memory "
        "limit. Derived — the limit (seeded: 4, 8 or 16Gi); the request, a seeded quantile (0.2–0.8) of its "
        "first 6 hours of usage times a seeded sizing error (log-uniform 0.33–3.0, since most series are flat "
        "and a quantile alone would equal the usage), at least 256Mi; cpu: a request of 250m, 500m or 1 "
        "(seeded) and usage 40% of it ±10% noise, so cpu never runs hot; copy k of a container is rotated by "
        "k × 22.8 h ÷ copies. Nodes are homogeneous, 65% requested on memory and 30% on cpu; placement as "
        "for bitbrains."
    ),
    "openb": (
        "openb: descheduler.fakecluster.traces.trace_scenario unchanged — real Alibaba GPU v2023 openb "
        "nodes and their share of Running pods with the trace's requests, packed first-fit (not by the stock "
        "scheduler: the packing is where its skew comes from); derived: cpu usage 50% of the request (30% "
        "for BE pods) times the Alibaba 2018 cpu day shape (the same on both days) ±10% noise, memory 60% "
        "of the request or a "
        "GenAI per-pod utilisation series as a fraction of the request."
    ),
}


def describe(family: str) -> str:
    """What is real and what is derived in `family`, a paragraph for RESULTS.md."""
    if family == "bitbrains-diurnal-zoned":
        from benchmarks.zoned import DESCRIPTION

        return DESCRIPTION
    if family not in _DESCRIPTIONS:
        raise ValueError(f"unknown scenario family {family!r}; allowed: {', '.join(FAMILIES + CONSTRAINED)}")
    return _DESCRIPTIONS[family]
