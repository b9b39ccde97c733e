"""The constrained quality scenario (issue 60 §6): bitbrains-diurnal in two zones, with the hard rules of
kube-scheduler that real clusters carry.

    zoned(nodes, seed) -> LoadedScenario                 # family "bitbrains-diurnal-zoned"

The same pods as bitbrains-diurnal at that size and seed (the same VM draw, requests and day shape), on
nodes split between two zones (topology.kubernetes.io/zone: zone-a on even nodes, zone-b on odd ones;
one region), taken in their seeded order into these workloads, each named after its rule:

- `spread-*`: Deployments of SPREAD_REPLICAS replicas with a zone topology spread constraint (maxSkew 1,
  DoNotSchedule, on the Deployment's own app label), SPREAD_SHARE of the pods;
- `zonal-*`: one-replica Deployments whose template names a claim (data-<name>), so a replacement keeps
  it, bound to a CSI PersistentVolume with a required zone node affinity and the zone label
  (VolumeBinding, VolumeZone), ZONAL_SHARE of the pods, zones alternating;
- `local-*`: the same on a local PersistentVolume pinned to one node (hostname node affinity), one per
  LOCAL_EVERY nodes;
- `hostport-*`: one Deployment of HOST_PORT_REPLICAS replicas (at most half the nodes) holding
  hostPort HOST_PORT;
- the rest as in bitbrains-diurnal: one-replica ReplicaSets.

The replicas of a Deployment follow one VM's series (a service's replicas serve alike; a replacement is
made from the template, so it could not keep a series of its own), the first of its slots', with that
VM's request; the node size is worked out again from the pods so built. The pods with claims are not
StatefulSets: the simulated StatefulSet controller lists (decodes) every pod of the namespace twice per
StatefulSet at each pass (descheduler/fakecluster/workloads.py), which made a 50-node day take hours;
a one-replica Deployment naming its claim keeps it the same way. Claims and volumes name no
StorageClass (statically provisioned and bound), so no StorageClass or CSINode is needed. Placement: the
simulated stock kube-scheduler (benchmarks.baseline.SpreadScheduler) places every pod under these
rules, as it would have on the day they were created.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from benchmarks.scenarios import (
    PODS_PER_NODE,
    PodTrace,
    _bitbrains_pods,
    _day_factors,
    _folder,
    _node,
    _node_size,
    _select,
    _workload,
    place,
    pod_template,
    running_on,
    scenario_of,
    template_pod,
    usage_rule,
)
from descheduler.fakecluster.scenario import LoadedScenario
from descheduler.fakecluster.traces import diurnal_curve
from descheduler.fakecluster.workloads import DeploymentController

FAMILY: Final = "bitbrains-diurnal-zoned"
BASE_FAMILY: Final = "bitbrains-diurnal"  # whose pods these are (its seeded draw)
ZONE_KEY: Final = "topology.kubernetes.io/zone"
REGION_KEY: Final = "topology.kubernetes.io/region"
HOSTNAME_KEY: Final = "kubernetes.io/hostname"
ZONES: Final = ("zone-a", "zone-b")
REGION: Final = "region-1"
SPREAD_REPLICAS: Final = 3
SPREAD_SHARE: Final = 0.2
ZONAL_SHARE: Final = 0.1
LOCAL_EVERY: Final = 5
HOST_PORT: Final = 9100
HOST_PORT_REPLICAS: Final = 8
CSI_DRIVER: Final = "pd.csi.storage.gke.io"
VOLUME_SIZE: Final = "10Gi"

Rule = Literal["spread", "zonal", "local", "hostport", "none"]
RULES: Final[tuple[Rule, ...]] = ("spread", "zonal", "local", "hostport", "none")


@dataclass(frozen=True, slots=True)
class Group:
    """One workload of the scenario: its rule, the pod whose series and request it takes, its replicas."""

    rule: Rule
    trace: PodTrace
    replicas: int = 1

    @property
    def name(self) -> str:
        return self.trace.name if self.rule == "none" else f"{self.rule}-{self.trace.name}"


def rule_of(pod_name: str) -> Rule:
    """The rule a scenario pod (or its replacement) is under, from its name."""
    prefix = pod_name.split("-", 1)[0]
    return next((rule for rule in RULES if rule == prefix and rule != "none"), "none")


def zone_of(index: int) -> str:
    return ZONES[index % len(ZONES)]


def groups(chosen: Sequence[PodTrace], nodes: int) -> list[Group]:
    """The chosen pods' slots, in their seeded order, into workloads (the module's docstring)."""
    out: list[Group] = []
    slots = iter(chosen)
    spread = round(SPREAD_SHARE * len(chosen) / SPREAD_REPLICAS)
    zonal = round(ZONAL_SHARE * len(chosen))
    plan: list[tuple[Rule, int, int]] = [
        ("spread", spread, SPREAD_REPLICAS),
        ("zonal", zonal, 1),
        ("local", max(1, nodes // LOCAL_EVERY), 1),
        ("hostport", 1, max(1, min(HOST_PORT_REPLICAS, nodes // 2))),
    ]
    for rule, count, replicas in plan:
        for _ in range(count):
            taken = [next(slots) for _ in range(replicas)]
            out.append(Group(rule, taken[0], replicas))
    out += [Group("none", pod) for pod in slots]
    return out


def _zoned_node(index: int, cpu: int, memory: int) -> dict[str, Any]:
    node = _node(f"node-{index:03d}", cpu, memory)
    node["metadata"]["labels"] |= {ZONE_KEY: zone_of(index), REGION_KEY: REGION}
    return node


def _deployment(group: Group, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Deployment, its ReplicaSet (as the Deployment controller names it) and its unbound pods."""
    name = group.name
    template = pod_template(group.trace, {"app": name})
    spec = template["spec"]
    if group.rule == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE_KEY,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": name}},
            }
        ]
    elif group.rule == "hostport":
        spec["containers"][0]["ports"] = [{"containerPort": HOST_PORT, "hostPort": HOST_PORT, "protocol": "TCP"}]
    else:  # zonal, local: the template names the claim, so a replacement keeps it
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}}]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-deploy-{name}", "labels": {"app": name}},
        "spec": {"replicas": group.replicas, "selector": {"matchLabels": {"app": name}}, "template": template},
    }
    rs = DeploymentController._replicaset(deployment, group.replicas)
    rs["metadata"]["uid"] = f"uid-rs-{name}"
    rs_name = rs["metadata"]["name"]
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": f"uid-rs-{name}"}
    pods = [
        template_pod(rs["spec"]["template"], f"{rs_name}-{k}", namespace, owner, f"uid-pod-{name}-{k}")
        for k in range(group.replicas)
    ]
    return [deployment, rs], pods


def _volume_affinity(key: str, value: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


def _volume(group: Group, namespace: str, where: str) -> list[dict[str, Any]]:
    """The claim data-<name> and the PersistentVolume bound to it: zonal (`where` is the zone) or local
    (`where` is the node)."""
    name = group.name
    claim = f"data-{name}"
    volume = f"pv-{name}"
    pv_spec: dict[str, Any] = {
        "capacity": {"storage": VOLUME_SIZE},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim, "uid": f"uid-pvc-{name}"},
    }
    labels: dict[str, str] = {}
    if group.rule == "zonal":
        pv_spec["csi"] = {"driver": CSI_DRIVER, "volumeHandle": f"projects/bench/zones/{where}/disks/{volume}"}
        pv_spec["nodeAffinity"] = _volume_affinity(ZONE_KEY, where)
        labels = {ZONE_KEY: where, REGION_KEY: REGION}
    else:
        pv_spec["local"] = {"path": f"/mnt/disks/{volume}"}
        pv_spec["nodeAffinity"] = _volume_affinity(HOSTNAME_KEY, where)
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume, "labels": labels},
        "spec": pv_spec,
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim,
            "namespace": namespace,
            "uid": f"uid-pvc-{name}",
            # What the PV controller writes once it has bound the two (a fully bound claim).
            "annotations": {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "volumeName": volume,
            "resources": {"requests": {"storage": VOLUME_SIZE}},
        },
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": VOLUME_SIZE}},
    }
    return [pv, pvc]


def zoned(nodes: int, seed: int) -> LoadedScenario:
    """bitbrains-diurnal's pods at this size and seed, in two zones under kube-scheduler's hard rules."""
    folder = _folder()
    rng = random.Random(f"{BASE_FAMILY}/{seed}")
    curves = (diurnal_curve(folder), diurnal_curve(folder, "mem_util_percent"))
    factors = (_day_factors(curves[0]), _day_factors(curves[1]))
    candidates = _bitbrains_pods(folder, 2 * nodes * PODS_PER_NODE, rng, factors)
    chosen, _ = _select(candidates, nodes, False, factors)
    workloads = groups(chosen, nodes)
    per_pod = [replace(g.trace, name=f"{g.name}-{k}") for g in workloads for k in range(g.replicas)]
    cpu, memory = _node_size(per_pod, nodes, False)
    namespace = FAMILY
    node_objects = [_zoned_node(i, cpu, memory) for i in range(nodes)]
    owners: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    storage: list[dict[str, Any]] = []
    zonal = local = 0
    for group in workloads:
        if group.rule == "none":
            rs, raw = _workload(group.trace, namespace)
            made, made_pods = [rs], [raw]
        else:
            made, made_pods = _deployment(group, namespace)
        if group.rule == "zonal":
            storage += _volume(group, namespace, zone_of(zonal))
            zonal += 1
        elif group.rule == "local":
            storage += _volume(group, namespace, f"node-{local * LOCAL_EVERY % nodes:03d}")
            local += 1
        owners += made
        pods += made_pods
    bound = place(node_objects, pods, storage)
    unplaced = [p["metadata"]["name"] for p in pods if f"{namespace}/{p['metadata']['name']}" not in bound]
    if unplaced:
        # A Deployment's missing replica would be recreated Pending: the start must hold every pod.
        raise ValueError(f"{FAMILY}: the stock scheduler placed none of {len(unplaced)} pods: {unplaced[:5]}")
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    objects += node_objects + storage + owners
    objects += [running_on(p, bound[f"{namespace}/{p['metadata']['name']}"]) for p in pods]
    rules = [usage_rule(g.trace, namespace, curves) for g in workloads]
    return scenario_of(FAMILY, nodes, seed, objects, rules)


DESCRIPTION: Final = (
    f"{FAMILY}: the pods of bitbrains-diurnal at the same size and seed, under kube-scheduler's hard rules. "
    "Nodes alternate between two zones (topology.kubernetes.io/zone zone-a, zone-b). Taken in their seeded "
    f"order: {SPREAD_SHARE:.0%} of the pods in Deployments of {SPREAD_REPLICAS} replicas with a zone topology "
    f"spread (maxSkew 1, DoNotSchedule); {ZONAL_SHARE:.0%} as one-replica Deployments whose template names a "
    "claim (kept by the replacement) bound to a zonal CSI PersistentVolume (required zone node affinity and zone "
    f"label: VolumeBinding, VolumeZone); one per {LOCAL_EVERY} nodes the same on a local PersistentVolume "
    "pinned to its node; one "
    f"Deployment of {HOST_PORT_REPLICAS} replicas (at most half the nodes) holding hostPort {HOST_PORT}; the "
    "rest one-replica ReplicaSets as in bitbrains-diurnal. A Deployment's replicas follow the series and "
    "request of its first pod's VM (a replacement comes from the template, so it keeps no series of its "
    "own); nodes are sized again for the pods so built. Claims and volumes name no StorageClass (bound "
    "statically). The stock scheduler places every pod under these rules before the day starts."
)
