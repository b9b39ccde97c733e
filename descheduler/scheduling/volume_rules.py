"""kube-scheduler's volume rules (scheduling-core.md §2 item 8), for the replacement of a moved pod:

- VolumeBinding (pkg/scheduler/framework/plugins/volumebinding/binder.go, volume_binding.go): a bound
  claim's PersistentVolume node affinity must match the node ("node(s) had volume node affinity
  conflict"); an unbound claim of a WaitForFirstConsumer StorageClass needs a node its
  `allowedTopologies` allow; an unbound claim of an Immediate class makes the pod unschedulable
  everywhere. A generic ephemeral volume gives the replacement a new claim (the ephemeral volume
  controller names it "<new pod>-<volume>"), judged from its template's StorageClass, or the
  cluster's default one when the template names none: the old claim's volume restricts nothing.
- VolumeZone (volumezone/volume_zone.go): a bound volume's zone and region labels (a `__`-separated
  set of values) must match the node's, on nodes that carry any of those labels.
- VolumeRestrictions (volumerestrictions/volume_restrictions.go): a ReadWriteOncePod claim another
  pod uses refuses every node. Inline-disk conflicts (gcePersistentDisk, awsElasticBlockStore, rbd,
  iscsi) are not modelled: the decoder marks such pods unjudged.
- NodeVolumeLimits (nodevolumelimits/csi.go): per CSI driver with a CSINode
  `allocatable.count`, the unique volumes (driver + volumeHandle; an unbound claim's is its class's
  provisioner and its own name) of the pods on the node plus the pod's new ones stay within it.

Same shape as `pod_rules`: what depends on the pod alone is found once (`volume_needs`, the plugins'
PreFilter), each node is answered from arrays (`volume_check`), and what depends on the snapshot
alone (a volume's node mask, the CSI volumes per node, the users of each claim) is found once per
table (`NodeTable.rule_cache`). Where pods count is `pod_rules`': moves planned this cycle count
where they land, and the moved pod's own volumes stop counting on its source.

What the core cannot judge (a claim or class the snapshot does not hold, a kind it may not read, a
new volume whose place is chosen by its provisioner) is named in `VolumeNeeds.unjudged`: the pod is
then not moved, never placed on a guess.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from descheduler.model import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from descheduler.refusal import Refusal, define
from descheduler.scheduling.node_terms import cached_terms_mask
from descheduler.scheduling.pod_rules import _base_node, _by_key, _node_of
from descheduler.scheduling.table import BoolArray, IntArray, NodeTable
from descheduler.scheduling.view import ClusterView

if TYPE_CHECKING:
    from descheduler.snapshot import Snapshot

# subject: the volume.
VOLUME_NODE_AFFINITY = define(
    "VolumeNodeAffinity", "volume {subject}: its node affinity does not allow this node", brief="volume node affinity"
)
# subject: the volume; facts: claim.
VOLUME_MISSING = define(
    "VolumeMissing", "claim {claim} is bound to volume {subject}, which does not exist", brief="claim's volume missing"
)
# subject: the claim.
UNBOUND_IMMEDIATE = define(
    "UnboundImmediateClaim",
    "claim {subject} is unbound and its StorageClass binds immediately",
    brief="unbound immediate claim",
)
# subject: the claim ("claim namespace/name", "ephemeral volume name"); facts: storage_class.
PROVISIONING_TOPOLOGY = define(
    "VolumeProvisioningTopology",
    "{subject}: StorageClass {storage_class} provisions no volume for this node (allowedTopologies)",
    brief="StorageClass {storage_class}: no volume for this node",
)
# subject: the claim; facts: node.
SELECTED_NODE = define(
    "VolumeSelectedNode", "claim {subject} is being provisioned for node {node}", brief="claim provisioned elsewhere"
)
# subject: the volume; facts: key (the label), values.
VOLUME_ZONE = define("VolumeZone", "volume {subject} is in {key} {values}", brief="volume zone")
# subject: the claim; facts: other (the pod using it).
READ_WRITE_ONCE_POD = define(
    "ReadWriteOncePod", "claim {subject} is ReadWriteOncePod and {other} uses it", brief="ReadWriteOncePod claim in use"
)
# subject: the CSI driver; facts: limit.
VOLUME_LIMIT = define(
    "VolumeLimit", "{subject}: the node's limit of {limit} volumes would be exceeded", brief="{subject} volume limit"
)

# kube-scheduler's own words (its plugins' reasons), for an answer given to it.
FOR_SCHEDULER: Mapping[str, Callable[[Refusal], str]] = {
    VOLUME_NODE_AFFINITY: lambda r: "node(s) had volume node affinity conflict",
    VOLUME_MISSING: lambda r: "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
    UNBOUND_IMMEDIATE: lambda r: "pod has unbound immediate PersistentVolumeClaims",
    PROVISIONING_TOPOLOGY: lambda r: "node(s) didn't find available persistent volumes to bind",
    SELECTED_NODE: lambda r: "node(s) didn't find available persistent volumes to bind",
    VOLUME_ZONE: lambda r: "node(s) had no available volume zone",
    READ_WRITE_ONCE_POD: lambda r: (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
    ),
    VOLUME_LIMIT: lambda r: "node(s) exceed max volume count",
}

READ_WRITE_ONCE_POD_MODE = "ReadWriteOncePod"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
BETA_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
TOPOLOGY_LABELS = (*BETA_LABELS, *BETA_LABELS.values())
STORAGE_CLASSES = "storageclasses.storage.k8s.io"
CSI_NODES = "csinodes.storage.k8s.io"

# A CSI volume: (driver, volume handle).
CSIVolume = tuple[str, str]


@dataclass(frozen=True, slots=True)
class NodeRule:
    """Nodes must match `terms` (ORed node selector terms), else `refusal`."""

    terms: tuple[NodeSelectorTerm, ...]
    refusal: Refusal


@dataclass(frozen=True, slots=True)
class VolumeNeeds:
    """What the replacement's volumes ask of a node, found once per pod (the plugins' PreFilter)."""

    unjudged: str = ""  # the rule the core cannot judge for the pod, named; "" when none
    everywhere: Refusal | None = None  # every node is refused for it
    rules: tuple[NodeRule, ...] = ()  # VolumeBinding: node affinity, allowedTopologies, selected node
    zones: tuple[tuple[str, str, frozenset[str]], ...] = ()  # VolumeZone: (volume, label, values)
    csi: tuple[CSIVolume, ...] = ()  # NodeVolumeLimits: the replacement's CSI volumes
    exclusive: tuple[str, ...] = ()  # VolumeRestrictions: its ReadWriteOncePod claims ("namespace/name")

    @property
    def empty(self) -> bool:
        return not (self.unjudged or self.everywhere or self.rules or self.zones or self.csi or self.exclusive)


NO_NEEDS = VolumeNeeds()


@dataclass(slots=True)
class ReasonCheck:
    """A rule's verdict over every node, built refusal by refusal: per node the index of its first
    refusal in `reasons` (-1: none); rows with the same index share one refusal."""

    first: IntArray
    reasons: list[Refusal] = field(default_factory=list)

    @classmethod
    def over(cls, table: NodeTable) -> ReasonCheck:
        return cls(np.full(table.size, -1, dtype=np.int64))

    @property
    def passed(self) -> BoolArray:
        passed: BoolArray = self.first < 0
        return passed

    def refuse(self, failed: BoolArray, refusal: Refusal) -> None:
        """Rows that fail and have no earlier refusal get this one."""
        fresh = failed & (self.first < 0)
        if fresh.any():
            self.first[fresh] = len(self.reasons)
            self.reasons.append(refusal)

    def refusal(self, row: int) -> Refusal:
        return self.reasons[int(self.first[row])]


# --- PreFilter: what the pod's volumes need --------------------------------------------------------


def volume_needs(pod: Pod, snapshot: Snapshot) -> VolumeNeeds:
    """The replacement's volume needs (PreFilter of VolumeRestrictions, NodeVolumeLimits,
    VolumeBinding and VolumeZone)."""
    if not pod.claims and not pod.ephemeral:
        return NO_NEEDS
    if snapshot.volumes_unreadable:
        return VolumeNeeds(unjudged=f"VolumeBinding: {snapshot.volumes_unreadable}")
    rules: list[NodeRule] = []
    zones: list[tuple[str, str, frozenset[str]]] = []
    csi: list[CSIVolume] = []
    exclusive: list[str] = []
    everywhere: Refusal | None = None
    for name in pod.claims:
        key = f"{pod.namespace}/{name}"
        claim = snapshot.pvcs.get(key)
        if claim is None:
            return VolumeNeeds(unjudged=f"VolumeBinding: PersistentVolumeClaim {key} is not in the snapshot")
        if READ_WRITE_ONCE_POD_MODE in claim.access_modes:
            exclusive.append(key)
        if claim.volume_name:
            volume = snapshot.pvs.get(claim.volume_name)
            if volume is None:
                everywhere = everywhere or Refusal(code=VOLUME_MISSING, subject=claim.volume_name, facts={"claim": key})
                continue
            if volume.node_affinity is not None:
                refusal = Refusal(code=VOLUME_NODE_AFFINITY, subject=volume.name)
                rules.append(NodeRule(volume.node_affinity, refusal))
            for label, value in volume.zone_labels.items():
                zones.append((volume.name, label, frozenset(value.split("__"))))
            if volume.csi_driver and volume.csi_handle:
                csi.append((volume.csi_driver, volume.csi_handle))
            continue
        found = _unbound(claim, snapshot)
        if isinstance(found, str):
            return VolumeNeeds(unjudged=found)
        if isinstance(found, Refusal):
            everywhere = everywhere or found
            continue
        rule, driver = found
        if rule is not None:
            rules.append(rule)
        if driver:
            csi.append((driver, f"{pod.namespace}-{name}"))
    for ephemeral in pod.ephemeral:
        new = _new_ephemeral_claim(pod, ephemeral.name, ephemeral.storage_class, snapshot)
        if isinstance(new, str):
            return VolumeNeeds(unjudged=new)
        rule, driver = new
        if rule is not None:
            rules.append(rule)
        if driver:
            csi.append((driver, f"{pod.namespace}-{pod.name}-{ephemeral.name} (new)"))
    if csi and CSI_NODES in snapshot.unreadable:
        return VolumeNeeds(unjudged=f"NodeVolumeLimits: {snapshot.unreadable[CSI_NODES]}")
    return VolumeNeeds("", everywhere, tuple(rules), tuple(zones), tuple(dict.fromkeys(csi)), tuple(exclusive))


def _storage_class(name: str, claim: str, snapshot: Snapshot) -> StorageClass | str:
    """The class, or why the core cannot judge the claim ("claim ns/name", "ephemeral volume v") without it."""
    if STORAGE_CLASSES in snapshot.unreadable:
        return f"VolumeBinding: {claim}: {snapshot.unreadable[STORAGE_CLASSES]}"
    found = snapshot.storage_classes.get(name)
    return found if found is not None else f"VolumeBinding: StorageClass {name} of {claim} is not in the snapshot"


def _unbound(claim: PersistentVolumeClaim, snapshot: Snapshot) -> tuple[NodeRule | None, str] | Refusal | str:
    """An unbound claim (binder.go GetPodVolumes, checkVolumeProvisions): (the nodes it allows, its
    CSI driver), a refusal for every node, or why it cannot be judged."""
    key = claim.key
    if not claim.storage_class:  # IsDelayBindingMode: no class binds immediately
        return Refusal(code=UNBOUND_IMMEDIATE, subject=key)
    found = _storage_class(claim.storage_class, f"claim {key}", snapshot)
    if isinstance(found, str):
        return found
    if not found.wait_for_first_consumer:
        return Refusal(code=UNBOUND_IMMEDIATE, subject=key)
    if claim.selected_node:  # provisioning for that node is under way
        name = NodeSelectorRequirement(key="metadata.name", operator="In", values=(claim.selected_node,))
        refusal = Refusal(code=SELECTED_NODE, subject=key, facts={"node": claim.selected_node})
        return NodeRule((NodeSelectorTerm(match_fields=(name,)),), refusal), ""
    return _provisioned(found, f"claim {key}")


def _provisioned(storage_class: StorageClass, claim: str) -> tuple[NodeRule | None, str] | str:
    """A WaitForFirstConsumer claim its class provisions: the nodes `allowedTopologies` allow."""
    if not storage_class.provisioner or storage_class.provisioner == NO_PROVISIONER:
        return (
            f"VolumeBinding: {claim} waits for a volume of StorageClass {storage_class.name} to bind to "
            "(matching existing volumes is not modelled)"
        )
    if not storage_class.allowed_topologies:
        return None, storage_class.provisioner
    refusal = Refusal(code=PROVISIONING_TOPOLOGY, subject=claim, facts={"storage_class": storage_class.name})
    return NodeRule(storage_class.allowed_topologies, refusal), storage_class.provisioner


def default_storage_class(snapshot: Snapshot) -> StorageClass | None:
    """The class a claim naming none gets (the DefaultStorageClass admission plugin: the newest of
    the classes annotated default, then by name)."""
    defaults = [c for c in snapshot.storage_classes.values() if c.default]
    if not defaults:
        return None
    return max(defaults, key=lambda c: (c.created.timestamp() if c.created is not None else 0.0, c.name))


def _new_ephemeral_claim(
    pod: Pod, volume: str, class_name: str | None, snapshot: Snapshot
) -> tuple[NodeRule | None, str] | str:
    """The new claim the replacement's ephemeral volume gets: WaitForFirstConsumer, provisioned
    where the replacement is scheduled (its class's allowedTopologies)."""
    claim = f"ephemeral volume {volume}"
    if class_name is None:
        if STORAGE_CLASSES in snapshot.unreadable:
            return f"VolumeBinding: ephemeral volume {volume}: {snapshot.unreadable[STORAGE_CLASSES]}"
        default = default_storage_class(snapshot)
        if default is None:
            return f"VolumeBinding: ephemeral volume {volume} names no StorageClass and the cluster has no default"
        class_name = default.name
    if not class_name:
        return f"VolumeBinding: ephemeral volume {volume}: a claim without a StorageClass binds to any matching volume"
    found = _storage_class(class_name, claim, snapshot)
    if isinstance(found, str):
        return found
    if not found.wait_for_first_consumer:
        return (
            f"VolumeBinding: ephemeral volume {volume}: StorageClass {class_name} binds immediately, "
            "so where its new volume is provisioned is not known"
        )
    return _provisioned(found, claim)


def unjudged(pod: Pod, snapshot: Snapshot) -> str:
    """The volume rule the core cannot judge for the pod, named; "" when none."""
    return volume_needs(pod, snapshot).unjudged


# --- per table: what the snapshot's pods hold ----------------------------------------------------


def _claim_users(table: NodeTable) -> dict[str, list[Pod]]:
    """Claim key -> the pods whose persistentVolumeClaim volumes name it."""
    found = table.rule_cache.get("claim users")
    if found is None:
        found = {}
        for p in table.snapshot.pods:
            for name in p.claims:
                found.setdefault(f"{p.namespace}/{name}", []).append(p)
        table.rule_cache["claim users"] = found
    assert isinstance(found, dict)
    return found


def _held_csi(snapshot: Snapshot, pod: Pod) -> list[CSIVolume]:
    """The CSI volumes a running pod holds (csi.go filterAttachableVolumes for an existing pod): its
    claims' and its ephemeral volumes' claims'; a claim the snapshot does not hold is not counted."""
    out: list[CSIVolume] = []
    names = (*pod.claims, *(v.claim_of(pod.name) for v in pod.ephemeral))
    for name in names:
        claim = snapshot.pvcs.get(f"{pod.namespace}/{name}")
        if claim is None:
            continue
        volume = snapshot.pvs.get(claim.volume_name) if claim.volume_name else None
        if volume is not None and volume.csi_driver and volume.csi_handle:
            out.append((volume.csi_driver, volume.csi_handle))
        elif claim.storage_class:  # unbound, or its volume unknown: its class's provisioner, its own name
            storage_class = snapshot.storage_classes.get(claim.storage_class)
            if storage_class is not None and storage_class.provisioner:
                out.append((storage_class.provisioner, f"{claim.namespace}-{claim.name}"))
    return list(dict.fromkeys(out))


@dataclass(slots=True)
class _Attached:
    """CSI volumes where pods count before the view's moves (`pod_rules._base_node`): per pod, per
    node, and per volume the nodes holding it."""

    by_pod: dict[str, list[CSIVolume]] = field(default_factory=dict)
    by_row: dict[int, Counter[CSIVolume]] = field(default_factory=dict)
    rows: dict[CSIVolume, list[int]] = field(default_factory=dict)
    unique: dict[str, IntArray] = field(default_factory=dict)  # driver -> unique volumes per node

    def count(self, table: NodeTable, driver: str) -> IntArray:
        found = self.unique.get(driver)
        if found is None:
            found = self.unique[driver] = np.zeros(table.size, dtype=np.int64)
            for (d, _), rows in self.rows.items():
                if d == driver:
                    found[rows] += 1
        return found


def _attached(table: NodeTable) -> _Attached:
    found = table.rule_cache.get("csi attached")
    if found is None:
        found = _Attached()
        snapshot = table.snapshot
        for p in snapshot.pods:
            if p.terminal or not (p.claims or p.ephemeral):
                continue
            held = _held_csi(snapshot, p)
            if not held:
                continue
            found.by_pod[p.key] = held
            row = table.index.get(_base_node(table, p))
            if row is not None:
                counts = found.by_row.setdefault(row, Counter())
                for volume in held:
                    if not counts[volume]:
                        found.rows.setdefault(volume, []).append(row)
                    counts[volume] += 1
        table.rule_cache["csi attached"] = found
    assert isinstance(found, _Attached)
    return found


def _limits(table: NodeTable, driver: str) -> IntArray:
    """Per node, the CSINode's attach limit for the driver (-1: none, so no limit)."""
    found = table.rule_cache.get(("csi limit", driver))
    if found is None:
        found = np.full(table.size, -1, dtype=np.int64)
        for name, csi_node in table.snapshot.csi_nodes.items():
            row = table.index.get(name)
            limit = csi_node.limits.get(driver)
            if row is not None and limit is not None:
                found[row] = limit
        table.rule_cache[("csi limit", driver)] = found
    assert isinstance(found, np.ndarray)
    return found


def _zone_mask(table: NodeTable, label: str, values: frozenset[str]) -> BoolArray:
    """VolumeZone's Filter for one volume label: the node's value of the label (or, lacking it, of
    its GA form) is one of `values`; a node without any topology label passes."""
    key = ("volume zone", label, values)
    found = table.rule_cache.get(key)
    if found is None:
        index = table.label_index()
        n = table.size

        def rows(name: str, only: Iterable[str] | None = None) -> BoolArray:
            mask = np.zeros(n, dtype=np.bool_)
            for value, at in index.get(name, {}).items():
                if only is None or value in only:
                    mask[at] = True
            return mask

        labelled = np.zeros(n, dtype=np.bool_)
        for name in TOPOLOGY_LABELS:
            labelled |= rows(name)
        has = rows(label)
        ok = (has & rows(label, values)) | (~has & rows(BETA_LABELS.get(label, label), values))
        found = table.rule_cache[key] = ok | ~labelled
    assert isinstance(found, np.ndarray)
    return found


# --- Filter: every node at once --------------------------------------------------------------------


def volume_check(pod: Pod, view: ClusterView, needs: VolumeNeeds) -> ReasonCheck:
    """Every node against the replacement's volume needs, in kube-scheduler's plugin order:
    VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone."""
    table = view.table
    check = ReasonCheck.over(table)
    everywhere = np.ones(table.size, dtype=np.bool_)
    for key in needs.exclusive:
        other = _exclusive_user(pod, key, view)
        if other:
            check.refuse(everywhere, Refusal(code=READ_WRITE_ONCE_POD, subject=key, facts={"other": other}))
    if needs.csi:
        _check_limits(pod, view, needs.csi, check)
    if needs.everywhere is not None:
        check.refuse(everywhere, needs.everywhere)
    for rule in needs.rules:
        check.refuse(~cached_terms_mask(table, rule.terms), rule.refusal)
    for volume, label, values in needs.zones:
        facts = {"key": label.rsplit("/", 1)[-1], "values": ", ".join(sorted(values))}
        check.refuse(~_zone_mask(table, label, values), Refusal(code=VOLUME_ZONE, subject=volume, facts=facts))
    return check


def _exclusive_user(pod: Pod, key: str, view: ClusterView) -> str:
    """Another pod, running and not leaving, that uses the ReadWriteOncePod claim (the moved pod's
    old self does not count: it is leaving)."""
    for other in _claim_users(view.table).get(key, ()):
        if other.key != pod.key and not other.deleting and not other.terminal and _node_of(view, other):
            return other.key
    return ""


def _check_limits(pod: Pod, view: ClusterView, wanted: tuple[CSIVolume, ...], check: ReasonCheck) -> None:
    """NodeVolumeLimits (csi.go Filter): per driver with a limit on the node, the unique volumes
    there plus the pod's that are not there already must stay within it. From per-table arrays; the
    few nodes whose volumes the view's moves (or the pod's own leaving) change are recounted."""
    table = view.table
    drivers = sorted({driver for driver, _ in wanted})
    limits = {driver: _limits(table, driver) for driver in drivers}
    if not any((limit >= 0).any() for limit in limits.values()):
        return
    attached = _attached(table)
    changed: dict[int, Counter[CSIVolume]] = {}
    by_key = _by_key(table)

    def shift(key: str, node: str, sign: int) -> None:
        row = table.index.get(node)
        if row is None:
            return
        counts = changed.get(row)
        if counts is None:
            counts = changed[row] = Counter(attached.by_row.get(row, ()))
        counts.update({volume: sign for volume in attached.by_pod[key]})

    for key, node in view.location.items():
        moved = by_key.get(key)
        if moved is None or key not in attached.by_pod:
            continue
        shift(key, _base_node(table, moved), -1)
        if key != pod.key:
            shift(key, node, 1)
    own = by_key.get(pod.key)
    if own is not None and pod.key in attached.by_pod and pod.key not in view.location:
        shift(pod.key, _base_node(table, own), -1)
    for driver in drivers:
        limit = limits[driver]
        limited = limit >= 0
        if not limited.any():
            continue
        mine = [volume for volume in wanted if volume[0] == driver]
        total = attached.count(table, driver).copy()
        new = np.full(table.size, len(mine), dtype=np.int64)
        for volume in mine:
            new[attached.rows.get(volume, [])] -= 1
        for row, counts in changed.items():
            there = {v for v, n in counts.items() if v[0] == driver and n > 0}
            total[row] = len(there)
            new[row] = sum(1 for volume in mine if volume not in there)
        over = limited & (new > 0) & (total + new > limit)
        for value in sorted(set(limit[over].tolist())):
            refusal = Refusal(code=VOLUME_LIMIT, subject=driver, facts={"limit": int(value)})
            check.refuse(over & (limit == value), refusal)
