from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.kubelet import Kubelet
from descheduler.fakecluster.usage import ResourceModels, Series, UsageModel, UsageSpec

from .conftest import T0, pod


def _state(store: Store, name: str) -> tuple[str, str]:
    obj = store.get("pods", name, "default")
    ready = [c["status"] for c in obj["status"].get("conditions", []) if c["type"] == "Ready"]
    return obj["status"]["phase"], ready[0] if ready else "-"


def test_a_bound_pod_starts_then_becomes_ready_after_the_delays(store: Store) -> None:
    store.load([pod("p", node_name="n1")])
    kubelet = Kubelet(store, start_delay=2, ready_delay=5)
    kubelet.step(T0)
    assert _state(store, "p") == ("Pending", "-")
    kubelet.step(T0 + 2)
    assert _state(store, "p") == ("Running", "False")
    kubelet.step(T0 + 6)
    assert _state(store, "p") == ("Running", "False")
    kubelet.step(T0 + 7)
    assert _state(store, "p") == ("Running", "True")
    assert store.get("pods", "p", "default")["status"]["startTime"] == "2026-01-15T12:00:02Z"


def test_unbound_pods_stay_pending(store: Store) -> None:
    store.load([pod("p")])
    kubelet = Kubelet(store, start_delay=0, ready_delay=0)
    kubelet.step(T0 + 100)
    assert _state(store, "p") == ("Pending", "-")


def test_a_terminating_pod_is_removed_after_its_grace_period(store: Store) -> None:
    store.load([pod("p", node_name="n1", phase="Running", ready=True)])
    store.delete("pods", "p", "default", grace_period_seconds=10)
    kubelet = Kubelet(store)
    kubelet.step(T0 + 9)
    assert store.exists("pods", "p", "default")
    kubelet.step(T0 + 10)
    assert not store.exists("pods", "p", "default")


def test_usage_follows_the_model_of_each_running_pod(store: Store) -> None:
    store.load([pod("p", node_name="n1", phase="Running", ready=True, cpu="2", memory="1Gi"), pod("q")])
    spec = UsageSpec(default=ResourceModels(cpu=UsageModel(fraction=0.25), memory=UsageModel(constant="100Mi")))
    kubelet = Kubelet(store, spec)
    kubelet.step(T0)
    assert list(kubelet.usage) == ["default/p"]
    usage = kubelet.usage["default/p"]
    assert (usage.node, usage.cpu, usage.memory) == ("n1", 500, 100 * 2**20)


def test_usage_is_read_afresh_at_each_series_step(store: Store) -> None:
    """Between a series' steps the kubelet reuses a pod's usage; at each step it reads the new value."""
    store.load([pod("p", node_name="n1", phase="Running", ready=True, cpu="1")])
    series = UsageModel(series=Series(values=[0.2, 0.7], step_seconds=60))
    kubelet = Kubelet(store, UsageSpec(default=ResourceModels(cpu=series)), began=T0)
    seen = []
    for t in (0, 1, 30, 59, 60, 61, 119, 120):
        kubelet.step(T0 + t)
        seen.append(kubelet.usage["default/p"].cpu)
    assert seen == [200, 200, 200, 200, 700, 700, 700, 200]


def test_usage_held_per_period_changes_only_at_its_multiples(store: Store) -> None:
    """With hold_seconds, a model that changes continuously (a diurnal curve) is read at the start of each
    period and held, so what is seen does not depend on how often the cluster steps."""
    store.load([pod("p", node_name="n1", phase="Running", ready=True, cpu="1")])
    rising = UsageModel.model_validate({"fraction": 0.5, "diurnal": {"curve": [0.0, 2.0]}})  # 0 at 00:00, 2 at 12:00
    spec = UsageSpec(default=ResourceModels(cpu=rising))
    start = T0 - 12 * 3600  # T0 is 12:00 UTC: start at midnight
    free, held = Kubelet(store, spec, began=start), Kubelet(store, spec, began=start, hold_seconds=1800)
    seen: dict[str, list[int]] = {"free": [], "held": []}
    for t in (0, 600, 1799, 1800, 2700, 3600):
        for name, kubelet in (("free", free), ("held", held)):
            kubelet.step(start + t)
            seen[name].append(kubelet.usage["default/p"].cpu)
    assert seen["held"] == [0, 0, 0, seen["free"][3], seen["free"][3], seen["free"][5]]
    assert seen["free"][1] > 0 and seen["free"][4] > seen["free"][3]  # without it, it changes between steps
