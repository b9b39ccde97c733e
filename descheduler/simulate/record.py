"""What a simulation run observed, and the numbers the report is made of.

The recorder looks at the cluster from the outside (the simulated API server's store), the way an
auditor would: the jobs, Reservations and pods that exist, whatever the controller believes. The
controller's own cycles add what it saw (node classes and load) and what it planned.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from descheduler.controller.cycle import CycleResult
from descheduler.eligibility import eviction_refusal
from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.pods import is_terminal, is_terminating
from descheduler.fakecluster.stock import pod_requests, to_units
from descheduler.kube import MIGRATION_JOBS, RESERVATIONS
from descheduler.migration.objects import LABEL_JOB, TERMINAL_PHASES
from descheduler.plan import Plan
from descheduler.policy import Policy
from descheduler.snapshot import Snapshot
from descheduler.timestamps import parse_time


@dataclass(slots=True)
class CycleRecord:
    index: int
    seconds: float  # since the start of the run
    planned: int
    submitted: int
    skipped_reason: str
    usage: dict[str, float]  # node -> cpu usage ratio (the most constrained threshold resource)
    classes: dict[str, str]  # node -> high | low | normal | excluded
    high: dict[str, float]  # node -> the high threshold of that resource


# Pod -> quota group as QuotaReclaim and the quota-aware scheduler read it (quotareclaim.md §1): this
# label, else the only ElasticQuota in the pod's namespace; a group's parent by the second label.
QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
PARENT_LABEL = "quota.scheduling.koordinator.sh/parent"
KOORDINATOR_ROOT = "koordinator-root-quota"
QUOTA_UNITS = {"cpu": "millicores", "memory": "bytes", "other": "units"}


@dataclass(slots=True)
class QuotaSeries:
    """One ElasticQuota over the run: its min and max (as last seen) and its used at each change."""

    namespace: str
    min: dict[str, int]
    max: dict[str, int]
    used: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # resource -> (seconds, units)

    def now(self) -> dict[str, int]:
        return {resource: points[-1][1] for resource, points in self.used.items() if points}


@dataclass(slots=True)
class PodWait:
    """A pod that was Pending at some point of the run (created during it, or seen Pending)."""

    pod: str  # namespace/name
    quota: str  # its ElasticQuota group, "" when none
    created: float  # seconds since the start of the run
    running: float | None = None  # when it became Running, None while it has not
    gone: float | None = None  # when it was seen deleted without having run


@dataclass(slots=True)
class SimulationRecord:
    policy: Policy
    began: float
    cycles: list[CycleRecord] = field(default_factory=list)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> last seen object
    sources: dict[str, str] = field(default_factory=dict)  # job name -> the pod's node when first seen
    limit_violations: list[str] = field(default_factory=list)
    minimum_moves: int | None = None
    unresolvable_nodes: list[str] = field(default_factory=list)
    orphan_reservations: list[str] = field(default_factory=list)
    evictions: int = 0
    quotas: dict[str, QuotaSeries] = field(default_factory=dict)  # by the ElasticQuota's name
    waits: dict[str, PodWait] = field(default_factory=dict)  # by pod UID
    sampled: float = 0.0  # seconds since the start of the run, of the latest on_pods
    quota_used: list[dict[str, dict[str, int]]] = field(default_factory=list)  # per cycle: quota -> used
    _parents: dict[str, str] = field(default_factory=dict)  # quota -> its parent quota, by the label

    # ---------------------------------------------------------------- feeding

    def on_cycle(self, now: float, result: CycleResult) -> None:
        plan = result.plan
        usage: dict[str, float] = {}
        classes: dict[str, str] = {}
        high: dict[str, float] = {}
        if plan is not None:
            for node in plan.nodes:
                resource = _resource(node.usage, node.high)
                usage[node.name] = node.usage.get(resource, 0.0)
                high[node.name] = node.high.get(resource, 1.0)
                classes[node.name] = node.node_class
            if self.minimum_moves is None and result.snapshot is not None:
                self.minimum_moves, self.unresolvable_nodes = minimum_moves(plan, result.snapshot, self.policy)
        self.cycles.append(
            CycleRecord(
                index=len(self.cycles) + 1,
                seconds=now - self.began,
                planned=len(plan.migrations) if plan else 0,
                submitted=len(result.submitted),
                skipped_reason=result.skipped_reason,
                usage=usage,
                classes=classes,
                high=high,
            )
        )
        self.quota_used.append({name: series.now() for name, series in sorted(self.quotas.items())})

    def on_step(self, jobs: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        """After every simulated tick: remember each job's latest state and check the limits."""
        node_of: dict[tuple[str, str], str] | None = None  # read only when a job is new
        for job in jobs:
            name = job["metadata"]["name"]
            self.jobs[name] = job
            if name not in self.sources:
                node_of = _nodes(pods) if node_of is None else node_of
                ref = (job.get("spec") or {}).get("podRef") or {}
                self.sources[name] = node_of.get((ref.get("namespace", ""), ref.get("name", "")), "")
        self.limit_violations += limit_violations(jobs, pods, self.policy)

    def on_pods(self, now: float, pods: list[dict[str, Any]], quotas: list[dict[str, Any]]) -> None:
        """After a simulated tick in which pods or quotas changed: each ElasticQuota's used and every
        pod's way from Pending to Running, read from the API objects."""
        seconds = now - self.began
        self.sampled = seconds
        if quotas or self.quotas:
            self._sample_quotas(seconds, pods, quotas)
        present: set[str] = set()
        for pod in pods:
            meta = pod["metadata"]
            uid = str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta['name']}")
            present.add(uid)
            wait = self.waits.get(uid)
            if wait is not None and wait.running is not None:
                continue
            status = pod.get("status") or {}
            if wait is None:
                created = _seconds(meta.get("creationTimestamp"), self.began)
                if status.get("phase", "Pending") != "Pending" and (created is None or created < 0):
                    continue  # running since before the run: never seen waiting
                wait = self.waits[uid] = PodWait(
                    f"{meta.get('namespace', '')}/{meta['name']}",
                    self._group_of(pod),
                    created if created is not None else seconds,
                )
            started = _seconds(status.get("startTime"), self.began)
            if status.get("phase") in ("Running", "Succeeded", "Failed") and started is not None:
                wait.running = started
        for uid, wait in self.waits.items():
            if wait.running is None and wait.gone is None and uid not in present:
                wait.gone = seconds

    def _sample_quotas(self, seconds: float, pods: list[dict[str, Any]], quotas: list[dict[str, Any]]) -> None:
        for quota in quotas:
            meta, spec = quota["metadata"], quota.get("spec") or {}
            name = meta["name"]
            if name in self.quotas and self.quotas[name].namespace != meta.get("namespace", ""):
                continue  # the same name in another namespace or API group: the first one is the group
            minimum = {r: to_units(r, v) for r, v in (spec.get("min") or {}).items()}
            maximum = {r: to_units(r, v) for r, v in (spec.get("max") or {}).items()}
            series = self.quotas.setdefault(name, QuotaSeries(meta.get("namespace", ""), minimum, maximum))
            series.min, series.max = minimum, maximum
            self._parents[name] = _parent(quota)
        used = {name: dict.fromkeys(sorted({*s.min, *s.max}), 0) for name, s in self.quotas.items()}
        for pod in pods:
            if not (pod.get("spec") or {}).get("nodeName") or is_terminal(pod) or is_terminating(pod):
                continue
            group = self._group_of(pod)
            if not group:
                continue
            requests = pod_requests(pod)
            for name in self._lineage(group):
                for resource, amount in requests.items():
                    if resource in used[name]:
                        used[name][resource] += amount
        for name, values in used.items():
            for resource, value in values.items():
                points = self.quotas[name].used.setdefault(resource, [])
                if not points or points[-1][1] != value:
                    points.append((seconds, value))

    def _group_of(self, pod: dict[str, Any]) -> str:
        meta = pod["metadata"]
        label = (meta.get("labels") or {}).get(QUOTA_LABEL)
        if label:
            return label if label in self.quotas else ""
        mine = [name for name, series in self.quotas.items() if series.namespace == meta.get("namespace", "")]
        return mine[0] if len(mine) == 1 else ""

    def _lineage(self, group: str) -> list[str]:
        """The group and the groups above it (a parent counts its subtree), stopping at a cycle."""
        out = [group]
        parent = self._parents.get(group)
        while parent and parent in self.quotas and parent not in out:
            out.append(parent)
            parent = self._parents.get(parent)
        return out

    # ---------------------------------------------------------------- results

    def phases(self) -> dict[str, int]:
        return dict(sorted(Counter(phase(job) for job in self.jobs.values()).items()))

    def ping_pong(self) -> list[str]:
        """Moves whose replacement landed on a node that was above its high threshold at the next
        cycle, and pods moved again by a later job after a move had placed them."""
        found: list[str] = []
        placed: dict[str, tuple[str, float]] = {}  # replacement pod (uid, else namespace/name) -> job, when
        for name, job in sorted(self.jobs.items()):
            status = job.get("status") or {}
            new = status.get("newPodRef") or {}
            done = _seconds(status.get("completionTime"), self.began)
            if phase(job) != "Succeeded" or not new.get("name") or done is None:
                continue
            placed[_pod_key(new)] = (name, done)
            node = status.get("targetNode") or (job.get("spec") or {}).get("targetNode", "")
            later = [c for c in self.cycles if c.seconds >= done and c.classes]
            if node and later and later[0].classes.get(node) == "high":
                found.append(f"{name}: the replacement landed on {node}, hot at the next cycle")
        for name, job in sorted(self.jobs.items()):
            ref = (job.get("spec") or {}).get("podRef") or {}
            earlier = placed.get(_pod_key(ref))
            created = _seconds(job["metadata"].get("creationTimestamp"), self.began)
            if earlier and earlier[0] != name and created is not None and created >= earlier[1]:
                found.append(f"{name}: moves {ref.get('namespace')}/{ref.get('name')}, which {earlier[0]} had placed")
        return found

    def hot_nodes(self) -> list[int]:
        return [sum(c == "high" for c in cycle.classes.values()) for cycle in self.cycles]

    def moves_made(self) -> int:
        """Pods actually moved: jobs that evicted their pod."""
        return sum(_evicted(job) for job in self.jobs.values())

    def to_dict(self) -> dict[str, Any]:
        ping_pong = self.ping_pong()
        made = self.moves_made()
        return {
            "cycles": len(self.cycles),
            "migrations": self.phases(),
            "evictions": self.evictions,
            "movesMade": made,
            "minimumMoves": self.minimum_moves,
            "movesVsMinimum": round(made / self.minimum_moves, 3) if self.minimum_moves else None,
            "unresolvableNodes": self.unresolvable_nodes,
            "pingPong": len(ping_pong),
            "pingPongDetails": ping_pong,
            "limitViolations": len(self.limit_violations),
            "limitViolationDetails": sorted(set(self.limit_violations)),
            "hotNodes": self.hot_nodes(),
            "orphanReservations": len(self.orphan_reservations),
            "orphanReservationNames": self.orphan_reservations,
            "perCycle": [
                {
                    "cycle": c.index,
                    "seconds": round(c.seconds, 1),
                    "planned": c.planned,
                    "submitted": c.submitted,
                    **({"skipped": c.skipped_reason} if c.skipped_reason else {}),
                    "usage": {k: round(v, 4) for k, v in sorted(c.usage.items())},
                    "classes": dict(sorted(c.classes.items())),
                    "high": {k: round(v, 4) for k, v in sorted(c.high.items())},
                    **({"quotaUsed": used} if used else {}),
                }
                for c, used in zip(self.cycles, self.quota_used, strict=True)
            ],
            "moves": [
                {
                    "job": name,
                    "pod": "{namespace}/{name}".format(**{"namespace": "", "name": "", **spec.get("podRef", {})}),
                    "from": self.sources.get(name, ""),
                    "to": ((job.get("status") or {}).get("targetNode") or spec.get("targetNode") or ""),
                    "phase": phase(job),
                    "reason": spec.get("reason", ""),
                    "outcome": " ".join(
                        str(v) for v in ((job.get("status") or {}).get(k) for k in ("reason", "message")) if v
                    ),
                }
                for name, job in sorted(self.jobs.items())
                for spec in [job.get("spec") or {}]
            ],
            **self.quota_report(),
        }

    def quota_report(self) -> dict[str, Any]:
        """Each quota's min, max and used over time (integer units: QUOTA_UNITS), and how long the pods
        that were Pending took to run; nothing when the run had neither."""
        out: dict[str, Any] = {}
        if self.quotas:
            out["quotaUnits"] = QUOTA_UNITS
            out["quotas"] = {
                name: {
                    "namespace": series.namespace,
                    "min": dict(sorted(series.min.items())),
                    "max": dict(sorted(series.max.items())),
                    # change points, and the value still held at the last sample
                    "used": {
                        resource: [[round(t, 1), v] for t, v in points]
                        + ([[round(self.sampled, 1), points[-1][1]]] if points[-1][0] < self.sampled else [])
                        for resource, points in sorted(series.used.items())
                    },
                }
                for name, series in sorted(self.quotas.items())
            }
        waits = sorted(self.waits.values(), key=lambda w: (w.quota, w.created, w.pod))
        if waits:
            out["podWaits"] = [
                {
                    "pod": w.pod,
                    "quota": w.quota,
                    "created": round(w.created, 1),
                    "running": None if w.running is None else round(w.running, 1),
                    "seconds": None if w.running is None else round(w.running - w.created, 1),
                    "state": "Running" if w.running is not None else "deleted" if w.gone is not None else "Pending",
                }
                for w in waits
            ]
            out["quotaWaits"] = {
                group: wait_summary([w for w in waits if w.quota == group], self.sampled)
                for group in sorted({w.quota for w in waits if w.quota})
            }
        return out


def wait_summary(waits: list[PodWait], end: float) -> dict[str, Any]:
    """A group's pods that were Pending: how many ran and how long it took them; how many still wait."""
    seconds = sorted(w.running - w.created for w in waits if w.running is not None)
    pending = [w for w in waits if w.running is None and w.gone is None]
    return {
        "pods": len(waits),
        "running": len(seconds),
        "stillPending": len(pending),
        "deleted": sum(w.running is None and w.gone is not None for w in waits),
        "seconds": [round(v, 1) for v in seconds],
        "min": round(seconds[0], 1) if seconds else None,
        "median": round(statistics.median(seconds), 1) if seconds else None,
        "max": round(seconds[-1], 1) if seconds else None,
        # how long the pods still Pending have waited by the end of the run
        "pendingFor": sorted(round(end - w.created, 1) for w in pending),
    }


def _parent(quota: dict[str, Any]) -> str:
    parent = str((quota["metadata"].get("labels") or {}).get(PARENT_LABEL, "")).strip()
    return "" if parent in (KOORDINATOR_ROOT, quota["metadata"]["name"]) else parent


def phase(job: dict[str, Any]) -> str:
    return str((job.get("status") or {}).get("phase") or "Pending")


def _pod_key(ref: dict[str, Any]) -> str:
    return str(ref.get("uid") or f"{ref.get('namespace', '')}/{ref.get('name', '')}")


def _evicted(job: dict[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Evicted" and c.get("status") == "True" for c in conditions)


def _seconds(stamp: Any, began: float) -> float | None:
    if not stamp:
        return None
    return parse_time(str(stamp)).timestamp() - began


def _resource(usage: dict[str, float] | Any, high: dict[str, float] | Any) -> str:
    """The threshold resource closest to (or furthest over) its high threshold; cpu when none."""
    if not high:
        return "cpu"
    return max(high, key=lambda r: (usage.get(r, 0.0) - high[r], r == "cpu"))


def minimum_moves(plan: Plan, snapshot: Snapshot, policy: Policy) -> tuple[int, list[str]]:
    """A proven lower bound on the pods that must move to bring every hot node to ≤ high.

    Per hot node and resource, the excess over the threshold must be covered by the usage of
    pods that may be moved; no k pods free more than the k largest, so the smallest k whose
    largest usages cover the excess is a lower bound for that resource, the largest such k over
    resources one for the node, and nodes add up (a pod is on one node). Nodes whose movable pods
    cannot cover the excess at all are listed instead.
    """
    total, unresolvable = 0, []
    for report in plan.nodes:
        if report.node_class != "high":
            continue
        node = snapshot.node_by_name[report.name]
        movable = [
            pod
            for pod in snapshot.pods_by_node.get(report.name, ())
            if eviction_refusal(pod, snapshot, policy.evictor, snapshot.now) is None
        ]
        need = 0
        for resource, threshold in report.high.items():
            allocatable = node.allocatable.get(resource) or 0
            excess = (report.usage.get(resource, 0.0) - threshold) * allocatable
            if excess <= 0:
                continue
            usages = sorted(
                (
                    snapshot.pod_usage[pod.key].usage.get(resource) or 0
                    for pod in movable
                    if pod.key in snapshot.pod_usage
                ),
                reverse=True,
            )
            freed, k = 0.0, 0
            while freed < excess and k < len(usages):
                freed += usages[k]
                k += 1
            if freed < excess:
                unresolvable.append(report.name)
                break
            need = max(need, k)
        else:
            total += need
    return total, unresolvable


def limit_violations(jobs: list[dict[str, Any]], pods: list[dict[str, Any]], policy: Policy) -> list[str]:
    """Arbitration limits exceeded by the jobs in flight (Running) right now, counted from the API."""
    args = policy.migration
    running = [j for j in jobs if phase(j) == "Running"]
    found: list[str] = []
    if not running:
        return found
    node_of = _nodes(pods)

    def check(scope: str, counts: Counter[str], limit: int | None) -> None:
        if limit is None:
            return
        found.extend(f"{scope} {key}: {n} jobs running > {limit}" for key, n in counts.items() if n > limit)

    refs = [(j.get("spec") or {}).get("podRef") or {} for j in running]
    check("global", Counter("all" for _ in refs), args.max_migrating_globally)
    check("namespace", Counter(r.get("namespace", "") for r in refs), args.max_migrating_per_namespace)
    nodes = Counter(node for r in refs if (node := node_of.get((r.get("namespace", ""), r.get("name", "")), "")))
    check("node", nodes, args.max_migrating_per_node)
    owner_of = {
        (p["metadata"].get("namespace", ""), p["metadata"]["name"]): _controller(p)
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }
    replicas = Counter(owner for owner in owner_of.values() if owner)
    by_workload = Counter(
        owner for r in refs if (owner := owner_of.get((r.get("namespace", ""), r.get("name", "")), ""))
    )
    for owner, n in by_workload.items():
        limit = args.max_migrating_for(replicas[owner])
        if n > limit:
            found.append(f"workload {owner}: {n} jobs running > {limit}")
    return found


def orphan_reservations(store: Store) -> list[str]:
    """Reservations still holding room whose job is gone or finished."""
    live = {job["metadata"]["name"] for job in store.list(MIGRATION_JOBS) if phase(job) not in TERMINAL_PHASES}
    orphans = []
    for reservation in store.list(RESERVATIONS):
        status = reservation.get("status") or {}
        if status.get("phase") in ("Consumed", "Expired", "Failed"):
            continue
        owners = {
            ref.get("name")
            for ref in reservation["metadata"].get("ownerReferences") or []
            if ref.get("kind") == "PodMigrationJob"
        }
        owners.add((reservation["metadata"].get("labels") or {}).get(LABEL_JOB))
        if not owners & live:
            orphans.append(reservation["metadata"]["name"])
    return sorted(orphans)


def _nodes(pods: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    return {
        (p["metadata"].get("namespace", ""), p["metadata"]["name"]): p.get("spec", {}).get("nodeName", "") for p in pods
    }


def _controller(pod: dict[str, Any]) -> str:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{pod['metadata'].get('namespace', '')}/{ref.get('kind')}/{ref.get('name')}"
    return ""
