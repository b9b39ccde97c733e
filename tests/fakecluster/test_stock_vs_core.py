"""The product's scheduling core, checked against the independent stock kube-scheduler: on random
small clusters, the core's non-load verdict (node condition, nodeSelector and required node
affinity, taints, requests fit, required anti-affinity both ways) accepts exactly the nodes
`StockScheduler.feasible` accepts. No NodeMetrics exist, so the core's load filter passes every node.

Kept out of the random clusters, where the core differs from kube-scheduler on purpose (each pinned
in `test_where_the_core_and_kube_scheduler_differ`: a descheduler never picks a cordoned or NotReady
node as a target, whatever the pod tolerates):
- a toleration of node.kubernetes.io/unschedulable:NoSchedule lets kube-scheduler place a pod on a
  cordoned node (NodeUnschedulable); the core refuses every cordoned node (`NodeTable.schedulable`);
- a NotReady node: kube-scheduler checks taints, not conditions, so a pod tolerating the not-ready
  taint may go there; the core refuses every NotReady node (so every node drawn here is Ready).

Running pods here carry required anti-affinity too; label values are plain integers. The two places
where the core used to differ — running pods' anti-affinity against the incoming pod, and Gt / Lt on
a value Go's strconv.ParseInt refuses — are pinned in `test_where_the_core_now_agrees`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.fakecluster.stock import StockScheduler
from descheduler.policy import default_policy
from descheduler.scheduling import ClusterView, build_table
from descheduler.scheduling.predicates import checks
from descheduler.snapshot import load_snapshot_objects

Raw = dict[str, Any]
NOW = datetime(2026, 1, 15, 12, tzinfo=UTC)
HOSTNAME = "kubernetes.io/hostname"

LABELS = {"zone": ["a", "b"], "disk": ["ssd", "hdd"], "cores": ["4", "8", "16"]}
TAINTS = [
    {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "web", "effect": "NoExecute"},
    {"key": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
]
TOLERATIONS = [
    {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "web"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "gpu", "operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists", "effect": "NoExecute"},
    {"value": "db"},  # Equal with an empty key: tolerates nothing
]
QUANTITIES = {
    "cpu": ["0", "100m", "500m", "1", "1500m", "2", "4"],
    "memory": ["0", "128Mi", "512Mi", "1Gi", "1.5Gi", "2Gi"],
}


@st.composite
def nodes(draw: st.DrawFn) -> list[Raw]:
    out = []
    for i in range(draw(st.integers(1, 5))):
        name = f"n{i}"
        labels = {HOSTNAME: name}
        for key, values in LABELS.items():
            if draw(st.booleans()):
                labels[key] = draw(st.sampled_from(values))
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "unschedulable": draw(st.booleans()) and draw(st.booleans()),
                    "taints": draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: str(t))),
                },
                "status": {
                    "allocatable": {
                        "cpu": draw(st.sampled_from(["1", "2", "4", "3500m"])),
                        "memory": draw(st.sampled_from(["1Gi", "2Gi", "4Gi"])),
                        "pods": draw(st.sampled_from(["2", "110"])),
                        **({"example.com/gpu": "1"} if draw(st.booleans()) else {}),
                    },
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return out


def _requests(draw: st.DrawFn) -> Raw:
    return {name: draw(st.sampled_from(values)) for name, values in QUANTITIES.items() if draw(st.booleans())}


def _anti_affinity(draw: st.DrawFn) -> Raw | None:
    if not draw(st.booleans()):
        return None
    key = draw(st.sampled_from([HOSTNAME, HOSTNAME, "zone"]))
    term: Raw = {"labelSelector": {"matchLabels": {"app": draw(st.sampled_from(["web", "db"]))}}, "topologyKey": key}
    if draw(st.booleans()):
        term["namespaces"] = draw(st.lists(st.sampled_from(["default", "other"]), min_size=1, max_size=2))
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _pod(name: str, draw: st.DrawFn, node: str, anti: Raw | None) -> Raw:
    spec: Raw = {"containers": [{"name": "c", "resources": {"requests": _requests(draw)}}]}
    if draw(st.booleans()):
        init: Raw = {"name": "i", "resources": {"requests": _requests(draw)}}
        if draw(st.booleans()):
            init["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = [init, {"name": "j", "resources": {"requests": _requests(draw)}}]
    if draw(st.booleans()) and draw(st.booleans()):
        spec["overhead"] = {"cpu": draw(st.sampled_from(["100m", "1"]))}
    if draw(st.booleans()) and draw(st.booleans()):
        spec["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    if node:
        spec["nodeName"] = node
    if anti is not None:
        spec["affinity"] = anti
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": draw(st.sampled_from(["default", "default", "other"])),
            "uid": f"uid-{name}",
            "labels": {"app": draw(st.sampled_from(["web", "db", "x"]))},
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Raw], list[Raw], Raw]:
    cluster_nodes = draw(nodes())
    names = [n["metadata"]["name"] for n in cluster_nodes]
    running = [
        _pod(f"r{i}", draw, draw(st.sampled_from(names)), _anti_affinity(draw)) for i in range(draw(st.integers(0, 6)))
    ]
    incoming = _pod("incoming", draw, "", _anti_affinity(draw))
    spec = incoming["spec"]
    if draw(st.booleans()):
        key = draw(st.sampled_from(sorted(LABELS)))
        spec["nodeSelector"] = {key: draw(st.sampled_from(LABELS[key]))}
    if draw(st.booleans()):
        key = draw(st.sampled_from(sorted(LABELS)))
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
        requirement: Raw = {"key": key, "operator": op}
        if op in ("In", "NotIn"):
            requirement["values"] = draw(st.lists(st.sampled_from(LABELS[key]), min_size=1, max_size=2))
        elif op in ("Gt", "Lt"):
            requirement["values"] = [draw(st.sampled_from(["4", "8", "16"]))]
        terms = [{"matchExpressions": [requirement]}]
        if draw(st.booleans()):
            terms.append(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [draw(st.sampled_from(names))]}]}
            )
        spec["affinity"] = {
            **(spec.get("affinity") or {}),
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}},
        }
    # Unschedulable-taint tolerations are not drawn: the core refuses every cordoned node.
    spec["tolerations"] = draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2))
    return cluster_nodes, running, incoming


def core_feasible(cluster_nodes: list[Raw], running: list[Raw], incoming: Raw) -> list[str]:
    snapshot = load_snapshot_objects([*cluster_nodes, *running, incoming], NOW)
    view = ClusterView(build_table(snapshot, default_policy().scheduling))
    pod = next(p for p in snapshot.pods if p.name == "incoming")
    passed = checks(pod, view, node_fit=True).passed()
    return sorted(name for name, ok in zip(view.table.names, passed.tolist(), strict=True) if ok)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_cores_node_fit_agrees_with_kube_schedulers_default_filters(
    cluster: tuple[list[Raw], list[Raw], Raw],
) -> None:
    cluster_nodes, running, incoming = cluster
    stock = StockScheduler(cluster_nodes, running)
    assert core_feasible(cluster_nodes, running, incoming) == stock.feasible(incoming), stock.refusals(incoming)


def _node(labels: dict[str, str] | None = None, **spec: Any) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {HOSTNAME: "n0", **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"}},
    }


def _plain_pod(name: str, labels: dict[str, str], node: str = "", **spec: Any) -> Raw:
    body: Raw = {"containers": [{"name": "c"}], **spec}
    if node:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels},
        "spec": body,
        "status": {"phase": "Running" if node else "Pending"},
    }


GUARD_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
        ]
    }
}
GT_8 = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}]
        }
    }
}
NOT_READY = {**_node(), "status": {**_node()["status"], "conditions": [{"type": "Ready", "status": "False"}]}}


@pytest.mark.parametrize(
    ("cluster_nodes", "running", "incoming", "by_kube_scheduler", "by_core"),
    [
        pytest.param(
            [_node(unschedulable=True)],
            [],
            _plain_pod(
                "incoming",
                {},
                tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            ),
            ["n0"],
            [],
            id="a cordoned node, the unschedulable taint tolerated",
        ),
        pytest.param(
            [NOT_READY],
            [],
            _plain_pod("incoming", {}, tolerations=[{"operator": "Exists"}]),
            ["n0"],
            [],
            id="a NotReady node, its not-ready taint tolerated",
        ),
    ],
)
def test_where_the_core_and_kube_scheduler_differ(
    cluster_nodes: list[Raw], running: list[Raw], incoming: Raw, by_kube_scheduler: list[str], by_core: list[str]
) -> None:
    """Pinned so each difference is seen if either side changes."""
    assert StockScheduler(cluster_nodes, running).feasible(incoming) == by_kube_scheduler
    assert core_feasible(cluster_nodes, running, incoming) == by_core


@pytest.mark.parametrize(
    ("cluster_nodes", "running", "incoming", "expected"),
    [
        pytest.param(
            [_node()],
            [_plain_pod("guard", {"app": "db"}, node="n0", affinity=GUARD_AFFINITY)],
            _plain_pod("incoming", {"app": "web"}),
            [],
            id="a running pod's required anti-affinity against the incoming pod",
        ),
        pytest.param(
            [_node({"cores": "1_0"})],
            [],
            _plain_pod("incoming", {}, affinity=GT_8),
            [],
            id="Gt on a label that is no base-10 integer (strconv.ParseInt refuses 1_0, Python's int reads 10)",
        ),
    ],
)
def test_where_the_core_now_agrees(
    cluster_nodes: list[Raw], running: list[Raw], incoming: Raw, expected: list[str]
) -> None:
    """Found by the property test's first runs; the core was changed to follow kube-scheduler."""
    assert StockScheduler(cluster_nodes, running).feasible(incoming) == expected
    assert core_feasible(cluster_nodes, running, incoming) == expected
