"""Per-cycle move limits and PDB budgets, shared by all strategies of one cycle."""

from __future__ import annotations

from collections import Counter

from descheduler.model import Pod
from descheduler.policy import Limits
from descheduler.snapshot import Snapshot


class EvictionBudget:
    """Counts planned moves against `limits` and each PDB's disruptionsAllowed."""

    def __init__(self, limits: Limits, snapshot: Snapshot) -> None:
        self.limits = limits
        self.snapshot = snapshot
        self.total = 0
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_pdb: Counter[str] = Counter()

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
        return self.pdb_refusal(pod)

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
        self.per_node[node] += 1
        self.per_namespace[pod.namespace] += 1
        for pdb in self.snapshot.pdbs_for(pod):
            self.per_pdb[f"{pdb.namespace}/{pdb.name}"] += 1
