"""In real time the simulated cluster answers pod changes between its ticks, as a real one does:
kube-apiserver v1.36 with its ReplicaSet controller and kube-scheduler bind an evicted pod's
replacement within about 10 ms of the eviction (../shared/kube/README.md)."""

from __future__ import annotations

import threading
import time

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario


def test_an_evicted_pods_replacement_is_made_and_bound_without_waiting_for_a_tick() -> None:
    with SimulatedCluster(load_demo_scenario()) as cluster:
        cluster.advance(60)
        cluster.tick = 3600.0  # no tick during the test: only the reaction to the change can act
        before = {p["metadata"]["name"] for p in cluster.store.list("pods", "shop", label_selector="app=web")}
        stop = threading.Event()
        runner = threading.Thread(target=cluster.run_realtime, args=(stop,), daemon=True)
        runner.start()
        try:
            cluster.store.delete("pods", "web-7d9f5-bcx7d", "shop")  # as an eviction does: terminating

            def replacement() -> str:
                pods = cluster.store.list("pods", "shop", label_selector="app=web")
                new = [p for p in pods if p["metadata"]["name"] not in before]
                return str(new[0]["spec"].get("nodeName", "")) if new else ""

            deadline = time.monotonic() + 10
            while not replacement() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert replacement(), "no replacement was made and bound before the next tick"
        finally:
            stop.set()
            runner.join(10)
        assert not runner.is_alive()
