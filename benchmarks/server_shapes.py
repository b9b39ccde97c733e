"""Pods and nodes shaped as a real kube-apiserver returns them, for the benchmarks that decode lists,
watch events and snapshot files.

`shapes/pod.json` and `shapes/node.json` are one pod and one node read from the real control plane
(../shared/kube) by tests/realcluster/test_real_shapes.py, which writes them and checks them: a
Deployment's pod made by kube-controller-manager, bound by kube-scheduler and reported Running by
the kubelet stand-in, with the managedFields of each, the token volume, tolerations and defaults
that admission adds, and the conditions and container statuses a kubelet writes; a Node with the
status a kubelet reports on registration. `pods` and `nodes` put the generated cluster's names,
owners, labels, requests and placement (`benchmarks.fake_apiserver_load`) into copies of them, so
the cluster is the same one the benchmarks always planned on, in the objects a real server sends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.fake_apiserver_load import nodes as generated_nodes
from benchmarks.fake_apiserver_load import pods as generated_pods

SHAPES = Path(__file__).resolve().parent / "shapes"
Obj = dict[str, Any]


def key_paths(obj: Any) -> frozenset[str]:
    """Every dict key's path in `obj` (list items share their list's path, `[]`); a managed field
    set (`fieldsV1`) counts as one value: its keys name the object's fields, not the shape."""
    out: set[str] = set()

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                out.add(where)
                if key != "fieldsV1":
                    walk(item, where)
        elif isinstance(value, list):
            for item in value:
                walk(item, path + "[]")

    walk(obj, "")
    return frozenset(out)


# Every time in a copy: the generated cluster's (the shape files hold the day they were read, later
# than the benchmarks' evaluation time, which would make every pod scheduled after its load reading).
CREATED = "2024-05-01T10:00:00Z"
_TIME = re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"')


@cache
def _template(kind: str) -> bytes:
    """The shape file with the generated cluster's time, encoded once: decoding it is the cheapest deep copy."""
    text = msgspec.json.encode(msgspec.json.decode((SHAPES / f"{kind}.json").read_bytes()))
    return _TIME.sub(f'"{CREATED}"'.encode(), text)


def pods(count: int, node_count: int, start_rv: int = 1000, pinned: bool = False) -> Iterator[Obj]:
    """`fake_apiserver_load.pods(count, node_count)`, each in a copy of the real server's pod. `pinned`
    keeps the copy's nodeSelector, which names the node the shape was read from: no generated node has
    that name, so no pod fits anywhere else."""
    template = _template("pod")
    for i, made in enumerate(generated_pods(count, node_count)):
        pod: Obj = msgspec.json.decode(template)
        meta, given = pod["metadata"], made["metadata"]
        owner = given["ownerReferences"][0]
        meta.update(
            name=given["name"],
            generateName=f"{owner['name']}-",
            namespace=given["namespace"],
            uid=given["uid"],
            resourceVersion=str(start_rv + i),
            labels=given["labels"],
            annotations=given["annotations"],
            ownerReferences=given["ownerReferences"],
        )
        spec, status = pod["spec"], pod["status"]
        spec["nodeName"] = made["spec"]["nodeName"]
        if not pinned:
            del spec["nodeSelector"]  # the shape test's pin to its own node: the generated pods have none
        spec["priority"] = made["spec"]["priority"]
        statuses = status["containerStatuses"]
        for container, wanted, state in zip(spec["containers"], made["spec"]["containers"], statuses, strict=True):
            container.update(name=wanted["name"], image=wanted["image"], resources=wanted["resources"])
            state.update(name=wanted["name"], image=wanted["image"])
        status["podIP"] = made["status"]["podIP"]
        status["podIPs"] = [{"ip": made["status"]["podIP"]}]
        _own_token_volume(spec, i)
        _spread_times(pod, i)
        yield pod


_TOKEN_VOLUME = "kube-api-access-"
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand's, which names the volume


def _own_token_volume(spec: Obj, i: int) -> None:
    """Each pod its own service-account token volume, as the admission plugin names it (five random
    characters): the shape file's one name in every pod would make all replicas' container lists one
    text, which no real list has."""
    suffix = "".join(_ALPHANUMS[i // 27**k % 27] for k in range(5))
    for item in [*spec.get("volumes", ()), *(m for c in spec["containers"] for m in c.get("volumeMounts", ()))]:
        if item["name"].startswith(_TOKEN_VOLUME):
            item["name"] = _TOKEN_VOLUME + suffix


# Seconds after a pod's creation at which the kubelet and the scheduler stamp it, by field.
_CONDITION_DELAYS = {"PodScheduled": 0, "Initialized": 1, "PodReadyToStartContainers": 3}
_STARTED = datetime.fromisoformat(CREATED.replace("Z", "+00:00"))


def _spread_times(pod: Obj, i: int) -> None:
    """Each pod its own times, as in a real cluster (the pods of one list were made over days, one
    at a time): created 5 s after the one before, then scheduled, initialized, started and ready a
    few seconds later. The shape file's times are all one second (its pod came up at once); so many
    equal texts would let a decoder remember them across pods, which no real list allows."""
    created = _STARTED + timedelta(seconds=5 * i)

    def at(delay: int) -> str:
        return (created + timedelta(seconds=delay)).strftime("%Y-%m-%dT%H:%M:%SZ")

    meta, status = pod["metadata"], pod["status"]
    meta["creationTimestamp"] = at(0)
    for k, managed in enumerate(meta.get("managedFields") or ()):
        managed["time"] = at(k * 4)
    status["startTime"] = at(1)
    for condition in status.get("conditions") or ():
        condition["lastTransitionTime"] = at(_CONDITION_DELAYS.get(condition["type"], 4))
    for state in status.get("containerStatuses") or ():
        running = state.get("state", {}).get("running")
        if running is not None:
            running["startedAt"] = at(3)


def nodes(count: int, start_rv: int = 1) -> Iterator[Obj]:
    """`fake_apiserver_load.nodes(count)`, each in a copy of the real server's node."""
    template = _template("node")
    for i, made in enumerate(generated_nodes(count)):
        node: Obj = msgspec.json.decode(template)
        meta, given, name = node["metadata"], made["metadata"], made["metadata"]["name"]
        meta.update(
            name=name,
            uid=f"33333333-0000-0000-0000-{i:012d}",
            resourceVersion=str(start_rv + i),
            labels={**meta["labels"], **given["labels"]},
        )
        status = node["status"]
        status["capacity"], status["allocatable"] = made["status"]["capacity"], made["status"]["allocatable"]
        status["addresses"] = [
            {"type": "InternalIP", "address": f"10.0.{i >> 8 & 255}.{i & 255}"},
            {"type": "Hostname", "address": name},
        ]
        yield node
