"""kube-scheduler's extender request bodies: a pending v1.Pod as it marshals one, and ExtenderArgs.

A plain module (no pytest), so the benchmark sends the same bodies the contract tests do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.builders import NOW, ts, uid

Obj = dict[str, Any]


def kube_pod(
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    owner: str | None = "web",
    namespace: str = "default",
    limits: Mapping[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A pending v1.Pod as kube-scheduler marshals it into ExtenderArgs.Pod (fields the API server
    defaults included; the extender must ignore what it does not read)."""
    resources: Obj = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = dict(limits)
    meta: Obj = {
        "name": name,
        "generateName": f"{owner}-" if owner else None,
        "namespace": namespace,
        "uid": uid("pod", namespace, name),
        "resourceVersion": "4711",
        "creationTimestamp": ts(NOW),
        "labels": {"app": owner or name, "pod-template-hash": "7d9f5"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": ts(NOW)},
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner,
                "uid": uid("ReplicaSet", namespace, owner),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    else:
        del meta["generateName"]
    return {
        "metadata": meta,
        "spec": {
            "volumes": [
                {"name": "kube-api-access-x", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/app:1.0",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": resources,
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "securityContext": {},
            "schedulerName": "load-aware-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            **spec,
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def extender_args(pod: Obj, names: Sequence[str] | None = None, nodes: Sequence[Obj] | None = None) -> bytes:
    """ExtenderArgs as Go's encoding/json writes it: every field present, the unused one null."""
    body = {"Pod": pod, "Nodes": {"items": list(nodes)} if nodes is not None else None, "NodeNames": names}
    return json.dumps(body, separators=(",", ":")).encode()
