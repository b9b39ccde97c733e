"""Scenario files: a snapshot, a usage model and events over time (testing.md §3).

```yaml
apiVersion: descheduler.dev/v1alpha1
kind: Scenario
start: 2026-01-15T14:00:00Z      # optional: the instant the scenario describes (see Scenario.start)
snapshot: snapshot.yaml          # a path relative to this file, or an inline list of objects
usage:
  default: {cpu: {fraction: 0.5}, memory: {fraction: 0.6}}
  pods:
  - selector: {matchLabels: {app: web}}
    cpu: {series: {values: [0.4, 0.9], stepSeconds: 300}, noise: 0.05}
events:
- {at: 5m, action: scale, target: {kind: Deployment, namespace: shop, name: web}, replicas: 20}
- {at: 10m, action: delete-pod, namespace: shop, name: web-abcde}
- {at: 15m, action: cordon, node: node-a}
```
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from descheduler.durations import parse_duration
from descheduler.errors import InputError
from descheduler.fakecluster.apiserver.clock import instant_of, parse_instant, rfc3339, rfc3339_micro
from descheduler.fakecluster.usage import UsageSpec
from descheduler.labels import LabelSelector

API_VERSION: Final = "descheduler.dev/v1alpha1"
KIND: Final = "Scenario"


class ScenarioError(InputError):
    """A scenario that cannot be used: names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _seconds(value: Any) -> float:
    if isinstance(value, float) and not isinstance(value, bool):
        value = int(value) if value.is_integer() else value
    if isinstance(value, float):
        raise ValueError(f"expected a duration such as 30s, 5m or 1h, or whole seconds; got {value}")
    seconds = parse_duration(value).total_seconds()
    if seconds < 0:
        raise ValueError(f"must be ≥ 0; got {value!r}")
    return seconds


class _Event(_Model):
    at: float

    @field_validator("at", mode="before")
    @classmethod
    def _at(cls, value: Any) -> float:
        return _seconds(value)


class WorkloadRef(_Model):
    kind: Literal["Deployment", "ReplicaSet", "StatefulSet"]
    namespace: str = "default"
    name: str = Field(min_length=1)


class ScaleEvent(_Event):
    action: Literal["scale"]
    target: WorkloadRef
    replicas: int = Field(ge=0)


class DeletePodEvent(_Event):
    """Delete one pod by name, or every pod matching `selector` in `namespace`."""

    action: Literal["delete-pod"]
    namespace: str = "default"
    name: str | None = None
    selector: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_target(self) -> DeletePodEvent:
        if (self.name is None) == (self.selector is None):
            raise ValueError("exactly one of name or selector is required")
        if self.selector is not None:
            LabelSelector.from_dict(self.selector)
        return self


class NodeEvent(_Event):
    action: Literal["cordon", "uncordon"]
    node: str = Field(min_length=1)


Event = Annotated[ScaleEvent | DeletePodEvent | NodeEvent, Field(discriminator="action")]


class MetricsServerFeed(_Model):
    """metrics.k8s.io NodeMetrics/PodMetrics as metrics-server publishes them (see
    descheduler.fakecluster.metrics): every `intervalSeconds` (its `--metric-resolution`; the Helm chart
    and manifests ship 15s), cpu the mean over the last `windowSeconds` (absent: the interval, as its
    rate between the two latest scrapes is; 0: the instant value), memory the instant value."""

    interval_seconds: int = Field(15, alias="intervalSeconds", gt=0, strict=True)
    window_seconds: int | None = Field(None, alias="windowSeconds", ge=0, strict=True)
    enabled: bool = Field(True, strict=True)

    @property
    def window(self) -> int:
        return self.interval_seconds if self.window_seconds is None else self.window_seconds


class NodeMetricFeed(_Model):
    """Koordinator NodeMetric as koordlet reports it (see descheduler.fakecluster.metrics): every
    `intervalSeconds` (its reportIntervalSeconds, default 60), node and pod cpu and memory the mean over
    the last `windowSeconds` (its aggregateDurationSeconds, default 300; 0: the instant value)."""

    interval_seconds: int = Field(60, alias="intervalSeconds", gt=0, strict=True)
    window_seconds: int = Field(300, alias="windowSeconds", ge=0, strict=True)
    enabled: bool = Field(True, strict=True)

    @property
    def window(self) -> int:
        return self.window_seconds


class Timing(_Model):
    """How fast the simulated components react, in simulated seconds.

    Without `metricsServer` or `nodeMetric`, that kind of metrics object is published as the simulator
    always did: at a step at least `reportIntervalSeconds` after the last report, with the usage at that
    step."""

    report_interval_seconds: int = Field(60, alias="reportIntervalSeconds", gt=0)
    start_delay_seconds: float = Field(1.0, alias="startDelaySeconds", ge=0)
    ready_delay_seconds: float = Field(5.0, alias="readyDelaySeconds", ge=0)
    tick_seconds: float = Field(1.0, alias="tickSeconds", gt=0)
    # The kubelet reads each pod's usage once per period of this many seconds and holds it, as a trace
    # sampled at that step is (absent: at every tick; a diurnal curve or noise then changes between steps).
    usage_hold_seconds: float | None = Field(None, alias="usageHoldSeconds", gt=0)
    metrics_server: MetricsServerFeed | None = Field(None, alias="metricsServer")
    node_metric: NodeMetricFeed | None = Field(None, alias="nodeMetric")


class Scenario(_Model):
    api_version: Literal["descheduler.dev/v1alpha1"] = Field(API_VERSION, alias="apiVersion")
    kind: Literal["Scenario"] = KIND
    # The instant the scenario describes: its objects' timestamps are relative to it, a simulation
    # starts there by default, and a cluster started now (sim serve, real-time tests) shows the
    # load of this time of day (diurnal curves, noise) rather than the wall clock's.
    start: float | None = None
    seed: int = 0
    snapshot: str | list[dict[str, Any]]
    usage: UsageSpec = Field(default_factory=UsageSpec)
    timing: Timing = Field(default_factory=Timing)
    events: list[Event] = Field(default_factory=list)

    @field_validator("start", mode="before")
    @classmethod
    def _start(cls, value: Any) -> Any:
        if isinstance(value, datetime):  # YAML reads an unquoted RFC 3339 time as a timestamp
            return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
        if isinstance(value, str):
            try:
                return parse_instant(value)
            except ValueError:
                raise ValueError(f"expected an RFC 3339 time such as 2026-01-15T12:00:00Z; got {value!r}") from None
        return value


_EVENT_TAGS = ("scale", "delete-pod", "cordon", "uncordon")


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    out = []
    for detail in error.errors(include_url=False):
        path = ""
        for part in detail["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part in _EVENT_TAGS:
                continue  # the discriminator's tag, not a field
            else:
                path += f".{part}" if path else str(part)
        message = detail["msg"].removeprefix("Value error, ")
        out.append((path, message))
    return out


def parse_scenario(raw: Any, source: str = "<scenario>", base_dir: Path | None = None) -> LoadedScenario:
    """Validate a decoded scenario document and read its snapshot; raise ScenarioError naming file and field."""
    if not isinstance(raw, dict):
        got = "an empty document" if raw is None else f"a {type(raw).__name__}"
        raise ScenarioError(f"expected a map with apiVersion, kind, snapshot, …; got {got}", source=source)
    for key in ("apiVersion", "kind", "snapshot"):
        if key not in raw:
            raise ScenarioError("required", source=source, field=key)
    try:
        scenario = Scenario.model_validate(raw, by_name=False)
    except ValidationError as err:
        problems = _problems(err)
        path, message = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise ScenarioError(message + more, source=source, field=path) from None
    base = base_dir if base_dir is not None else Path.cwd()
    if isinstance(scenario.snapshot, str):
        objects = read_objects(base / scenario.snapshot, source=source)
    else:
        objects = list(_expand(scenario.snapshot, source, "snapshot"))
    return LoadedScenario(scenario=scenario, objects=objects, source=source)


class LoadedScenario(BaseModel):
    """A validated scenario with its snapshot objects read."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scenario: Scenario
    objects: list[dict[str, Any]]
    source: str

    def origin(self) -> float | None:
        """The instant the scenario's times are relative to: `start`, else its newest creationTimestamp
        (the moment the snapshot was taken, at the latest); None when it has neither."""
        if self.scenario.start is not None:
            return self.scenario.start
        created = [instant_of(_metadata(obj).get("creationTimestamp")) for obj in self.objects]
        known = [c for c in created if c is not None]
        return max(known) if known else None

    def objects_at(self, start: float) -> list[dict[str, Any]]:
        """The snapshot objects with every timestamp moved so that the scenario's origin falls on `start`.

        Offsets between objects and from the origin are kept (in whole seconds, never later than
        `start`): an object created at the origin is `now - start` old, as `kubectl get` shows it.
        """
        origin = self.origin()
        shift = 0 if origin is None else math.floor(start - origin)
        if shift == 0:
            return self.objects
        return [shift_timestamps(obj, shift) for obj in self.objects]


# metav1.Time and metav1.MicroTime fields of the kinds a scenario holds (metadata, pod and node
# status, conditions, container states, events, leases, metrics, managedFields).
TIME_FIELDS: Final = frozenset(
    {
        "creationTimestamp",
        "deletionTimestamp",
        "startTime",
        "completionTime",
        "lastTransitionTime",
        "lastProbeTime",
        "lastHeartbeatTime",
        "lastUpdateTime",
        "lastScheduleTime",
        "startedAt",
        "finishedAt",
        "firstTimestamp",
        "lastTimestamp",
        "eventTime",
        "lastObservedTime",
        "acquireTime",
        "renewTime",
        "timestamp",
        "updateTime",
        "time",
    }
)


def _metadata(obj: Any) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _shifted(value: str, seconds: int) -> str:
    instant = instant_of(value)
    if instant is None:
        return value  # not a time: left as written
    # Keep the precision it was written with: metav1.Time has seconds, MicroTime microseconds.
    return rfc3339_micro(instant + seconds) if "." in value else rfc3339(instant + seconds)


def shift_timestamps(value: Any, seconds: int) -> Any:
    """A copy of `value` with every time field (TIME_FIELDS) moved by `seconds`; the input is not changed
    (YAML anchors make scenario objects share dicts)."""
    if isinstance(value, dict):
        return {
            k: _shifted(v, seconds) if k in TIME_FIELDS and isinstance(v, str) else shift_timestamps(v, seconds)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [shift_timestamps(v, seconds) for v in value]
    return value


def load_scenario(path: str | os.PathLike[str]) -> LoadedScenario:
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ScenarioError(f"cannot read the file: {reason}", source=source) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ScenarioError(f"not valid YAML: {err}", source=source) from None
    return parse_scenario(raw, source, Path(source).parent)


def demo_scenario_path() -> Path:
    return Path(str(files("descheduler.fakecluster").joinpath("scenarios", "demo.yaml")))


def load_demo_scenario() -> LoadedScenario:
    return load_scenario(demo_scenario_path())


def _expand(items: Sequence[Any], source: str, where: str) -> Iterator[dict[str, Any]]:
    for i, obj in enumerate(items):
        if not isinstance(obj, dict):
            raise ScenarioError(
                f"expected a Kubernetes object; got {type(obj).__name__}", source=source, field=f"{where}[{i}]"
            )
        kind = str(obj.get("kind", ""))
        if kind.endswith("List") and isinstance(obj.get("items"), list):
            yield from _expand(obj["items"], source, f"{where}[{i}].items")
        elif not obj.get("apiVersion") or not kind:
            raise ScenarioError("apiVersion and kind are required", source=source, field=f"{where}[{i}]")
        else:
            yield obj


def read_objects(path: Path, source: str) -> list[dict[str, Any]]:
    """Kubernetes objects from a YAML/JSON file (a List or a multi-document stream) or a directory of them."""
    if path.is_dir():
        out: list[dict[str, Any]] = []
        for child in sorted(path.iterdir()):
            if child.suffix in (".yaml", ".yml", ".json"):
                out += read_objects(child, source)
        return out
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except OSError as err:
        raise ScenarioError(
            f"cannot read the snapshot {path}: {err.strerror}", source=source, field="snapshot"
        ) from None
    except yaml.YAMLError as err:
        raise ScenarioError(f"snapshot {path} is not valid YAML: {err}", source=source, field="snapshot") from None
    return list(_expand(documents, str(path), "documents"))
