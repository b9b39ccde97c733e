from pathlib import Path

import pytest

from descheduler.fakecluster.scenario import (
    DeletePodEvent,
    NodeEvent,
    ScaleEvent,
    ScenarioError,
    load_demo_scenario,
    load_scenario,
)

GOOD = """
apiVersion: descheduler.dev/v1alpha1
kind: Scenario
snapshot: objects.yaml
usage:
  default: {cpu: {fraction: 0.5}, memory: {constant: 1Gi}}
  pods:
  - selector: {matchLabels: {app: web}}
    cpu: {series: {values: [0.2, "500m"], stepSeconds: 30}, noise: 0.1}
events:
- {at: 5m, action: scale, target: {kind: Deployment, namespace: shop, name: web}, replicas: 20}
- {at: 600, action: delete-pod, namespace: shop, name: web-abcde}
- {at: 1h, action: cordon, node: node-a}
"""

OBJECTS = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: node-a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "objects.yaml").write_text(OBJECTS)
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_a_scenario_reads_its_snapshot_relative_to_itself(tmp_path: Path) -> None:
    loaded = load_scenario(_write(tmp_path, GOOD))
    assert [o["kind"] for o in loaded.objects] == ["Node", "Namespace"]
    events = loaded.scenario.events
    assert [type(e) for e in events] == [ScaleEvent, DeletePodEvent, NodeEvent]
    assert [e.at for e in events] == [300, 600, 3600]


def test_the_demo_scenario_is_valid() -> None:
    loaded = load_demo_scenario()
    kinds = {o["kind"] for o in loaded.objects}
    assert {"Node", "Deployment", "ReplicaSet", "PodDisruptionBudget", "DaemonSet", "Pod"} <= kinds


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (("kind: Scenario", "kind: Scenery"), "kind", "Input should be 'Scenario'"),
        (("snapshot: objects.yaml\n", ""), "snapshot", "required"),
        (("{fraction: 0.5}", "{fraction: 0.5, constant: '1'}"), "usage.default.cpu", "exactly one of constant"),
        (("constant: 1Gi", "constant: lots"), "usage.default.memory.constant", "expected a quantity"),
        (("stepSeconds: 30", "stepSeconds: 0"), "usage.pods[0].cpu.series.stepSeconds", "greater than 0"),
        (("{at: 5m,", "{at: soon,"), "events[0].at", "expected a duration"),
        (("replicas: 20", "replicas: -1"), "events[0].replicas", "greater than or equal to 0"),
        (("action: cordon", "action: drain"), "events[2]", "'scale', 'delete-pod', 'cordon', 'uncordon'"),
        (("namespace: shop, name: web-abcde", "namespace: shop"), "events[1]", "exactly one of name or selector"),
        (("usage:", "usage:\n  bogus: 1"), "usage.bogus", "Extra inputs are not permitted"),
        (("matchLabels: {app: web}", "matchLabel: {app: web}"), "usage.pods[0].selector", "unknown field"),
    ],
)
def test_errors_name_the_file_and_the_field(tmp_path: Path, change: tuple[str, str], field: str, message: str) -> None:
    path = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    assert info.value.field == field
    assert message in info.value.message


def test_a_missing_snapshot_file_is_an_error_naming_the_field(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("objects.yaml", "missing.yaml"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.field == "snapshot" and "missing.yaml" in info.value.message


def test_a_missing_scenario_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read the file"):
        load_scenario(tmp_path / "nope.yaml")


def test_an_inline_object_without_kind_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("snapshot: objects.yaml", "snapshot: [{apiVersion: v1}]"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.field == "snapshot[0]"
