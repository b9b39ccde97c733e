"""Server-side printing: the meta.k8s.io `Table` kube-apiserver serves to `kubectl get`.

kubectl asks for it with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, …`; the cells are
what kubectl prints. The built-in kinds a simulated cluster holds (pods, nodes, events, namespaces,
deployments, replica sets, stateful sets, daemon sets, disruption budgets, leases, priority classes)
get the columns of kubernetes pkg/printers/internalversion (printPod, printNode, printEvent, …),
with the wide cells too, as the server always renders them; every other kind gets the table the
real server serves for a custom resource without printer columns (Name, Age). Ages are
`duration.HumanDuration` of the server clock's now minus creationTimestamp, so a simulated cluster
prints simulated ages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from . import errors
from .clock import Clock, instant_of
from .entry import decode, encode
from .resources import ResourceType

TABLE_GROUP: Final = "meta.k8s.io"
TABLE_VERSIONS: Final = ("v1", "v1beta1")
INCLUDE_OBJECT: Final = ("Metadata", "None", "Object")

_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_ADDRESSES_DOC = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: "
    "https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, "
    "but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers "
    "should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should "
    "assume that addresses can change during the lifetime of a Node. However, there are some exceptions where "
    "this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the "
    "downward API (status.hostIP)."
)


@dataclass(frozen=True, slots=True)
class Column:
    """A metav1.TableColumnDefinition; priority 1 columns are shown by `kubectl get -o wide` only."""

    name: str
    type: str = "string"
    description: str = ""
    format: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


Cells = list[Any]
Conditions = list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class Printer:
    """The columns of one kind and how to fill them: `row(obj, now)` returns cells and row conditions."""

    columns: tuple[Column, ...]
    row: Callable[[Mapping[str, Any], float], tuple[Cells, Conditions]]


# ------------------------------------------------------------------ durations

_SECOND: Final = 1_000_000_000
_MINUTE: Final = 60 * _SECOND
_HOUR: Final = 60 * _MINUTE


def human_duration(nanoseconds: int) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration: ~2-3 significant figures, as kubectl's AGE."""
    # Go's int(d.Seconds()) truncates toward zero; up to 2 s in the future reads as now (clock skew).
    seconds = abs(nanoseconds) // _SECOND * (-1 if nanoseconds < 0 else 1)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = nanoseconds // _MINUTE
    if minutes < 10:
        s = nanoseconds // _SECOND % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = nanoseconds // _HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = hours // 24 % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(timestamp: Any, now: float) -> str:
    """printers.go translateTimestampSince: the human age of an RFC 3339 time, `<unknown>` when unset."""
    instant = instant_of(timestamp)
    if instant is None:
        return "<unknown>"
    return human_duration(round((now - instant) * _SECOND))


# ------------------------------------------------------------------ pods

POD_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", description="The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        description=(
            "The number of times the containers in this pod have been restarted and when the last container "
            "in this pod has restarted."
        ),
    ),
    Column("Age", description=_CREATED_DOC),
    Column(
        "IP",
        priority=1,
        description=(
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."
        ),
    ),
    Column(
        "Node",
        priority=1,
        description=(
            "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler "
            "simply schedules this pod onto that node, assuming that it fits resource requirements."
        ),
    ),
    Column(
        "Nominated Node",
        priority=1,
        description=(
            "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be "
            "scheduled right away as preemption victims receive their graceful termination periods. This field "
            "does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the "
            "pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the "
            "resources on this node to a higher priority pod that is created after preemption. As a result, this "
            "field may be different than PodSpec.nodeName when the pod is scheduled."
        ),
    ),
    Column(
        "Readiness Gates",
        priority=1,
        description=(
            "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its "
            'containers are ready AND all conditions specified in the readiness gates have status equal to "True" '
            "More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"
        ),
    ),
)

_POD_SUCCEEDED: Final = {
    "type": "Completed",
    "status": "True",
    "reason": "Succeeded",
    "message": "The pod has completed successfully.",
}
_POD_FAILED: Final = {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _condition_true(conditions: Iterable[Mapping[str, Any]], kind: str) -> bool:
    """The first condition of this type decides (isPodInitializedConditionTrue, hasPodReadyCondition)."""
    for condition in conditions:
        if condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def _later(current: float | None, timestamp: Any) -> float | None:
    instant = instant_of(timestamp)
    if instant is None:
        return current
    return instant if current is None or instant > current else current


def pod_row(pod: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printPod."""
    meta, spec, status = _map(pod.get("metadata")), _map(pod.get("spec")), _map(pod.get("status"))
    containers, init_containers = _list(spec.get("containers")), _list(spec.get("initContainers"))
    conditions = _list(status.get("conditions"))
    restarts = sidecar_restarts = 0
    total = len(containers)
    ready = 0
    last_restart: float | None = None
    sidecar_last_restart: float | None = None
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    row_conditions: Conditions = []
    if phase == "Succeeded":
        row_conditions = [dict(_POD_SUCCEEDED)]
    elif phase == "Failed":
        row_conditions = [dict(_POD_FAILED)]

    # A restartable init container (restartPolicy: Always) is a sidecar: it counts as a container.
    sidecars = {str(c.get("name")) for c in init_containers if c.get("restartPolicy") == "Always"}
    total += len(sidecars)
    initializing = False
    for i, container in enumerate(_list(status.get("initContainerStatuses"))):
        count = int(container.get("restartCount") or 0)
        finished = _map(_map(container.get("lastState")).get("terminated")).get("finishedAt")
        restarts += count
        last_restart = _later(last_restart, finished)
        sidecar = str(container.get("name")) in sidecars
        if sidecar:
            sidecar_restarts += count
            sidecar_last_restart = _later(sidecar_last_restart, finished)
        state = _map(container.get("state"))
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, Mapping) and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started") is True:
            if container.get("ready"):
                ready += 1
            continue
        if isinstance(terminated, Mapping):
            if terminated.get("reason"):
                reason = f"Init:{terminated['reason']}"
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{int(terminated.get('exitCode') or 0)}"
        elif isinstance(waiting, Mapping) and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_containers)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, sidecar_last_restart
        has_running = False
        for container in reversed(_list(status.get("containerStatuses"))):
            restarts += int(container.get("restartCount") or 0)
            last_restart = _later(
                last_restart, _map(_map(container.get("lastState")).get("terminated")).get("finishedAt")
            )
            state = _map(container.get("state"))
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, Mapping) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(terminated, Mapping) and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif isinstance(terminated, Mapping):
                signal = terminated.get("signal")
                reason = f"Signal:{signal}" if signal else f"ExitCode:{int(terminated.get('exitCode') or 0)}"
            elif container.get("ready") and isinstance(state.get("running"), Mapping):
                has_running = True
                ready += 1
        # A pod whose last container completed but another still runs is Running (or NotReady).
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(round((now - last_restart) * _SECOND))} ago)"

    ips = _list(status.get("podIPs"))
    pod_ip = str(ips[0].get("ip") or "") if ips else str(status.get("podIP") or "")
    gates = _list(spec.get("readinessGates"))
    readiness_gates = "<none>"
    if gates:
        passed = 0
        for gate in gates:
            for condition in conditions:
                if condition.get("type") == gate.get("conditionType"):
                    passed += condition.get("status") == "True"
                    break
        readiness_gates = f"{passed}/{len(gates)}"
    cells: Cells = [
        meta.get("name", ""),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        since(meta.get("creationTimestamp"), now),
        pod_ip or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        readiness_gates,
    ]
    return cells, row_conditions


# ------------------------------------------------------------------ nodes

NODE_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Status", description="The status of the node"),
    Column("Roles", description="The roles of the node"),
    Column("Age", description=_CREATED_DOC),
    Column("Version", description="Kubelet Version reported by the node."),
    Column("Internal-IP", priority=1, description=_ADDRESSES_DOC),
    Column("External-IP", priority=1, description=_ADDRESSES_DOC),
    Column(
        "OS-Image",
        priority=1,
        description="OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    Column(
        "Kernel-Version",
        priority=1,
        description="Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    Column(
        "Container-Runtime",
        priority=1,
        description="ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
)

_NODE_ROLE_PREFIX: Final = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL: Final = "kubernetes.io/role"


def node_roles(labels: Mapping[str, Any]) -> list[str]:
    """printers.go findNodeRoles: `node-role.kubernetes.io/<role>` keys and the `kubernetes.io/role` value."""
    roles: set[str] = set()
    for key, value in labels.items():
        if key.startswith(_NODE_ROLE_PREFIX):
            if role := key.removeprefix(_NODE_ROLE_PREFIX):
                roles.add(role)
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def _address(addresses: Sequence[Mapping[str, Any]], kind: str) -> str:
    for address in addresses:
        if address.get("type") == kind:
            return str(address.get("address") or "")
    return "<none>"


def node_row(node: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printNode."""
    meta, spec, status = _map(node.get("metadata")), _map(node.get("spec")), _map(node.get("status"))
    # The last Ready condition wins, as printNode keeps them in a map by type.
    ready: Mapping[str, Any] | None = None
    for condition in _list(status.get("conditions")):
        if condition.get("type") == "Ready":
            ready = condition
    states = ["Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    info = _map(status.get("nodeInfo"))
    addresses = _list(status.get("addresses"))
    cells: Cells = [
        meta.get("name", ""),
        ",".join(states),
        ",".join(node_roles(_map(meta.get("labels")))) or "<none>",
        since(meta.get("creationTimestamp"), now),
        str(info.get("kubeletVersion") or ""),
        _address(addresses, "InternalIP"),
        _address(addresses, "ExternalIP"),
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]
    return cells, []


# ------------------------------------------------------------------ workloads

_CONTAINERS_DOC: Final = "Names of each container in the template."
_IMAGES_DOC: Final = "Images referenced by each container in the template."
_READY_REPLICAS_DOC: Final = "Number of the pod with ready state"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _template_containers(spec: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return _list(_map(_map(spec.get("template")).get("spec")).get("containers"))


def container_cells(containers: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """printers.go layoutContainerCells: the containers' names and images, comma-separated."""
    return ",".join(str(c.get("name") or "") for c in containers), ",".join(
        str(c.get("image") or "") for c in containers
    )


def selector_string(selector: Any) -> str:
    """labels.Selector.String() of metav1.LabelSelectorAsSelector: requirements sorted by key, "" for none."""
    if not isinstance(selector, Mapping):
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in _map(selector.get("matchLabels")).items():
        requirements.append((str(key), f"{key}={value}"))
    for expression in _list(selector.get("matchExpressions")):
        key, operator = str(expression.get("key") or ""), expression.get("operator")
        values = ",".join(sorted({str(v) for v in expression.get("values") or []}))
        if operator == "In":
            requirements.append((key, f"{key} in ({values})"))
        elif operator == "NotIn":
            requirements.append((key, f"{key} notin ({values})"))
        elif operator == "Exists":
            requirements.append((key, key))
        elif operator == "DoesNotExist":
            requirements.append((key, f"!{key}"))
    # Go's sort.Sort is not stable; keys are unique in matchLabels, and a key in both is rare enough.
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def format_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: as `selector_string`, `<none>` when it selects by nothing."""
    return selector_string(selector) or "<none>"


def _labels_string(labels: Any) -> str:
    """labels.FormatLabels: `k=v` pairs sorted by key, `<none>` when there are none."""
    pairs = sorted(_map(labels).items())
    return ",".join(f"{k}={v}" for k, v in pairs) or "<none>"


DEPLOYMENT_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Ready", description=_READY_REPLICAS_DOC),
    Column(
        "Up-to-date",
        description=(
            "Total number of non-terminating pods targeted by this deployment that have the desired template spec."
        ),
    ),
    Column(
        "Available",
        description=(
            "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this "
            "deployment."
        ),
    ),
    Column("Age", description=_CREATED_DOC),
    Column("Containers", priority=1, description=_CONTAINERS_DOC),
    Column("Images", priority=1, description=_IMAGES_DOC),
    Column(
        "Selector",
        priority=1,
        description=(
            "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones "
            "affected by this deployment."
        ),
    ),
)


def _replicas(spec: Mapping[str, Any]) -> int:
    # The server defaults spec.replicas to 1; an object loaded without it prints as the server would.
    return _int(spec.get("replicas", 1))


def deployment_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printDeployment."""
    meta, spec, status = _map(obj.get("metadata")), _map(obj.get("spec")), _map(obj.get("status"))
    names, images = container_cells(_template_containers(spec))
    cells: Cells = [
        meta.get("name", ""),
        f"{_int(status.get('readyReplicas'))}/{_replicas(spec)}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        since(meta.get("creationTimestamp"), now),
        names,
        images,
        selector_string(spec.get("selector")),
    ]
    return cells, []


REPLICASET_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column(
        "Desired",
        type="integer",
        description=(
            "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero "
            "and unspecified. Defaults to 1. More info: "
            "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller"
        ),
    ),
    Column(
        "Current",
        type="integer",
        description=(
            "Replicas is the most recently observed number of replicas. More info: "
            "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller"
        ),
    ),
    Column(
        "Ready",
        type="integer",
        description="The number of ready replicas for this replica set.",
    ),
    Column("Age", description=_CREATED_DOC),
    Column("Containers", priority=1, description=_CONTAINERS_DOC),
    Column("Images", priority=1, description=_IMAGES_DOC),
    Column(
        "Selector",
        priority=1,
        description=(
            "Selector is a label query over pods that should match the replica count. If the selector is empty, "
            "it is defaulted to the labels present on the pod template. Label keys and values that must match in "
            "order to be controlled by this replica set. More info: "
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
        ),
    ),
)


def replicaset_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printReplicaSet."""
    meta, spec, status = _map(obj.get("metadata")), _map(obj.get("spec")), _map(obj.get("status"))
    names, images = container_cells(_template_containers(spec))
    cells: Cells = [
        meta.get("name", ""),
        _replicas(spec),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        since(meta.get("creationTimestamp"), now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]
    return cells, []


STATEFULSET_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Ready", description=_READY_REPLICAS_DOC),
    Column("Age", description=_CREATED_DOC),
    Column("Containers", priority=1, description=_CONTAINERS_DOC),
    Column("Images", priority=1, description=_IMAGES_DOC),
)


def statefulset_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printStatefulSet."""
    meta, spec, status = _map(obj.get("metadata")), _map(obj.get("spec")), _map(obj.get("status"))
    names, images = container_cells(_template_containers(spec))
    ready = f"{_int(status.get('readyReplicas'))}/{_replicas(spec)}"
    return [meta.get("name", ""), ready, since(meta.get("creationTimestamp"), now), names, images], []


DAEMONSET_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column(
        "Desired",
        type="integer",
        description=(
            "The total number of nodes that should be running the daemon pod (including nodes correctly running "
            "the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
        ),
    ),
    Column(
        "Current",
        type="integer",
        description=(
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. "
            "More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
        ),
    ),
    Column(
        "Ready",
        type="integer",
        description=(
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod "
            "running and ready."
        ),
    ),
    Column(
        "Up-to-date",
        type="integer",
        description="The total number of nodes that are running updated daemon pod",
    ),
    Column(
        "Available",
        type="integer",
        description=(
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod "
            "running and available (ready for at least spec.minReadySeconds)"
        ),
    ),
    Column(
        "Node Selector",
        description=(
            "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match "
            "a node's labels for the pod to be scheduled on that node. More info: "
            "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"
        ),
    ),
    Column("Age", description=_CREATED_DOC),
    Column("Containers", priority=1, description=_CONTAINERS_DOC),
    Column("Images", priority=1, description=_IMAGES_DOC),
    Column(
        "Selector",
        priority=1,
        description=(
            "A label query over pods that are managed by the daemon set. Must match in order to be controlled. "
            "If empty, defaulted to labels on Pod template. More info: "
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
        ),
    ),
)


def daemonset_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printDaemonSet."""
    meta, spec, status = _map(obj.get("metadata")), _map(obj.get("spec")), _map(obj.get("status"))
    template_spec = _map(_map(spec.get("template")).get("spec"))
    names, images = container_cells(_template_containers(spec))
    cells: Cells = [
        meta.get("name", ""),
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        _labels_string(template_spec.get("nodeSelector")),
        since(meta.get("creationTimestamp"), now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]
    return cells, []


# ------------------------------------------------------------------ disruption budgets

PDB_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Min Available", description="The minimum number of pods that must be available."),
    Column("Max Unavailable", description="The maximum number of pods that may be unavailable."),
    Column(
        "Allowed Disruptions",
        type="integer",
        description="Calculated number of pods that may be disrupted at this time.",
    ),
    Column("Age", description=_CREATED_DOC),
)


def _int_or_string(value: Any) -> str:
    """intstr.IntOrString.String(), `N/A` when unset as printPodDisruptionBudget writes it."""
    if value is None:
        return "N/A"
    return str(value)


def pdb_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printPodDisruptionBudget."""
    meta, spec, status = _map(obj.get("metadata")), _map(obj.get("spec")), _map(obj.get("status"))
    cells: Cells = [
        meta.get("name", ""),
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        _int(status.get("disruptionsAllowed")),
        since(meta.get("creationTimestamp"), now),
    ]
    return cells, []


# ------------------------------------------------------------------ events

EVENT_COLUMNS: Final = (
    Column("Last Seen", description="The time at which the most recent occurrence of this event was recorded."),
    Column("Type", description="Type of this event (Normal, Warning), new types could be added in the future"),
    Column(
        "Reason",
        description=(
            "This should be a short, machine understandable string that gives the reason for the transition into "
            "the object's current status."
        ),
    ),
    Column("Object", description="The object that this event is about."),
    Column(
        "Subobject",
        priority=1,
        description=(
            "If referring to a piece of an object instead of an entire object, this string should contain a valid "
            "JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the "
            "object reference is to a container within a pod, this would take on a value like: "
            '"spec.containers{name}" (where "name" refers to the name of the container that triggered the event) '
            'or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This '
            "syntax is chosen only to have some well-defined way of referencing a part of an object."
        ),
    ),
    Column(
        "Source",
        priority=1,
        description="The component reporting this event. Should be a short machine understandable string.",
    ),
    Column("Message", description="A human-readable description of the status of this operation."),
    Column(
        "First Seen",
        priority=1,
        description="The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    Column("Count", priority=1, description="The number of times this event has occurred."),
    Column("Name", priority=1, format="name", description=_NAME_DOC),
)


def _core_event(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An events.k8s.io/v1 Event in core/v1 field names: the server converts both to one internal Event."""
    return {
        "metadata": obj.get("metadata"),
        "involvedObject": obj.get("regarding"),
        "reason": obj.get("reason"),
        "message": obj.get("note"),
        "type": obj.get("type"),
        "source": obj.get("deprecatedSource"),
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount"),
        "eventTime": obj.get("eventTime"),
        "series": obj.get("series"),
        "reportingComponent": obj.get("reportingController"),
        "reportingInstance": obj.get("reportingInstance"),
    }


def event_row(event: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printEvent, of a core/v1 Event."""
    meta, involved, source = _map(event.get("metadata")), _map(event.get("involvedObject")), _map(event.get("source"))
    first = since(event.get("firstTimestamp"), now)
    if instant_of(event.get("firstTimestamp")) is None:
        first = since(event.get("eventTime"), now)
    last = since(event.get("lastTimestamp"), now) if instant_of(event.get("lastTimestamp")) is not None else first
    count = _int(event.get("count"))
    series = event.get("series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    kind, name = str(involved.get("kind") or "").lower(), str(involved.get("name") or "")
    component = str(source.get("component") or event.get("reportingComponent") or "")
    instance = str(source.get("host") or event.get("reportingInstance") or "")
    cells: Cells = [
        last,
        event.get("type") or "",
        event.get("reason") or "",
        f"{kind}/{name}" if name else kind,
        involved.get("fieldPath") or "",
        f"{component}, {instance}" if instance else component,
        str(event.get("message") or "").strip(),
        first,
        count,
        meta.get("name", ""),
    ]
    return cells, []


def events_v1_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printEvent, of an events.k8s.io/v1 Event."""
    return event_row(_core_event(obj), now)


# ------------------------------------------------------------------ cluster objects

NAMESPACE_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Status", description="The status of the namespace"),
    Column("Age", description=_CREATED_DOC),
)


def namespace_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printNamespace."""
    meta, status = _map(obj.get("metadata")), _map(obj.get("status"))
    return [meta.get("name", ""), status.get("phase") or "", since(meta.get("creationTimestamp"), now)], []


LEASE_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column(
        "Holder",
        description=(
            "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election "
            "is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."
        ),
    ),
    Column("Age", description=_CREATED_DOC),
)


def lease_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printLease."""
    meta, spec = _map(obj.get("metadata")), _map(obj.get("spec"))
    return [meta.get("name", ""), spec.get("holderIdentity") or "", since(meta.get("creationTimestamp"), now)], []


PRIORITY_CLASS_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column(
        "Value",
        type="integer",
        description=(
            "value represents the integer value of this priority class. This is the actual priority that pods "
            "receive when they have the name of this class in their pod spec."
        ),
    ),
    Column(
        "Global-Default",
        type="boolean",
        description=(
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for "
            "pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. "
            "However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the "
            "smallest value of such global default PriorityClasses will be used as the default priority."
        ),
    ),
    Column("Age", description=_CREATED_DOC),
    Column(
        "PreemptionPolicy",
        description=(
            "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
            "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."
        ),
    ),
)


def priority_class_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """printers.go printPriorityClass."""
    meta = _map(obj.get("metadata"))
    cells: Cells = [
        meta.get("name", ""),
        _int(obj.get("value")),
        obj.get("globalDefault") is True,
        since(meta.get("creationTimestamp"), now),
        obj.get("preemptionPolicy") or "",
    ]
    return cells, []


# ------------------------------------------------------------------ everything else

# apiextensions-apiserver serves a custom resource without additionalPrinterColumns with these two.
DEFAULT_COLUMNS: Final = (
    Column("Name", format="name", description=_NAME_DOC),
    Column("Age", type="date", description=_CREATED_DOC),
)


def default_row(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    meta = _map(obj.get("metadata"))
    return [meta.get("name", ""), since(meta.get("creationTimestamp"), now)], []


_PRINTERS: Final = {
    ("v1", "Pod"): Printer(POD_COLUMNS, pod_row),
    ("v1", "Node"): Printer(NODE_COLUMNS, node_row),
    ("v1", "Event"): Printer(EVENT_COLUMNS, event_row),
    ("events.k8s.io/v1", "Event"): Printer(EVENT_COLUMNS, events_v1_row),
    ("v1", "Namespace"): Printer(NAMESPACE_COLUMNS, namespace_row),
    ("apps/v1", "Deployment"): Printer(DEPLOYMENT_COLUMNS, deployment_row),
    ("apps/v1", "ReplicaSet"): Printer(REPLICASET_COLUMNS, replicaset_row),
    ("apps/v1", "StatefulSet"): Printer(STATEFULSET_COLUMNS, statefulset_row),
    ("apps/v1", "DaemonSet"): Printer(DAEMONSET_COLUMNS, daemonset_row),
    ("policy/v1", "PodDisruptionBudget"): Printer(PDB_COLUMNS, pdb_row),
    ("coordination.k8s.io/v1", "Lease"): Printer(LEASE_COLUMNS, lease_row),
    ("scheduling.k8s.io/v1", "PriorityClass"): Printer(PRIORITY_CLASS_COLUMNS, priority_class_row),
}
_DEFAULT_PRINTER: Final = Printer(DEFAULT_COLUMNS, default_row)


def printer_for(rt: ResourceType) -> Printer:
    return _PRINTERS.get((rt.api_version, rt.kind), _DEFAULT_PRINTER)


# ------------------------------------------------------------------ negotiation and rendering


def _accept_clauses(accept: str) -> list[tuple[str, dict[str, str]]]:
    """Media ranges in the client's order of preference (q descending, ties in header order)."""
    clauses: list[tuple[float, int, str, dict[str, str]]] = []
    for index, part in enumerate(accept.split(",")):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for piece in pieces[1:]:
            key, _, value = piece.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            clauses.append((-q, index, pieces[0].lower(), params))
    return [(media, params) for _, _, media, params in sorted(clauses)]


def table_version(accept: str) -> str | None:
    """The meta.k8s.io version of Table the Accept header prefers, or None for the object itself.

    Clauses are tried in preference order, as the real server's negotiation does; a JSON clause
    without `as` (or one asking for a conversion this server does not do) means the plain object.
    """
    for media, params in _accept_clauses(accept):
        if media not in ("application/json", "application/*", "*/*"):
            continue  # protobuf, yaml, …: the next clause decides
        if params.get("as") == "Table" and params.get("g") == TABLE_GROUP and params.get("v") in TABLE_VERSIONS:
            return params["v"]
        if "as" not in params:
            return None
    return None


@dataclass(frozen=True, slots=True)
class TableFormat:
    """What a client asked for: the Table's meta.k8s.io version and the `includeObject` policy."""

    version: str
    include_object: str = "Metadata"

    @property
    def api_version(self) -> str:
        return f"{TABLE_GROUP}/{self.version}"

    def _row_object(self, obj: Mapping[str, Any]) -> Any:
        if self.include_object == "None":
            return None
        if self.include_object == "Object":
            return obj
        return {"kind": "PartialObjectMetadata", "apiVersion": self.api_version, "metadata": obj.get("metadata") or {}}

    def table(
        self,
        rt: ResourceType,
        objects: Iterable[Mapping[str, Any]],
        now: float,
        metadata: Mapping[str, Any],
        *,
        headers: bool = True,
    ) -> dict[str, Any]:
        """A metav1.Table of `objects`; without `headers` columnDefinitions is null (later watch events)."""
        printer = printer_for(rt)
        rows = []
        for obj in objects:
            cells, conditions = printer.row(obj, now)
            row: dict[str, Any] = {"cells": cells}
            if conditions:
                row["conditions"] = conditions
            row["object"] = self._row_object(obj)
            rows.append(row)
        return {
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": dict(metadata),
            "columnDefinitions": [c.definition() for c in printer.columns] if headers else None,
            "rows": rows,
        }


def requested_table(accept: str, query: Mapping[str, str]) -> TableFormat | None:
    """The Table a request asks for, or None; a bad `includeObject` is a 400 as on the real server."""
    version = table_version(accept)
    if version is None:
        return None
    include = query.get("includeObject", "") or "Metadata"
    if include not in INCLUDE_OBJECT:
        supported = ", ".join(f'"{v}"' for v in INCLUDE_OBJECT)
        raise errors.bad_request(
            f'Unable to convert to Table as requested: includeObject: Unsupported value: "{include}": '
            f"supported values: {supported}"
        )
    return TableFormat(version, include)


class TableWatch:
    """Turns a watch stream's objects into one-row Tables; only the first event carries the columns."""

    def __init__(self, rt: ResourceType, table: TableFormat, clock: Clock) -> None:
        self.rt = rt
        self.format = table
        self.clock = clock
        self._headers = True

    def event_object(self, raw: bytes) -> bytes:
        obj = decode(raw)
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        table = self.format.table(self.rt, [obj], self.clock(), {"resourceVersion": rv}, headers=self._headers)
        self._headers = False
        return encode(table)

    def bookmark(self, resource_version: int) -> bytes:
        """A bookmark carries no object to print: an empty Table with the resourceVersion."""
        table = self.format.table(self.rt, [], self.clock(), {"resourceVersion": str(resource_version)}, headers=False)
        return encode(table)
