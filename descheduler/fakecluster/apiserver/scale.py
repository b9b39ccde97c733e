"""The /scale subresource of workloads, as autoscaling/v1 Scale."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def scale_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    match_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {
            "replicas": int(status.get("replicas") or 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(match_labels.items())),
        },
    }
