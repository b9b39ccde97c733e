"""The contract between the fake cluster's stock scheduler and the real kube-scheduler: for pods under
kube-scheduler's pod-level hard rules (PodTopologySpread DoNotSchedule with matchLabelKeys, minDomains
and its node inclusion policies; InterPodAffinity with namespaceSelector and mismatchLabelKeys;
NodePorts; the volume filters: VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits),
`StockScheduler` with the simulated scheduler's `HostPortUse` accepts exactly the nodes the real
kube-scheduler (../shared/kube, v1.36) accepts; and so does the product's scheduling core
(`feasible_mask`, scheduling-core.md §2).

Which nodes the real one accepts is found a node at a time: every other node of the case is cordoned
(spec.unschedulable; without kube-controller-manager no taint follows, so no spread count changes),
the pod is created, and it is either bound to the open node, or marked Unschedulable, or (an unbound
WaitForFirstConsumer claim, with no provisioner running) its claim is annotated with the node
kube-scheduler selected. The case's nodes carry a label of their own that the pods select, so the
session's other nodes take no part. Each case is observed once; the core's comparison reads it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from controlplane import ControlPlane, Process
from realcluster_support import create, create_node, delete_node, eventually, merge_patch

from descheduler.fakecluster.scheduler import HostPortUse
from descheduler.fakecluster.stock import StockScheduler
from descheduler.fakecluster.stock_volumes import StorageObjects
from descheduler.kube import KubeApiError, KubeClient
from descheduler.policy import default_policy
from descheduler.scheduling import ClusterView, build_table, feasible_mask
from descheduler.snapshot import load_snapshot_objects

Raw = dict[str, Any]
ZONE = "contract.test/zone"
STANDARD_ZONE = "topology.kubernetes.io/zone"
RUN = "contract.test/run"
HOSTNAME = "kubernetes.io/hostname"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DRIVER = "contract.csi.example.com"
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
Ports = tuple[tuple[str, str, int], ...]  # (hostIP, protocol, hostPort)
Names = dict[str, str]  # node suffix -> node name, and "run" -> the run's id


@dataclass(frozen=True)
class Existing:
    """A pod already bound to one of the case's nodes."""

    name: str
    node: str  # suffix
    labels: dict[str, str]
    ports: Ports = ()
    claims: tuple[str, ...] = ()
    elsewhere: bool = False  # in the case's second namespace (labelled contract.test/team=<run>)


@dataclass(frozen=True)
class Case:
    name: str
    existing: list[Existing]
    labels: dict[str, str]
    spec: Raw
    ports: Ports = ()
    claims: tuple[str, ...] = ()  # the incoming pod's PersistentVolumeClaims
    storage: Callable[[Names], list[Raw]] | None = None  # PVs, PVCs, StorageClasses, CSINodes of the run
    taints: dict[str, list[Raw]] = field(default_factory=dict)  # node suffix -> its taints


def _claim_spec(claims: tuple[str, ...]) -> Raw:
    return {"volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]}


def _pv(
    name: str,
    claim: str,
    names: Names,
    affinity: Raw | None = None,
    labels: dict[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    csi: Raw | None = None,
) -> Raw:
    """A PersistentVolume bound by hand to `claim` (as the PV controller would bind it)."""
    spec: Raw = {
        "capacity": {"storage": "1Gi"},
        "accessModes": list(modes),
        "claimRef": {"namespace": names["namespace"], "name": claim},
    }
    if csi is not None:
        spec["csi"] = csi
    else:
        spec["hostPath"] = {"path": f"/tmp/{name}"}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [affinity]}]}}
    meta = {"name": name, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def _pvc(name: str, volume: str = "", cls: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> Raw:
    meta: Raw = {"name": name}
    spec: Raw = {"accessModes": list(modes), "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": cls}
    if volume:
        meta["annotations"] = {BIND_COMPLETED: "yes"}
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def _local_volume(names: Names) -> list[Raw]:
    pv = f"local-{names['run']}"
    on_a = {"key": HOSTNAME, "operator": "In", "values": [names["a"]]}
    return [_pv(pv, "data", names, on_a), _pvc("data", pv)]


def _zonal_volume(names: Names) -> list[Raw]:
    pv = f"zonal-{names['run']}"
    in_z2 = {"key": STANDARD_ZONE, "operator": "In", "values": ["z2"]}
    return [_pv(pv, "data", names, in_z2, labels={STANDARD_ZONE: "z2"}), _pvc("data", pv)]


def _wait_for_first_consumer(names: Names) -> list[Raw]:
    cls = f"wffc-{names['run']}"
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": cls},
        "provisioner": DRIVER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": STANDARD_ZONE, "values": ["z1"]}]}],
    }
    return [storage_class, _pvc("data", cls=cls)]


def _read_write_once_pod(names: Names) -> list[Raw]:
    pv = f"rwop-{names['run']}"
    return [_pv(pv, "data", names, modes=("ReadWriteOncePod",)), _pvc("data", pv, modes=("ReadWriteOncePod",))]


def _csi_limits(names: Names) -> list[Raw]:
    objects: list[Raw] = []
    for claim in ("old", "new"):
        pv = f"csi-{claim}-{names['run']}"
        objects += [_pv(pv, claim, names, csi={"driver": DRIVER, "volumeHandle": pv}), _pvc(claim, pv)]
    for suffix in ZONES:
        driver = {"name": DRIVER, "nodeID": names[suffix], "allocatable": {"count": 1}}
        objects.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": names[suffix]},
                "spec": {"drivers": [driver]},
            }
        )
    return objects


def _affinity(selector: Raw, **extra: Any) -> Raw:
    term = {"labelSelector": selector, "topologyKey": ZONE, **extra}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


DEDICATED = [{"key": "contract.test/dedicated", "value": "other", "effect": "NoSchedule"}]
CASES: list[Case] = [
    Case(
        "zone spread 3/3 after node counts 2/1/0/3: every zone fits",
        [Existing(f"f{i}", n, {"foo": ""}) for i, n in enumerate(["a", "a", "b", "y", "y", "y"])],
        {"foo": ""},
        {"topologySpreadConstraints": [FOO_SPREAD]},
    ),
    Case(
        "zone spread 3/1: only zone 2 fits",
        [Existing(f"f{i}", n, {"foo": ""}) for i, n in enumerate(["a", "a", "b", "y"])],
        {"foo": ""},
        {"topologySpreadConstraints": [FOO_SPREAD]},
    ),
    Case(
        "zone spread with minDomains 3 over 2 zones: the global minimum is 0",
        [Existing(f"f{i}", n, {"foo": ""}) for i, n in enumerate(["a", "x"])],
        {"foo": ""},
        {"topologySpreadConstraints": [{**FOO_SPREAD, "maxSkew": 1, "minDomains": 3}]},
    ),
    Case(
        "zone spread with matchLabelKeys: pods of another revision do not count",
        [Existing(f"f{i}", n, {"foo": "", "rev": "1"}) for i, n in enumerate(["a", "a", "b"])]
        + [Existing("g", "x", {"foo": "", "rev": "2"})],
        {"foo": "", "rev": "2"},
        {"topologySpreadConstraints": [{**FOO_SPREAD, "matchLabelKeys": ["rev"]}]},
    ),
    Case(
        "zone spread with nodeAffinityPolicy Ignore: the zone the pod may not use holds the minimum",
        [Existing("f0", "a", {"foo": ""})],
        {"foo": ""},
        {"nodeSelector": {ZONE: "z1"}, "topologySpreadConstraints": [{**FOO_SPREAD, "nodeAffinityPolicy": "Ignore"}]},
    ),
    Case(
        "node spread with nodeTaintsPolicy Honor: the tainted empty node does not count",
        [Existing(f"f{i}", n, {"foo": ""}) for i, n in enumerate(["a", "b", "x"])],
        {"foo": ""},
        {"topologySpreadConstraints": [{**FOO_SPREAD, "topologyKey": HOSTNAME, "nodeTaintsPolicy": "Honor"}]},
        taints={"y": DEDICATED},
    ),
    Case(
        "required affinity to a pod in zone 1",
        [Existing("s1", "a", {"security": "S1"})],
        {"app": "client"},
        {"affinity": S1_AFFINITY},
    ),
    Case("required affinity, the first pod of its group", [], {"security": "S1"}, {"affinity": S1_AFFINITY}),
    Case(
        "required affinity with mismatchLabelKeys: a cache pod of another tenant",
        [
            Existing("cache-a", "a", {"app": "cache", "tenant": "a"}),
            Existing("cache-b", "x", {"app": "cache", "tenant": "b"}),
        ],
        {"tenant": "a"},
        {"affinity": _affinity({"matchLabels": {"app": "cache"}}, mismatchLabelKeys=["tenant"])},
    ),
    Case(
        "required affinity with a namespaceSelector: the cache pod of another namespace",
        [Existing("cache", "x", {"app": "cache"}, elsewhere=True), Existing("cache-here", "a", {"app": "other"})],
        {"app": "client"},
        {
            "affinity": _affinity(
                {"matchLabels": {"app": "cache"}}, namespaceSelector={"matchLabels": {"contract.test/team": "{run}"}}
            )
        },
    ),
    Case(
        "host port 9100 taken on a",
        [Existing("exp", "a", {"app": "exp"}, (("", "TCP", 9100),))],
        {"app": "exp2"},
        {},
        (("", "TCP", 9100),),
    ),
    Case(
        "host port on another address and another protocol",
        [
            Existing("exp", "a", {"app": "exp"}, (("127.0.0.1", "TCP", 8001),)),
            Existing("dns", "b", {"app": "dns"}, (("", "UDP", 8001),)),
        ],
        {"app": "exp2"},
        {},
        (("127.0.0.2", "TCP", 8001),),
    ),
    Case(
        "a local PersistentVolume on a",
        [],
        {"app": "db"},
        {},
        claims=("data",),
        storage=_local_volume,
    ),
    Case(
        "a zonal PersistentVolume in z2",
        [],
        {"app": "db"},
        {},
        claims=("data",),
        storage=_zonal_volume,
    ),
    Case(
        "an unbound WaitForFirstConsumer claim whose class allows z1",
        [],
        {"app": "db"},
        {},
        claims=("data",),
        storage=_wait_for_first_consumer,
    ),
    Case(
        "a ReadWriteOncePod claim in use by a pod on a",
        [Existing("holder", "a", {"app": "db"}, claims=("data",))],
        {"app": "db"},
        {},
        claims=("data",),
        storage=_read_write_once_pod,
    ),
    Case(
        "CSINode allows one volume of the driver per node, a holds one",
        [Existing("holder", "a", {"app": "db"}, claims=("old",))],
        {"app": "db"},
        {},
        claims=("new",),
        storage=_csi_limits,
    ),
]


def _decided(kube: KubeClient, path: str, claims: list[str]) -> str | None:
    """ "" while kube-scheduler has not decided, the node it bound (or selected for the pod's unbound
    WaitForFirstConsumer claims: no provisioner runs, so the binding waits), or None when Unschedulable."""
    pod = kube.get_json(path)
    if pod["spec"].get("nodeName"):
        return str(pod["spec"]["nodeName"])
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return None
    for claim in claims:
        selected = (kube.get_json(claim)["metadata"].get("annotations") or {}).get(SELECTED_NODE)
        if selected:
            return str(selected)
    return ""


def _delete_pod(kube: KubeClient, namespace: str, name: str) -> None:
    kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query={"gracePeriodSeconds": 0})

    def gone() -> bool:
        items = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
        return all(p["metadata"]["name"] != name for p in items)

    eventually(gone, what=f"pod {name} deleted")


def _real_accepts(
    kube: KubeClient, namespace: str, nodes: list[str], incoming: Raw, claims: tuple[str, ...]
) -> set[str]:
    accepted: set[str] = set()
    claim_paths = [f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{c}" for c in claims]
    for i, target in enumerate(nodes):
        for node in nodes:
            merge_patch(kube, f"/api/v1/nodes/{node}", {"spec": {"unschedulable": node != target}})
        time.sleep(SETTLE)
        probe = copy.deepcopy(incoming)
        probe["metadata"]["name"] = name = f"probe-{i}"
        create(kube, f"/api/v1/namespaces/{namespace}/pods", probe)
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        found: list[str | None] = []

        def decided(path: str = path, found: list[str | None] = found) -> bool:
            found.append(_decided(kube, path, claim_paths))
            return found[-1] != ""

        eventually(decided, timeout=30, what=f"kube-scheduler decides {name}")
        if found[-1] == target:
            accepted.add(target)
        _delete_pod(kube, namespace, name)
        for claim in claim_paths:  # a selected node left on the claim would end the next probe's binding
            merge_patch(kube, claim, {"metadata": {"annotations": {SELECTED_NODE: None}}})
        time.sleep(SETTLE)
    return accepted


def _core_accepts(objects: list[Raw], incoming: Raw) -> set[str]:
    """The nodes the product's scheduling core accepts (no NodeMetrics: its load filter passes all)."""
    snapshot = load_snapshot_objects([*objects, {"apiVersion": "v1", "kind": "Pod", **incoming}], datetime.now(UTC))
    view = ClusterView(build_table(snapshot, default_policy().scheduling))
    pod = next(p for p in snapshot.pods if p.name == incoming["metadata"]["name"])
    mask = feasible_mask(pod, view)
    return {name for name, ok in zip(view.table.names, mask.tolist(), strict=True) if ok}


@dataclass(frozen=True)
class Observed:
    objects: list[Raw]  # the case's nodes, pods, namespaces and storage objects, as the API server holds them
    incoming: Raw  # the pod as the fake and the core see it (namespaced)
    fake: set[str]
    refused: dict[str, str]
    real: set[str]
    names: Names


OBSERVED: dict[str, Observed] = {}
_PATHS = {
    "PersistentVolume": "/api/v1/persistentvolumes",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
}


def _fill(obj: Any, run: str) -> Any:
    """The case's spec with "{run}" replaced by the run's id (labels that must be unique to the run)."""
    if isinstance(obj, str):
        return obj.replace("{run}", run)
    if isinstance(obj, dict):
        return {k: _fill(v, run) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fill(v, run) for v in obj]
    return obj


def _remove(kube: KubeClient, path: str) -> None:
    """Delete an object, dropping the protection finalizers no controller-manager would remove here."""
    try:
        merge_patch(kube, path, {"metadata": {"finalizers": None}})
        kube.request("DELETE", path)
    except KubeApiError as error:
        if error.status != 404:
            raise


def _observe(kube: KubeClient, namespace: str, case: Case) -> Observed:
    run = namespace[-5:]
    names: Names = {suffix: f"c{run}-{suffix}" for suffix in ZONES} | {"run": run, "namespace": namespace}
    other = f"{namespace[:50]}-other"
    storage = case.storage(names) if case.storage is not None else []
    cluster_paths = [f"{_PATHS[o['kind']]}/{o['metadata']['name']}" for o in storage if o["kind"] in _PATHS]
    claims = [o for o in storage if o["kind"] == "PersistentVolumeClaim"]
    try:
        for suffix, zone in ZONES.items():
            create_node(kube, names[suffix])
            labels = {ZONE: zone, STANDARD_ZONE: zone, RUN: run}
            merge_patch(
                kube,
                f"/api/v1/nodes/{names[suffix]}",
                {"metadata": {"labels": labels}, "spec": {"taints": case.taints.get(suffix, [])}},
            )
        if any(e.elsewhere for e in case.existing):
            body = {"metadata": {"name": other, "labels": {"contract.test/team": run}}}
            create(kube, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", **body})
            create(kube, f"/api/v1/namespaces/{other}/serviceaccounts", {"metadata": {"name": "default"}})
        for obj in storage:
            path = _PATHS.get(obj["kind"], f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
            create(kube, path, obj)
        for e in case.existing:
            where = other if e.elsewhere else namespace
            body = _ports(_pod(e.name, e.labels, names[e.node], **_claim_spec(e.claims)), *e.ports)
            create(kube, f"/api/v1/namespaces/{where}/pods", body)
        spec = _fill(copy.deepcopy(case.spec), run)
        selector = {RUN: run, **spec.pop("nodeSelector", {})}
        incoming = _ports(
            _pod("incoming", case.labels, nodeSelector=selector, **spec, **_claim_spec(case.claims)), *case.ports
        )

        nodes = [kube.get_json(f"/api/v1/nodes/{names[s]}") for s in ZONES]
        pods = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
        spaces = [kube.get_json(f"/api/v1/namespaces/{namespace}")]
        if any(e.elsewhere for e in case.existing):
            pods += kube.get_json(f"/api/v1/namespaces/{other}/pods")["items"]
            spaces.append(kube.get_json(f"/api/v1/namespaces/{other}"))
        held = [kube.get_json(p) for p in cluster_paths]
        held += [
            kube.get_json(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{c['metadata']['name']}")
            for c in claims
        ]
        fake_incoming = copy.deepcopy(incoming)
        fake_incoming["metadata"]["namespace"] = namespace
        stock = StockScheduler(
            nodes,
            pods,
            (),
            spaces,
            storage=StorageObjects.of(
                claims=[o for o in held if o["kind"] == "PersistentVolumeClaim"],
                volumes=[o for o in held if o["kind"] == "PersistentVolume"],
                classes=[o for o in held if o["kind"] == "StorageClass"],
                csi_nodes=[o for o in held if o["kind"] == "CSINode"],
            ),
        )
        refused = stock.refusals(fake_incoming)
        refused.update(HostPortUse(pods).refusals(fake_incoming))
        fake = {n["metadata"]["name"] for n in nodes} - set(refused)
        objects = [{"apiVersion": "v1", "kind": "Node", **n} for n in nodes]
        objects += [{"apiVersion": "v1", "kind": "Pod", **p} for p in pods]
        objects += [{"apiVersion": "v1", "kind": "Namespace", **n} for n in spaces]
        objects += held

        real = _real_accepts(kube, namespace, [names[s] for s in ZONES], incoming, case.claims)
        return Observed(objects, fake_incoming, fake, refused, real, names)
    finally:
        for suffix in ZONES:
            delete_node(kube, names[suffix])
        for claim in claims:
            _remove(kube, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim['metadata']['name']}")
        for path in cluster_paths:
            _remove(kube, path)
        if any(e.elsewhere for e in case.existing):
            _remove(kube, f"/api/v1/namespaces/{other}")


def _observed(kube: KubeClient, namespace: str, case: Case) -> Observed:
    if case.name not in OBSERVED:
        OBSERVED[case.name] = _observe(kube, namespace, case)
    return OBSERVED[case.name]


def _suffixes(found: set[str], names: Names) -> list[str]:
    by_name = {name: suffix for suffix, name in names.items() if suffix in ZONES}
    return sorted(by_name[n] for n in found)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_stock_scheduler_accepts_the_nodes_kube_scheduler_accepts(
    scheduler: None, kube: KubeClient, namespace: str, case: Case
) -> None:
    seen = _observed(kube, namespace, case)
    assert _suffixes(seen.fake, seen.names) == _suffixes(seen.real, seen.names), f"fake refused {seen.refused}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_scheduling_core_accepts_the_nodes_kube_scheduler_accepts(
    scheduler: None, kube: KubeClient, namespace: str, case: Case
) -> None:
    seen = _observed(kube, namespace, case)
    core = _core_accepts(seen.objects, seen.incoming)
    assert _suffixes(core, seen.names) == _suffixes(seen.real, seen.names)
