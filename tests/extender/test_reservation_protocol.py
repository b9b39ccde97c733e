"""The scheduler side of the Reservation contract, against the fake API server: the extender
acknowledges a Pending Reservation only once its answers hold the room, the bind verb consumes
allocate-once or fails the owner's oldest waiting Reservation, and the scheduler Lease is kept."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from descheduler.extender import CacheSource, Extender, ExtenderServer, RefreshTiming
from descheduler.extender.command import EXTENDER_KINDS
from descheduler.extender.lease import SchedulerLease
from descheduler.extender.reservations import BindError, ReservationRecord, ReservationWriter
from descheduler.extender.scheduler_names import SchedulerNames
from descheduler.fakecluster.apiserver import FakeApiServer, Store
from descheduler.kube import ClusterCache, KubeClient, RetryPolicy
from descheduler.metrics import REGISTRY
from descheduler.migration.objects import SCHEDULER_LEASE
from descheduler.model import OwnerRef, Pod
from descheduler.policy import default_policy
from tests.waiting import wait_for

from .conftest import Client, extender_args

NS = "shop"
RESERVATIONS = "reservations.descheduler.dev"
FAST_RETRY = RetryPolicy(max_retries=2, backoff_base=0.01, backoff_cap=0.05)
NEVER = RefreshTiming(interval=3600.0, max_age=3600.0)  # no rebuild after the first one


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, app: str = "web", cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "labels": {"app": app},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": f"uid-rs-{app}", "controller": True}
            ],
        },
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
        "status": {"phase": "Pending"},
    }


def _reservation(
    name: str, node: str, cpu: str = "3", phase: str = "Available", created: str = "", ttl: str = "5m"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "resources": {"cpu": cpu, "memory": "1Gi", "pods": "1"},
            "ttl": ttl,
            "owners": [
                {"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "uid-rs-web"}}
            ],
        },
        "status": {"phase": phase},
    }


def _wait(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    wait_for(condition, timeout, what, interval=0.002)


@dataclass
class Side:
    server: FakeApiServer
    client: KubeClient
    cache: ClusterCache
    extender: Extender
    http: ExtenderServer

    @property
    def store(self) -> Store:
        return self.server.store

    def status(self, name: str) -> dict[str, Any]:
        return dict(self.store.get(RESERVATIONS, name).get("status") or {})

    def bind(self, pod: str, node: str) -> dict[str, Any]:
        body = json.dumps({"PodName": pod, "PodNamespace": NS, "PodUID": f"uid-{pod}", "Node": node}).encode()
        status, answer = Client(self.http.port).post("bind", body)
        assert status == 200, answer
        return dict(answer)

    def node_of(self, pod: str) -> str:
        return str(self.store.get("pods", pod, NS)["spec"].get("nodeName", ""))


@pytest.fixture
def side() -> Iterator[Side]:
    with FakeApiServer(seed_namespaces=("default", NS), bookmark_interval=0.1) as server:
        server.store.load([_node("cool"), _node("other")])
        client = KubeClient.from_configuration(server.configuration(), qps=0, burst=0, timeout=10, retry=FAST_RETRY)
        cache = ClusterCache(client, kinds=EXTENDER_KINDS, backoff=(0.02, 0.2), read_timeout=5.0)
        source = CacheSource(cache)
        extender = Extender(
            source, default_policy().scheduling, timing=NEVER, writer=ReservationWriter(client, "ext-1")
        )
        cache.start()
        assert cache.wait_synced(10), cache.not_ready()
        extender.start(poll=0.01)
        _wait(lambda: extender.state is not None, "the first state")
        http = ExtenderServer(extender, "127.0.0.1", 0).start()
        try:
            yield Side(server, client, cache, extender, http)
        finally:
            http.stop()
            extender.stop()
            cache.stop()
            client.close()


def _filter(side: Side, pod: dict[str, Any]) -> dict[str, Any]:
    status, answer = Client(side.http.port).post("filter", extender_args(pod, ["cool", "other"]))
    assert status == 200, answer
    return dict(answer)


def test_a_pending_reservation_is_acknowledged_once_the_answers_hold_its_room(side: Side) -> None:
    first = side.extender.state
    stranger, owner = _pod("stranger", app="shop", cpu="2"), _pod("web-new")
    assert _filter(side, stranger)["NodeNames"] == ["cool", "other"]
    side.store.create(_reservation("move-web-0", "cool", cpu="3", phase="Pending"))
    _wait(lambda: side.status("move-web-0").get("phase") == "Available", "the acknowledgement")
    # At the moment the acknowledgement is visible the answers already hold the room, with no rebuild.
    answer = _filter(side, stranger)
    assert answer["NodeNames"] == ["other"], answer
    assert "room held by reservations" in answer["FailedNodes"]["cool"]
    assert side.extender.state is first
    assert _filter(side, owner)["NodeNames"] == ["cool"]
    assert side.status("move-web-0") == {"phase": "Available", "acknowledgedBy": "ext-1"}


def test_a_reservation_past_its_ttl_is_marked_expired_and_its_room_released(side: Side) -> None:
    """The scheduler side releases unconsumed room on time, even with no controller leading to sweep."""
    stranger = _pod("stranger", app="shop", cpu="2")
    side.store.load([_reservation("stale", "cool", cpu="3", created="2026-01-15T11:00:00Z")])  # ttl 5m: long past
    _wait(lambda: side.status("stale").get("phase") == "Expired", "the expiry")
    assert side.status("stale") == {"phase": "Expired", "reason": "TTLExceeded"}
    assert _filter(side, stranger)["NodeNames"] == ["cool", "other"]
    side.store.load([_reservation("fresh", "cool", cpu="3", phase="Pending")])  # created now: acknowledged
    _wait(lambda: side.status("fresh").get("phase") == "Available", "the acknowledgement")


def test_a_reservation_on_a_node_the_state_does_not_know_is_not_acknowledged(side: Side) -> None:
    side.store.create(_reservation("move-web-0", "new-node", phase="Pending"))
    time.sleep(0.3)
    assert side.status("move-web-0") == {"phase": "Pending"}


def test_bind_consumes_the_reservation_on_the_node_and_binds_the_pod(side: Side) -> None:
    side.store.load([_reservation("move-web-0", "cool"), _pod("web-new")])
    _wait(lambda: side.cache.get("pods", f"{NS}/web-new") is not None, "the pod in the cache")
    assert side.bind("web-new", "cool") == {"Error": ""}
    assert side.node_of("web-new") == "cool"
    status = side.status("move-web-0")
    assert (status["phase"], status["consumedBy"], status["consumedByUID"]) == (
        "Consumed",
        f"{NS}/web-new",
        "uid-web-new",
    )
    # The room is the pod's now: the state stops holding it at once.
    state = side.extender.state
    assert state is not None and not state.table.reserved[state.table.index["cool"]].any()


def test_two_pods_racing_for_one_reservation_cannot_both_consume_it(side: Side) -> None:
    side.store.load([_reservation("r-1", "cool", cpu="1"), _pod("a"), _pod("b")])
    _wait(lambda: side.cache.get("pods", f"{NS}/b") is not None, "the pods in the cache")
    writer = ReservationWriter(side.client, "ext-1")
    pod_a, pod_b = side.cache.get("pods", f"{NS}/a"), side.cache.get("pods", f"{NS}/b")
    stale = writer._list()  # what a chooses from: read before b took the room
    writer.bind(pod_b, "cool")
    calls: list[int] = []
    real_list = writer._list

    def racing_list() -> Any:
        calls.append(1)
        return stale if len(calls) == 1 else real_list()

    writer._list = racing_list  # type: ignore[method-assign]
    writer.bind(pod_a, "cool")
    assert len(calls) == 2, "a's stale write was not refused (409) and read again"
    status = side.status("r-1")
    assert (status["phase"], status["consumedBy"]) == ("Consumed", f"{NS}/b")
    assert side.node_of("a") == side.node_of("b") == "cool"


def test_of_two_racing_pods_the_loser_takes_the_next_reservation(side: Side) -> None:
    side.store.load([_reservation("r-1", "cool", cpu="1"), _reservation("r-2", "cool", cpu="1"), _pod("a"), _pod("b")])
    _wait(lambda: side.cache.get("pods", f"{NS}/b") is not None, "the pods in the cache")
    answers: dict[str, dict[str, Any]] = {}
    threads = [threading.Thread(target=lambda p=p: answers.setdefault(p, side.bind(p, "cool"))) for p in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert answers == {"a": {"Error": ""}, "b": {"Error": ""}}
    takers = sorted(side.status(r)["consumedBy"] for r in ("r-1", "r-2"))
    assert takers == [f"{NS}/a", f"{NS}/b"]


def test_binding_an_owner_pod_elsewhere_is_refused_once_then_fails_the_oldest_waiting_reservation(side: Side) -> None:
    side.store.load(
        [
            # Created long ago (fixed times), with TTLs long enough that none has expired.
            _reservation("r-a", "cool", cpu="1", created="2026-01-15T12:00:05Z", ttl="100000h"),
            _reservation("r-b", "cool", cpu="1", created="2026-01-15T12:00:00Z", ttl="100000h"),
            _reservation(
                "r-pending", "new-node", cpu="1", phase="Pending", created="2026-01-15T11:00:00Z", ttl="100000h"
            ),
            _pod("web-new"),
        ]
    )
    _wait(lambda: side.cache.get("pods", f"{NS}/web-new") is not None, "the pod in the cache")
    # The first time, the binding is refused (the pod is scheduled again, towards r-b); nothing is written.
    refused = side.bind("web-new", "other")["Error"]
    assert refused.startswith(f"not binding {NS}/web-new to other: Reservation r-b holds room for it on node cool")
    assert side.node_of("web-new") == "" and side.status("r-b") == {"phase": "Available"}
    # The second time its room's node did not pass for it: bound where it was placed, the room failed.
    assert side.bind("web-new", "other") == {"Error": ""}
    assert side.node_of("web-new") == "other"
    assert side.status("r-b") == {
        "phase": "Failed",
        "reason": "ReplacementElsewhere",
        "consumedBy": f"{NS}/web-new",
        "consumedByUID": "uid-web-new",
        "message": f"replacement {NS}/web-new was bound to node other",
    }
    assert side.status("r-a")["phase"] == "Available"
    assert side.status("r-pending") == {"phase": "Pending"}  # its pod was not evicted: not this replacement


def _filter_on(side: Side, pod: dict[str, Any], nodes: list[str]) -> dict[str, Any]:
    status, answer = Client(side.http.port).post("filter", extender_args(pod, nodes))
    assert status == 200, answer
    return dict(answer)


REFUSED = "kube-scheduler's filters refused reserved node cool for the replacement shop/web-new"


def _held(side: Side) -> None:
    """An Available Reservation move-web-0 on cool, once the extender's answers steer its owner there."""
    side.store.load([_reservation("move-web-0", "cool")])
    _wait(lambda: _filter_on(side, _pod("web-new"), ["cool", "other"])["NodeNames"] == ["cool"], "the room held")


def test_a_replacement_whose_reserved_node_kube_schedulers_filters_left_out_fails_its_reservation_at_once(
    side: Side,
) -> None:
    _held(side)
    refusals = REGISTRY.get_sample_value(
        "descheduler_extender_reservations_failed_total", {"reason": "ReservedNodeRefused"}
    )
    # Its node among the candidates: the replacement is steered there (`_held`), nothing is written.
    assert side.status("move-web-0")["phase"] == "Available"
    # A pod that owns no room there, with the node left out: nothing either; the room keeps it off cool.
    stranger = _pod("stranger", app="shop", cpu="2")
    _filter_on(side, stranger, ["other"])
    assert side.status("move-web-0")["phase"] == "Available"
    assert _filter_on(side, stranger, ["cool", "other"])["NodeNames"] == ["other"]
    # kube-scheduler's own filters (say a volume's node affinity) passed only `other`: the room can never
    # be used; it is failed before the answer, so the job ends at once and the bind finds no room elsewhere.
    answer = _filter_on(side, _pod("web-new"), ["other"])
    assert answer["NodeNames"] == ["other"]
    status = side.status("move-web-0")
    assert status == {"phase": "Failed", "reason": "ReservedNodeRefused", "message": REFUSED}
    assert (
        REGISTRY.get_sample_value("descheduler_extender_reservations_failed_total", {"reason": "ReservedNodeRefused"})
        == (refusals or 0.0) + 1
    )
    # The answers stop holding the room at once, before the watch shows the change.
    assert _filter_on(side, stranger, ["cool", "other"])["NodeNames"] == ["cool", "other"]
    # Asked again: written once; the bind that follows is not sent back to a room that is gone.
    _filter_on(side, _pod("web-new"), ["other"])
    assert side.status("move-web-0")["message"] == REFUSED
    side.store.load([_pod("web-new")])
    _wait(lambda: side.cache.get("pods", f"{NS}/web-new") is not None, "the pod in the cache")
    assert side.bind("web-new", "other") == {"Error": ""}


def test_a_reserved_node_missing_from_a_list_kube_scheduler_may_have_cut_short_is_not_a_refusal(side: Side) -> None:
    """kube-scheduler stops filtering once it has found 100 feasible nodes (numFeasibleNodesToFind): with
    that many candidates, a node left out may just not have been tried. A nominated pod is tried on its
    nominated node alone."""
    _held(side)
    _filter_on(side, _pod("web-new"), ["other", *(f"n{i}" for i in range(99))])
    nominated = _pod("web-new")
    nominated["status"]["nominatedNodeName"] = "other"
    _filter_on(side, nominated, ["other"])
    assert side.status("move-web-0")["phase"] == "Available"


def test_two_replicas_refusing_one_reservation_write_it_once(side: Side) -> None:
    side.store.load([_reservation("move-web-0", "cool")])
    _wait(lambda: side.status("move-web-0").get("phase") == "Available", "the Reservation")
    room = ReservationRecord.of(side.store.get(RESERVATIONS, "move-web-0")).reservation
    owner = OwnerRef(kind="ReplicaSet", name="web", uid="uid-rs-web", controller=True)
    replacement = Pod(namespace=NS, name="web-new", uid="uid-web-new", owner=owner)
    writers = [ReservationWriter(side.client, f"ext-{i}") for i in (1, 2)]
    written: list[str] = []
    for writer in writers:
        real = writer._write_status

        def counted(raw: dict[str, Any], status: dict[str, Any], real: Any = real) -> dict[str, Any]:
            out: dict[str, Any] = real(raw, status)
            written.append(status["phase"])
            return out

        writer._write_status = counted  # type: ignore[method-assign]
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda w=w: results.append(w.refuse("move-web-0", room, replacement))) for w in writers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == [True, True]  # each sees it refused, by itself or by the other
    assert written == ["Failed"]  # one write: the other found it refused, or its stale write was refused (409)
    assert side.status("move-web-0")["message"] == REFUSED


def test_a_pod_of_no_reservation_is_just_bound(side: Side) -> None:
    side.store.load([_reservation("r-1", "cool"), _pod("x", app="shop")])
    _wait(lambda: side.cache.get("pods", f"{NS}/x") is not None, "the pod in the cache")
    assert side.bind("x", "other") == {"Error": ""}
    assert side.node_of("x") == "other" and side.status("r-1") == {"phase": "Available"}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"[]", "not an ExtenderBindingArgs"),
        (b"{", "not valid JSON"),
        (b'{"PodName": "p", "PodNamespace": "shop"}', "Node is missing"),
    ],
)
def test_a_bad_bind_request_is_refused_with_the_reason(side: Side, body: bytes, error: str) -> None:
    status, answer = Client(side.http.port).post("bind", body)
    assert status == 400 and error in answer["Error"]


def test_binding_a_pod_that_is_gone_returns_the_error_and_gives_the_room_back(side: Side) -> None:
    side.store.load([_reservation("r-1", "cool", cpu="1")])
    owner = OwnerRef(kind="ReplicaSet", name="web", uid="uid-rs-web", controller=True)
    ghost = Pod(namespace=NS, name="ghost", uid="uid-ghost", owner=owner)
    writer = ReservationWriter(side.client, "ext-1")
    with pytest.raises(BindError, match="ghost"):
        writer.bind(ghost, "cool")
    assert side.status("r-1")["phase"] == "Available" and "consumedBy" not in side.status("r-1")
    answer = side.bind("ghost", "cool")
    assert answer["Error"] == f"refused to bind pod {NS}/ghost to node cool: pod {NS}/ghost does not exist"


# ---------------------------------------------------------------------- the checks every bind passes


def _refused(reason: str) -> float:
    return REGISTRY.get_sample_value("descheduler_extender_binds_refused_total", {"reason": reason}) or 0.0


@pytest.mark.parametrize(
    ("node_change", "pod_spec", "reason", "words"),
    [
        (
            {"spec": {"taints": [{"key": "dedicated", "value": "secure", "effect": "NoSchedule"}]}},
            {},
            "TaintNotTolerated",
            "taint dedicated=secure:NoSchedule not tolerated",
        ),
        (
            {"spec": {"taints": [{"key": "drain", "effect": "NoExecute"}]}},
            {},
            "TaintNotTolerated",
            "taint drain:NoExecute not tolerated",
        ),
        ({"spec": {"unschedulable": True}}, {}, "BindNodeUnschedulable", "node cool is cordoned"),
        ({}, {"nodeSelector": {"disk": "ssd"}}, "NodeAffinity", "nodeSelector disk=ssd does not match"),
        (
            {},
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["other"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "NodeAffinity",
            "required node affinity does not match",
        ),
    ],
    ids=["taint", "noexecute-taint", "cordoned", "node-selector", "node-affinity"],
)
def test_a_bind_onto_a_node_the_pod_must_not_run_on_is_refused_and_the_pod_stays_unbound(
    side: Side, node_change: dict[str, Any], pod_spec: dict[str, Any], reason: str, words: str
) -> None:
    node = _node("cool")
    for part, fields in node_change.items():
        node[part] = {**node.get(part, {}), **fields}
    pod = _pod("victim")
    pod["spec"].update(pod_spec)
    side.store.update(node)
    side.store.load([pod])
    before = _refused(reason)
    answer = side.bind("victim", "cool")
    assert answer["Error"].startswith(f"refused to bind pod {NS}/victim to node cool: ") and words in answer["Error"]
    assert side.node_of("victim") == "" and _refused(reason) == before + 1


def test_a_pod_that_tolerates_and_matches_the_node_is_bound(side: Side) -> None:
    node = _node("cool")
    node["metadata"]["labels"]["disk"] = "ssd"
    node["spec"] = {"unschedulable": True, "taints": [{"key": "dedicated", "value": "secure", "effect": "NoSchedule"}]}
    pod = _pod("tolerant")
    pod["spec"]["nodeSelector"] = {"disk": "ssd"}
    pod["spec"]["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "secure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    ]
    side.store.update(node)
    side.store.load([pod])
    assert side.bind("tolerant", "cool") == {"Error": ""}
    assert side.node_of("tolerant") == "cool"


def test_a_bind_of_a_bound_pod_a_replaced_pod_or_onto_a_missing_node_is_refused(side: Side) -> None:
    bound = _pod("bound")
    bound["spec"]["nodeName"] = "other"
    side.store.load([bound, _pod("here")])
    assert side.bind("bound", "cool")["Error"].endswith(f"pod {NS}/bound is already bound to node other")
    assert side.node_of("bound") == "other"
    assert "does not exist" in side.bind("here", "ghost-node")["Error"]
    body = json.dumps({"PodName": "here", "PodNamespace": NS, "PodUID": "uid-of-an-earlier-pod", "Node": "cool"})
    status, answer = Client(side.http.port).post("bind", body.encode())
    assert status == 200 and "has UID uid-here, not the uid-of-an-earlier-pod" in answer["Error"]
    assert side.node_of("here") == ""


def test_a_pod_of_a_scheduler_name_the_extender_does_not_serve_is_not_bound(side: Side) -> None:
    side.extender.scheduler_names = SchedulerNames(["load-aware-scheduler"])
    stranger, served = _pod("stranger"), _pod("served")
    served["spec"]["schedulerName"] = "load-aware-scheduler"
    side.store.load([stranger, served])
    answer = side.bind("stranger", "cool")["Error"]
    assert "has schedulerName default-scheduler, which this extender does not serve" in answer
    assert side.node_of("stranger") == ""
    assert side.bind("served", "cool") == {"Error": ""} and side.node_of("served") == "cool"


def test_a_bind_reads_the_pod_from_the_api_not_from_what_a_filter_request_claimed(side: Side) -> None:
    """A caller cannot filter a forged pod (tolerating every taint) and then bind the real one by its name."""
    node = _node("cool")
    node["spec"] = {"taints": [{"key": "dedicated", "value": "secure", "effect": "NoSchedule"}]}
    side.store.update(node)
    side.store.load([_pod("victim")])
    forged = _pod("victim")
    forged["spec"]["tolerations"] = [{"operator": "Exists"}]
    _filter(side, forged)
    assert "not tolerated" in side.bind("victim", "cool")["Error"]
    assert side.node_of("victim") == ""


# ---------------------------------------------------------------------- the Lease


def _lease(store: Store) -> dict[str, Any] | None:
    found = [x for x in store.list("leases.coordination.k8s.io", NS) if x["metadata"]["name"] == SCHEDULER_LEASE]
    return found[0] if found else None


def test_the_lease_is_created_renewed_and_no_longer_renewed_once_stopped(side: Side) -> None:
    lease = SchedulerLease(side.client, NS, "ext-1", period=0.05).start()
    try:
        _wait(lambda: _lease(side.store) is not None, "the Lease to be created")
        first = _lease(side.store)
        assert first is not None
        assert first["spec"]["holderIdentity"] == "ext-1" and first["spec"]["leaseDurationSeconds"] == 15
        _wait(lambda: (_lease(side.store) or {})["spec"]["renewTime"] != first["spec"]["renewTime"], "a renewal")
    finally:
        lease.stop()
    stopped = (_lease(side.store) or {})["metadata"]["resourceVersion"]
    time.sleep(0.3)
    assert (_lease(side.store) or {})["metadata"]["resourceVersion"] == stopped


def test_a_replica_that_is_not_ready_does_not_renew(side: Side) -> None:
    lease = SchedulerLease(side.client, NS, "ext-1", period=0.02, ready=lambda: False).start()
    time.sleep(0.2)
    lease.stop()
    assert _lease(side.store) is None


def test_replicas_share_the_lease_as_a_heartbeat(side: Side) -> None:
    a = SchedulerLease(side.client, NS, "ext-a")
    b = SchedulerLease(side.client, NS, "ext-b")
    assert a.renew() and b.renew() and a.renew()
    lease = _lease(side.store)
    assert lease is not None and lease["spec"]["holderIdentity"] == "ext-a"


def test_a_room_opens_to_the_workload_as_soon_as_its_pod_starts_terminating(side: Side) -> None:
    """The replacement arrives milliseconds after the eviction: the room must be claimable before
    the next rebuild shows the moved pod terminating."""
    first = side.extender.state
    moved = _pod("web-0")
    moved["spec"]["nodeName"] = "other"
    moved["status"] = {"phase": "Running"}
    room = _reservation("move-web-0", "cool", cpu="3")
    room["spec"]["replaces"] = {"namespace": NS, "name": "web-0", "uid": "uid-web-0"}
    side.store.load([moved, room])
    _wait(lambda: side.cache.get("pods", f"{NS}/web-0") is not None, "the pod in the cache")
    side.extender.refresh(force=True)
    rebuilt = side.extender.state
    owner = _pod("web-new", cpu="2")
    # web-0 still runs: the room is not web-new's, and 2 cpu do not fit beside 3 held of 4.
    assert _filter(side, owner)["NodeNames"] == ["other"]
    side.store.delete("pods", "web-0", NS)  # graceful: terminating from now on
    _wait(lambda: "uid-web-0" in side.extender.state.table.leaving, "the pod seen leaving")  # type: ignore[union-attr]
    assert _filter(side, owner)["NodeNames"] == ["cool"]  # steered onto its room
    assert side.extender.state is rebuilt and rebuilt is not first


def test_a_replacement_placed_before_its_room_opened_is_sent_back_to_it(side: Side) -> None:
    """As on the real control plane: the replacement is filtered before the extender's watch shows
    the moved pod leaving, so nothing steers it and kube-scheduler places it elsewhere. The bind is
    refused once; scheduled again, it is steered onto its room and takes it."""
    moved = _pod("web-0")
    moved["spec"]["nodeName"] = "other"
    moved["status"] = {"phase": "Running"}
    room = _reservation("move-web-0", "cool", cpu="1")
    room["spec"]["replaces"] = {"namespace": NS, "name": "web-0", "uid": "uid-web-0"}
    side.store.load([moved, room, _pod("web-new")])
    _wait(lambda: side.cache.get("pods", f"{NS}/web-new") is not None, "the pods in the cache")
    side.extender.refresh(force=True)
    owner = _pod("web-new")
    assert _filter(side, owner)["NodeNames"] == ["cool", "other"]  # web-0 not yet seen leaving
    side.store.delete("pods", "web-0", NS)
    _wait(lambda: "uid-web-0" in side.extender.state.table.leaving, "the pod seen leaving")  # type: ignore[union-attr]
    assert "holds room for it on node cool" in side.bind("web-new", "other")["Error"]
    assert side.node_of("web-new") == "" and side.status("move-web-0") == {"phase": "Available"}
    assert _filter(side, owner)["NodeNames"] == ["cool"]
    assert side.bind("web-new", "cool") == {"Error": ""}
    assert (side.node_of("web-new"), side.status("move-web-0")["phase"]) == ("cool", "Consumed")


def test_a_deleted_pod_gives_back_its_requests_at_once_without_a_rebuild(side: Side) -> None:
    """kube-scheduler retries a waiting pod within milliseconds of a deletion: the answer then must
    already see the room free, not at the next rebuild (here: never). Each node is short only because
    a Reservation holds room there (the extender's own rule; requests alone are kube-scheduler's)."""
    for name, node in (("big", "cool"), ("filler", "other")):
        pod = _pod(name, app="batch", cpu="3")
        side.store.create({**pod, "spec": {**pod["spec"], "nodeName": node}, "status": {"phase": "Running"}})
        side.store.create(_reservation(f"held-{node}", node, cpu="1"))
    _wait(lambda: side.cache.get(RESERVATIONS, "held-other") is not None, "the pods and Reservations in the cache")
    side.extender.refresh(force=True)
    first = side.extender.state
    waiting = _pod("waiting", app="shop", cpu="2")
    assert _filter(side, waiting)["NodeNames"] == []
    side.store.delete("pods", "big", NS)
    _wait(lambda: _filter(side, waiting)["NodeNames"] == ["cool"], "the freed room")
    assert side.extender.state is first
