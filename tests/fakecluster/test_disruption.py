from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.apiserver.clock import rfc3339
from descheduler.fakecluster.disruption import DisruptionController

from .conftest import T0, pod, replicaset


def _pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def _seed(store: Store, ready: int, unready: int = 0, replicas: int | None = None) -> None:
    rs = replicaset("web", replicas if replicas is not None else ready + unready)
    objs = [rs]
    objs += [pod(f"web-r{i}", node_name="n", phase="Running", ready=True, owner=rs) for i in range(ready)]
    objs += [pod(f"web-u{i}", node_name="n", phase="Running", owner=rs) for i in range(unready)]
    store.load(objs)


@pytest.mark.parametrize(
    ("spec", "ready", "unready", "replicas", "expected"),
    [
        ({"minAvailable": 2}, 4, 0, None, (4, 2, 4, 2)),
        ({"minAvailable": 4}, 3, 1, None, (3, 4, 4, 0)),
        ({"minAvailable": "50%"}, 3, 0, 5, (3, 3, 5, 0)),
        ({"maxUnavailable": 1}, 4, 0, None, (4, 3, 4, 1)),
        ({"maxUnavailable": "25%"}, 6, 0, 8, (6, 6, 8, 0)),
    ],
)
def test_status_follows_the_budget(
    store: Store, spec: dict[str, Any], ready: int, unready: int, replicas: int | None, expected: tuple[int, ...]
) -> None:
    _seed(store, ready, unready, replicas)
    store.create(_pdb(**spec))
    DisruptionController(store).step(T0)
    status = store.get("poddisruptionbudgets.policy", "web", "default")["status"]
    got = (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"], status["disruptionsAllowed"])
    assert got == expected
    assert status["observedGeneration"] == 1


def test_observed_generation_follows_a_spec_change(store: Store) -> None:
    _seed(store, 3)
    store.create(_pdb(minAvailable=1))
    controller = DisruptionController(store)
    controller.step(T0)
    store.modify("poddisruptionbudgets.policy", "web", "default", lambda p: p["spec"].update(minAvailable=2))
    controller.step(T0 + 1)
    status = store.get("poddisruptionbudgets.policy", "web", "default")["status"]
    assert status["observedGeneration"] == 2
    assert status["disruptionsAllowed"] == 1


def test_a_disrupted_pod_is_not_healthy_until_its_entry_expires(store: Store) -> None:
    _seed(store, 3)
    store.create(_pdb(minAvailable=1))
    controller = DisruptionController(store)
    controller.step(T0)

    def disrupt(obj: dict[str, Any]) -> None:
        obj["status"]["disruptedPods"] = {"web-r0": rfc3339(T0)}

    store.modify("poddisruptionbudgets.policy", "web", "default", disrupt, subresource="status")
    controller.step(T0 + 60)
    status = store.get("poddisruptionbudgets.policy", "web", "default")["status"]
    assert status["currentHealthy"] == 2 and status["disruptedPods"] == {"web-r0": rfc3339(T0)}
    controller.step(T0 + 121)
    status = store.get("poddisruptionbudgets.policy", "web", "default")["status"]
    assert status["currentHealthy"] == 3 and status["disruptedPods"] == {}


def test_terminating_pods_are_not_healthy(store: Store) -> None:
    _seed(store, 3)
    store.create(_pdb(minAvailable=1))
    store.delete("pods", "web-r0", "default")
    DisruptionController(store).step(T0)
    assert store.get("poddisruptionbudgets.policy", "web", "default")["status"]["currentHealthy"] == 2
