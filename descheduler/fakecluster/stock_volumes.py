"""kube-scheduler's volume and dynamic-resource filters, on raw objects, for the fake's stock scheduler.

Written apart from the product's scheduling core, as `stock` is (nothing here comes from
descheduler.scheduling, .model or .snapshot). Behaviour follows the kube-scheduler v1.36 plugins:
- VolumeRestrictions (volumerestrictions/volume_restrictions.go): a ReadWriteOncePod claim that a
  pod already assigned to a node uses refuses every node (terminating pods still hold it);
- NodeVolumeLimits (nodevolumelimits/csi.go): per CSI driver, the unique volumes of the node's pods
  plus the pod's new ones may not exceed the CSINode driver's `allocatable.count` (or the node's
  `attachable-volumes-csi-<driver>` allocatable); an unbound claim counts under its class's
  provisioner;
- VolumeBinding (volumebinding/binder.go): a fully bound claim (volumeName and the
  pv.kubernetes.io/bind-completed annotation) needs its PV's node affinity to match; an unbound
  claim of a WaitForFirstConsumer class needs an available PV of the class that fits on the node
  (static binding) or a provisioner and the class's `allowedTopologies`; any other unbound claim
  (Immediate, or pre-bound by volumeName alone) refuses every node;
- VolumeZone (volumezone/volume_zone.go): a bound PV's zone and region labels (values joined by
  `__` are a set) must hold the node's value; a node without any zone or region label passes;
- DynamicResources (dynamicresources/dynamicresources.go): an allocated ResourceClaim's
  `status.allocation.nodeSelector` must match the node. The fake serves no ResourceSlices, so an
  unallocated claim can be allocated nowhere, as on a cluster where no driver publishes devices.
Left out: inline and migrated in-tree volumes (disk conflicts of GCE PD, EBS, RBD, iSCSI; in-tree
volume limits), CSIStorageCapacity, the PV's `volume.kubernetes.io/selected-node`, VolumeAttachment
objects, device allocation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from descheduler.fakecluster.stock_terms import LabelSelector, node_selector_term_matches, to_units

Raw = Mapping[str, Any]

BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
CSI_LIMIT_PREFIX: Final = "attachable-volumes-csi-"
RWOP: Final = "ReadWriteOncePod"
_BETA_TO_GA: Final = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
ZONE_LABELS: Final = (*_BETA_TO_GA, *_BETA_TO_GA.values())

# kube-scheduler's words
RWOP_CONFLICT: Final = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
MAX_VOLUME_COUNT: Final = "node(s) exceed max volume count"
UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ZONE_CONFLICT: Final = "node(s) had no available volume zone"
CLAIM_NOT_ON_NODE: Final = "resourceclaim not available on the node"
CANNOT_ALLOCATE: Final = "cannot allocate all claims"


def _key(raw: Raw) -> tuple[str, str]:
    meta = raw["metadata"]
    return (meta.get("namespace") or "default", meta["name"])


@dataclass(frozen=True, slots=True)
class StorageObjects:
    """The storage and DRA objects the volume filters read, by key."""

    claims: Mapping[tuple[str, str], Raw] = field(default_factory=dict)  # (namespace, name) -> PVC
    volumes: Mapping[str, Raw] = field(default_factory=dict)  # PV name -> PV
    classes: Mapping[str, Raw] = field(default_factory=dict)  # StorageClass name -> class
    csi_nodes: Mapping[str, Raw] = field(default_factory=dict)  # node name -> CSINode
    resource_claims: Mapping[tuple[str, str], Raw] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        claims: Iterable[Raw] = (),
        volumes: Iterable[Raw] = (),
        classes: Iterable[Raw] = (),
        csi_nodes: Iterable[Raw] = (),
        resource_claims: Iterable[Raw] = (),
    ) -> StorageObjects:
        return cls(
            claims={_key(c): c for c in claims},
            volumes={v["metadata"]["name"]: v for v in volumes},
            classes={c["metadata"]["name"]: c for c in classes},
            csi_nodes={c["metadata"]["name"]: c for c in csi_nodes},
            resource_claims={_key(c): c for c in resource_claims},
        )

    def claim_class(self, claim: Raw) -> str:
        """storagehelpers.GetPersistentVolumeClaimClass: the beta annotation wins over the field."""
        annotations = claim["metadata"].get("annotations") or {}
        if BETA_CLASS_ANNOTATION in annotations:
            return str(annotations[BETA_CLASS_ANNOTATION])
        return str((claim.get("spec") or {}).get("storageClassName") or "")

    def delay_binding(self, claim: Raw) -> bool:
        """volume.IsDelayBindingMode: the claim's class exists and waits for the first consumer."""
        found = self.classes.get(self.claim_class(claim))
        return found is not None and found.get("volumeBindingMode") == "WaitForFirstConsumer"

    def csi_volume(self, claim: Raw) -> tuple[str, str] | None:
        """(driver, unique volume name) of a claim, as CSILimits counts it: its PV's CSI source, or
        for a claim without a PV its class's provisioner with a name of the claim's own."""
        name = (claim.get("spec") or {}).get("volumeName") or ""
        pv = self.volumes.get(name) if name else None
        if pv is not None:
            csi = (pv.get("spec") or {}).get("csi")
            if not csi:
                return None  # in-tree volumes: left out
            return str(csi["driver"]), f"{csi['driver']}/{csi['volumeHandle']}"
        found = self.classes.get(self.claim_class(claim))
        if found is None or not found.get("provisioner"):
            return None
        namespace, claim_name = _key(claim)
        driver = str(found["provisioner"])
        return driver, f"{driver}/unbound-{namespace}/{claim_name}"


def pod_claim_names(pod: Raw) -> list[str]:
    """The PVC names of the pod's volumes: persistentVolumeClaim sources and generic ephemeral
    volumes (whose claim is `<pod>-<volume>`)."""
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if volume.get("persistentVolumeClaim") is not None:
            out.append(str(volume["persistentVolumeClaim"].get("claimName") or ""))
        elif volume.get("ephemeral") is not None:
            out.append(f"{pod['metadata']['name']}-{volume['name']}")
    return out


class VolumeUse:
    """What the assigned pods hold: the ReadWriteOncePod claims in use and each node's attached CSI
    volumes (NodeInfo.PVCRefCounts and the existing pods' volumes in CSILimits)."""

    def __init__(self, storage: StorageObjects) -> None:
        self.storage = storage
        self.claims_in_use: set[tuple[str, str]] = set()
        self.attached: dict[str, dict[str, str]] = {}  # node -> unique volume name -> driver

    def place(self, pod: Raw, node: str) -> None:
        namespace = pod["metadata"].get("namespace") or "default"
        for name in pod_claim_names(pod):
            self.claims_in_use.add((namespace, name))
            claim = self.storage.claims.get((namespace, name))
            found = self.storage.csi_volume(claim) if claim is not None else None
            if found is not None:
                self.attached.setdefault(node, {})[found[1]] = found[0]


def _node_affinity_matches(pv: Raw, name: str, labels: Mapping[str, str]) -> bool:
    """volume.CheckNodeAffinity: no required node affinity matches every node."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    return any(node_selector_term_matches(t, name, labels) for t in required.get("nodeSelectorTerms") or ())


def _allowed_topologies_match(storage_class: Raw, labels: Mapping[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match all; an empty term matches nothing."""
    terms = storage_class.get("allowedTopologies") or ()
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if expressions and all(labels.get(e["key"]) in (e.get("values") or ()) for e in expressions):
            return True
    return False


def _zone_set(value: str) -> frozenset[str]:
    """volumehelpers.LabelZonesToSet: `__`-separated zone names."""
    return frozenset(part for part in value.split("__") if part)


def _quantity_bytes(raw: Any) -> int:
    return to_units("storage", raw) if raw is not None else 0


@dataclass(frozen=True, slots=True)
class VolumeCycle:
    """What the volume and DRA PreFilters compute once for a pod; `reason` is their Filters."""

    storage: StorageObjects
    everywhere: str | None = None  # a PreFilter refusal: every node
    bound: tuple[tuple[str, Raw | None], ...] = ()  # fully bound claims: (PV name, PV or None)
    delayed: tuple[Raw, ...] = ()  # unbound claims of WaitForFirstConsumer classes
    zones: tuple[tuple[str, frozenset[str]], ...] = ()  # VolumeZone: (PV label key, allowed values)
    new_volumes: Mapping[str, str] = field(default_factory=dict)  # unique CSI volume name -> driver
    claim_selectors: tuple[Raw, ...] = ()  # allocated ResourceClaims' nodeSelector

    @classmethod
    def of(cls, pod: Raw, storage: StorageObjects, use: VolumeUse) -> VolumeCycle:
        """`use`: the volumes the assigned pods hold."""
        namespace = pod["metadata"].get("namespace") or "default"
        claims: list[Raw] = []
        for name in pod_claim_names(pod):
            claim = storage.claims.get((namespace, name))
            if claim is None:
                return cls(storage, everywhere=f'persistentvolumeclaim "{name}" not found')
            if claim["metadata"].get("deletionTimestamp"):
                return cls(storage, everywhere=f'persistentvolumeclaim "{name}" is being deleted')
            claims.append(claim)
        dra = _claim_selectors(pod, storage)
        if isinstance(dra, str):
            return cls(storage, everywhere=dra)
        if not claims:
            return cls(storage, claim_selectors=dra)
        # VolumeRestrictions' PreFilter
        for claim in claims:
            if RWOP in ((claim.get("spec") or {}).get("accessModes") or ()) and _key(claim) in use.claims_in_use:
                return cls(storage, everywhere=RWOP_CONFLICT)
        # VolumeBinding's PreFilter
        bound: list[tuple[str, Raw | None]] = []
        delayed: list[Raw] = []
        for claim in claims:
            spec = claim.get("spec") or {}
            volume_name = spec.get("volumeName") or ""
            if volume_name and BIND_COMPLETED in (claim["metadata"].get("annotations") or {}):
                bound.append((volume_name, storage.volumes.get(volume_name)))
            elif not volume_name and storage.delay_binding(claim):
                delayed.append(claim)
            else:
                return cls(storage, everywhere=UNBOUND_IMMEDIATE)
        # VolumeZone's PreFilter
        zones: list[tuple[str, frozenset[str]]] = []
        for claim in claims:
            volume_name = (claim.get("spec") or {}).get("volumeName") or ""
            if not volume_name:
                continue  # a delayed claim (the others were refused above)
            pv = storage.volumes.get(volume_name)
            if pv is None:
                return cls(storage, everywhere=f'persistentvolume "{volume_name}" not found')
            labels = pv["metadata"].get("labels") or {}
            zones += [(key, _zone_set(labels[key])) for key in ZONE_LABELS if key in labels]
        new_volumes = dict(found[::-1] for found in (storage.csi_volume(c) for c in claims) if found is not None)
        return cls(storage, None, tuple(bound), tuple(delayed), tuple(zones), new_volumes, dra)

    def reason(
        self, name: str, labels: Mapping[str, str], allocatable: Mapping[str, int], use: VolumeUse | None
    ) -> str | None:
        """The first of the PreFilters, NodeVolumeLimits, VolumeBinding and VolumeZone to refuse the node."""
        if self.everywhere is not None:
            return self.everywhere
        if self.new_volumes and use is not None and self._over_limit(name, allocatable, use):
            return MAX_VOLUME_COUNT
        for _, pv in self.bound:
            if pv is None:
                return PV_NOT_EXIST
            if not _node_affinity_matches(pv, name, labels):
                return NODE_CONFLICT
        if self.delayed and not self._binds_or_provisions(name, labels):
            return BIND_CONFLICT
        if self.zones and any(key in labels for key in ZONE_LABELS):
            for key, values in self.zones:
                value = labels.get(key, labels.get(_BETA_TO_GA.get(key, key)))
                if value is None or value not in values:
                    return ZONE_CONFLICT
        return None

    def claim_reason(self, name: str, labels: Mapping[str, str]) -> str | None:
        """DynamicResources' Filter: every allocated claim's node selector matches the node."""
        if any(not _selector_matches(s, name, labels) for s in self.claim_selectors):
            return CLAIM_NOT_ON_NODE
        return None

    def _over_limit(self, name: str, allocatable: Mapping[str, int], use: VolumeUse) -> bool:
        limits = {
            key.removeprefix(CSI_LIMIT_PREFIX): n for key, n in allocatable.items() if key.startswith(CSI_LIMIT_PREFIX)
        }
        csi_node = self.storage.csi_nodes.get(name)
        for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or ():
            count = (driver.get("allocatable") or {}).get("count")
            if count is not None:
                limits[driver["name"]] = int(count)
        if not limits:
            return False
        attached = use.attached.get(name, {})
        attached_count: dict[str, int] = {}
        for driver in attached.values():
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for unique, driver in self.new_volumes.items():
            if unique not in attached:
                new_count[driver] = new_count.get(driver, 0) + 1
        return any(
            driver in limits and attached_count.get(driver, 0) + count > limits[driver]
            for driver, count in new_count.items()
        )

    def _binds_or_provisions(self, name: str, labels: Mapping[str, str]) -> bool:
        """findMatchingVolumes, then checkVolumeProvisions for the claims left."""
        chosen: set[str] = set()
        for claim in sorted(self.delayed, key=_requested_bytes):
            pv = _matching_volume(claim, self.storage, name, labels, chosen)
            if pv is not None:
                chosen.add(pv)
                continue
            storage_class = self.storage.classes.get(self.storage.claim_class(claim)) or {}
            provisioner = storage_class.get("provisioner") or ""
            if provisioner in ("", NO_PROVISIONER) or not _allowed_topologies_match(storage_class, labels):
                return False
        return True


def _requested_bytes(claim: Raw) -> int:
    return _quantity_bytes((((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage"))


def _matching_volume(
    claim: Raw, storage: StorageObjects, node: str, labels: Mapping[str, str], chosen: set[str]
) -> str | None:
    """volume.FindMatchingVolume, for one node: the smallest available PV of the claim's class that
    is free or pre-bound to the claim, fits on the node, and has the modes, labels and size it asks."""
    spec = claim.get("spec") or {}
    namespace, claim_name = _key(claim)
    class_name = storage.claim_class(claim)
    wanted_modes = set(spec.get("accessModes") or ())
    wanted_mode = spec.get("volumeMode") or "Filesystem"
    selector = LabelSelector.of(spec.get("selector"))
    need = _requested_bytes(claim)
    best: tuple[int, str] | None = None
    for name, pv in storage.volumes.items():
        pv_spec = pv.get("spec") or {}
        if name in chosen or (pv_spec.get("storageClassName") or "") != class_name:
            continue
        if pv["metadata"].get("deletionTimestamp"):
            continue
        ref = pv_spec.get("claimRef")
        if ref and ((ref.get("namespace") or ""), ref.get("name")) != (namespace, claim_name):
            continue
        if not _node_affinity_matches(pv, node, labels):
            continue
        if (pv_spec.get("volumeMode") or "Filesystem") != wanted_mode:
            continue
        if not wanted_modes <= set(pv_spec.get("accessModes") or ()):
            continue
        if selector is not None and not selector.matches(pv["metadata"].get("labels") or {}):
            continue
        size = _quantity_bytes((pv_spec.get("capacity") or {}).get("storage"))
        if size < need:
            continue
        if ref:
            return name  # pre-bound to this claim
        if best is None or (size, name) < best:
            best = (size, name)
    return best[1] if best else None


def _claim_selectors(pod: Raw, storage: StorageObjects) -> tuple[Raw, ...] | str:
    """DynamicResources' PreFilter: the node selectors of the pod's allocated ResourceClaims, or the
    refusal of every node (a claim not found or not allocated)."""
    spec = pod.get("spec") or {}
    entries = spec.get("resourceClaims") or ()
    if not entries:
        return ()
    namespace = pod["metadata"].get("namespace") or "default"
    generated = {
        s.get("name"): s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out: list[Raw] = []
    for entry in entries:
        name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if not name:
            return f'waiting for dynamic resource controller to create the resourceclaim "{entry.get("name")}"'
        claim = storage.resource_claims.get((namespace, name))
        if claim is None:
            return f'resourceclaim "{name}" not found'
        allocation = (claim.get("status") or {}).get("allocation")
        if allocation is None:
            return CANNOT_ALLOCATE
        if allocation.get("nodeSelector") is not None:
            out.append(allocation["nodeSelector"])
    return tuple(out)


def _selector_matches(selector: Raw, name: str, labels: Mapping[str, str]) -> bool:
    return any(node_selector_term_matches(t, name, labels) for t in selector.get("nodeSelectorTerms") or ())


def read_storage(lists: Mapping[str, Sequence[Raw]]) -> StorageObjects:
    """StorageObjects from lists by resource name; a resource not given is empty."""
    return StorageObjects.of(
        lists.get("persistentvolumeclaims", ()),
        lists.get("persistentvolumes", ()),
        lists.get("storageclasses", ()),
        lists.get("csinodes", ()),
        lists.get("resourceclaims", ()),
    )
