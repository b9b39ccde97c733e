"""The cache's pod shape (`decode.RawListedPod`, decoded parts remembered by their JSON text) gives
the records and the problems the full shape (`decode.RawPod` + `pod_from_raw`) gives, for any pod
JSON: good or bad, first seen or seen before, in a list page or a watch event."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from descheduler import decode
from descheduler.kube import PODS
from descheduler.kube.client import KubeClient
from descheduler.kube.kinds import KINDS
from descheduler.kube.listing import Listed, add_page, decode_object, decode_page, records_of
from descheduler.kube.reflector import Reflector
from descheduler.model import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerRef,
    Pod,
    PodAffinityTerm,
    Toleration,
)
from descheduler.resources import Resources

KIND = KINDS[PODS]
ABSENT = object()  # a key left out of its object


def mostly(good: st.SearchStrategy[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    """`good` 19 times in 20, else one of `bad`: values no API server would send. Rare, as a pod
    has some twenty such fields: most drawn pods must be good, or no part is ever met again."""
    return st.one_of(*[good] * 19, st.sampled_from(bad))


QUANTITIES = mostly(
    st.sampled_from(["100m", "250m", "1", "2", "512Mi", "1Gi", "0", 3, 1.5]), ["-1", "lots", True, None, []]
)
RESOURCE_LISTS = mostly(
    st.one_of(
        st.just(ABSENT),
        st.none(),
        st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), QUANTITIES, max_size=3),
    ),
    ["cpu", [1]],
)


def _with(obj: dict[str, Any], **fields: object) -> dict[str, Any]:
    obj.update({k: v for k, v in fields.items() if v is not ABSENT})
    return obj


CONTAINER = st.builds(
    lambda name, requests, limits, restart, extra: _with(
        {"name": name, **extra}, resources=_with({}, requests=requests, limits=limits), restartPolicy=restart
    ),
    st.sampled_from(["main", "sidecar"]),
    RESOURCE_LISTS,
    RESOURCE_LISTS,
    mostly(st.sampled_from([ABSENT, "Always", None]), [5]),
    mostly(
        st.sampled_from(
            [
                {},
                {"image": "registry.example.com/app:1"},
                {"ports": [{"containerPort": 80}]},
                {"ports": [{"containerPort": 9100, "hostPort": 9100, "hostIP": "10.0.0.1", "protocol": "UDP"}]},
            ]
        ),
        [{"ports": [{"hostPort": "9100"}]}, {"ports": {"hostPort": 1}}],
    ),
)
# A few container lists many pods share (so a part remembered for one pod is met again in
# another, beside different other parts), and any other list.
SHARED_CONTAINERS = [
    [{"name": "main", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1", "memory": "1Gi"}}}],
    [{"name": "main", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
    [{"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
    [{"name": "main"}, {"name": "log", "resources": {"requests": {"memory": "2Gi"}}}],
]
CONTAINERS = mostly(
    st.one_of(st.just(ABSENT), st.sampled_from(SHARED_CONTAINERS), st.lists(CONTAINER, max_size=3)),
    [None, "main", [1]],
)
OWNERS = mostly(
    st.lists(
        st.builds(
            lambda kind, uid, controller: _with({"kind": kind, "name": "web", "uid": uid}, controller=controller),
            st.sampled_from(["ReplicaSet", "DaemonSet"]),
            st.sampled_from(["u1", "u2"]),
            mostly(st.sampled_from([ABSENT, True, False, None]), ["yes"]),
        ),
        max_size=2,
    ),
    [ABSENT, None, "rs", [{"kind": 5}]],
)
TOLERATIONS = mostly(
    st.lists(
        st.builds(
            lambda key, operator, effect: _with(
                {"key": key, "tolerationSeconds": 300}, operator=operator, effect=effect
            ),
            mostly(st.sampled_from(["", "node.kubernetes.io/not-ready"]), [7]),
            st.sampled_from([ABSENT, "Exists", "Equal", ""]),
            st.sampled_from([ABSENT, "NoExecute", "NoSchedule"]),
        ),
        max_size=2,
    ),
    [ABSENT, None, {"key": "a"}],
)
REQUIREMENT = st.builds(
    lambda operator, values: _with({"key": "zone", "operator": operator}, values=values),
    mostly(st.sampled_from(["In", "NotIn", "Exists"]), ["Near", 3]),
    mostly(st.sampled_from([ABSENT, None, ["a"]]), ["a"]),
)
SELECTORS = mostly(
    st.sampled_from([ABSENT, None, {}, {"matchLabels": {"app": "web"}}]),
    [{"matchExpressions": [{"key": "app", "operator": "Nope"}]}, {"matchLabels": "app"}],
)
AFFINITY = mostly(
    st.builds(
        lambda terms, anti: _with(
            {},
            nodeAffinity=ABSENT
            if terms is ABSENT
            else {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}},
            podAntiAffinity=ABSENT if anti is ABSENT else {"requiredDuringSchedulingIgnoredDuringExecution": anti},
            podAffinity=ABSENT if anti is ABSENT else {"requiredDuringSchedulingIgnoredDuringExecution": anti[:1]},
        ),
        st.one_of(
            st.just(ABSENT),
            st.lists(st.builds(lambda r: {"matchExpressions": r}, st.lists(REQUIREMENT, max_size=2)), max_size=2),
        ),
        st.one_of(
            st.just(ABSENT),
            st.lists(
                st.builds(
                    lambda selector, ns, keys: _with(
                        {"topologyKey": "zone"}, labelSelector=selector, namespaceSelector=ns, matchLabelKeys=keys
                    ),
                    SELECTORS,
                    SELECTORS,
                    mostly(st.sampled_from([ABSENT, None, ["app"]]), ["app"]),
                ),
                max_size=2,
            ),
        ),
    ),
    [ABSENT, None, {}, "near", {"nodeAffinity": None}],
)


SPREAD = mostly(
    st.lists(
        st.builds(
            lambda when, selector, keys, policy: _with(
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": when},
                labelSelector=selector,
                matchLabelKeys=keys,
                nodeTaintsPolicy=policy,
            ),
            st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Sometimes"]),
            SELECTORS,
            st.sampled_from([ABSENT, ["app"]]),
            st.sampled_from([ABSENT, "Honor", "Ignore", "Odd"]),
        ),
        max_size=2,
    ),
    [ABSENT, None, "zone", [{"maxSkew": "one"}]],
)


@st.composite
def pod_objects(draw: st.DrawFn) -> dict[str, Any]:
    """A pod as the API server would send it, with (sometimes) fields no API server would accept."""
    metadata = _with(
        {"name": draw(st.sampled_from(["web-1", "web-2", "db-0"])), "namespace": draw(st.sampled_from(["", "team"]))},
        uid=draw(st.sampled_from([ABSENT, "p1"])),
        labels=draw(mostly(st.sampled_from([ABSENT, None, {"app": "web"}]), [{"app": 1}])),
        annotations=draw(st.sampled_from([ABSENT, {"kubernetes.io/config.mirror": "x", "other": "y"}])),
        ownerReferences=draw(OWNERS),
        creationTimestamp=draw(mostly(st.sampled_from([ABSENT, "2024-05-01T10:00:00Z"]), ["yesterday"])),
        deletionTimestamp=draw(st.sampled_from([ABSENT, None, "2024-05-01T11:00:00Z"])),
        generation=draw(mostly(st.sampled_from([ABSENT, 2]), ["two"])),
        resourceVersion=draw(st.sampled_from([ABSENT, "12"])),
    )
    spec = _with(
        {},
        nodeName=draw(st.sampled_from([ABSENT, "n1"])),
        containers=draw(CONTAINERS),
        initContainers=draw(st.one_of(st.just(ABSENT), CONTAINERS)),
        overhead=draw(RESOURCE_LISTS),
        priority=draw(mostly(st.sampled_from([ABSENT, None, 100]), ["high"])),
        tolerations=draw(TOLERATIONS),
        affinity=draw(AFFINITY),
        topologySpreadConstraints=draw(SPREAD),
        volumes=draw(
            st.sampled_from(
                [
                    ABSENT,
                    None,
                    [{"name": "v", "emptyDir": {}}],
                    [{"name": "c", "persistentVolumeClaim": {}}],
                    [{"name": "c", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "e", "ephemeral": {}}],
                ]
            )
        ),
    )
    status = _with(
        {},
        phase=draw(st.sampled_from([ABSENT, "Running", "Succeeded"])),
        conditions=draw(
            mostly(
                st.sampled_from(
                    [
                        ABSENT,
                        None,
                        [{"type": "Ready", "status": "True"}],
                        [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:05Z"}],
                        [
                            {"type": "Ready", "status": "False", "lastTransitionTime": "2024-05-01T10:00:07Z"},
                            {"type": "PodScheduled", "status": "True", "lastTransitionTime": None},
                        ],
                    ]
                ),
                [
                    "Ready",
                    [{"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}],
                    [{"type": "Initialized", "status": "True", "lastTransitionTime": "2024-13-01T10:00:00Z"}],
                    [{"type": "Ready", "status": 1}],
                ],
            )
        ),
    )
    if draw(st.integers(0, 6)) == 0:
        status["conditions"] = [{"status": "True"}]  # no type
    return _with({"metadata": metadata}, spec=spec, status=status)


def reference(objects: list[dict[str, Any]]) -> Listed:
    """What the full shape makes of each object on its own (`decode_object`: RawPod + pod_from_raw)."""
    return records_of(KIND, objects)


def listed_page(objects: list[dict[str, Any]]) -> Listed:
    listed = Listed()
    body = msgspec.json.encode({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": objects})
    add_page(KIND, decode_page(KIND, body), listed)
    return listed


def offline_client() -> KubeClient:
    """A client for a server never called: `apply_events` only decodes lines it is given."""
    return KubeClient(client.Configuration(host="http://127.0.0.1:9"))


class RecordingSink:
    def __init__(self) -> None:
        self.applied: list[tuple[str, str, Any, str | None]] = []

    def apply(self, kind: Any, event_type: str, key: str, record: Any, problem: str | None) -> None:
        self.applied.append((event_type, key, record, problem))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pod_objects(), max_size=6))
def test_a_listed_page_gives_the_full_shapes_records_and_problems(objects: list[dict[str, Any]]) -> None:
    want = reference(objects)
    for _ in range(2):  # the second time, every part is remembered from the first
        got = listed_page(objects)
        assert list(got.records.items()) == list(want.records.items())
        assert got.problems == want.problems


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pod_objects(), max_size=6))
def test_watch_events_give_the_full_shapes_records_and_problems(objects: list[dict[str, Any]]) -> None:
    want = []
    for obj in objects:
        key, record, problem = decode_object(KIND, msgspec.json.encode(obj))
        want.append(("MODIFIED", key, record, problem))
    lines = [msgspec.json.encode({"type": "MODIFIED", "object": obj}) for obj in objects]
    for _ in range(2):
        sink = RecordingSink()
        Reflector(offline_client(), KIND, sink).apply_events(lines)  # type: ignore[arg-type]
        assert sink.applied == want


def test_the_fast_shape_names_a_bad_container_as_the_full_shape_does() -> None:
    bad = {
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": [1]}}]},
    }
    good = {"metadata": {"name": "good", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}
    got = listed_page([good, bad])
    assert list(got.records) == ["default/good"]
    assert got.problems == {
        "default/bad": "Expected `object | null`, got `array` - at `$.spec.containers[0].resources.requests`"
    }


def test_a_malformed_part_names_the_pod_before_a_bad_quantity_does() -> None:
    # RawPod's typed decode comes before any quantity is read, so its message wins.
    pod = {
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}], "affinity": "near"},
    }
    want = {"default/bad": "Expected `object | null`, got `str` - at `$.spec.affinity`"}
    assert reference([pod]).problems == want
    assert listed_page([pod]).problems == want


def test_pods_of_one_workload_share_their_decoded_parts() -> None:
    template = {
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": True}],
    }
    containers = [{"name": "c", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}}}]
    objects = [
        {"metadata": {"name": f"web-{i}", "namespace": "team", **template}, "spec": {"containers": containers}}
        for i in range(2)
    ]
    first, second = listed_page(objects).records.values()
    assert first.owner is second.owner
    assert first.requests is second.requests and first.limits is second.limits


def test_every_field_of_a_pod_is_decoded_into_its_own_place() -> None:
    # The decoder passes Pod's fields by position: every field here differs from its default and
    # from the others of its type, so two swapped places cannot go unnoticed.
    scheduled = "2024-05-01T10:00:05Z"
    obj = {
        "metadata": {
            "name": "web-1",
            "namespace": "team",
            "uid": "p1",
            "labels": {"app": "web"},
            "annotations": {"kubernetes.io/config.mirror": "m", "other": "dropped"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": True}],
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "deletionTimestamp": "2024-05-01T11:00:00Z",
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}}}],
            "priority": 7,
            "priorityClassName": "high",
            "preemptionPolicy": "Never",
            "schedulerName": "custom",
            "nodeSelector": {"disk": "ssd"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
                    }
                },
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]},
            },
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "v", "emptyDir": {}}, {"name": "c", "persistentVolumeClaim": {"claimName": "x"}}],
        },
        "status": {
            "phase": "Failed",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled},
                {"type": "Ready", "status": "True"},
            ],
        },
    }
    want = Pod(
        namespace="team",
        name="web-1",
        uid="p1",
        node_name="n1",
        phase="Failed",
        labels={"app": "web"},
        annotations={"kubernetes.io/config.mirror": "m"},
        owner=OwnerRef(kind="ReplicaSet", name="web", uid="u1", controller=True),
        requests=Resources({"cpu": 250}),
        limits=Resources({"cpu": 1000}),
        priority=7,
        priority_class_name="high",
        preemption_policy="Never",
        scheduler_name="custom",
        qos="Burstable",
        created=datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
        scheduled_at=datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC),
        deleting=True,
        ready=True,
        node_selector={"disk": "ssd"},
        required_node_affinity=(
            NodeSelectorTerm(match_expressions=(NodeSelectorRequirement(key="zone", operator="Exists"),)),
        ),
        anti_affinity=(PodAffinityTerm(label_selector=None, topology_key="zone"),),
        tolerations=(Toleration(key="k", operator="Exists", effect="NoSchedule"),),
        has_local_storage=True,
        has_pvc=True,
        claims=("x",),
    )
    assert decode.pod_from_raw(decode.convert(obj, decode.RawPod)) == want
    assert listed_page([obj]).records == {"team/web-1": want}


def test_a_sidecar_and_an_init_container_of_equal_resources_are_told_apart() -> None:
    # Remembered by their resources' text, init containers are also told by their restartPolicy.
    main = [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]
    init = {"name": "init", "resources": {"requests": {"cpu": "500m"}}}
    objects = [
        {"metadata": {"name": "plain", "namespace": "team"}, "spec": {"containers": main, "initContainers": [init]}},
        {
            "metadata": {"name": "sidecar", "namespace": "team"},
            "spec": {"containers": main, "initContainers": [{**init, "restartPolicy": "Always"}]},
        },
    ]
    records = listed_page(objects).records
    assert records == reference(objects).records
    assert records["team/plain"].requests == Resources({"cpu": 1000})
    assert records["team/sidecar"].requests == Resources({"cpu": 1500})


def test_a_bad_time_in_any_condition_is_named_as_the_full_shape_names_it() -> None:
    # Only PodScheduled's time is kept, but every condition's time is read, first seen or remembered.
    conditions = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:05Z"},
        {"type": "Initialized", "status": "True", "lastTransitionTime": "2024-05-01T25:00:00Z"},
    ]
    pod = {"metadata": {"name": "bad", "namespace": "team"}, "status": {"conditions": conditions}}
    want = {"team/bad": "Invalid RFC3339 encoded datetime - at `$.status.conditions[1].lastTransitionTime`"}
    assert reference([pod]).problems == want
    for _ in range(2):
        got = listed_page([pod])
        assert got.problems == want and not got.records


def test_pods_with_the_same_conditions_share_their_decoded_time() -> None:
    conditions = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:09Z"},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:05Z"},
    ]
    objects = [
        {"metadata": {"name": f"web-{i}", "namespace": "team"}, "status": {"conditions": conditions}} for i in range(2)
    ]
    first, second = listed_page(objects).records.values()
    assert list(listed_page(objects).records.values()) == list(reference(objects).records.values())
    assert first.scheduled_at == datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC) and first.ready
    assert first.scheduled_at is second.scheduled_at


def test_two_containers_are_remembered_as_a_pair_in_order() -> None:
    # A pair's texts are one key: neither one container alone, nor the pair the other way round,
    # nor the same pair beside an init container may be taken for it.
    a = {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    b = {"name": "b", "resources": {"requests": {"memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    specs = [
        {"containers": [a, b]},
        {"containers": [b, a]},
        {"containers": [a]},
        {"containers": [a, b], "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]},
        {"containers": [a, {"name": "c"}]},
    ]
    objects = [{"metadata": {"name": f"p{i}", "namespace": "team"}, "spec": spec} for i, spec in enumerate(specs)]
    want = reference(objects).records
    for _ in range(2):
        assert listed_page(objects).records == want
    assert want["team/p0"].requests == Resources({"cpu": 2000, "memory": 2 * 2**30})
    assert want["team/p2"].requests == Resources({"cpu": 1000, "memory": 2**30})
    assert want["team/p3"].requests == Resources({"cpu": 3000, "memory": 2 * 2**30})
    assert want["team/p4"].qos == "Burstable"
