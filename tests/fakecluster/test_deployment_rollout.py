"""The fake Deployment controller rolls out a template change as kube-controller-manager's does
(pkg/controller/deployment): RollingUpdate with its fenceposts, Recreate, paused, a rollback to an
older ReplicaSet's template; and the ReplicaSet controller scales down in the real order.

`test_a_rollout_restart_*` and `test_a_rollback_*` are the scenario tests/realcluster/
test_real_rollout.py runs against the real controller, so the two can be compared."""

from __future__ import annotations

import random
from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.apiserver.clock import rfc3339
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.pods import is_ready, is_terminating
from descheduler.fakecluster.workloads import (
    DELETION_COST,
    REVISION,
    DeploymentController,
    ReplicaSetController,
    Strategy,
)

from .conftest import template

RESTARTED = "kubectl.kubernetes.io/restartedAt"


def deployment(replicas: int = 1, *, restarted: str = "1", **spec: Any) -> dict[str, Any]:
    pod_template = template("web")
    pod_template["metadata"]["annotations"] = {RESTARTED: restarted}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template, **spec},
    }


class Cluster:
    """The Deployment and ReplicaSet controllers stepped in the simulated cluster's order, one second
    a tick; pods are bound and made Ready by the test, as a scheduler and a kubelet would."""

    def __init__(self, store: Store, clock: SimClock) -> None:
        self.store, self.clock = store, clock
        self.deployments = DeploymentController(store)
        self.replicasets = ReplicaSetController(store, random.Random(0))
        self.fewest_ready: int | None = None  # the fewest Ready, not terminating pods seen after a tick

    def tick(self, times: int = 1) -> None:
        for _ in range(times):
            self.clock.advance(1)
            self.deployments.step(self.clock())
            self.replicasets.step(self.clock())
            serving = sum(1 for p in self.pods() if is_ready(p) and not is_terminating(p))
            self.fewest_ready = serving if self.fewest_ready is None else min(self.fewest_ready, serving)

    def pods(self) -> list[dict[str, Any]]:
        return self.store.list("pods", "default")

    def names(self, *, active: bool = True) -> list[str]:
        return [p["metadata"]["name"] for p in self.pods() if not (active and is_terminating(p))]

    def replicasets_by_revision(self) -> list[tuple[str, int]]:
        """(ReplicaSet name, spec.replicas), oldest revision first."""
        sets = self.store.list("replicasets.apps", "default")
        sets.sort(key=lambda rs: int(rs["metadata"]["annotations"][REVISION]))
        return [(rs["metadata"]["name"], rs["spec"]["replicas"]) for rs in sets]

    def run(self, name: str, *, ready: bool = True, node: str = "n1") -> None:
        """Bind the pod and report it Running (and Ready), as the scheduler and the kubelet do."""
        when = rfc3339(self.clock())

        def started(pod: dict[str, Any]) -> None:
            pod["spec"]["nodeName"] = node
            pod["status"] = {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": str(ready), "lastTransitionTime": when}],
            }

        self.store.modify("pods", name, "default", started, subresource="all")

    def run_all(self) -> None:
        for pod in self.pods():
            if not is_ready(pod) and not is_terminating(pod):
                self.run(pod["metadata"]["name"])

    def set_template(self, restarted: str) -> None:
        self.store.modify(
            "deployments.apps",
            "web",
            "default",
            lambda d: d["spec"]["template"]["metadata"]["annotations"].update({RESTARTED: restarted}),
        )

    def deployment(self) -> dict[str, Any]:
        return self.store.get("deployments.apps", "web", "default")


@pytest.fixture
def cluster(store: Store, clock: SimClock) -> Cluster:
    return Cluster(store, clock)


def rolled_out(cluster: Cluster, replicas: int = 1, **spec: Any) -> list[str]:
    """A Deployment whose pods run and are Ready; their names."""
    cluster.store.create(deployment(replicas, **spec))
    cluster.tick()
    cluster.run_all()
    cluster.tick(2)
    names = cluster.names()
    assert len(names) == replicas and all(is_ready(p) for p in cluster.pods())
    cluster.fewest_ready = None  # counted from here on
    return names


def test_a_rollout_restart_keeps_the_old_pod_until_the_new_one_is_ready(cluster: Cluster) -> None:
    [old] = rolled_out(cluster)
    cluster.set_template("2")
    cluster.tick(3)
    [new] = [n for n in cluster.names() if n != old]
    assert cluster.names() == sorted([old, new])  # surged: both run, the old one untouched
    cluster.run(new)  # Ready now
    cluster.tick(3)
    assert cluster.names(active=False) in ([new], sorted([old, new]))
    assert cluster.names() == [new]
    assert cluster.fewest_ready == 1
    [(_, old_replicas), (new_set, new_replicas)] = cluster.replicasets_by_revision()
    assert (old_replicas, new_replicas) == (0, 1) and new.startswith(new_set)
    status = cluster.deployment()["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (1, 1, 1)
    assert status["unavailableReplicas"] == 0


def test_a_new_pod_that_never_gets_ready_leaves_the_old_pod_in_place(cluster: Cluster) -> None:
    [old] = rolled_out(cluster)
    cluster.set_template("2")
    cluster.tick()
    [new] = [n for n in cluster.names() if n != old]
    cluster.run(new, ready=False)
    cluster.tick(100)
    assert cluster.names() == sorted([old, new])
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [1, 1]
    status = cluster.deployment()["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (2, 1, 1)
    assert status["unavailableReplicas"] == 1


def test_a_rollback_scales_the_new_replicaset_to_zero_and_keeps_the_old_pod(cluster: Cluster) -> None:
    [old] = rolled_out(cluster)
    [(first, _)] = cluster.replicasets_by_revision()
    cluster.set_template("2")
    cluster.tick()
    [new] = [n for n in cluster.names() if n != old]
    cluster.run(new, ready=False)
    cluster.tick(5)
    cluster.set_template("1")  # back to the first ReplicaSet's template
    cluster.tick(3)
    assert cluster.names() == [old]  # the new pod deleted (or terminating), the old one as it was
    assert is_ready(cluster.store.get("pods", old, "default"))
    # No third ReplicaSet: the first one is the new one again, at the next revision.
    [(second, second_replicas), (again, first_replicas)] = cluster.replicasets_by_revision()
    assert (second_replicas, first_replicas) == (0, 1)
    assert again == first and new.startswith(second)
    assert cluster.store.get("replicasets.apps", first, "default")["metadata"]["annotations"][REVISION] == "3"
    assert cluster.deployment()["metadata"]["annotations"][REVISION] == "3"
    assert cluster.fewest_ready == 1


def test_recreate_deletes_the_old_pod_before_making_the_new_one(cluster: Cluster) -> None:
    [old] = rolled_out(cluster, strategy={"type": "Recreate"})
    cluster.set_template("2")
    cluster.tick(3)
    assert cluster.names() == [] and cluster.names(active=False) == [old]  # terminating: still there
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [0]  # no new ReplicaSet yet
    cluster.store.finalize_pod("default", old)  # its kubelet stopped the containers
    cluster.tick(2)  # nothing the controller lists changed: it looks at pods while it waits
    [new] = cluster.names()
    assert new != old
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [0, 1]


@pytest.mark.parametrize("max_surge", [0, 1])
def test_max_unavailable_one_with_one_replica_removes_the_old_pod_at_once(cluster: Cluster, max_surge: int) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": 1}}
    [old] = rolled_out(cluster, strategy=strategy)
    cluster.set_template("2")
    cluster.tick()
    assert old not in cluster.names()
    assert cluster.fewest_ready == 0
    cluster.tick()
    assert len(cluster.names()) == 1  # its replacement, from the new ReplicaSet


def test_a_paused_deployment_does_not_roll_out_until_resumed(cluster: Cluster) -> None:
    [old] = rolled_out(cluster)
    cluster.store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(paused=True))
    cluster.set_template("2")
    cluster.tick(5)
    assert cluster.names() == [old]
    assert len(cluster.replicasets_by_revision()) == 1
    cluster.store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(paused=False))
    cluster.tick()
    assert len(cluster.replicasets_by_revision()) == 2


def test_a_paused_deployment_still_scales_its_replicaset(cluster: Cluster) -> None:
    rolled_out(cluster, paused=False)
    cluster.store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(paused=True, replicas=3))
    cluster.tick(2)
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [3]


@pytest.mark.parametrize(
    ("replicas", "max_surge", "max_unavailable", "resolved"),
    [
        (10, None, None, (3, 2)),  # the defaults, 25% each: surge rounds up, unavailable down
        (1, None, None, (1, 0)),
        (4, "50%", "50%", (2, 2)),
        (10, "0%", "5%", (0, 1)),  # both resolve to 0: maxUnavailable becomes 1
        (3, 0, 0, (0, 1)),
        (2, 1, 5, (1, 2)),  # never more unavailable than replicas
        (0, None, None, (0, 0)),
    ],
)
def test_surge_and_unavailable_resolve_as_resolve_fenceposts(
    replicas: int, max_surge: Any, max_unavailable: Any, resolved: tuple[int, int]
) -> None:
    rolling = {k: v for k, v in (("maxSurge", max_surge), ("maxUnavailable", max_unavailable)) if v is not None}
    strategy = Strategy.of(deployment(replicas, strategy={"rollingUpdate": rolling}))
    assert (strategy.max_surge, strategy.max_unavailable) == resolved


def test_a_bad_percentage_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'25'"):
        Strategy.of(deployment(4, strategy={"rollingUpdate": {"maxSurge": "25"}}))


def test_ten_replicas_roll_by_the_default_fenceposts(cluster: Cluster) -> None:
    rolled_out(cluster, 10)
    cluster.set_template("2")
    cluster.tick()  # new ReplicaSet at ceil(25% of 10) = 3; the old at 10 - floor(25% of 10) = 8
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [8, 3]
    cluster.tick()  # 11 pods now: the new one up to the surge's 13
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [8, 5]
    cluster.tick(3)  # the new pods not Ready: nothing more
    assert [replicas for _, replicas in cluster.replicasets_by_revision()] == [8, 5]
    assert cluster.fewest_ready == 8


def test_the_rollout_waits_min_ready_seconds_before_removing_the_old_pod(cluster: Cluster) -> None:
    [old] = rolled_out(cluster, minReadySeconds=10)
    cluster.set_template("2")
    cluster.tick()
    [new] = [n for n in cluster.names() if n != old]
    cluster.run(new)
    cluster.tick(9)
    assert old in cluster.names()
    cluster.tick(4)
    assert cluster.names() == [new]


def test_replicaset_scale_down_deletes_the_lowest_deletion_cost_first(store: Store, cluster: Cluster) -> None:
    store.create(deployment(4))
    cluster.tick()
    cluster.run_all()
    pods = cluster.names()
    costs = {pods[0]: "5", pods[1]: "-1", pods[2]: "100"}  # pods[3]: none, 0
    for name, cost in costs.items():
        store.modify("pods", name, "default", lambda p, c=cost: p["metadata"].setdefault("annotations", {}).update(
            {DELETION_COST: c}))  # fmt: skip
    store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(replicas=2))
    cluster.tick(2)
    assert cluster.names() == sorted([pods[0], pods[2]])


def test_replicaset_scale_down_prefers_not_ready_over_deletion_cost(store: Store, cluster: Cluster) -> None:
    store.create(deployment(2))
    cluster.tick()
    first, second = cluster.names()
    cluster.run(first)
    cluster.run(second, ready=False)
    store.modify("pods", second, "default", lambda p: p["metadata"].update(annotations={DELETION_COST: "1000"}))
    store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(replicas=1))
    cluster.tick(2)
    assert cluster.names() == [first]


def test_replicaset_scale_down_takes_a_pod_doubled_up_on_a_node_first(store: Store, cluster: Cluster) -> None:
    store.create(deployment(3))
    cluster.tick()
    a, b, c = cluster.names()
    cluster.run(a, node="n1")
    cluster.run(b, node="n2")
    cluster.run(c, node="n2")
    store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(replicas=2))
    cluster.tick(2)
    survivors = cluster.names()
    assert a in survivors and len(survivors) == 2
