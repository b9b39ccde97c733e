"""Workload controllers and garbage collection: what keeps a cluster's pods coming back.

Each controller has `step(now)`; a step reads the store, compares desired with actual and
writes the difference, and is skipped when nothing it reads was written since its last pass.
Simplified from kube-controller-manager: no expectations cache — a step acts on what the store
holds. Deployments roll out as the real controller does (see `DeploymentController`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from descheduler.fakecluster.apiserver import ApiError, Store
from descheduler.fakecluster.apiserver.clock import instant_of
from descheduler.fakecluster.pods import (
    Obj,
    controller_ref,
    is_active,
    is_ready,
    is_terminal,
    is_terminating,
    owned_by,
    owner_reference,
)

log = logging.getLogger(__name__)

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet


def _live(store: Store, resource: str) -> list[Obj]:
    """The objects of `resource` not being deleted: a controller leaves those alone (read only: the
    controllers write through the store, and copy what they build from)."""
    return [obj for obj in store.list(resource, shared=True) if not is_terminating(obj)]


def _pod_from_template(owner: Obj, name: str) -> Obj:
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": template.get("spec") or {"containers": []},
    }


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _write_status(store: Store, obj: Obj, status: dict[str, Any]) -> None:
    merged = {**(obj.get("status") or {}), **status}
    if merged == obj.get("status"):
        return
    try:
        store.modify(
            store.type_of(obj),
            obj["metadata"]["name"],
            obj["metadata"]["namespace"],
            lambda o: {**o, "status": merged},
            subresource="status",
        )
    except ApiError as err:
        if err.code != 404:
            raise


class _Inputs:
    """The resources a level-triggered controller reads. An unchanged cluster gives the same decisions,
    so a pass over it would write nothing: `run` skips the pass unless one of them was written since
    the last pass finished (the pass's own writes included)."""

    def __init__(self, store: Store, *resources: str) -> None:
        self.store = store
        self.resources = resources
        self._done: tuple[int, ...] | None = None

    def run(self, sync: Callable[[], None], *, anyway: bool = False) -> None:
        seen = self.store.written(*self.resources)
        if anyway or seen != self._done:
            sync()
            self._done = seen


class ReplicaSetController:
    """Keeps spec.replicas active pods per ReplicaSet, named <rs>-<5 random chars>; a pod counts as
    available once Ready for spec.minReadySeconds (pkg/controller/replicaset)."""

    def __init__(self, store: Store, rng: random.Random | None = None) -> None:
        self.store = store
        self.rng = rng or random.Random(0)
        self._inputs = _Inputs(store, "pods", "replicasets.apps")
        self._maturing = False  # a Ready pod waits out minReadySeconds: a pass is due as time goes on

    def _name(self, prefix: str, namespace: str) -> str:
        while True:
            name = prefix + "-" + "".join(self.rng.choices(_NAME_CHARS, k=5))
            if not self.store.exists("pods", name, namespace):
                return name

    def step(self, now: float) -> None:
        self._inputs.run(lambda: self._sync(now), anyway=self._maturing)

    def _sync(self, now: float) -> None:
        by_owner: dict[str, list[Obj]] = {}  # one listing, grouped by controller UID
        for pod in self.store.list("pods", shared=True):
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid"):
                by_owner.setdefault(str(ref["uid"]), []).append(pod)
        replicasets = _live(self.store, "replicasets.apps")
        self._maturing = False
        for rs in replicasets:
            meta = rs["metadata"]
            ns = meta["namespace"]
            owned = [p for p in by_owner.get(str(meta.get("uid")), []) if p["metadata"].get("namespace") == ns]
            active = [p for p in owned if is_active(p)]
            want = _replicas(rs)
            created = [
                self.store.create(_pod_from_template(rs, self._name(meta["name"], ns)))
                for _ in range(want - len(active))
            ]
            if len(active) > want:
                doubled = _pods_per_node(_related_pods(rs, replicasets, by_owner))
                ranked = sorted(active, key=lambda p: _deletion_order(p, doubled))
                for pod in ranked[: len(active) - want]:
                    _delete(self.store, pod)
                active = ranked[len(active) - want :]
            active += created
            min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
            ready = [p for p in active if is_ready(p)]
            available = sum(1 for p in ready if _available(p, min_ready, now))
            self._maturing = self._maturing or available < len(ready)
            _write_status(
                self.store,
                rs,
                {
                    "replicas": len(active),
                    "readyReplicas": len(ready),
                    "availableReplicas": available,
                    "observedGeneration": meta.get("generation", 1),
                },
            )


def _ready_since(pod: Obj) -> float | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return instant_of(condition.get("lastTransitionTime"))
    return None


def _available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """A Ready pod is available once Ready for longer than minReadySeconds (podutil.IsPodAvailable)."""
    if min_ready_seconds == 0:
        return True
    since = _ready_since(pod)
    return since is not None and since + min_ready_seconds < now


def _related_pods(rs: Obj, replicasets: list[Obj], by_owner: dict[str, list[Obj]]) -> list[Obj]:
    """The pods of `rs` and of the ReplicaSets with the same controller (a Deployment's other
    ReplicaSets), as getIndirectlyRelatedPods finds them."""
    owner = controller_ref(rs)
    if owner is None:
        family = [rs]
    else:
        ns = rs["metadata"]["namespace"]
        family = [
            other
            for other in replicasets
            if other["metadata"]["namespace"] == ns and (controller_ref(other) or {}).get("uid") == owner.get("uid")
        ]
    return [p for member in family for p in by_owner.get(str(member["metadata"].get("uid")), [])]


def _pods_per_node(pods: list[Obj]) -> Counter[str]:
    return Counter(str((p.get("spec") or {}).get("nodeName") or "") for p in pods if is_active(p))


_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def _deletion_order(pod: Obj, pods_per_node: Counter[str]) -> tuple[Any, ...]:
    """The ReplicaSet controller's scale-down order (controller.ActivePodsWithRanks), first deleted
    first: unassigned; Pending < Unknown < Running; not Ready; lower pod-deletion-cost; more pods of
    the workload on its node; Ready more recently; more container restarts; created more recently."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    ready = is_ready(pod)
    ready_since = _ready_since(pod) if ready else None
    created = instant_of(meta.get("creationTimestamp"))
    restarts = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []), default=0)
    return (
        bool(spec.get("nodeName")),
        _PHASE_ORDER.get(str(status.get("phase")), 0),
        ready,
        _deletion_cost(meta),
        -pods_per_node[str(spec.get("nodeName") or "")],
        -math.inf if ready_since is None else -ready_since,  # a missing time first (afterOrZero)
        -restarts,
        -math.inf if created is None else -created,
    )


def _deletion_cost(meta: Obj) -> int:
    """The pod-deletion-cost annotation; 0 when absent or not an int32, as the controller reads it."""
    value = str((meta.get("annotations") or {}).get(DELETION_COST, ""))
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        return 0
    cost = int(value)
    return cost if -(2**31) <= cost < 2**31 else 0


def template_hash(template: Any) -> str:
    """A stable short hash of a pod template (the pod-template-hash label)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(_NAME_CHARS[int(digest[i : i + 2], 16) % len(_NAME_CHARS)] for i in range(0, 20, 2))


HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def _template_digest(template: Any) -> str:
    """A pod template as EqualIgnoreHash compares two: without the pod-template-hash label, an empty
    map or list the same as none (apimachinery's Semantic.DeepEqual)."""
    template = copy.deepcopy(template or {})
    labels = (template.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return hashlib.sha256(json.dumps(_pruned(template), sort_keys=True).encode()).hexdigest()


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        items = ((k, _pruned(v)) for k, v in value.items())
        return {k: v for k, v in items if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _scaled(value: Any, total: int, *, round_up: bool) -> int:
    """An int-or-percent against `total` (intstr.GetScaledValueFromIntOrPercent)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    if not re.fullmatch(r"\d+%", text):
        raise ValueError(f"{value!r} is neither an integer nor a percentage such as 25%")
    scaled = int(text[:-1]) * total
    return -(-scaled // 100) if round_up else scaled // 100


@dataclass(frozen=True, slots=True)
class Strategy:
    """A Deployment's spec.strategy with the API defaults, maxSurge and maxUnavailable resolved
    against spec.replicas as ResolveFenceposts does (both 0: maxUnavailable 1)."""

    recreate: bool
    max_surge: int
    max_unavailable: int

    @classmethod
    def of(cls, deploy: Obj) -> Strategy:
        strategy = (deploy.get("spec") or {}).get("strategy") or {}
        if strategy.get("type") == "Recreate":
            return cls(recreate=True, max_surge=0, max_unavailable=0)
        rolling = strategy.get("rollingUpdate") or {}
        replicas = _replicas(deploy)
        surge, unavailable = (rolling.get(field) for field in ("maxSurge", "maxUnavailable"))
        surge = _scaled("25%" if surge is None else surge, replicas, round_up=True)
        unavailable = _scaled("25%" if unavailable is None else unavailable, replicas, round_up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        # deploymentutil.MaxUnavailable: never more than the replicas, and 0 for 0 replicas.
        return cls(recreate=False, max_surge=surge, max_unavailable=min(unavailable, replicas))


@dataclass(slots=True)
class _Set:
    """One of a Deployment's ReplicaSets as a sync sees it: its replicas as the sync scales it, and
    its status as the ReplicaSet controller last wrote it."""

    obj: Obj  # as listed, read only
    replicas: int

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    def status(self, field: str) -> int:
        return int((self.obj.get("status") or {}).get(field) or 0)

    @property
    def revision(self) -> int:
        value = str((self.obj["metadata"].get("annotations") or {}).get(REVISION, ""))
        return int(value) if value.isdigit() else 0


class DeploymentController:
    """kube-controller-manager's Deployment controller (pkg/controller/deployment) on a template change.

    The new ReplicaSet is the oldest one whose template equals the Deployment's but for the
    pod-template-hash label; it is created (`<deploy>-<hash>`) when none is, and a template put back
    to an older ReplicaSet's makes that one the new one again. RollingUpdate (the default) and
    Recreate roll out as rolling.go and recreate.go do; a paused Deployment only keeps the one active
    ReplicaSet at its replicas. Availability is read from the ReplicaSets' status, as the real
    controller reads it (the ReplicaSet controller honours minReadySeconds); stepped before the
    ReplicaSet controller, this one sees a pod's readiness a tick or two after the kubelet reports it.
    Status: replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas,
    observedGeneration; the revision annotation on ReplicaSets and Deployment.

    Not modelled: proportional scaling of a rollout in progress whose replicas change (the rolling
    update moves it instead), the desired-replicas and max-replicas annotations, the status
    conditions and progressDeadlineSeconds, collisionCount, copying the Deployment's annotations to
    the ReplicaSet, and revisionHistoryLimit: old ReplicaSets stay, at 0 replicas.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._inputs = _Inputs(store, "deployments.apps", "replicasets.apps")
        self._digests: dict[tuple[str, int], str] = {}  # (uid, generation) -> _template_digest
        self._recreating = False  # a Recreate waits for old pods to go, and pods are not an input

    def step(self, now: float) -> None:
        self._inputs.run(self._sync, anyway=self._recreating)

    def _sync(self) -> None:
        by_owner: dict[str, list[Obj]] = {}
        for rs in _live(self.store, "replicasets.apps"):
            ref = controller_ref(rs)
            if ref is not None and ref.get("uid"):
                by_owner.setdefault(str(ref["uid"]), []).append(rs)
        digests, self._recreating = self._digests, False
        self._digests = {}
        for deploy in _live(self.store, "deployments.apps"):
            ns = deploy["metadata"]["namespace"]
            owned = [
                rs for rs in by_owner.get(str(deploy["metadata"].get("uid")), []) if rs["metadata"]["namespace"] == ns
            ]
            owned.sort(key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]))
            try:
                self._recreating |= self._sync_one(deploy, owned, digests)
            except (ValueError, ApiError) as err:  # a bad strategy, a name taken: the next pass tries again
                log.warning("deployment %s/%s: %s", ns, deploy["metadata"]["name"], err)

    def _digest(self, obj: Obj, digests: dict[tuple[str, int], str]) -> str:
        # A template changes only with the generation: hash each once, not at every pass.
        key = (str(obj["metadata"].get("uid")), int(obj["metadata"].get("generation") or 0))
        digest = digests.get(key) or _template_digest((obj.get("spec") or {}).get("template"))
        self._digests[key] = digest
        return digest

    def _sync_one(self, deploy: Obj, owned: list[Obj], digests: dict[tuple[str, int], str]) -> bool:
        """One Deployment's pass; whether it waits for old pods to go (Recreate)."""
        spec = deploy.get("spec") or {}
        strategy = Strategy.of(deploy)
        wanted = self._digest(deploy, digests)
        new_obj = next((rs for rs in owned if self._digest(rs, digests) == wanted), None)
        old = [_Set(rs, _replicas(rs)) for rs in owned if rs is not new_obj]
        new = None if new_obj is None else self._sync_revision(deploy, _Set(new_obj, _replicas(new_obj)), old)
        waiting = False
        if spec.get("paused"):
            self._scale_paused(deploy, new, old)
        elif strategy.recreate:
            new, waiting = self._recreate(deploy, new, old)
        else:
            new = self._roll(deploy, new, old, strategy)
        self._write_status(deploy, new, old)
        return waiting

    # ---------------------------------------------------------------- the new ReplicaSet

    def _sync_revision(self, deploy: Obj, new: _Set, old: list[_Set]) -> _Set:
        """The new ReplicaSet's revision past every old one's, and its minReadySeconds the Deployment's."""
        revision = max((rs.revision for rs in old), default=0) + 1
        min_ready = (deploy.get("spec") or {}).get("minReadySeconds") or 0
        if new.revision < revision or ((new.obj.get("spec") or {}).get("minReadySeconds") or 0) != min_ready:
            revision = max(new.revision, revision)

            def mutate(rs: Obj) -> None:
                rs["metadata"].setdefault("annotations", {})[REVISION] = str(revision)
                if (rs["spec"].get("minReadySeconds") or 0) != min_ready:
                    rs["spec"]["minReadySeconds"] = min_ready

            new.obj = self.store.modify("replicasets.apps", new.name, deploy["metadata"]["namespace"], mutate)
        self._set_deployment_revision(deploy, new.revision)
        return new

    def _set_deployment_revision(self, deploy: Obj, revision: int) -> None:
        meta = deploy["metadata"]
        if (meta.get("annotations") or {}).get(REVISION) == str(revision):
            return

        def mutate(obj: Obj) -> None:
            obj["metadata"].setdefault("annotations", {})[REVISION] = str(revision)

        self.store.modify("deployments.apps", meta["name"], meta["namespace"], mutate)

    def _create(self, deploy: Obj, old: list[_Set], strategy: Strategy) -> _Set:
        """The new ReplicaSet, with as many replicas as the strategy allows now (NewRSNewReplicas)."""
        replicas = self._new_replicas(deploy, 0, old, strategy)
        revision = max((rs.revision for rs in old), default=0) + 1
        created = self.store.create(self._replicaset(deploy, replicas, revision))
        self._set_deployment_revision(deploy, revision)
        return _Set(created, replicas)

    @staticmethod
    def _new_replicas(deploy: Obj, current: int, old: list[_Set], strategy: Strategy) -> int:
        """What the new ReplicaSet may have now (deploymentutil.NewRSNewReplicas): all of spec.replicas
        under Recreate; under RollingUpdate no more than replicas + maxSurge in all ReplicaSets."""
        want = _replicas(deploy)
        if strategy.recreate:
            return want
        total = current + sum(rs.replicas for rs in old)
        room = want + strategy.max_surge - total
        return current if room <= 0 else current + min(room, want - current)

    @staticmethod
    def _replicaset(deploy: Obj, replicas: int, revision: int = 1) -> Obj:
        spec = deploy.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        hashed = template_hash(template)
        labels = {**((template.get("metadata") or {}).get("labels") or {}), HASH_LABEL: hashed}
        template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = hashed
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{deploy['metadata']['name']}-{hashed}",
                "namespace": deploy["metadata"]["namespace"],
                "labels": labels,
                "annotations": {REVISION: str(revision)},
                "ownerReferences": [owner_reference(deploy)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": spec.get("minReadySeconds") or 0,
                "selector": selector,
                "template": template,
            },
        }

    def _scale(self, deploy: Obj, rs: _Set, replicas: int) -> bool:
        if rs.replicas == replicas:
            return False
        self.store.modify("replicasets.apps", rs.name, deploy["metadata"]["namespace"], _set_replicas(replicas))
        rs.replicas = replicas
        return True

    # ---------------------------------------------------------------- strategies

    def _scale_paused(self, deploy: Obj, new: _Set | None, old: list[_Set]) -> None:
        """DeploymentController.scale without proportional scaling: the only active ReplicaSet (or,
        none active, the newest) at spec.replicas; old ones to 0 once the new one is saturated."""
        want = _replicas(deploy)
        every = [*old, *([new] if new is not None else [])]
        active = [rs for rs in every if rs.replicas > 0]
        if len(active) == 1 or (not active and every):
            self._scale(deploy, active[0] if active else every[-1], want)
        elif new is not None and new.replicas == want and new.status("availableReplicas") == want:
            for rs in old:
                self._scale(deploy, rs, 0)

    def _recreate(self, deploy: Obj, new: _Set | None, old: list[_Set]) -> tuple[_Set | None, bool]:
        """recreate.go: old ReplicaSets to 0, then, once none of their pods is left (terminating ones
        included), the new one up to spec.replicas. The new ReplicaSet and whether it waits."""
        scaled = [self._scale(deploy, rs, 0) for rs in old if rs.replicas > 0]
        if scaled:
            return new, True
        want = _replicas(deploy)
        if new is not None and new.replicas == want:
            return new, False
        if self._old_pods_running(deploy, new, old):
            return new, True
        strategy = Strategy(recreate=True, max_surge=0, max_unavailable=0)
        if new is None:
            return self._create(deploy, old, strategy), False
        self._scale(deploy, new, want)
        return new, False

    def _old_pods_running(self, deploy: Obj, new: _Set | None, old: list[_Set]) -> bool:
        if sum(rs.status("replicas") for rs in old):
            return True
        new_uid = None if new is None else new.obj["metadata"].get("uid")
        old_uids = {rs.obj["metadata"].get("uid") for rs in old} - {new_uid}
        return any(
            (controller_ref(pod) or {}).get("uid") in old_uids and not is_terminal(pod)
            for pod in self.store.list("pods", deploy["metadata"]["namespace"], shared=True)
        )

    def _roll(self, deploy: Obj, new: _Set | None, old: list[_Set], strategy: Strategy) -> _Set:
        """rolling.go rolloutRolling: scale the new ReplicaSet up if the surge allows, else the old
        ones down as far as availability allows. Returns the new ReplicaSet."""
        if new is None:
            new = self._create(deploy, old, strategy)
        elif self._reconcile_new(deploy, new, old, strategy):
            return new
        self._reconcile_old(deploy, new, [rs for rs in old if rs.replicas > 0], strategy)
        return new

    def _reconcile_new(self, deploy: Obj, new: _Set, old: list[_Set], strategy: Strategy) -> bool:
        want = _replicas(deploy)
        if new.replicas > want:
            return self._scale(deploy, new, want)
        return self._scale(deploy, new, self._new_replicas(deploy, new.replicas, old, strategy))

    def _reconcile_old(self, deploy: Obj, new: _Set, old: list[_Set], strategy: Strategy) -> None:
        """Scale old ReplicaSets down by what keeps spec.replicas - maxUnavailable pods available:
        their unavailable pods first (cleanupUnhealthyReplicas), then available ones."""
        if not sum(rs.replicas for rs in old):
            return
        min_available = _replicas(deploy) - strategy.max_unavailable
        new_unavailable = new.replicas - new.status("availableReplicas")
        budget = new.replicas + sum(rs.replicas for rs in old) - min_available - new_unavailable
        for rs in old:  # oldest first
            if budget <= 0:
                break
            unhealthy = rs.replicas - rs.status("availableReplicas")
            if rs.replicas and unhealthy > 0:
                cut = min(budget, unhealthy)
                self._scale(deploy, rs, rs.replicas - cut)
                budget -= cut
        available = new.status("availableReplicas") + sum(rs.status("availableReplicas") for rs in old)
        excess = available - min_available
        for rs in old:
            if excess <= 0:
                break
            cut = min(rs.replicas, excess)
            self._scale(deploy, rs, rs.replicas - cut)
            excess -= cut

    # ---------------------------------------------------------------- status

    def _write_status(self, deploy: Obj, new: _Set | None, old: list[_Set]) -> None:
        """calculateStatus: counts from the ReplicaSets' status; unavailable against their replicas."""
        every = [*old, *([new] if new is not None else [])]
        available = sum(rs.status("availableReplicas") for rs in every)
        _write_status(
            self.store,
            deploy,
            {
                "replicas": sum(rs.status("replicas") for rs in every),
                "updatedReplicas": 0 if new is None else new.status("replicas"),
                "readyReplicas": sum(rs.status("readyReplicas") for rs in every),
                "availableReplicas": available,
                "unavailableReplicas": max(0, sum(rs.replicas for rs in every) - available),
                "observedGeneration": deploy["metadata"].get("generation", 1),
            },
        )


def _set_replicas(replicas: int) -> Any:
    def mutate(obj: Obj) -> None:
        obj.setdefault("spec", {})["replicas"] = replicas

    return mutate


class StatefulSetController:
    """Pods <name>-0 … <name>-(replicas-1); a missing ordinal is recreated, extra ordinals removed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._inputs = _Inputs(store, "statefulsets.apps", "pods")

    def step(self, now: float) -> None:
        self._inputs.run(self._sync)

    def _sync(self) -> None:
        for sts in _live(self.store, "statefulsets.apps"):
            meta = sts["metadata"]
            ns, name = meta["namespace"], meta["name"]
            want = _replicas(sts)
            owned = {p["metadata"]["name"]: p for p in self.store.list("pods", ns) if owned_by(p, sts)}
            for ordinal in range(want):
                pod_name = f"{name}-{ordinal}"
                if pod_name in owned:
                    continue
                if self.store.exists("pods", pod_name, ns):
                    continue  # a terminating predecessor, or someone else's pod: wait
                pod = _pod_from_template(sts, pod_name)
                pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = pod_name
                pod["spec"].setdefault("hostname", pod_name)
                self.store.create(pod)
            for pod_name, pod in owned.items():
                ordinal = pod_name.removeprefix(f"{name}-")
                if ordinal.isdigit() and int(ordinal) >= want and is_active(pod):
                    _delete(self.store, pod)
            active = [p for p in self.store.list("pods", ns) if owned_by(p, sts) and is_active(p)]
            ready = sum(1 for p in active if is_ready(p))
            _write_status(
                self.store,
                sts,
                {
                    "replicas": len(active),
                    "readyReplicas": ready,
                    "availableReplicas": ready,
                    "currentReplicas": len(active),
                    "observedGeneration": meta.get("generation", 1),
                },
            )


_OWNED_RESOURCES = ("replicasets.apps", "pods", "reservations.descheduler.dev")
_OWNER_RESOURCES = {
    ("apps/v1", "ReplicaSet"): "replicasets.apps",
    ("apps/v1", "Deployment"): "deployments.apps",
    ("apps/v1", "StatefulSet"): "statefulsets.apps",
    ("apps/v1", "DaemonSet"): "daemonsets.apps",
    ("descheduler.dev/v1alpha1", "PodMigrationJob"): "podmigrationjobs.descheduler.dev",
}


class GarbageCollector:
    """Deletes pods, ReplicaSets and Reservations whose controller owner (a known kind: a workload, or
    a PodMigrationJob) no longer exists, as kube-controller-manager's garbage collector does."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._inputs = _Inputs(store, *_OWNED_RESOURCES, *_OWNER_RESOURCES.values())

    def step(self, now: float) -> None:
        self._inputs.run(self._sync)

    def _sync(self) -> None:
        uids: dict[str, dict[tuple[str, str], str]] = {}  # owner resource -> (namespace, name) -> uid
        for resource in _OWNED_RESOURCES:
            for obj in _live(self.store, resource):
                ref = controller_ref(obj)
                if ref is None:
                    continue
                owner_resource = _OWNER_RESOURCES.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
                if owner_resource is None:
                    continue
                if owner_resource not in uids:
                    uids[owner_resource] = {
                        (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"].get("uid", "")
                        for o in self.store.list(owner_resource, shared=True)
                    }
                uid = uids[owner_resource].get((obj["metadata"].get("namespace", ""), str(ref.get("name"))))
                if uid is None or (ref.get("uid") and uid != ref.get("uid")):
                    _delete(self.store, obj)


class PodGarbageCollector:
    """kube-controller-manager's pod GC for orphans (pkg/controller/podgc, gcOrphaned): a pod bound
    to a node that no longer exists is force-deleted (grace period 0) once the node has been
    missing for `quarantine` seconds (40 s in kube-controller-manager), so its controller makes a
    replacement that the scheduler places on a node that does exist."""

    def __init__(self, store: Store, quarantine: float = 40.0) -> None:
        self.store = store
        self.quarantine = quarantine
        self._missing_since: dict[str, float] = {}
        self._inputs = _Inputs(store, "nodes", "pods")

    def step(self, now: float) -> None:
        # Orphans waiting out their quarantine need a pass as time goes on, changed or not.
        self._inputs.run(lambda: self._sync(now), anyway=bool(self._missing_since))

    def _sync(self, now: float) -> None:
        nodes = {node["metadata"]["name"] for node in self.store.list("nodes", shared=True)}
        orphans: dict[str, list[Obj]] = {}
        for pod in self.store.list("pods", shared=True):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            if node and node not in nodes:
                orphans.setdefault(node, []).append(pod)
        self._missing_since = {node: self._missing_since.get(node, now) for node in orphans}
        for node, pods in orphans.items():
            if now - self._missing_since[node] >= self.quarantine:
                for pod in pods:
                    _delete(self.store, pod, grace_period_seconds=0)


def _delete(store: Store, obj: Obj, grace_period_seconds: int | None = None) -> None:
    meta = obj["metadata"]
    resource = "pods" if obj.get("kind") == "Pod" else store.type_of(obj)
    try:
        store.delete(resource, meta["name"], meta.get("namespace", ""), grace_period_seconds=grace_period_seconds)
    except ApiError as err:
        if err.code != 404:
            raise
