from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.apiserver.printing import pod_row
from descheduler.fakecluster.kubelet import Kubelet
from descheduler.fakecluster.pods import container_id, container_statuses, reported_pod
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


def test_a_step_with_nothing_written_and_nothing_due_passes_over_no_pod(store: Store) -> None:
    """The pods are passed over again only when written, or when a start, a readiness, a deletion's
    grace or a usage step falls due: the usage seen stays the same mapping until then."""
    store.load([pod("p", node_name="n1", phase="Running", ready=True, cpu="1")])
    series = UsageModel(series=Series(values=[0.2, 0.7], step_seconds=60))
    kubelet = Kubelet(store, UsageSpec(default=ResourceModels(cpu=series)), began=T0)
    kubelet.step(T0)
    first = kubelet.usage
    kubelet.step(T0 + 59)
    assert kubelet.usage is first
    store.load([pod("q", node_name="n1", phase="Running", ready=True, cpu="1")])
    kubelet.step(T0 + 59)
    assert list(kubelet.usage) == ["default/p", "default/q"]
    written = kubelet.usage
    kubelet.step(T0 + 60)  # the series' next step, with nothing written
    assert kubelet.usage is not written and kubelet.usage["default/p"].cpu == 700


# ------------------------------------------------------------------ container statuses


def _containers(store: Store, name: str) -> list[dict[str, Any]]:
    statuses: list[dict[str, Any]] = store.get("pods", name, "default")["status"].get("containerStatuses") or []
    return statuses


def _printed_ready(store: Store, name: str) -> str:
    cells, _ = pod_row(store.get("pods", name, "default"), T0)
    return str(cells[1])


def test_a_started_pod_reports_its_containers_running_and_not_yet_ready(store: Store) -> None:
    store.load([pod("p", node_name="n1")])
    kubelet = Kubelet(store, start_delay=0, ready_delay=5)
    kubelet.step(T0)
    [status] = _containers(store, "p")
    assert status["name"] == "web"
    assert status["state"] == {"running": {"startedAt": "2026-01-15T12:00:00Z"}}
    assert (status["ready"], status["started"], status["restartCount"]) == (False, True, 0)
    assert status["containerID"].startswith("containerd://")
    assert _printed_ready(store, "p") == "0/1"


def test_a_ready_pod_reports_its_containers_ready(store: Store) -> None:
    store.load([pod("p", node_name="n1")])
    kubelet = Kubelet(store, start_delay=0, ready_delay=5)
    kubelet.step(T0)
    kubelet.step(T0 + 5)
    assert [c["ready"] for c in _containers(store, "p")] == [True]
    assert _printed_ready(store, "p") == "1/1"


def test_container_statuses_are_written_once_per_change_not_at_every_step(store: Store) -> None:
    store.load([pod("p", node_name="n1")])
    kubelet = Kubelet(store, start_delay=0, ready_delay=0)
    kubelet.step(T0)
    version = store.get("pods", "p", "default")["metadata"]["resourceVersion"]
    for step in range(1, 20):
        kubelet.step(T0 + step)
    assert store.get("pods", "p", "default")["metadata"]["resourceVersion"] == version


def test_a_sidecar_runs_beside_the_containers_and_an_init_container_has_completed() -> None:
    obj = pod("p", node_name="n1", phase="Running", ready=True)
    obj["metadata"]["uid"] = "u-1"
    obj["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox"},
        {"name": "proxy", "restartPolicy": "Always"},
    ]
    status = container_statuses(obj, "2026-01-15T12:00:00Z", ready=True)
    setup, proxy = status["initContainerStatuses"]
    assert setup["state"]["terminated"]["reason"] == "Completed"
    assert (setup["ready"], setup["started"]) == (False, False)
    assert (proxy["ready"], proxy["started"]) == (True, True)
    obj["status"].update(status)
    cells, _ = pod_row(obj, T0)
    assert cells[1:3] == ["2/2", "Running"]


def test_container_ids_differ_between_pods_and_containers_and_repeat_for_the_same() -> None:
    a, b = pod("a"), pod("b")
    a["metadata"]["uid"], b["metadata"]["uid"] = "u-a", "u-b"
    assert container_id(a, "web") == container_id(a, "web")
    assert len({container_id(a, "web"), container_id(a, "log"), container_id(b, "web")}) == 3


@pytest.mark.parametrize(
    ("phase", "ready", "expected"),
    [
        ("Running", True, ("1/1", "Running")),
        ("Running", False, ("0/1", "Running")),
        ("Succeeded", False, ("0/1", "Completed")),
        ("Failed", False, ("0/1", "Error")),
    ],
)
def test_a_loaded_pod_gets_the_container_statuses_of_its_phase_and_readiness(
    phase: str, ready: bool, expected: tuple[str, str]
) -> None:
    obj = pod("p", node_name="n1", phase=phase, ready=ready)
    obj["metadata"].update(uid="u-1", creationTimestamp="2026-01-15T11:00:00Z")
    reported = reported_pod(obj, "2026-01-15T12:00:00Z")
    cells, _ = pod_row(reported, T0)
    assert tuple(cells[1:3]) == expected
    state = reported["status"]["containerStatuses"][0]["state"]
    assert "2026-01-15T11:00:00Z" in str(state)  # since creation: the pod has no startTime
    assert "containerStatuses" not in obj["status"]  # the scenario's object is left as it was


def test_a_loaded_pod_keeps_the_container_statuses_it_has_and_an_unbound_one_gets_none() -> None:
    given = pod("p", node_name="n1", phase="Running", ready=True)
    given["status"]["containerStatuses"] = [{"name": "web", "ready": False, "state": {"waiting": {"reason": "X"}}}]
    assert reported_pod(given, "2026-01-15T12:00:00Z")["status"] == given["status"]
    assert "containerStatuses" not in reported_pod(pod("q"), "2026-01-15T12:00:00Z")["status"]
