"""The contract between the fake cluster's stock scheduler and the real kube-scheduler: for pods under
kube-scheduler's pod-level hard rules (PodTopologySpread DoNotSchedule, InterPodAffinity required
affinity, NodePorts), `StockScheduler` with the simulated scheduler's `HostPortUse` accepts exactly
the nodes the real kube-scheduler (../shared/kube, v1.36) accepts; and so does the product's
scheduling core (`feasible_mask`, scheduling-core.md §2), also on the fields the stock scheduler
does not model (`stock` False: matchLabelKeys, mismatchLabelKeys).

Which nodes the real one accepts is found a node at a time: every other node of the case carries a
NoSchedule taint the pod does not tolerate (nodeTaintsPolicy is Ignore by default, so the taint
changes no spread count), the pod is created, and it is either bound to the open node or marked
Unschedulable. The case's nodes carry a label of their own that the pods select, so the session's
other nodes take no part.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from controlplane import ControlPlane, Process
from realcluster_support import create, create_node, delete_node, eventually, merge_patch

from descheduler.fakecluster.scheduler import HostPortUse
from descheduler.fakecluster.stock import StockScheduler
from descheduler.kube import KubeClient
from descheduler.policy import default_policy
from descheduler.scheduling import ClusterView, build_table, feasible_mask
from descheduler.snapshot import load_snapshot_objects

Raw = dict[str, Any]
ZONE = "contract.test/zone"
RUN = "contract.test/run"
PROBE_TAINT = {"key": "contract.test/probe", "value": "closed", "effect": "NoSchedule"}
SETTLE = 0.5  # seconds for kube-scheduler's cache to see a node or pod change


@pytest.fixture(scope="module")
def scheduler(control_plane: ControlPlane) -> Iterator[None]:
    started: Process = control_plane.start_scheduler()
    try:
        yield
    finally:
        started.stop()


def _pod(name: str, labels: dict[str, str], node: str = "", **spec: Any) -> Raw:
    body: Raw = {
        "containers": [{"name": "c", "image": "example", "resources": {"requests": {"cpu": "100m"}}}],
        "terminationGracePeriodSeconds": 0,
        **spec,
    }
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": body}


def _ports(obj: Raw, *ports: tuple[str, str, int]) -> Raw:
    obj["spec"]["containers"][0]["ports"] = [
        {"containerPort": port, "hostPort": port, "protocol": protocol, **({"hostIP": ip} if ip else {})}
        for ip, protocol, port in ports
    ]
    return obj


FOO_SPREAD = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
}
S1_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"security": "S1"}}, "topologyKey": ZONE}
        ]
    }
}
ZONES = {"a": "z1", "b": "z1", "x": "z2", "y": "z2"}

# (case, existing pods as (name, node suffix, labels, host ports), the incoming pod's labels, spec, ports)
Ports = tuple[tuple[str, str, int], ...]  # (hostIP, protocol, hostPort)
Case = tuple[str, list[tuple[str, str, dict[str, str], Ports]], dict[str, str], Raw, Ports]
CASES: list[Case] = [
    (
        "zone spread 3/3 after node counts 2/1/0/3: every zone fits",
        [(f"f{i}", n, {"foo": ""}, ()) for i, n in enumerate(["a", "a", "b", "y", "y", "y"])],
        {"foo": ""},
        {"topologySpreadConstraints": [FOO_SPREAD]},
        (),
    ),
    (
        "zone spread 3/1: only zone 2 fits",
        [(f"f{i}", n, {"foo": ""}, ()) for i, n in enumerate(["a", "a", "b", "y"])],
        {"foo": ""},
        {"topologySpreadConstraints": [FOO_SPREAD]},
        (),
    ),
    (
        "zone spread with minDomains 3 over 2 zones: the global minimum is 0",
        [(f"f{i}", n, {"foo": ""}, ()) for i, n in enumerate(["a", "x"])],
        {"foo": ""},
        {"topologySpreadConstraints": [{**FOO_SPREAD, "maxSkew": 1, "minDomains": 3}]},
        (),
    ),
    (
        "required affinity to a pod in zone 1",
        [("s1", "a", {"security": "S1"}, ())],
        {"app": "client"},
        {"affinity": S1_AFFINITY},
        (),
    ),
    (
        "required affinity, the first pod of its group",
        [],
        {"security": "S1"},
        {"affinity": S1_AFFINITY},
        (),
    ),
    (
        "host port 9100 taken on a",
        [("exp", "a", {"app": "exp"}, (("", "TCP", 9100),))],
        {"app": "exp2"},
        {},
        (("", "TCP", 9100),),
    ),
    (
        "host port on another address and another protocol",
        [
            ("exp", "a", {"app": "exp"}, (("127.0.0.1", "TCP", 8001),)),
            ("dns", "b", {"app": "dns"}, (("", "UDP", 8001),)),
        ],
        {"app": "exp2"},
        {},
        (("127.0.0.2", "TCP", 8001),),
    ),
]
CORE_ONLY: list[Case] = [
    (
        "zone spread with matchLabelKeys: pods of another revision do not count",
        [(f"f{i}", n, {"foo": "", "rev": "1"}, ()) for i, n in enumerate(["a", "a", "b"])]
        + [("g", "x", {"foo": "", "rev": "2"}, ())],
        {"foo": "", "rev": "2"},
        {"topologySpreadConstraints": [{**FOO_SPREAD, "matchLabelKeys": ["rev"]}]},
        (),
    ),
    (
        "required affinity with mismatchLabelKeys: a cache pod of another tenant",
        [("cache-a", "a", {"app": "cache", "tenant": "a"}, ()), ("cache-b", "x", {"app": "cache", "tenant": "b"}, ())],
        {"tenant": "a"},
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "cache"}},
                            "topologyKey": ZONE,
                            "mismatchLabelKeys": ["tenant"],
                        }
                    ]
                }
            }
        },
        (),
    ),
]


def _decided(kube: KubeClient, path: str) -> str | None:
    """ "" while kube-scheduler has not decided, the node it bound, or None when Unschedulable."""
    pod = kube.get_json(path)
    if pod["spec"].get("nodeName"):
        return str(pod["spec"]["nodeName"])
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return None
    return ""


def _delete_pod(kube: KubeClient, namespace: str, name: str) -> None:
    kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query={"gracePeriodSeconds": 0})

    def gone() -> bool:
        items = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
        return all(p["metadata"]["name"] != name for p in items)

    eventually(gone, what=f"pod {name} deleted")


def _real_accepts(kube: KubeClient, namespace: str, nodes: list[str], incoming: Raw) -> set[str]:
    accepted: set[str] = set()
    for i, target in enumerate(nodes):
        for node in nodes:
            merge_patch(kube, f"/api/v1/nodes/{node}", {"spec": {"taints": [] if node == target else [PROBE_TAINT]}})
        time.sleep(SETTLE)
        probe = copy.deepcopy(incoming)
        probe["metadata"]["name"] = name = f"probe-{i}"
        create(kube, f"/api/v1/namespaces/{namespace}/pods", probe)
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        found: list[str | None] = []

        def decided(path: str = path, found: list[str | None] = found) -> bool:
            found.append(_decided(kube, path))
            return found[-1] != ""

        eventually(decided, timeout=30, what=f"kube-scheduler decides {name}")
        if found[-1] == target:
            accepted.add(target)
        _delete_pod(kube, namespace, name)
        time.sleep(SETTLE)
    return accepted


ALL = [(*case, True) for case in CASES] + [(*case, False) for case in CORE_ONLY]


def _core_accepts(nodes: list[Raw], pods: list[Raw], namespaces: list[Raw], incoming: Raw) -> set[str]:
    """The nodes the product's scheduling core accepts (no NodeMetrics: its load filter passes all)."""
    objects = [{"apiVersion": "v1", "kind": "Node", **n} for n in nodes]
    objects += [{"apiVersion": "v1", "kind": "Pod", **p} for p in [*pods, incoming]]
    objects += [{"apiVersion": "v1", "kind": "Namespace", **n} for n in namespaces]
    snapshot = load_snapshot_objects(objects, datetime.now(UTC))
    view = ClusterView(build_table(snapshot, default_policy().scheduling))
    pod = next(p for p in snapshot.pods if p.name == incoming["metadata"]["name"])
    mask = feasible_mask(pod, view)
    return {name for name, ok in zip(view.table.names, mask.tolist(), strict=True) if ok}


@pytest.mark.parametrize(("case", "existing", "labels", "spec", "ports", "stock"), ALL, ids=[c[0] for c in ALL])
def test_the_stock_scheduler_accepts_the_nodes_kube_scheduler_accepts(
    scheduler: None,
    kube: KubeClient,
    namespace: str,
    case: str,
    existing: list[tuple[str, str, dict[str, str], Ports]],
    labels: dict[str, str],
    spec: Raw,
    ports: Ports,
    stock: bool,
) -> None:
    run = namespace[-5:]
    names = {suffix: f"c{run}-{suffix}" for suffix in ZONES}
    try:
        for suffix, zone in ZONES.items():
            create_node(kube, names[suffix])
            merge_patch(kube, f"/api/v1/nodes/{names[suffix]}", {"metadata": {"labels": {ZONE: zone, RUN: run}}})
        for name, suffix, pod_labels, held in existing:
            create(kube, f"/api/v1/namespaces/{namespace}/pods", _ports(_pod(name, pod_labels, names[suffix]), *held))
        incoming = _ports(_pod("incoming", labels, nodeSelector={RUN: run}, **copy.deepcopy(spec)), *ports)

        nodes = [kube.get_json(f"/api/v1/nodes/{names[s]}") for s in ZONES]
        pods = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
        namespaces = [kube.get_json(f"/api/v1/namespaces/{namespace}")]
        fake_incoming = copy.deepcopy(incoming)
        fake_incoming["metadata"]["namespace"] = namespace
        refused = StockScheduler(nodes, pods, (), namespaces).refusals(fake_incoming)
        refused.update(HostPortUse(pods).refusals(fake_incoming))
        fake = {n["metadata"]["name"] for n in nodes} - set(refused)
        core = _core_accepts(nodes, pods, namespaces, fake_incoming)

        real = _real_accepts(kube, namespace, [names[s] for s in ZONES], incoming)
        assert core == real, f"{case}: the core accepts {sorted(core)}"
        if stock:
            assert fake == real, f"{case}: fake refused {refused}"
    finally:
        for suffix in ZONES:
            delete_node(kube, names[suffix])
