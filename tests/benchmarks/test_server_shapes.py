"""The benchmarks' server-shaped objects are the generated cluster in a real server's objects."""

from __future__ import annotations

import json

from benchmarks.fake_apiserver_load import nodes as generated_nodes
from benchmarks.fake_apiserver_load import pods as generated_pods
from benchmarks.server_shapes import SHAPES, key_paths, nodes, pods
from descheduler.kube import NODES, PODS
from descheduler.kube.kinds import KINDS
from descheduler.kube.listing import records_of

PLANNED = (
    "key",
    "uid",
    "node_name",
    "phase",
    "labels",
    "annotations",
    "owner",
    "requests",
    "limits",
    "priority",
    "qos",
)


def test_a_server_shaped_pod_plans_as_the_generated_one_and_keeps_the_real_shape() -> None:
    shaped = list(pods(40, 7))
    made = records_of(KINDS[PODS], generated_pods(40, 7)).records
    got = records_of(KINDS[PODS], shaped).records
    assert list(got) == list(made)
    for key, pod in got.items():
        assert {f: getattr(pod, f) for f in PLANNED} == {f: getattr(made[key], f) for f in PLANNED}
        assert pod.ready and pod.scheduled_at == pod.created
        assert pod.created is not None and made[key].created is not None and pod.created >= made[key].created
        assert pod.tolerations  # what the real pod adds
    # Each pod its own times (a decoder must not find them equal across pods, as no real list has them).
    assert len({pod.created for pod in got.values()}) == len(got)
    assert len({json.dumps(p["status"]["conditions"]) for p in shaped}) == len(shaped)
    # and its own token volume (named per pod by admission), so no two container lists are one text
    assert len({json.dumps(p["spec"]["containers"]) for p in shaped}) == len(shaped)
    assert all(
        {v["name"] for v in p["spec"]["volumes"]}
        >= {m["name"] for c in p["spec"]["containers"] for m in c["volumeMounts"]}
        for p in shaped
    )
    template = json.loads((SHAPES / "pod.json").read_text())
    assert all(
        key_paths(p) == key_paths(template) - {"spec.nodeSelector", "spec.nodeSelector.kubernetes.io/hostname"}
        for p in shaped
    )
    assert all(pod.node_selector == {} for pod in got.values())
    assert len({p["metadata"]["resourceVersion"] for p in shaped}) == 40


def test_a_server_shaped_node_has_the_generated_capacity_and_labels() -> None:
    made = records_of(KINDS[NODES], generated_nodes(5)).records
    got = records_of(KINDS[NODES], nodes(5)).records
    assert list(got) == list(made)
    for name, node in got.items():
        assert node.allocatable == made[name].allocatable and node.ready
        assert made[name].labels.items() <= node.labels.items()
