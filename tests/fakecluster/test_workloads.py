import random
import re

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.workloads import (
    DeploymentController,
    GarbageCollector,
    PodGarbageCollector,
    ReplicaSetController,
    StatefulSetController,
    template_hash,
)

from .conftest import T0, names, node, pod, replicaset, template

POD_NAME = re.compile(r"^web-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def test_replicaset_creates_missing_pods_from_its_template(store: Store) -> None:
    store.load([replicaset("web", 3)])
    ReplicaSetController(store, random.Random(1)).step(T0)
    pods = store.list("pods")
    assert len(pods) == 3
    for p in pods:
        assert POD_NAME.match(p["metadata"]["name"])
        assert p["metadata"]["labels"] == {"app": "web"}
        assert p["metadata"]["ownerReferences"][0]["uid"] == "uid-web"
        assert p["metadata"]["ownerReferences"][0]["controller"] is True
        assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
        assert p["status"]["phase"] == "Pending"


def test_replicaset_pod_names_are_deterministic_for_a_seed(clock: SimClock) -> None:
    runs = []
    for _ in range(2):
        s = Store(clock=clock, pod_termination_delay=None)
        s.load([replicaset("web", 4)])
        ReplicaSetController(s, random.Random(42)).step(T0)
        runs.append(names(s))
    assert runs[0] == runs[1]


def test_replicaset_recreates_a_deleted_pod(store: Store) -> None:
    rs = replicaset("web", 2)
    store.load([rs, pod("web-aaaaa", node_name="n1", phase="Running", owner=rs)])
    controller = ReplicaSetController(store, random.Random(0))
    controller.step(T0)
    assert len(store.list("pods")) == 2
    store.delete("pods", "web-aaaaa", "default", grace_period_seconds=0)
    controller.step(T0 + 1)
    current = names(store)
    assert len(current) == 2 and "web-aaaaa" not in current


def test_terminating_pods_do_not_count_as_replicas(store: Store) -> None:
    rs = replicaset("web", 1)
    store.load([rs, pod("web-aaaaa", node_name="n1", phase="Running", owner=rs)])
    store.delete("pods", "web-aaaaa", "default")  # graceful: stays, terminating
    ReplicaSetController(store, random.Random(0)).step(T0)
    assert len(store.list("pods")) == 2


def test_replicaset_scales_down_unscheduled_pods_first(store: Store) -> None:
    rs = replicaset("web", 1)
    store.load([rs, pod("web-bound", node_name="n1", phase="Running", owner=rs), pod("web-pending", owner=rs)])
    ReplicaSetController(store, random.Random(0)).step(T0)
    assert names(store) == ["web-bound"]
    assert store.get("replicasets.apps", "web", "default")["status"]["replicas"] == 1


def test_deployment_creates_one_replicaset_with_its_replicas(store: Store) -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")},
    }
    store.create(deploy)
    controller = DeploymentController(store)
    controller.step(T0)
    controller.step(T0 + 1)
    [rs] = store.list("replicasets.apps")
    assert rs["metadata"]["name"] == f"web-{template_hash(template('web'))}"
    assert rs["spec"]["replicas"] == 3
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == template_hash(template("web"))


def test_deployment_scale_reaches_its_replicaset(store: Store) -> None:
    store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")},
        }
    )
    controller = DeploymentController(store)
    controller.step(T0)
    store.modify("deployments.apps", "web", "default", lambda d: d["spec"].update(replicas=5))
    controller.step(T0 + 1)
    assert store.list("replicasets.apps")[0]["spec"]["replicas"] == 5


def test_statefulset_recreates_its_missing_ordinal(store: Store) -> None:
    store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}, "template": template("db")},
        }
    )
    controller = StatefulSetController(store)
    controller.step(T0)
    assert names(store) == ["db-0", "db-1", "db-2"]
    store.delete("pods", "db-1", "default")  # unbound: gone at once
    controller.step(T0 + 1)
    assert names(store) == ["db-0", "db-1", "db-2"]
    assert store.get("pods", "db-1", "default")["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"


def test_statefulset_scale_down_removes_the_highest_ordinals(store: Store) -> None:
    store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}, "template": template("db")},
        }
    )
    controller = StatefulSetController(store)
    controller.step(T0)
    store.modify("statefulsets.apps", "db", "default", lambda s: s["spec"].update(replicas=1))
    controller.step(T0 + 1)
    assert names(store) == ["db-0"]


def test_garbage_collector_deletes_pods_whose_owner_is_gone(store: Store) -> None:
    rs = replicaset("web", 1)
    store.load([rs, pod("orphan", owner=rs), pod("bare")])
    store.delete("replicasets.apps", "web", "default")
    GarbageCollector(store).step(T0)
    assert names(store) == ["bare"]


def test_garbage_collector_keeps_pods_whose_owner_exists(store: Store) -> None:
    rs = replicaset("web", 1)
    store.load([rs, pod("child", owner=rs)])
    GarbageCollector(store).step(T0)
    assert names(store) == ["child"]


def test_garbage_collector_treats_a_recreated_owner_with_another_uid_as_gone(store: Store) -> None:
    rs = replicaset("web", 1)
    store.load([rs, pod("child", owner=rs)])
    store.delete("replicasets.apps", "web", "default")
    store.create(replicaset("web", 1) | {"metadata": {"name": "web", "namespace": "default"}})
    GarbageCollector(store).step(T0)
    assert names(store) == []


def test_pod_gc_force_deletes_pods_of_a_deleted_node_after_the_quarantine(store: Store) -> None:
    """kube-controller-manager's podgc: orphans (bound to a node that no longer exists) go after 40 s."""
    store.load([node("n1"), node("n2"), pod("on-n1", node_name="n1", phase="Running"), pod("on-n2", node_name="n2")])
    gc = PodGarbageCollector(store)
    store.delete("nodes", "n1")
    gc.step(T0)
    gc.step(T0 + 39)
    assert names(store) == ["on-n1", "on-n2"]
    gc.step(T0 + 40)
    assert names(store) == ["on-n2"]  # gone at once: grace period 0, no kubelet to wait for


def test_pod_gc_forgets_a_node_that_came_back(store: Store) -> None:
    store.load([node("n1"), pod("on-n1", node_name="n1", phase="Running")])
    gc = PodGarbageCollector(store)
    store.delete("nodes", "n1")
    gc.step(T0)
    store.create(node("n1"))
    gc.step(T0 + 30)
    store.delete("nodes", "n1")
    gc.step(T0 + 50)  # missing again for 20 s only
    assert names(store) == ["on-n1"]


def test_garbage_collector_deletes_a_reservation_whose_migration_job_is_gone(store: Store) -> None:
    """As kube-controller-manager's: a dependent goes with its owner (the Reservation's ownerReference)."""
    job = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {"name": "move-1", "uid": "uid-job-1"},
        "spec": {"podRef": {"namespace": "default", "name": "web-0"}},
    }
    owner = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "PodMigrationJob", "name": "move-1"}
    reservation = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "room-1", "ownerReferences": [{**owner, "uid": "uid-job-1", "controller": True}]},
        "spec": {"nodeName": "n1", "resources": {"cpu": "1"}},
    }
    store.load([job, reservation])
    GarbageCollector(store).step(T0)
    assert names(store, "reservations.descheduler.dev") == ["room-1"]
    store.delete("podmigrationjobs.descheduler.dev", "move-1")
    GarbageCollector(store).step(T0)
    assert names(store, "reservations.descheduler.dev") == []


def test_a_controller_passes_only_after_its_inputs_were_written(store: Store) -> None:
    """An unchanged cluster is not listed again (a simulated day steps thousands of times); any write
    to a resource the controller reads, its own writes included, brings the next pass."""
    rs = replicaset("web", 2)
    store.load([rs, pod("web-aaaaa", node_name="n1", phase="Running", owner=rs)])
    controller = ReplicaSetController(store, random.Random(0))
    listed = []
    real_list = store.list

    def counting_list(resource: str, *args: object, **kwargs: object) -> list[dict[str, object]]:
        listed.append(resource)
        return real_list(resource, *args, **kwargs)  # type: ignore[arg-type]

    store.list = counting_list  # type: ignore[method-assign]
    controller.step(T0)  # creates the missing pod: a write to its own input
    controller.step(T0 + 1)  # reads what it wrote, finds nothing to do
    passes = len(listed)
    controller.step(T0 + 2)
    controller.step(T0 + 3)
    assert len(listed) == passes and len(names(store)) == 2
    store.delete("pods", "web-aaaaa", "default", grace_period_seconds=0)
    controller.step(T0 + 4)
    assert len(listed) > passes
    assert len(names(store)) == 2 and "web-aaaaa" not in names(store)


def test_pod_gc_keeps_passing_while_an_orphan_waits_out_its_quarantine(store: Store) -> None:
    store.load([node("n1"), pod("orphan", node_name="gone", phase="Running")])
    gc = PodGarbageCollector(store, quarantine=40)
    gc.step(T0)
    gc.step(T0 + 10)  # nothing written since: still counting the orphan's time
    assert "orphan" in names(store)
    gc.step(T0 + 41)
    assert "orphan" not in names(store)
