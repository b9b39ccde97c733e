"""Refreshing the extender's state, and the pods assumed between two snapshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from descheduler import metrics
from descheduler.decode import RawPod, convert, pod_from_raw
from descheduler.extender import Extender, RefreshTiming, SnapshotFileSource
from descheduler.model import Pod
from descheduler.snapshot import Snapshot
from tests.builders import NOW, loaded_node, pod

from .conftest import extender_args, kube_pod, scheduling_args, write_snapshot


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def two_cool_nodes(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    # a: 1 cpu used, b: 2 cpu used, of 8; the threshold (65%) is 5.2 cpu.
    return [*loaded_node("a", [("a1", "1")]), *loaded_node("b", [("b1", "2")]), *extra]


def make(tmp_path: Path, objects: list[dict[str, Any]], **kw: Any) -> tuple[Extender, Path, Clock]:
    path = write_snapshot(tmp_path / "snapshot.yaml", objects)
    clock = Clock()
    extender = Extender(SnapshotFileSource(path), scheduling_args(**kw.pop("args", {})), clock=clock, **kw)
    assert extender.refresh(force=True)
    return extender, path, clock


def as_pod(obj: dict[str, Any], node: str = "") -> Pod:
    bound = {**obj, "spec": {**obj["spec"], "nodeName": node}} if node else obj
    return pod_from_raw(convert(bound, RawPod))


def best(extender: Extender, body: bytes) -> str:
    """What a scheduler that follows the extender's scores would pick among the nodes that pass."""
    passed = json.loads(extender.filter(body))["NodeNames"]
    scores = json.loads(extender.prioritize(extender_args(json.loads(body)["Pod"], passed)))
    return max(scores, key=lambda h: (h["Score"], [-ord(c) for c in h["Host"]]))["Host"]


def test_a_burst_spreads_once_each_binding_is_observed(tmp_path: Path) -> None:
    extender, _, _ = make(tmp_path, two_cool_nodes())
    placed = []
    for i in range(6):
        new = kube_pod(f"web-{i}")
        node = best(extender, extender_args(new, ["a", "b"]))
        extender.observe_binding(as_pod(new, node), node)
        placed.append(node)
    # Scores are coarse (0–10): on a tie the first name wins, as this picker breaks ties.
    assert placed == ["a", "a", "b", "a", "a", "b"]
    assert metrics.sample("descheduler_extender_assumed_pods") == 6


def test_without_observed_bindings_a_burst_piles_onto_the_coolest_node(tmp_path: Path) -> None:
    extender, _, _ = make(tmp_path, two_cool_nodes())
    assert {best(extender, extender_args(kube_pod(f"web-{i}"), ["a", "b"])) for i in range(6)} == {"a"}


def test_assumed_pods_count_in_the_load_filter(tmp_path: Path) -> None:
    extender, _, _ = make(tmp_path, two_cool_nodes())
    # a: 1 cpu used; each assumed 1-cpu pod adds its 850m estimate: after 4, 1 + 4 × 0.85 + 0.85 > 5.2.
    for i in range(4):
        extender.observe_binding(as_pod(kube_pod(f"web-{i}"), "a"), "a")
    answer = json.loads(extender.filter(extender_args(kube_pod("web-next"), ["a", "b"])))
    assert answer["NodeNames"] == ["b"]
    assert answer["FailedAndUnresolvableNodes"] == {"a": "load-aware: estimated cpu usage would exceed 65 percent"}


def test_a_snapshot_that_shows_the_binding_replaces_the_assumption(tmp_path: Path) -> None:
    extender, path, clock = make(tmp_path, two_cool_nodes())
    new = kube_pod("web-0")
    extender.observe_binding(as_pod(new, "a"), "a")
    clock.now += 5
    bound = pod("web-0", "a", scheduled=NOW)  # bound, running, no metric yet: counted by its estimate
    write_snapshot(path, two_cool_nodes(bound))
    assert extender.refresh()
    assert metrics.sample("descheduler_extender_assumed_pods") == 0
    state = extender.state
    assert state is not None and "default/web-0" in state.table.pod_rows


class BindingDuringRead(SnapshotFileSource):
    """A file source during whose read (after the file was read) a binding is observed."""

    def __init__(self, path: Path, clock: Clock) -> None:
        super().__init__(path)
        self.clock = clock
        self.extender: Extender | None = None

    def snapshot(self) -> Any:
        snapshot = super().snapshot()
        if self.extender is not None:
            self.clock.now += 0.1
            self.extender.observe_binding(as_pod(kube_pod("web-0"), "a"), "a")
        return snapshot


def test_a_binding_seen_after_the_snapshot_was_read_is_carried_over(tmp_path: Path) -> None:
    clock = Clock()
    source = BindingDuringRead(write_snapshot(tmp_path / "s.yaml", two_cool_nodes()), clock)
    extender = Extender(source, scheduling_args(), clock=clock)
    assert extender.refresh(force=True)
    assert metrics.sample("descheduler_extender_assumed_pods") == 0
    source.extender = extender
    clock.now += 5
    assert extender.refresh(force=True)
    assert metrics.sample("descheduler_extender_assumed_pods") == 1
    assert extender.state is not None and extender.state.view.location == {"default/web-0": "a"}


def test_a_binding_the_next_snapshot_no_longer_shows_is_forgotten(tmp_path: Path) -> None:
    extender, _, clock = make(tmp_path, two_cool_nodes())
    extender.observe_binding(as_pod(kube_pod("web-0"), "a"), "a")
    clock.now += 5  # the pod was deleted before this snapshot was read
    assert extender.refresh(force=True)
    assert metrics.sample("descheduler_extender_assumed_pods") == 0
    assert extender.state is not None and extender.state.view.location == {}


def test_refresh_waits_for_a_change_and_the_interval(tmp_path: Path) -> None:
    extender, path, clock = make(tmp_path, two_cool_nodes(), timing=RefreshTiming(interval=1.0, max_age=30.0))
    clock.now += 5
    assert not extender.refresh()  # nothing changed
    write_snapshot(path, two_cool_nodes(pod("x", "a")))
    assert extender.refresh()
    write_snapshot(path, two_cool_nodes(pod("y", "b")))
    clock.now += 0.5
    assert not extender.refresh()  # changed, but rebuilt less than a second ago
    clock.now += 0.6
    assert extender.refresh()
    clock.now += 31
    assert extender.refresh()  # unchanged, but metric ages moved on


def test_a_build_that_waited_does_not_hold_the_next_one_off(tmp_path: Path) -> None:
    """The rebuild rate is bounded by the builds' CPU time: a build that spent 20 s waiting (a slow
    metrics API, a busy machine) without computing does not delay the next one by 4 x 20 s."""
    extender, path, clock = make(tmp_path, two_cool_nodes(), timing=RefreshTiming(interval=1.0, build_share=0.25))
    read = extender.source.snapshot

    def slow_read() -> Snapshot:
        clock.now += 20
        return read()

    extender.source.snapshot = slow_read  # type: ignore[method-assign]
    write_snapshot(path, two_cool_nodes(pod("x", "a")))
    clock.now += 5
    assert extender.refresh()
    write_snapshot(path, two_cool_nodes(pod("y", "b")))
    clock.now += 2
    assert extender.refresh()


def test_new_scheduling_arguments_rebuild_at_once(tmp_path: Path) -> None:
    extender, _, _ = make(tmp_path, two_cool_nodes())
    body = extender_args(kube_pod("web-0"), ["a", "b"])
    assert json.loads(extender.filter(body))["NodeNames"] == ["a", "b"]
    extender.set_args(scheduling_args(usageThresholds={"cpu": 30}))
    assert extender.refresh()
    # b: 2 + 0.85 of 8 = 36% > 30%; a: 1.85 of 8 = 23%.
    assert json.loads(extender.filter(body))["NodeNames"] == ["a"]


def test_an_unreadable_source_keeps_the_last_state_until_it_is_stale(tmp_path: Path) -> None:
    extender, path, clock = make(tmp_path, two_cool_nodes(), timing=RefreshTiming(interval=1.0, stale_after=120.0))
    errors = metrics.sample("descheduler_extender_refreshes_total", {"result": "error"})
    path.write_text("items: [")
    clock.now += 5
    assert not extender.refresh()
    assert metrics.sample("descheduler_extender_refreshes_total", {"result": "error"}) == errors + 1
    assert extender.not_ready() is None
    assert json.loads(extender.filter(extender_args(kube_pod("web-0"), ["a"])))["NodeNames"] == ["a"]
    clock.now += 120
    assert not extender.refresh()
    problem = extender.not_ready()
    assert problem is not None and problem.startswith("cluster state is 125s old; refreshing it fails: ")
    assert "malformed YAML" in problem


def test_the_file_source_generation_moves_when_the_file_changes(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path / "s.yaml", two_cool_nodes())
    source = SnapshotFileSource(path)
    first = source.generation()
    assert source.generation() == first
    write_snapshot(path, two_cool_nodes(pod("x", "a")))
    assert source.generation() != first


def test_only_rebuilds_step_aside_for_requests_the_first_build_runs_straight_through(tmp_path: Path) -> None:
    """Until the first state is swapped in, every request is answered at once that there is none, so
    that build has no request to step aside for; stepping aside there only slowed its one-time work
    (the name kernels' compilation) several times over, past 10 s on a busy machine."""
    path = write_snapshot(tmp_path / "snapshot.yaml", two_cool_nodes())
    extender = Extender(SnapshotFileSource(path), scheduling_args(), clock=Clock())
    stepped_aside: list[bool] = []
    real = extender.requests_first.yielding

    def counted() -> Any:
        stepped_aside.append(True)
        return real()

    extender.requests_first.yielding = counted  # type: ignore[method-assign]
    assert extender.refresh(force=True)
    assert stepped_aside == []
    assert extender.refresh(force=True)
    assert stepped_aside == [True]
