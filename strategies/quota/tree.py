"""The quota tree: ElasticQuota objects as groups with parents, validated (quotareclaim.md §1).

A group the tree cannot trust (bad quantities, min > max, unknown parent, a parent cycle, children
whose min sum exceeds the parent's) is kept for accounting but marked untrusted together with its
whole subtree: the strategy neither evicts from it nor reclaims for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from descheduler.model import ElasticQuota
from descheduler.quantity import format_units
from descheduler.resources import Resources, total

# Koordinator names its implicit root quota this; a parent label naming it means "top level".
KOORDINATOR_ROOT = "koordinator-root-quota"


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    quota: ElasticQuota
    parent: str | None
    min: Resources
    max: Resources | None  # None: no max; a key absent from max is unlimited

    def max_of(self, resource: str) -> int | None:
        if self.max is None or resource not in self.max:
            return None
        return self.max[resource]


@dataclass(frozen=True, slots=True)
class QuotaTree:
    groups: Mapping[str, Group]
    children: Mapping[str, tuple[str, ...]]
    untrusted: Mapping[str, str]  # group -> why it is skipped
    warnings: tuple[str, ...]

    def trusted(self, name: str) -> bool:
        return name in self.groups and name not in self.untrusted

    def is_leaf(self, name: str) -> bool:
        return not self.children.get(name)

    def ancestors(self, name: str) -> list[str]:
        """Parent first, up to the top level (stops on a cycle)."""
        out: list[str] = []
        seen = {name}
        parent = self.groups[name].parent if name in self.groups else None
        while parent is not None and parent in self.groups and parent not in seen:
            out.append(parent)
            seen.add(parent)
            parent = self.groups[parent].parent
        return out

    def depth(self, name: str) -> int:
        return len(self.ancestors(name))

    def lca(self, a: str, b: str) -> str | None:
        """Lowest common ancestor-or-self; None when they only meet at the (virtual) root."""
        mine = [a, *self.ancestors(a)]
        theirs = {b, *self.ancestors(b)}
        return next((g for g in mine if g in theirs), None)

    def below(self, name: str, top: str | None) -> list[str]:
        """`name` and its ancestors strictly below `top` (all of them when top is None)."""
        out = []
        for group in [name, *self.ancestors(name)]:
            if group == top:
                break
            out.append(group)
        return out

    def subtree(self, name: str) -> list[str]:
        out, stack = [], [name]
        while stack:
            group = stack.pop()
            if group in out:
                continue
            out.append(group)
            stack.extend(self.children.get(group, ()))
        return sorted(out)


def describe(vector: Mapping[str, int], names: Iterable[str] | None = None) -> str:
    keys = sorted(vector) if names is None else sorted(names)
    return ", ".join(f"{r} {format_units(r, vector.get(r, 0))}" for r in keys)


def usage_words(used: Mapping[str, int], bound: Mapping[str, int], resources: list[str]) -> str:
    """ "cpu 3/2, memory 1Gi/4Gi": used against a bound (min or max) per resource."""
    return ", ".join(f"{r} {format_units(r, used.get(r, 0))}/{format_units(r, bound.get(r, 0))}" for r in resources)


def _object_name(quota: ElasticQuota) -> str:
    return f"{quota.api_group} {quota.namespace}/{quota.name}"


def build_tree(quotas: Iterable[ElasticQuota], parent_label: str) -> QuotaTree:
    """Index the quotas by name, link parents and validate; never raises on bad objects."""
    by_name: dict[str, list[ElasticQuota]] = {}
    for quota in sorted(quotas, key=lambda q: (q.name, q.api_group, q.namespace)):
        by_name.setdefault(quota.name, []).append(quota)
    groups: dict[str, Group] = {}
    bad: dict[str, str] = {}
    for name, found in by_name.items():
        quota = found[0]
        parent = quota.labels.get(parent_label, "").strip() or None
        if parent == KOORDINATOR_ROOT:
            parent = None
        groups[name] = Group(name=name, quota=quota, parent=parent, min=quota.min, max=quota.max)
        if len(found) > 1:
            bad[name] = f"defined more than once ({', '.join(_object_name(q) for q in found)})"
            continue
        problem = _quantity_problem(groups[name])
        if problem:
            bad[name] = problem
    children: dict[str, list[str]] = {}
    for name, group in groups.items():
        if group.parent is None:
            continue
        if group.parent == name:
            bad.setdefault(name, "is its own parent (parent cycle)")
        elif group.parent not in groups:
            bad.setdefault(name, f"parent quota {group.parent!r} does not exist")
        else:
            children.setdefault(group.parent, []).append(name)
    for name in groups:
        cycle = _cycle_from(name, groups)
        if cycle:
            for member in cycle:
                bad.setdefault(member, "parent cycle " + " → ".join([*cycle, cycle[0]]))
    for parent, kids in sorted(children.items()):
        if parent in bad:
            continue
        summed = total(groups[k].min for k in kids)
        over = [r for r in sorted(summed) if summed[r] > groups[parent].min[r]]
        if over:
            detail = ", ".join(
                f"{r} {format_units(r, summed[r])} > {format_units(r, groups[parent].min[r])}" for r in over
            )
            bad[parent] = f"children's min sum exceeds its min ({detail})"
    tree_children = {k: tuple(sorted(v)) for k, v in children.items()}
    root_causes = dict(sorted(bad.items()))
    untrusted = dict(root_causes)
    warnings: list[str] = []
    probe = QuotaTree(groups=groups, children=tree_children, untrusted={}, warnings=())
    for name, why in root_causes.items():
        below = [g for g in probe.subtree(name) if g != name and g not in root_causes]
        for descendant in below:
            untrusted.setdefault(descendant, f"ancestor quota {name} is skipped: {why}")
        tail = f" (and {', '.join(below)} below it)" if below else ""
        warnings.append(
            f"QuotaReclaim: quota {name} {why}; skipping {name}{tail}: no reclaim for it and no victims from it"
        )
    return QuotaTree(groups=groups, children=tree_children, untrusted=untrusted, warnings=tuple(warnings))


def _quantity_problem(group: Group) -> str | None:
    negative = [r for r, v in group.min.items() if v < 0]
    if group.max is not None:
        negative += [f"max {r}" for r, v in group.max.items() if v < 0]
    if negative:
        return "has negative quantities (" + ", ".join(sorted(negative)) + ")"
    if group.max is not None:
        over = [r for r in sorted(group.min) if r in group.max and group.min[r] > group.max[r]]
        if over:
            return (
                "has min > max ("
                + ", ".join(f"{r} {format_units(r, group.min[r])} > {format_units(r, group.max[r])}" for r in over)
                + ")"
            )
    return None


def _cycle_from(start: str, groups: Mapping[str, Group]) -> list[str] | None:
    """The cycle `start` is on (in parent order, smallest name first), or None."""
    seen: list[str] = []
    current: str | None = start
    while current is not None and current in groups:
        if current in seen:
            cycle = seen[seen.index(current) :]
            if start not in cycle:
                return None
            first = cycle.index(min(cycle))
            return cycle[first:] + cycle[:first]
        seen.append(current)
        current = groups[current].parent
    return None
