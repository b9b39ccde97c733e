"""Generated clusters for benchmarks: N nodes, M pods, usage skewed so a share of nodes runs hot."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from descheduler.labels import LabelSelector
from descheduler.model import (
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeUsage,
    OwnerRef,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodUsage,
    SpreadConstraint,
    Workload,
)
from descheduler.resources import Resources
from descheduler.snapshot import Snapshot

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


ZONE = "topology.kubernetes.io/zone"


def generated_snapshot(
    nodes: int, pods: int, hot_share: float = 0.1, seed: int = 7, *, spread_share: float = 0.0, pvc_share: float = 0.0
) -> Snapshot:
    """A snapshot with `nodes` nodes of 32 cores / 128 GiB in three zones and `pods` pods of 40
    workloads per namespace. `spread_share` of the workloads carry a zone spread (maxSkew 1,
    DoNotSchedule); `pvc_share` of the pods use a claim bound to a volume of their node's zone."""
    rng = random.Random(seed)
    node_list = [
        Node(
            name=f"node-{i:05d}",
            labels={"kubernetes.io/hostname": f"node-{i:05d}", "topology.kubernetes.io/zone": f"zone-{i % 3}"},
            allocatable=Resources({"cpu": 32_000, "memory": 128 * 2**30, "pods": 110}),
        )
        for i in range(nodes)
    ]
    hot = {n.name for n in node_list[: int(nodes * hot_share)]}
    workloads = [
        Workload(kind="ReplicaSet", namespace=f"ns-{w % 50}", name=f"app-{w}", uid=f"rs-{w}", replicas=10)
        for w in range(max(pods // 10, 1))
    ]
    spread_every = round(1 / spread_share) if spread_share else 0
    pvc_every = round(1 / pvc_share) if pvc_share else 0
    claims: list[PersistentVolumeClaim] = []
    volumes: list[PersistentVolume] = []
    pod_list, pod_usage = [], []
    totals: dict[str, list[int]] = {n.name: [0, 0] for n in node_list}
    for i in range(pods):
        node = node_list[i % nodes].name
        workload = workloads[i % len(workloads)]
        cpu_req = rng.choice((250, 500, 1000))
        mem_req = rng.choice((256, 512, 1024)) * 2**20
        factor = 1.6 if node in hot else 0.6
        w = i % len(workloads)
        spread = ()
        if spread_every and w % spread_every == 0:
            selector = LabelSelector(match_labels=(("app", workload.name),))
            spread = (SpreadConstraint(max_skew=1, topology_key=ZONE, selector=selector),)
        claim: tuple[str, ...] = ()
        if pvc_every and i % pvc_every == 0:
            claim = (f"data-{i}",)
            zone = node_list[i % nodes].labels[ZONE]
            term = NodeSelectorTerm(
                match_expressions=(NodeSelectorRequirement(key=ZONE, operator="In", values=(zone,)),)
            )
            volumes.append(PersistentVolume(name=f"pv-{i}", node_affinity=(term,)))
            claims.append(
                PersistentVolumeClaim(namespace=workload.namespace, name=claim[0], volume_name=f"pv-{i}", phase="Bound")
            )
        cpu_use = int(cpu_req * factor * rng.uniform(0.7, 1.3))
        mem_use = int(mem_req * factor * rng.uniform(0.7, 1.3))
        pod = Pod(
            namespace=workload.namespace,
            name=f"pod-{i:06d}",
            uid=f"uid-{i}",
            node_name=node,
            phase="Running",
            labels={"app": workload.name},
            owner=OwnerRef(kind="ReplicaSet", name=workload.name, uid=workload.uid, controller=True),
            requests=Resources({"cpu": cpu_req, "memory": mem_req}),
            limits=Resources({"cpu": cpu_req * 2, "memory": mem_req * 2}),
            qos="Burstable",
            created=NOW - timedelta(hours=rng.randint(1, 100)),
            ready=True,
            spread=spread,
            claims=claim,
        )
        pod_list.append(pod)
        pod_usage.append(
            PodUsage(
                namespace=pod.namespace,
                name=pod.name,
                timestamp=NOW,
                usage=Resources({"cpu": cpu_use, "memory": mem_use}),
                source="bench",
            )
        )
        totals[node][0] += cpu_use
        totals[node][1] += mem_use
    node_usage = [
        NodeUsage(
            node=name,
            timestamp=NOW,
            usage=Resources({"cpu": cpu + 500, "memory": mem + 2**30}),
            source="bench",
        )
        for name, (cpu, mem) in totals.items()
    ]
    return Snapshot.build(
        now=NOW + timedelta(seconds=30),
        nodes=node_list,
        pods=pod_list,
        workloads=workloads,
        pvcs=claims,
        pvs=volumes,
        node_usage=node_usage,
        pod_usage=pod_usage,
    )
