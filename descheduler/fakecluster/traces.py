"""Realistic scenarios from the public traces in ../shared/data/traces (testing.md §3).

Node inventory and pod mix from Alibaba GPU v2023 "openb" (a seeded sample of nodes and their
share of Running pods, with the CSV's requests), memory usage shapes from the GenAI v2026
per-pod series, and a cpu diurnal curve from the Alibaba 2018 datacenter aggregate. The traces
are read from their folder at run time, never copied: set DESCHEDULER_TRACES or keep the
repository next to `shared/`.
"""

from __future__ import annotations

import csv
import gzip
import os
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from descheduler.fakecluster.scenario import LoadedScenario, parse_scenario

TRACES_ENV = "DESCHEDULER_TRACES"
OPENB = "alibaba-gpu-v2023-openb"
GENAI = "alibaba-genai-v2026-pod-usage"
AGGREGATED = "datacenter-traces-aggregated"
SERIES_LABEL = "trace.descheduler.dev/series"
NAMESPACE = "trace"


def traces_dir() -> Path | None:
    """The traces folder: $DESCHEDULER_TRACES, else ../shared/data/traces from the repository root."""
    env = os.environ.get(TRACES_ENV)
    if env:
        return Path(env) if Path(env).is_dir() else None
    root = Path(__file__).resolve().parents[2]
    for candidate in (root.parent / "shared" / "data" / "traces", root / "shared" / "data" / "traces"):
        if candidate.is_dir():
            return candidate
    return None


def _rows(path: Path) -> list[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def diurnal_curve(folder: Path, column: str = "cpu_util_percent", points: int = 24) -> list[float]:
    """The Alibaba 2018 aggregate's first day (300 s rows), averaged into `points` buckets, mean 1."""
    rows = _rows(folder / AGGREGATED / "alibaba2018_machine_usage_days_1_to_8_grouped_300_seconds.csv")
    day = [float(r[column]) for r in rows[: 86_400 // 300]]
    size = len(day) // points
    buckets = [sum(day[i * size : (i + 1) * size]) / size for i in range(points)]
    mean = sum(buckets) / len(buckets)
    return [round(b / mean, 3) for b in buckets]


def memory_series(folder: Path, count: int, rng: random.Random, step: int = 10) -> list[list[float]]:
    """`count` per-container memory-utilisation series (fractions, one value per `step` samples)."""
    by_container: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in _rows(folder / GENAI / "pod_memory_util_anon.csv.gz"):
        by_container[row["container_ip"]].append((float(row["timestamp_anon"]), float(row["value"])))
    names = sorted(by_container)
    chosen = rng.sample(names, min(count, len(names)))
    out = []
    for name in chosen:
        values = [max(0.0, v) for _, v in sorted(by_container[name])]
        out.append([round(v, 4) for v in values[::step]])
    return out


def trace_scenario(nodes: int = 20, seed: int = 0, folder: Path | None = None, series: int = 16) -> LoadedScenario:
    """A scenario of `nodes` sampled openb nodes and their share of Running pods, packed first-fit
    (which leaves some nodes hot), each pod in a one-replica ReplicaSet so an eviction is replaced."""
    folder = folder or traces_dir()
    if folder is None:
        raise FileNotFoundError(f"trace folder not found (set {TRACES_ENV})")
    rng = random.Random(seed)
    all_nodes = _rows(folder / OPENB / "openb_node_list_all_node.csv")
    picked = sorted(rng.sample(all_nodes, min(nodes, len(all_nodes))), key=lambda r: r["sn"])
    running = [p for p in _rows(folder / OPENB / "openb_pod_list_default.csv") if p["pod_phase"] == "Running"]
    share = round(len(running) * len(picked) / len(all_nodes))
    pods = rng.sample(running, share)
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    free: dict[str, list[int]] = {}
    for row in picked:
        gpus = int(row["gpu"])
        allocatable = {"cpu": f"{row['cpu_milli']}m", "memory": f"{row['memory_mib']}Mi", "pods": "110"}
        if gpus:
            allocatable["nvidia.com/gpu"] = str(gpus)
        free[row["sn"]] = [int(row["cpu_milli"]), int(row["memory_mib"]), gpus]
        labels = {"kubernetes.io/hostname": row["sn"]}
        if row["model"]:
            labels["gpu-model"] = row["model"]
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": row["sn"], "labels": labels},
                "status": {
                    "allocatable": allocatable,
                    "capacity": dict(allocatable),
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    order = [r["sn"] for r in picked]
    rng.shuffle(order)
    shapes = memory_series(folder, series, rng)
    placed = 0
    for row in pods:
        cpu, mem = int(row["cpu_milli"]), int(row["memory_mib"])
        # GPU-sharing pods (a fraction of one GPU) ask for no whole device.
        gpus = int(row["num_gpu"]) if int(row["gpu_milli"] or 0) >= 1000 or int(row["num_gpu"]) > 1 else 0
        node = next((n for n in order if free[n][0] >= cpu and free[n][1] >= mem and free[n][2] >= gpus), None)
        if node is None:
            continue
        free[node][0] -= cpu
        free[node][1] -= mem
        free[node][2] -= gpus
        placed += 1
        objects += _workload(row, node, cpu, mem, gpus, placed % max(1, len(shapes)))
    curve = diurnal_curve(folder)
    rules: list[dict[str, Any]] = [
        {
            "selector": {"matchLabels": {SERIES_LABEL: str(i)}},
            "memory": {"series": {"values": values, "stepSeconds": 600}},
        }
        for i, values in enumerate(shapes)
    ]
    raw = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Scenario",
        "seed": seed,
        "snapshot": objects,
        "usage": {
            "default": {
                "cpu": {"fraction": 0.5, "diurnal": {"curve": curve}, "noise": 0.1},
                "memory": {"fraction": 0.6},
            },
            "pods": [
                {
                    "selector": {"matchLabels": {"qos": "BE"}},
                    "cpu": {"fraction": 0.3, "diurnal": {"curve": curve}, "noise": 0.1},
                },
                *rules,
            ],
        },
    }
    return parse_scenario(raw, f"<traces {folder} nodes={nodes} seed={seed}>")


def _workload(row: dict[str, str], node: str, cpu: int, mem: int, gpus: int, shape: int) -> list[dict[str, Any]]:
    name = row["name"]
    requests = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    labels = {"app": name, "qos": row["qos"], SERIES_LABEL: str(shape)}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "trace", "resources": {"requests": requests}}]}
    template: dict[str, Any] = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": "trace", "resources": {"requests": requests}}]},
    }
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-rs-{name}"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-0",
            "namespace": NAMESPACE,
            "uid": f"uid-pod-{name}",
            "labels": dict(labels),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": name,
                    "uid": f"uid-rs-{name}",
                    "controller": True,
                }
            ],
        },
        "spec": {**spec, "nodeName": node},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    return [rs, pod]
