"""Moves the real kube-scheduler takes (issue 60), on the real control plane: a two-zone cluster whose
hot node carries pods under kube-scheduler's hard rules, and pods under none.

Zone a holds a1 (hot) and a2; zone b holds b1 and b2. On a1:
- `spread`: a zone spread (maxSkew 1, DoNotSchedule) with its other replica in zone b, so its pod may
  move to a2 only;
- `affine`: required pod affinity to `app=cache` on the zone key (cache runs on a2 alone): a2 only;
- `ported`: hostPort 9100, whose other replicas hold the port on b1 and b2: a2 only;
- `db`: a StatefulSet pod whose claim is bound to a local PersistentVolume on a1: pinned there;
- `plain`: no rule.

`descheduler plan` names the pinned pod's volume; `descheduler run` relieves a1 with the pods that may
move, and every move is taken: no replacement back on its source, none Pending for a minute, no
job Failed, every rule still holding at the end. Once with the extender (reservation-first), once
with the stock kube-scheduler alone (steered moves).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import test_moves
from moves_support import (
    LOAD_AWARE_SCHEDULER,
    RUN_LABEL,
    MoveRecorder,
    clean_up,
    cordon,
    create_test_nodes,
    delete_quietly,
    deployment,
    list_pods,
    phase,
    ready,
    summary,
    wait_until,
)
from realcluster_support import create, merge_patch
from standin import KubeletStandIn, LoadPublisher
from test_moves import (
    CALM,
    PUBLISH,
    SLACK,
    STARTUP,
    Components,
    Stage,
    hot,
    judge,
    policy_text,
    run_until_settled,
    start_installed_controller,
)

from descheduler.kube import KubeClient

ZONE = "topology.kubernetes.io/zone"
HEAVY_M = 200  # the constrained pods' cpu request: used at 2.2 times, they are the first victims
PLAIN_M = 50
PLAIN_PODS = 12
PENDING_LIMIT = 60.0  # a replacement Pending longer than this after its eviction is a wasted eviction
CONSTRAINED = ("spread", "affine", "ported")

components = test_moves.components  # the fixture, started again for this module
stage = test_moves.stage  # the fixture, on this module's components


@dataclass
class Timeline:
    """When each pod of the namespace was first seen and first bound (monotonic seconds)."""

    seen: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hook(self, kind: str, kind_type: str, obj: dict[str, Any], previous: dict[str, Any] | None) -> None:
        if kind != "pod":
            return
        uid, now = obj["metadata"]["uid"], time.monotonic()
        with self._lock:
            self.seen.setdefault(uid, now)
            if (obj.get("spec") or {}).get("nodeName"):
                self.bound.setdefault(uid, now)


def _zones(run: str) -> dict[str, str]:
    return {f"tz-{run}-{name}": f"zone-{name[0]}" for name in ("a1", "a2", "b1", "b2")}


def _with_pod_spec(manifest: dict[str, Any], **extra: Any) -> dict[str, Any]:
    manifest["spec"]["template"]["spec"].update(extra)
    return manifest


def _workloads(run: str, scheduler: str | None) -> dict[str, dict[str, Any]]:
    """The Deployments, each with the rule it is named after."""
    heavy = {"cpu": f"{HEAVY_M}m", "memory": "64Mi", "scheduler_name": scheduler}
    spread = _with_pod_spec(
        deployment("spread", 1, run, **heavy),
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ],
    )
    affine = _with_pod_spec(
        deployment("affine", 2, run, **heavy),
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE}
                ]
            }
        },
    )
    ported = deployment("ported", 2, run, **heavy)
    ported["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 9100, "hostPort": 9100}]
    return {
        "cache": deployment("cache", 1, run, cpu=f"{PLAIN_M}m", memory="64Mi", scheduler_name=scheduler),
        "spread": spread,
        "affine": affine,
        "ported": ported,
        "plain": deployment("plain", PLAIN_PODS, run, cpu=f"{PLAIN_M}m", memory="64Mi", scheduler_name=scheduler),
    }


def _local_volume(name: str, node: str, claim: str, namespace: str) -> dict[str, Any]:
    """A local PersistentVolume on `node`, bound ahead to `claim` (as a static provisioner leaves one)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "local",
            "local": {"path": "/mnt/disks/db"},
            "claimRef": {"namespace": namespace, "name": claim},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
                    ]
                }
            },
        },
    }


def _stateful_set(run: str, scheduler: str | None) -> dict[str, Any]:
    labels = {"app": "db"}
    spec: dict[str, Any] = {
        "nodeSelector": {RUN_LABEL: run},
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": f"{HEAVY_M}m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
        ],
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    claim = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "labels": labels},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
            "volumeClaimTemplates": [claim],
        },
    }


@dataclass
class TwoZones:
    stage: Stage
    zones: dict[str, str]
    volumes: list[str]
    timeline: Timeline

    def node(self, name: str) -> str:
        return f"tz-{self.stage.run}-{name}"


def _scale(kube: KubeClient, namespace: str, name: str, replicas: int) -> None:
    merge_patch(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", {"spec": {"replicas": replicas}})


def _place(stage: Stage, components: Components, scheduler: str | None) -> TwoZones:
    """Each workload's pods put where the layout wants them, by opening only those nodes while its
    pods are scheduled; then every node opened and the load raised."""
    kube, namespace, run = stage.kube, stage.namespace, stage.run
    zones = _zones(run)
    world = TwoZones(stage, zones, [], Timeline())
    a1, a2, b1, b2 = (world.node(n) for n in ("a1", "a2", "b1", "b2"))
    stage.hot_nodes, stage.cool_nodes = [a1], [a2, b1, b2]
    create_test_nodes(kube, stage.nodes, run, cpu="4000m", memory="16Gi")
    for node, zone in zones.items():
        merge_patch(kube, f"/api/v1/nodes/{node}", {"metadata": {"labels": {ZONE: zone}}})
    cordon(kube, stage.nodes)
    stage.standin = KubeletStandIn(kube, stage.nodes).start()
    stage.publisher = LoadPublisher(kube, stage.nodes, CALM, period=PUBLISH).start()
    workloads = _workloads(run, scheduler)
    stage.workloads = {name: 0 for name in workloads if name != "cache"}
    stage.ballast = {"cache": 1}  # cleaned up with the others; calm

    def settle(count: int) -> None:
        def all_ready() -> bool:
            pods = list_pods(kube, namespace)
            return len(pods) == count and all(ready(p) for p in pods)

        wait_until(
            all_ready, SLACK * (STARTUP + count * 0.2), "every pod Running and Ready", lambda: components.state(stage)
        )

    def open_only(nodes: list[str]) -> None:
        cordon(kube, [n for n in stage.nodes if n not in nodes])
        cordon(kube, nodes, unschedulable=False)

    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    open_only([a2])
    create(kube, path, workloads["cache"])
    settle(1)
    open_only([b1, b2])
    create(kube, path, workloads["spread"])  # 1 replica: zone b
    create(kube, path, workloads["ported"])  # 2 replicas: the port puts one on each
    settle(4)
    open_only([a1])
    _scale(kube, namespace, "spread", 2)
    _scale(kube, namespace, "ported", 3)
    create(kube, path, workloads["affine"])
    create(kube, path, workloads["plain"])
    settle(8 + PLAIN_PODS)
    for index, node in enumerate((a1, b2)):
        claim, volume = f"data-db-{index}", f"local-{node}"
        create(kube, "/api/v1/persistentvolumes", _local_volume(volume, node, claim, namespace))
        world.volumes.append(volume)
    open_only([a1, b2])
    create(kube, f"/apis/apps/v1/namespaces/{namespace}/statefulsets", _stateful_set(run, scheduler))
    settle(10 + PLAIN_PODS)
    cordon(kube, stage.nodes, unschedulable=False)
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in list_pods(kube, namespace)}
    assert placed["db-0"] == a1 and placed["db-1"] == b2, placed
    on_a1 = sorted(name.split("-")[0] for name, node in placed.items() if node == a1)
    assert on_a1 == sorted(["affine", "affine", "db", "ported", "spread", *["plain"] * PLAIN_PODS]), placed

    rounds = stage.publisher.rounds
    stage.publisher.set_spec(hot([*CONSTRAINED, "plain", "db"]))
    wait_until(
        lambda: stage.publisher is not None and stage.publisher.rounds >= rounds + 2,
        SLACK * 2 * PUBLISH,
        "hot load published",
    )
    stage.recorder = MoveRecorder(kube, namespace, run)
    stage.recorder.hooks.append(world.timeline.hook)
    stage.recorder.start()
    return world


@pytest.fixture
def two_zones(stage: Stage) -> Iterator[list[TwoZones]]:
    made: list[TwoZones] = []
    yield made
    kube = stage.kube
    delete_quietly(kube, f"/apis/apps/v1/namespaces/{stage.namespace}/statefulsets/db")
    for world in made:
        for volume in world.volumes:
            delete_quietly(kube, f"/api/v1/persistentvolumes/{volume}")
    clean_up(kube, stage.namespace, [], [])  # the pods the StatefulSet left, before the stage's own clean-up


def _plan_skips(world: TwoZones, components: Components) -> dict[str, str]:
    """`descheduler plan --kubeconfig` as the controller's account: the reason each pod is not moved."""
    stage = world.stage
    policy = components.workdir / f"plan-{stage.run}.yaml"
    policy.write_text(policy_text(stage.run, stage.namespace))
    command = [sys.executable, "-m", "descheduler", "plan", "--kubeconfig", str(components.controller_kubeconfig)]
    done = subprocess.run(
        [*command, "--policy", str(policy), "-o", "json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    return {s["pod"]["name"]: s["reason"] for s in plan["skipped"]} | {
        m["pod"]["name"]: f"moves to {m['targetNode']}" for m in plan["migrations"]
    }


def _wasted(world: TwoZones) -> list[str]:
    """Evictions whose replacement came back to its source or waited Pending over PENDING_LIMIT."""
    recorder, timeline = world.stage.recorder, world.timeline
    assert recorder is not None
    problems = []
    for uid in recorder.terminations:
        old = recorder.pods[uid]
        evicted_at = old.terminating_at or 0.0
        replacements = [p for p in recorder.pods.values() if p.new and p.owner == old.owner and p.uid != uid]
        placed = [p for p in replacements if p.uid in timeline.bound]
        late = [p for p in replacements if timeline.bound.get(p.uid, time.monotonic()) - evicted_at > PENDING_LIMIT]
        if not placed:
            problems.append(f"{old.name} evicted from {old.node}: no replacement bound")
        problems += [
            f"{old.name}: replacement {p.name} back on its source {old.node}" for p in placed if p.node == old.node
        ]
        problems += [f"{old.name}: replacement {p.name} Pending over {PENDING_LIMIT:.0f}s" for p in late]
    return problems


def _rules_hold(world: TwoZones) -> list[str]:
    """Each rule checked on the pods as they run at the end."""
    stage = world.stage
    pods = [p for p in list_pods(stage.kube, stage.namespace) if not p["metadata"].get("deletionTimestamp")]
    nodes_of: dict[str, list[str]] = {}
    for pod in pods:
        nodes_of.setdefault(pod["metadata"]["labels"]["app"], []).append(pod["spec"].get("nodeName", ""))
    problems = []
    per_zone = {zone: sum(world.zones.get(n) == zone for n in nodes_of["spread"]) for zone in ("zone-a", "zone-b")}
    if max(per_zone.values()) - min(per_zone.values()) > 1:
        problems.append(f"spread's zone skew is over 1: {per_zone}")
    cache_zones = {world.zones[n] for n in nodes_of["cache"]}
    problems += [
        f"affine on {n}, outside the cache's zone {cache_zones}"
        for n in nodes_of["affine"]
        if world.zones[n] not in cache_zones
    ]
    if len(set(nodes_of["ported"])) != len(nodes_of["ported"]):
        problems.append(f"two ported pods share a node (hostPort 9100): {nodes_of['ported']}")
    if sorted(nodes_of["db"]) != sorted([world.node("a1"), world.node("b2")]):
        problems.append(f"db pods left their local volumes' nodes: {nodes_of['db']}")
    return problems


def _moved(world: TwoZones) -> dict[str, list[str]]:
    """The nodes the evicted pods' replacements went to, by workload."""
    recorder = world.stage.recorder
    assert recorder is not None
    out: dict[str, list[str]] = {}
    for uid in recorder.terminations:
        old = recorder.pods[uid]
        for new in recorder.pods.values():
            if new.new and new.owner == old.owner and new.uid != uid:
                out.setdefault(old.name.split("-")[0], []).append(new.node)
    return out


def _relieve(world: TwoZones, components: Components) -> tuple[list[dict[str, Any]], float]:
    stage = world.stage
    controller = start_installed_controller(stage, components, f"controller-{stage.run}")
    took = run_until_settled(stage, controller, moves=4)
    recorder = stage.recorder
    assert recorder is not None
    return recorder.job_list(), took


@pytest.mark.parametrize("scheduler", [LOAD_AWARE_SCHEDULER, None], ids=["extender", "stock-scheduler"])
def test_every_move_is_taken_by_the_real_scheduler_and_no_eviction_is_wasted(
    components: Components,
    stage: Stage,
    two_zones: list[TwoZones],
    scheduler: str | None,
) -> None:
    world = _place(stage, components, scheduler)
    two_zones.append(world)
    skips = _plan_skips(world, components)
    assert skips.get("db-0", "").startswith(f"pinned by volume local-{world.node('a1')}"), skips
    jobs, took = _relieve(world, components)
    moved = _moved(world)
    print(
        f"\n{scheduler or 'stock scheduler'}: jobs {[summary(j) for j in jobs]}; moved {moved}; {took:.0f}s to settle"
    )
    problems = _wasted(world) + _rules_hold(world)
    if scheduler == LOAD_AWARE_SCHEDULER:
        problems += judge(stage, expect_reservations=True).problems
    problems += [f"job not Succeeded: {summary(j)}" for j in jobs if phase(j) != "Succeeded"]
    recorder = stage.recorder
    assert recorder is not None
    subjects = [recorder.pods[uid].name.split("-")[0] for uid in recorder.terminations]
    assert "db" not in subjects, subjects
    assert set(subjects) & set(CONSTRAINED), f"no constrained pod moved: {subjects}"
    problems += [
        f"{recorder.pods[uid].name} was moved again" for uid in recorder.terminations if recorder.pods[uid].new
    ]
    assert not problems, "\n".join(problems)
