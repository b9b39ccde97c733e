"""Per-cycle move limits and PDB budgets, shared by all strategies of one cycle."""

from __future__ import annotations

import math
from collections import Counter

from descheduler.model import MigrationJob, Pod
from descheduler.policy import Limits, MigrationArgs
from descheduler.snapshot import Snapshot
from descheduler.tokenbucket import replay_tokens


class EvictionBudget:
    """Counts planned moves against `limits` and each PDB's disruptionsAllowed."""

    def __init__(self, limits: Limits, snapshot: Snapshot, migration: MigrationArgs | None = None) -> None:
        """With `migration`, a workload's moves also count against the arbitration limits the
        migration controller will apply (in-flight jobs, the workload token bucket, the cooldown),
        so the plan holds no move that would only wait for a limit until its TTL runs out."""
        self.limits = limits
        self.snapshot = snapshot
        self.migration = migration
        self.total = 0
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_pdb: Counter[str] = Counter()
        self.per_workload: Counter[str] = Counter()
        self._workload_room: dict[str, tuple[int, str]] = {}
        self._jobs: dict[str, list[MigrationJob]] = {}
        for job in snapshot.jobs:
            if job.workload_uid:
                self._jobs.setdefault(job.workload_uid, []).append(job)
        self.cooling_nodes = frozenset(self._cooling_nodes())

    def _cooling_nodes(self) -> set[str]:
        """Nodes a pod was evicted from within the cooldown: not targets for now (migration.md §5)."""
        if self.migration is None or self.migration.cooldown.total_seconds() <= 0:
            return set()
        now, cooldown = self.snapshot.now, self.migration.cooldown
        return {j.source_node for j in self.snapshot.jobs if j.source_node and j.evicted and now - j.evicted < cooldown}

    @property
    def cycle_exhausted(self) -> bool:
        cap = self.limits.max_evictions_per_cycle
        return cap is not None and self.total >= cap

    def node_refusal(self, node: str) -> str | None:
        """Why no pod at all may leave this node any more this cycle, or None."""
        limits = self.limits
        if self.cycle_exhausted:
            return f"limit maxEvictionsPerCycle {limits.max_evictions_per_cycle} reached"
        if limits.max_evictions_per_node is not None and self.per_node[node] >= limits.max_evictions_per_node:
            return f"limit maxEvictionsPerNode {limits.max_evictions_per_node} reached on {node}"
        return None

    def refusal(self, pod: Pod, node: str) -> str | None:
        """Why one more move of this pod would break a limit or a PDB, or None."""
        limits = self.limits
        node_refusal = self.node_refusal(node)
        if node_refusal is not None:
            return node_refusal
        per_ns = limits.max_evictions_per_namespace
        if per_ns is not None and self.per_namespace[pod.namespace] >= per_ns:
            return f"limit maxEvictionsPerNamespace {per_ns} reached in {pod.namespace}"
        return self.workload_refusal(pod) or self.pdb_refusal(pod)

    def workload_refusal(self, pod: Pod) -> str | None:
        """Why the migration controller would hold a move of this pod's workload back now, or None."""
        owner = pod.owner
        if self.migration is None or owner is None or not owner.uid:
            return None
        if owner.uid not in self._workload_room:
            self._workload_room[owner.uid] = self._room(owner.uid, f"{owner.kind} {pod.namespace}/{owner.name}")
        room, why = self._workload_room[owner.uid]
        return why if self.per_workload[owner.uid] >= room else None

    def _room(self, uid: str, label: str) -> tuple[int, str]:
        """Moves of this workload the arbiter would admit now, and the reason when that is used up."""
        assert self.migration is not None
        args, now = self.migration, self.snapshot.now
        jobs = self._jobs.get(uid, [])
        active = [j for j in jobs if j.active]
        cooldown = args.cooldown
        evicted = [j.evicted for j in jobs if j.evicted is not None and now - j.evicted < cooldown]
        if evicted:
            ago = (now - max(evicted)).total_seconds()
            return 0, f"{label} had a pod moved {ago:.0f}s ago (migration cooldown {cooldown.total_seconds():.0f}s)"
        workload = self.snapshot.workloads.get(uid)
        replicas = workload.replicas if workload is not None and workload.replicas is not None else None
        if replicas is None:
            replicas = self.snapshot.pods_per_owner.get(uid, 0)
        limit = args.max_migrating_for(replicas)
        in_flight = limit - len(active)
        bucket = args.object_limiters.workload
        rate = bucket.max_migrating / bucket.duration.total_seconds()
        starts = [j.started for j in jobs if j.started is not None]
        tokens = math.floor(replay_tokens(starts, now, rate, bucket.max_migrating) + 1e-9) - sum(
            1 for j in active if j.started is None
        )
        if tokens <= in_flight:
            return max(0, tokens), (
                f"{label} may start {bucket.max_migrating} move(s) per {bucket.duration.total_seconds():.0f}s "
                "(migration objectLimiters.workload)"
            )
        return max(0, in_flight), (
            f"{label} allows {limit} pod(s) migrating at once ({len(active)} in flight before this cycle)"
        )

    def pdb_refusal(self, pod: Pod) -> str | None:
        pdbs = self.snapshot.pdbs_for(pod)
        if len(pdbs) > 1:
            names = ", ".join(sorted(p.name for p in pdbs))
            return f"more than one PodDisruptionBudget selects the pod ({names}); eviction would be refused"
        if not pdbs:
            return None
        pdb = pdbs[0]
        if pdb.observed_generation < pdb.generation:
            return f"PodDisruptionBudget {pdb.name} status is not yet observed by its controller"
        left = pdb.disruptions_allowed - self.per_pdb[f"{pdb.namespace}/{pdb.name}"]
        if left <= 0:
            return f"PodDisruptionBudget {pdb.name} allows no more disruptions ({pdb.disruptions_allowed} allowed)"
        return None

    def take(self, pod: Pod, node: str) -> None:
        self.total += 1
        if pod.owner is not None and pod.owner.uid:
            self.per_workload[pod.owner.uid] += 1
        self.per_node[node] += 1
        self.per_namespace[pod.namespace] += 1
        for pdb in self.snapshot.pdbs_for(pod):
            self.per_pdb[f"{pdb.namespace}/{pdb.name}"] += 1
