"""PodMigrationJob and Reservation (`descheduler.dev/v1alpha1`, cluster-scoped): the models the code
reads and writes, and from which the CRD manifests are generated (migration.md §1–2).

The wire shape matches what `descheduler.decode` (RawMigrationJob, RawReservation) reads for the
planner and the scheduling core: camelCase keys, `spec.podRef`, `spec.owners[].controller`,
`status.phase`, `status.consumedBy`. Unknown fields are ignored on read, so an older controller
can run against objects a newer one wrote.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel

from descheduler.durations import format_duration, parse_duration
from descheduler.model import DEFAULT_TTL, JOB_SOURCE_NODE_ANNOTATION, JOB_WORKLOAD_UID_ANNOTATION
from descheduler.timestamps import format_time, parse_time

GROUP: Final = "descheduler.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = "descheduler.dev/v1alpha1"
JOBS: Final = "podmigrationjobs"
RESERVATIONS: Final = "reservations"

# Labels and annotations we write (README §4.5: `descheduler.dev/…`).
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "descheduler"
LABEL_POD_UID: Final = "descheduler.dev/pod-uid"
LABEL_JOB: Final = "descheduler.dev/job"
ANNOTATION_STRATEGY: Final = "descheduler.dev/strategy"
ANNOTATION_REASON: Final = "descheduler.dev/reason"
ANNOTATION_SOURCE_NODE: Final = JOB_SOURCE_NODE_ANNOTATION
ANNOTATION_WORKLOAD: Final = "descheduler.dev/workload"
ANNOTATION_WORKLOAD_UID: Final = JOB_WORKLOAD_UID_ANNOTATION
ANNOTATION_CYCLE: Final = "descheduler.dev/cycle"

# The scheduler side (extender) renews this Lease while it answers: the controller's evidence that
# Reservations are honoured (migration.md §3). Both default to the same place, and the deploy
# manifests pass it to both (`--scheduler-lease NAMESPACE/NAME`).
SCHEDULER_LEASE: Final = "descheduler-scheduler"
SCHEDULER_LEASE_NAMESPACE: Final = "descheduler-system"
# On that Lease: the pod `schedulerName`s whose scheduler asks the extender (comma-separated). A
# move gets a Reservation only when its pod's schedulerName is listed.
ANNOTATION_SCHEDULER_NAMES: Final = "descheduler.dev/scheduler-names"
# The schedulerName a pod with none set gets from the API server.
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
# While a node has moves in flight without a Reservation, it carries this taint (PreferNoSchedule),
# so a stock scheduler puts the replacements elsewhere (migration.md §3).
TAINT_MOVING_OFF: Final = "descheduler.dev/moving-off"


def parse_lease_ref(text: str) -> tuple[str, str]:
    """`NAMESPACE/NAME` (or `NAMESPACE`, with the default name) -> (namespace, name)."""
    namespace, _, name = text.strip().partition("/")
    if not namespace or "/" in name:
        raise ValueError(f"{text!r}: expected NAMESPACE/NAME, e.g. {SCHEDULER_LEASE_NAMESPACE}/{SCHEDULER_LEASE}")
    return namespace, name or SCHEDULER_LEASE


Mode = Literal["ReservationFirst", "EvictDirectly", "MakeBeforeBreak"]
EvictionPolicy = Literal["Eviction", "Delete"]
JobPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Aborted"]
ReservationPhase = Literal["Pending", "Available", "Consumed", "Expired", "Failed"]
ConditionType = Literal[
    "ReservationCreated",
    "ReservationScheduled",
    "ReplacementStarted",
    "Evicted",
    "ReplacementBound",
    "ReplacementReady",
]
ConditionStatus = Literal["True", "False", "Unknown"]

TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed", "Aborted"})
# Why a Reservation is Failed (status.reason, written by the scheduler side), and why its job fails:
# the replacement was bound on another node than the reserved one;
REPLACEMENT_ELSEWHERE: Final = "ReplacementElsewhere"
# kube-scheduler's own filters left the reserved node out for the replacement (it cannot go there).
RESERVED_NODE_REFUSED: Final = "ReservedNodeRefused"
# The modes that hold room on the target through a Reservation before the pod goes.
RESERVING_MODES: Final = frozenset({"ReservationFirst", "MakeBeforeBreak"})


def _parse_ttl(value: Any) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, str | int | timedelta):
        raise ValueError(f"must be a duration such as 5m or 90s; got {value!r}")
    parsed = parse_duration(value)
    if parsed <= timedelta(0):
        raise ValueError(f"must be greater than 0s; got {value!r}")
    return parsed


_DURATION_PATTERN = r"^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$"
Ttl = Annotated[
    timedelta,
    PlainValidator(_parse_ttl),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "pattern": _DURATION_PATTERN, "description": "a Go duration: 90s, 5m, 1h"}),
]
"""A positive duration, written as a Go duration string (metav1.Duration)."""


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        raise ValueError(f"must be an RFC 3339 time; got {value!r}")
    try:
        return parse_time(value)
    except ValueError:
        raise ValueError(f"must be an RFC 3339 time such as 2026-01-15T12:00:00Z; got {value!r}") from None


Time = Annotated[
    datetime,
    PlainValidator(_parse_time),
    PlainSerializer(format_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]

_QUANTITY_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
Quantity = Annotated[str | int, WithJsonSchema(_QUANTITY_SCHEMA)]

FreeForm = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]
"""A Kubernetes structure we copy as is (affinity, label selector, tolerations)."""


class ApiModel(BaseModel):
    """camelCase on the wire, unknown fields ignored on read, None fields omitted on write."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    def wire(self) -> dict[str, Any]:
        """The JSON-ready dict the API server takes."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ObjectMeta(ApiModel):
    """The metadata fields the controller reads; writes go through the raw object to keep the rest."""

    name: str = Field(min_length=1)
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


# --- PodMigrationJob ---------------------------------------------------------------------------


class PodReference(ApiModel):
    """The pod to move (or the replacement that arrived): namespace, name and, when known, UID."""

    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    uid: str = Field("", description="when set, the job acts only on the pod with this UID")


class ReservationReference(ApiModel):
    name: str = Field(min_length=1)


class Condition(ApiModel):
    """A step of the job that happened (or is known not to have happened), with when and why."""

    type: ConditionType
    status: ConditionStatus
    reason: str = ""
    message: str = ""
    last_transition_time: Time


class WorkloadReference(ApiModel):
    """The pod's controller, recorded when the job starts (the pod is gone once evicted)."""

    kind: str = ""
    name: str = ""
    uid: str = ""


class PodMigrationJobSpec(ApiModel):
    pod_ref: PodReference = Field(description="the pod to move")
    mode: Mode = Field(
        "ReservationFirst",
        description=(
            "ReservationFirst reserves room on the target before evicting; MakeBeforeBreak (a single-replica "
            "Deployment's pod) also starts the replacement there by a rollout before the pod goes"
        ),
    )
    target_node: str = Field("", description="the planner's choice of target; empty lets the controller choose")
    ttl: Ttl = Field(DEFAULT_TTL, description="a job not done this long after creation is aborted (or failed)")
    eviction_policy: EvictionPolicy = Field(
        "Eviction", description="Eviction uses the eviction API and respects PodDisruptionBudgets; Delete does not"
    )
    strategy: str = Field("", description="the strategy that planned the move")
    reason: str = Field("", description="why the strategy moves this pod")
    paused: bool = Field(False, description="a paused job takes no step that has not yet begun")


class PodMigrationJobStatus(ApiModel):
    phase: JobPhase = "Pending"
    reason: str = Field("", description="a CamelCase word for the current state or the outcome")
    message: str = ""
    conditions: list[Condition] = Field(default_factory=list)
    reservation_ref: ReservationReference | None = None
    new_pod_ref: PodReference | None = None
    target_node: str = Field("", description="the node room was reserved on (may differ from spec.targetNode)")
    source_node: str = Field("", description="the node the pod ran on when the job started")
    pod_uid: str = Field("", description="the UID of the pod the job acts on, fixed when the job starts")
    workload: WorkloadReference | None = None
    start_time: Time | None = None
    completion_time: Time | None = None

    def condition(self, kind: ConditionType) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def has(self, kind: ConditionType) -> bool:
        found = self.condition(kind)
        return found is not None and found.status == "True"


class _Object(ApiModel):
    """A top-level object of ours: cluster-scoped, named by its metadata."""

    api_version: Literal["descheduler.dev/v1alpha1"] = API_VERSION
    metadata: ObjectMeta

    @property
    def name(self) -> str:
        return self.metadata.name


class PodMigrationJob(_Object):
    kind: Literal["PodMigrationJob"] = "PodMigrationJob"
    spec: PodMigrationJobSpec
    status: PodMigrationJobStatus = Field(default_factory=PodMigrationJobStatus)

    @property
    def terminal(self) -> bool:
        return self.status.phase in TERMINAL_PHASES

    @property
    def deadline(self) -> datetime | None:
        created = self.metadata.creation_timestamp
        return None if created is None else created + self.spec.ttl


# --- Reservation -------------------------------------------------------------------------------


class ControllerReference(ApiModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    namespace: str = ""


class ReservationOwner(ApiModel):
    """Matches a pod when every field it sets matches: the pod's controller and/or a label selector."""

    controller: ControllerReference | None = None
    label_selector: FreeForm | None = None


class ReservationTemplate(ApiModel):
    """The moved pod's scheduling constraints, so the target is checked with the real ones."""

    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: FreeForm | None = None
    tolerations: list[FreeForm] = Field(default_factory=list)
    priority_class_name: str = ""
    priority: int | None = None
    scheduler_name: str = ""


class ReservationSpec(ApiModel):
    node_name: str = Field(min_length=1, description="the node the room is held on")
    resources: dict[str, Quantity] = Field(default_factory=dict, description="the moved pod's requests")
    owners: list[ReservationOwner] = Field(default_factory=list, description="pods that may use the room")
    template: ReservationTemplate = Field(default_factory=ReservationTemplate)
    ttl: Ttl = Field(DEFAULT_TTL, description="room not consumed this long after creation is released")
    replaces: PodReference | None = Field(
        None,
        description="the moved pod: owner pods may take the room only once it is leaving or gone, so a room "
        "waiting for its eviction does not draw another move's replacement",
    )
    replacement_first: bool = Field(
        False,
        description="the replacement starts while the moved pod still runs (MakeBeforeBreak): owner pods, which "
        "match this move alone, may take the room at once",
    )


class ReservationStatus(ApiModel):
    """Written by the scheduler side (the extender, or a reservation-aware scheduler) except Expired.

    Pending: created by the migration controller; every model counts its room from then on.
    Available: the scheduler side's state holds it (`acknowledgedBy`); only then is the pod evicted.
    Consumed: the scheduler bound an owner pod on the node (`consumedBy`, `consumedByUID`).
    Failed: the scheduler bound the owner's next pod on another node while this room waited
    (reason ReplacementElsewhere; `consumedBy` names that pod, `message` the node), kube-scheduler's
    own filters refused the reserved node for it (reason ReservedNodeRefused; `message` names the pod
    and the node), or the room could not be held.
    Expired: not consumed within its TTL (the migration controller's sweeper)."""

    phase: ReservationPhase = "Pending"
    consumed_by: str = Field(
        "", description="namespace/name of the pod that took the room (Consumed) or went elsewhere (Failed)"
    )
    consumed_by_uid: str = Field("", alias="consumedByUID", description="that pod's UID")
    acknowledged_by: str = Field("", description="the scheduler whose state holds the room (set with Available)")
    reason: str = ""
    message: str = ""


class Reservation(_Object):
    kind: Literal["Reservation"] = "Reservation"
    spec: ReservationSpec
    status: ReservationStatus = Field(default_factory=ReservationStatus)

    @property
    def holds_room(self) -> bool:
        return self.status.phase in ("Pending", "Available") and not self.status.consumed_by


ModelT = TypeVar("ModelT", bound=ApiModel)


class ObjectError(ValueError):
    """An object of ours that cannot be read: names the object and the field."""

    def __init__(self, kind: str, name: str, field: str, message: str) -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.message = message
        super().__init__(f"{kind} {name!r}: {field}: {message}" if field else f"{kind} {name!r}: {message}")


def _parse(model: type[ModelT], obj: dict[str, Any]) -> ModelT:
    try:
        return model.model_validate(obj)
    except ValidationError as err:
        detail = err.errors(include_url=False)[0]
        field = ".".join(str(part) for part in detail["loc"])
        name = str((obj.get("metadata") or {}).get("name", "?"))
        raise ObjectError(model.__name__, name, field, detail["msg"].removeprefix("Value error, ")) from None


def parse_job(obj: dict[str, Any]) -> PodMigrationJob:
    """Validate a PodMigrationJob read from the API; ObjectError names the bad field."""
    return _parse(PodMigrationJob, obj)


def parse_reservation(obj: dict[str, Any]) -> Reservation:
    return _parse(Reservation, obj)
