"""What a simulation run observed, and the numbers the report is made of.

The recorder looks at the cluster from the outside (the simulated API server's store), the way an
auditor would: the jobs, Reservations and pods that exist, whatever the controller believes. The
controller's own cycles add what it saw (node classes and load) and what it planned.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from descheduler.controller.cycle import CycleResult
from descheduler.eligibility import eviction_refusal
from descheduler.fakecluster.apiserver import Store
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
                }
                for c in self.cycles
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
        }


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
