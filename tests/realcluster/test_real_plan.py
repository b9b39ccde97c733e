"""`descheduler plan --kubeconfig` against a real kube-apiserver: Nodes created through the API,
pods bound with the pods/binding subresource, load published as Koordinator NodeMetric objects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from realcluster_support import (
    NODE_METRIC_POLICY as POLICY,
)
from realcluster_support import (
    bind,
    create_node,
    create_pod,
    delete_node,
    install_node_metric_crd,
    install_our_crds,
    pod_manifest,
    publish_node_metric,
    run_pod,
)

from descheduler.kube import KubeClient


def test_plan_on_the_real_cluster_exits_0_and_names_every_node(
    kube: KubeClient, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    install_our_crds(kube)
    install_node_metric_crd(kube)
    hot, cool_1, cool_2 = (f"{namespace}-{suffix}"[:63] for suffix in ("hot", "cool-1", "cool-2"))
    nodes = (hot, cool_1, cool_2)
    try:
        for name in nodes:
            create_node(kube, name, cpu="8", memory="32Gi")
        pods = [(f"web-{i}", hot) for i in range(4)] + [("db-0", cool_1)]
        for pod, node in pods:
            create_pod(kube, namespace, pod_manifest(pod, cpu="1", memory="2Gi", labels={"app": pod.split("-")[0]}))
            bind(kube, namespace, pod, node)
            run_pod(kube, namespace, pod)
        on_hot = [(namespace, p, "1600m", "2Gi") for p, n in pods if n == hot]
        publish_node_metric(kube, hot, cpu="7200m", memory="12Gi", pods=on_hot)  # 90% cpu
        publish_node_metric(kube, cool_1, cpu="1", memory="4Gi", pods=[(namespace, "db-0", "800m", "2Gi")])
        publish_node_metric(kube, cool_2, cpu="400m", memory="2Gi")
        policy = tmp_path / "policy.yaml"
        policy.write_text(POLICY)

        command = [sys.executable, "-m", "descheduler", "plan", "--kubeconfig", str(kubeconfig)]
        command += ["--policy", str(policy), "-o", "json"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)
        classes = {n["name"]: n["class"] for n in plan["nodes"] if n["name"] in nodes}
        assert classes == {hot: "high", cool_1: "low", cool_2: "low"}, plan["nodes"]
        assert "pods /" not in done.stdout + done.stderr
    finally:
        for name in nodes:
            delete_node(kube, name)
