"""The extender answers kube-scheduler's own request bodies with exact nodes, reasons and scores.

Wire shapes: k8s.io/kube-scheduler/extender/v1 types.go (ExtenderArgs, ExtenderFilterResult,
HostPriorityList); MaxExtenderPriority = 10.

The cluster (8 cpu / 32Gi nodes unless said; thresholds cpu 65%, memory 95%; estimates 85% cpu,
70% memory of the request; a pod requesting 1 cpu / 1Gi is estimated at 850m / 0.7Gi):
- cool:  1 cpu used            → 1.85 of 8 cpu after placement: passes, score 9
- warm:  3 cpu used            → 3.85 of 8: passes, score 7
- fresh: no metric yet         → passes the load filter, scores 0 (no metric, no load score)
- hot:   5 cpu used            → 5.85 of 8 = 73% > 65%: refused, unresolvable
- stale: metric 10 minutes old → refused, unresolvable
- cordoned, notready, gpu (taint dedicated=gpu:NoSchedule), full (2 cpu, 1.5 requested): pass —
  kube-scheduler's own filters judge these before it calls the extender, on fresher data, so the
  extender leaves them to it (scheduling-core.md §2); kube-scheduler would not send them
- held:  4 cpu, 3.5 reserved for another workload → insufficient cpu, the room held by reservations
  (resolvable by preemption)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import msgspec
import pytest

from descheduler import metrics
from descheduler.extender import Extender, ExtenderFilterResult, HostPriority, service
from tests.builders import NOW, loaded_node, node, node_metrics, pod, reservation

from .conftest import Client, extender_args, kube_pod

Serve = Callable[..., tuple[Extender, Client]]
LOAD = "load-aware: estimated cpu usage would exceed 65 percent"
ALL = ["cool", "warm", "fresh", "hot", "stale", "cordoned", "notready", "gpu", "full", "held"]


def cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *loaded_node("cool", [("c1", "1")]),
        *loaded_node("warm", [("w1", "3")]),
        node("fresh"),
        *loaded_node("hot", [("h1", "5")]),
        node("stale"),
        node_metrics("stale", "1", "1Gi", at=NOW - timedelta(minutes=10)),
        node("cordoned", unschedulable=True),
        node("notready", ready=False),
        node("gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        node("full", cpu="2"),
        pod("f1", "full", cpu="1500m", owner="batch"),
        node("held", cpu="4"),
        reservation("r-batch", "held", {"cpu": "3500m", "memory": "1Gi"}, owner="batch"),
        *extra,
    ]


EXPECTED_UNRESOLVABLE = {"hot": LOAD, "stale": "node metric expired (older than 180s)"}
EXPECTED_FAILED = {"held": "insufficient cpu (room held by reservations)"}
PASSED = ["cool", "warm", "fresh", "cordoned", "notready", "gpu", "full"]


def test_filter_answers_an_extender_filter_result_with_every_refusal_and_its_reason(serve: Serve) -> None:
    _, client = serve(cluster())
    status, body = client.post("filter", extender_args(kube_pod("web-new"), ALL))
    assert status == 200
    assert body == {
        "Nodes": None,
        "NodeNames": PASSED,
        "FailedNodes": EXPECTED_FAILED,
        "FailedAndUnresolvableNodes": EXPECTED_UNRESOLVABLE,
        "Error": "",
    }


def test_no_refusal_or_error_holds_a_percent_sign(serve: Serve) -> None:
    """kube-scheduler formats extender reasons with Go's fmt: "65%" would read "65%!,(MISSING)"."""
    _, client = serve(cluster())
    answer = client.request("POST", "/filter", extender_args(kube_pod("web-new"), ALL))[1]
    assert b"load-aware" in answer and b"%" not in answer
    assert b"%" not in client.request("POST", "/filter", b'{"Pod": "100%"}')[1]


def test_the_filter_answer_decodes_as_the_upstream_shape(serve: Serve) -> None:
    _, client = serve(cluster())
    status, raw = client.request("POST", "/filter", extender_args(kube_pod("web-new"), ALL))
    assert status == 200
    result = msgspec.json.decode(raw, type=ExtenderFilterResult, strict=True)
    assert result.NodeNames == PASSED and result.Error == ""
    assert set(msgspec.json.decode(raw)) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def test_prioritize_maps_the_load_aware_score_to_0_to_10(serve: Serve) -> None:
    _, client = serve(cluster())
    status, raw = client.request("POST", "/prioritize", extender_args(kube_pod("web-new"), ["cool", "warm", "fresh"]))
    assert status == 200
    # cool: cpu (8 - 1.85)/8 = 76, memory (32 - 1.7)/32 = 94 -> 85 of 100 -> 9 of 10 (half up)
    # warm: cpu (8 - 3.85)/8 = 51, memory 94 -> 72 -> 7; fresh: no metric -> 0.
    assert msgspec.json.decode(raw, type=list[HostPriority]) == [
        HostPriority(Host="cool", Score=9),
        HostPriority(Host="warm", Score=7),
        HostPriority(Host="fresh", Score=0),
    ]


def test_prioritize_on_the_filters_own_answer_gives_the_same_scores_as_on_fresh_names(serve: Serve) -> None:
    _, client = serve(cluster())
    pod_json = kube_pod("web-new")
    # The nodes kube-scheduler's own filters would pass and send.
    _, filtered = client.post("filter", extender_args(pod_json, ["cool", "warm", "fresh", "hot", "stale", "held"]))
    _, from_answer = client.post("prioritize", extender_args(pod_json, filtered["NodeNames"]))
    _, reordered = client.post("prioritize", extender_args(pod_json, ["fresh", "cool", "warm"]))
    assert from_answer == [{"Host": "cool", "Score": 9}, {"Host": "warm", "Score": 7}, {"Host": "fresh", "Score": 0}]
    assert sorted(reordered, key=lambda h: h["Host"]) == sorted(from_answer, key=lambda h: h["Host"])
    assert [h["Host"] for h in reordered] == ["fresh", "cool", "warm"]


def test_a_pod_owning_an_available_reservation_is_steered_to_its_node(serve: Serve) -> None:
    _, client = serve(cluster(reservation("r-web", "warm", {"cpu": "1", "memory": "1Gi"}, owner="web")))
    pod_json = kube_pod("web-replacement", owner="web")
    _, body = client.post("filter", extender_args(pod_json, [*ALL, "ghost"]))
    steered = "the pod's Reservation r-web holds room for it on node warm"
    assert body["NodeNames"] == ["warm"]
    assert body["FailedNodes"] == EXPECTED_FAILED
    assert body["FailedAndUnresolvableNodes"] == {
        **EXPECTED_UNRESOLVABLE,
        **{name: steered for name in PASSED if name != "warm"},
        "ghost": steered,
    }
    _, scores = client.post("prioritize", extender_args(pod_json, ["cool", "warm"]))
    assert scores == [{"Host": "cool", "Score": 9}, {"Host": "warm", "Score": 10}]


def test_a_reservation_outside_the_candidates_does_not_steer(serve: Serve) -> None:
    _, client = serve(cluster(reservation("r-web", "warm", {"cpu": "1", "memory": "1Gi"}, owner="web")))
    _, body = client.post("filter", extender_args(kube_pod("web-replacement", owner="web"), ["cool", "fresh", "hot"]))
    assert body["NodeNames"] == ["cool", "fresh"]
    assert body["FailedAndUnresolvableNodes"] == {"hot": LOAD}


def test_a_pending_reservation_holds_room_but_does_not_steer(serve: Serve) -> None:
    objects = cluster(reservation("r-web", "warm", {"cpu": "1", "memory": "1Gi"}, owner="web", phase="Pending"))
    _, client = serve(objects)
    _, body = client.post("filter", extender_args(kube_pod("web-replacement", owner="web"), ["cool", "warm"]))
    assert body["NodeNames"] == ["cool", "warm"]


def test_other_pods_see_reserved_room_as_taken(serve: Serve) -> None:
    # warm: 8 cpu, 1 requested by w1, 6 reserved for web -> 1 cpu free: a 2-cpu pod of another workload does not fit.
    _, client = serve(cluster(reservation("r-web", "warm", {"cpu": "6", "memory": "1Gi"}, owner="web")))
    _, body = client.post("filter", extender_args(kube_pod("db-0", owner="db", cpu="2"), ["cool", "warm"]))
    assert body["NodeNames"] == ["cool"]
    assert body["FailedNodes"] == {"warm": "insufficient cpu (room held by reservations)"}
    _, owner = client.post("filter", extender_args(kube_pod("web-1", owner="web", cpu="2"), ["cool", "warm"]))
    assert owner["NodeNames"] == ["warm"]


def test_unknown_node_names_pass_and_score_zero(serve: Serve) -> None:
    _, client = serve(cluster())
    _, body = client.post("filter", extender_args(kube_pod("web-new"), ["ghost", "cool", "hot"]))
    assert body["NodeNames"] == ["ghost", "cool"]
    assert body["FailedAndUnresolvableNodes"] == {"hot": LOAD}
    _, scores = client.post("prioritize", extender_args(kube_pod("web-new"), ["ghost", "cool"]))
    assert scores == [{"Host": "ghost", "Score": 0}, {"Host": "cool", "Score": 9}]


def test_a_daemonset_pod_skips_the_load_filter(serve: Serve) -> None:
    _, client = serve(cluster())
    ds = kube_pod("agent-x", owner="agent")
    ds["metadata"]["ownerReferences"][0]["kind"] = "DaemonSet"
    _, body = client.post("filter", extender_args(ds, ["cool", "hot"]))
    assert body["NodeNames"] == ["cool", "hot"]


def test_node_affinity_and_pod_anti_affinity_are_left_to_kube_scheduler(serve: Serve) -> None:
    """kube-scheduler's NodeAffinity and InterPodAffinity ran before it called us, on fresher data
    (scheduling-core.md §2): a node it passed is not refused again here for a rule we would judge on
    an older picture (the bind still checks node affinity: test_binding.py)."""
    objects = cluster(pod("db-0", "warm", owner="db", labels={"tier": "db"}))
    _, client = serve(objects)
    pinned = kube_pod("web-x", nodeSelector={"kubernetes.io/hostname": "cool"})
    _, body = client.post("filter", extender_args(pinned, ["cool", "warm"]))
    assert body["NodeNames"] == ["cool", "warm"]
    apart = kube_pod(
        "web-y",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"tier": "db"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        },
    )
    _, body = client.post("filter", extender_args(apart, ["cool", "warm"]))
    assert body["NodeNames"] == ["cool", "warm"]
    assert body["FailedNodes"] == {} and body["FailedAndUnresolvableNodes"] == {}


class _Log:
    """A stand-in for the extender's logger: the lines it was given."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message: str, *args: object) -> None:
        self.lines.append(message % args)

    warning = info


def test_when_the_load_filter_refuses_every_node_kube_scheduler_passed_they_pass_as_without_the_extender(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client = serve(cluster())
    log = _Log()
    monkeypatch.setattr(service, "log", log)
    other = {"pod": "other"}
    waived = metrics.sample("descheduler_extender_load_filter_waived_total", other)
    # hot is over its threshold and stale's metric too old: the load filter alone refuses them; the
    # room another workload's Reservation holds still refuses held.
    _, body = client.post("filter", extender_args(kube_pod("web-new"), ["hot", "stale", "held"]))
    assert body["NodeNames"] == ["hot", "stale"]
    assert body["FailedNodes"] == EXPECTED_FAILED
    assert body["FailedAndUnresolvableNodes"] == {}
    assert metrics.sample("descheduler_extender_load_filter_waived_total", other) == waived + 1
    assert log.lines == [
        "extender: every node kube-scheduler passed for pod default/web-new is over its load thresholds: passing them, as kube-scheduler alone would, rather than keep the pod Pending"
    ]
    # While one node passes, the load filter refuses as ever.
    _, body = client.post("filter", extender_args(kube_pod("web-other"), ["hot", "cool"]))
    assert body["NodeNames"] == ["cool"] and body["FailedAndUnresolvableNodes"] == {"hot": LOAD}
    # And nothing is waived where no node is refused for load alone.
    _, body = client.post("filter", extender_args(kube_pod("web-third"), ["held"]))
    assert body["NodeNames"] == []
    assert metrics.sample("descheduler_extender_load_filter_waived_total", other) == waived + 1


def test_prod_and_aggregated_thresholds_name_their_basis(serve: Serve) -> None:
    _, client = serve(cluster(), usageThresholds={"cpu": 90}, prodUsageThresholds={"cpu": 10})
    prod = kube_pod("web-prod", priorityClassName="koord-prod", priority=9500)
    _, body = client.post("filter", extender_args(prod, ["cool", "fresh"]))
    # No prod pod runs on cool: 0 + 0.85 of 8 cpu = 10.6% > 10%.
    assert body["FailedAndUnresolvableNodes"] == {
        "cool": "load-aware: estimated prod cpu usage would exceed 10 percent"
    }


def test_the_full_node_list_is_answered_in_kind_when_not_node_cache_capable(serve: Serve) -> None:
    _, client = serve(cluster())
    items = [
        {"metadata": {"name": name, "labels": {"x": "y"}}, "status": {"allocatable": {"cpu": "8"}}}
        for name in ("cool", "hot")
    ]
    _, body = client.post("filter", extender_args(kube_pod("web-new"), nodes=items))
    assert body["NodeNames"] is None
    assert body["Nodes"] == {"items": [items[0]]}
    assert body["FailedAndUnresolvableNodes"] == {"hot": LOAD}
    _, scores = client.post("prioritize", extender_args(kube_pod("web-new"), nodes=items[:1]))
    assert scores == [{"Host": "cool", "Score": 9}]


def test_health_readiness_and_metrics_endpoints(serve: Serve) -> None:
    _, client = serve(cluster())
    before = metrics.sample("descheduler_extender_requests_total", {"verb": "filter", "code": "200"})
    client.post("filter", extender_args(kube_pod("web-new"), ["cool"]))
    assert client.request("GET", "/healthz") == (200, b"ok\n")
    assert client.request("GET", "/readyz") == (200, b"ok\n")
    status, text = client.request("GET", "/metrics")
    assert status == 200 and b"descheduler_extender_request_duration_seconds_bucket" in text
    assert metrics.sample("descheduler_extender_requests_total", {"verb": "filter", "code": "200"}) == before + 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{", "body is not valid JSON"),
        (b"[]", "body is not an ExtenderArgs object: $: Expected `object`, got `array`"),
        (b'{"NodeNames": ["cool"]}', "ExtenderArgs.Pod is missing or null"),
        (b'{"Pod": {"metadata": {"name": "p"}}}', "ExtenderArgs carries neither NodeNames nor Nodes"),
        (b'{"Pod": 7, "NodeNames": []}', "Pod: Expected `object`, got `int`"),
        (b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": [1]}', "NodeNames[0]: Expected `str`, got `int`"),
        (b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": [""]}', "NodeNames: a node name is empty"),
        (b'{"Pod": {"metadata": {}}, "NodeNames": []}', "Pod.metadata.name: required"),
        (
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}},'
            b' "NodeNames": ["cool"]}',
            "Pod.spec.containers[0].resources.requests.cpu:",
        ),
        (
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {"cpu": 1e201}}}]}},'
            b' "NodeNames": ["cool"]}',
            "Pod: cpu requests of ",
        ),
        (
            b'{"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": [{"metadata": {}}]}}',
            "Nodes.items: a node has no metadata.name",
        ),
    ],
)
def test_a_malformed_request_gets_400_with_the_reason(serve: Serve, body: bytes, reason: str) -> None:
    _, client = serve(cluster())
    for verb in ("filter", "prioritize"):
        status, answer = client.post(verb, body)
        assert status == 400
        assert answer["Error"].startswith(reason), answer


def test_request_size_and_framing_limits(serve: Serve) -> None:
    _, client = serve(cluster())
    assert client.request("POST", "/filter", b"{}", {"Content-Length": "abc"})[0] == 411
    status, body = client.request("POST", "/filter", b"x" * 9 * 2**20)
    assert status == 413 and b"exceeds the limit" in body
    status, body = client.request("POST", "/preempt", extender_args(kube_pod("p"), ["cool"]))
    assert status == 404 and b"no such verb" in body
    # The server is still there for the next, well-formed request.
    assert client.post("filter", extender_args(kube_pod("p"), ["cool"]))[0] == 200


def test_before_the_first_snapshot_requests_get_503_and_readyz_says_why(tmp_path: Any) -> None:
    from descheduler.extender import ExtenderServer, SnapshotFileSource

    from .conftest import scheduling_args

    extender = Extender(SnapshotFileSource(tmp_path / "missing.yaml"), scheduling_args())
    assert not extender.refresh()
    with ExtenderServer(extender, "127.0.0.1", 0) as server:
        client = Client(server.port)
        status, body = client.post("filter", extender_args(kube_pod("p"), ["cool"]))
        assert status == 503 and body["Error"].startswith("no cluster state yet: ")
        status, text = client.request("GET", "/readyz")
        assert status == 503 and b"missing.yaml: no such file or directory" in text
        client.close()
