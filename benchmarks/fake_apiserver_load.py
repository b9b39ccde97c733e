"""Load 5,000 nodes and 150,000 pods into the fake API server, then list all pods through the
official client in pages of 500. Reports load time, list time and peak RSS.

    .venv/bin/python benchmarks/fake_apiserver_load.py [--nodes 5000] [--pods 150000]
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from collections.abc import Iterator
from typing import Any

from kubernetes import client

from descheduler.fakecluster.apiserver import FakeApiServer


def nodes(count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{i:05d}",
                "labels": {"kubernetes.io/hostname": f"node-{i:05d}", "topology.kubernetes.io/zone": f"zone-{i % 3}"},
            },
            "spec": {},
            "status": {
                "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                "allocatable": {"cpu": "31500m", "memory": "125Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }


def pods(count: int, node_count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        app = f"app-{i % 3000:04d}"
        ns = f"team-{i % 50:02d}"
        rs = f"{app}-7d9f8c6b5"
        yield {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{rs}-{i:06d}",
                "namespace": ns,
                "uid": f"00000000-0000-0000-0000-{i:012d}",
                "creationTimestamp": "2024-05-01T10:00:00Z",
                "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "tier": "backend" if i % 2 else "frontend"},
                "annotations": {"koordinator.sh/qosClass": "LS"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": rs,
                        "uid": f"11111111-0000-0000-0000-{i % 3000:012d}",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "nodeName": f"node-{i % node_count:05d}",
                "priority": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": f"registry.example.com/{app}:1.4.2",
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                        "resources": {
                            "requests": {"cpu": "250m", "memory": "512Mi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                    },
                    {
                        "name": "sidecar",
                        "image": "registry.example.com/proxy:2.0",
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "64Mi"},
                            "limits": {"cpu": "200m", "memory": "128Mi"},
                        },
                    },
                ],
            },
            "status": {
                "phase": "Running",
                "qosClass": "Burstable",
                "podIP": f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}",
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            },
        }


def peak_rss_mib() -> float:
    # ru_maxrss is KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--freeze-gc", action="store_true", help="gc.freeze() after loading")
    args = parser.parse_args()

    with FakeApiServer() as server, server.api_client() as api:
        started = time.perf_counter()
        server.store.load(nodes(args.nodes))
        server.store.load(pods(args.pods, args.nodes))
        load_seconds = time.perf_counter() - started
        rss_after_load = peak_rss_mib()
        if args.freeze_gc:
            # The seeded store is long-lived; keep the cyclic GC from re-walking it on every page decode.
            gc.freeze()

        core = client.CoreV1Api(api)
        started = time.perf_counter()
        seen, pages, token = 0, 0, None
        while True:
            resp = core.list_pod_for_all_namespaces(limit=args.limit, _continue=token, _preload_content=False)
            page = json.loads(resp.data)
            seen += len(page["items"])
            pages += 1
            token = page["metadata"].get("continue")
            if not token:
                break
        list_seconds = time.perf_counter() - started

    print(f"loaded {args.nodes} nodes + {args.pods} pods in {load_seconds:.2f} s (peak RSS {rss_after_load:.0f} MiB)")
    print(f"listed {seen} pods in {pages} pages of {args.limit} in {list_seconds:.2f} s")
    print(f"peak RSS of the whole process: {peak_rss_mib():.0f} MiB")
    return 0 if seen == args.pods else 1


if __name__ == "__main__":
    sys.exit(main())
