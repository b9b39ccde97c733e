"""`plan --snapshot` on a file `snapshot save` wrote says how each ReservationFirst move would go (its
landing), from the scheduler Lease the file carries, at the plan's `now`, as `plan --kubeconfig` does."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from cli_support import DEMO_SNAPSHOT, POLICY

from descheduler import snapshot_file
from descheduler.snapshot_file import SCHEDULER_LEASE_ANNOTATION, SCHEDULER_LEASE_ERROR_ANNOTATION

REF = "descheduler-system/descheduler-scheduler"
NOW = "2026-01-15T12:00:30Z"  # the demo snapshot's time
Main = Callable[..., tuple[int, str, str]]


def lease(renewed: str = "2026-01-15T12:00:27.500000Z", names: str = "default-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": "descheduler-scheduler",
            "namespace": "descheduler-system",
            "annotations": {"descheduler.dev/scheduler-names": names},
        },
        "spec": {"holderIdentity": "extender-1", "leaseDurationSeconds": 15, "renewTime": renewed},
    }


def demo_saved(path: Path, annotations: dict[str, str] | None, extra: Sequence[dict[str, Any]] = ()) -> Path:
    """The demo's objects as `snapshot save` writes them, with these List annotations and objects."""
    items = yaml.safe_load(DEMO_SNAPSHOT.read_text())["items"]
    with snapshot_file.writing(path, NOW, annotations) as write:
        for obj in [*items, *extra]:
            write(msgspec.json.encode(obj))
    return path


def plan(main_in_process: Main, path: Path, *extra: str) -> dict[str, Any]:
    code, out, err = main_in_process("plan", "--snapshot", str(path), "-o", "json", *extra)
    assert code == 0, err
    planned: dict[str, Any] = json.loads(out)
    assert planned["migrations"], "the demo plans moves: landings must be on real moves"
    return planned


def landings(planned: dict[str, Any]) -> set[str | None]:
    return {m.get("landing") for m in planned["migrations"]}


def test_a_fresh_lease_serving_the_pods_scheduler_gives_reservations(main_in_process: Main, tmp_path: Path) -> None:
    planned = plan(main_in_process, demo_saved(tmp_path / "s.json", {SCHEDULER_LEASE_ANNOTATION: REF}, [lease()]))
    assert landings(planned) == {"Reservation"}
    assert not [w for w in planned["warnings"] if "Reservation" in w or "Lease" in w]


@pytest.mark.parametrize(
    ("objects", "why"),
    [
        ([], f"no Lease {REF}: no reservation-aware scheduler has announced itself"),
        (
            [lease(renewed="2026-01-15T11:58:00.000000Z")],
            f"Lease {REF} last renewed by extender-1 at 2026-01-15T11:58:00Z",
        ),
        ([lease(names="load-aware-scheduler")], "serves schedulerName load-aware-scheduler, not default-scheduler"),
    ],
    ids=["absent", "stale", "unserved"],
)
def test_without_a_scheduler_that_serves_them_moves_go_steered(
    main_in_process: Main, tmp_path: Path, objects: list[dict[str, Any]], why: str
) -> None:
    planned = plan(main_in_process, demo_saved(tmp_path / "s.json.gz", {SCHEDULER_LEASE_ANNOTATION: REF}, objects))
    assert landings(planned) == {"Steered"}
    [warning] = [w for w in planned["warnings"] if "without a Reservation" in w]
    assert f"{len(planned['migrations'])} move(s) evict without a Reservation" in warning and why in warning


def test_the_lease_is_judged_at_the_plans_now(main_in_process: Main, tmp_path: Path) -> None:
    path = demo_saved(tmp_path / "s.yaml", {SCHEDULER_LEASE_ANNOTATION: REF}, [lease()])
    assert landings(plan(main_in_process, path, "--now", "2026-01-15T12:00:40Z")) == {"Reservation"}
    assert landings(plan(main_in_process, path, "--now", "2026-01-15T12:00:50Z")) == {"Steered"}


def test_under_required_moves_without_a_scheduler_wait(main_in_process: Main, tmp_path: Path) -> None:
    policy = POLICY.read_text().replace("    expect: Preferred ", "    expect: Required ")
    assert "expect: Required" in policy
    (tmp_path / "policy.yaml").write_text(policy)
    path = demo_saved(tmp_path / "s.json", {SCHEDULER_LEASE_ANNOTATION: REF})
    planned = plan(main_in_process, path, "--policy", str(tmp_path / "policy.yaml"))
    assert landings(planned) == {"Waits"}
    assert any("wait for a reservation-aware scheduler" in w for w in planned["warnings"])


def test_a_snapshot_that_names_no_lease_gives_no_landings_and_no_warning(main_in_process: Main, tmp_path: Path) -> None:
    planned = plan(main_in_process, demo_saved(tmp_path / "s.json", None, [lease()]))
    code, out, _ = main_in_process("plan", "--demo", "-o", "json")
    assert code == 0
    assert planned == json.loads(out)  # as an older snapshot, or the demo, plans
    assert landings(planned) == {None}


def test_a_lease_that_could_not_be_read_leaves_landings_out_with_a_warning(
    main_in_process: Main, tmp_path: Path
) -> None:
    why = "GET /apis/coordination.k8s.io/v1/namespaces/descheduler-system/leases/descheduler-scheduler: 403 Forbidden"
    annotations = {SCHEDULER_LEASE_ANNOTATION: REF, SCHEDULER_LEASE_ERROR_ANNOTATION: why}
    planned = plan(main_in_process, demo_saved(tmp_path / "s.json", annotations))
    assert landings(planned) == {None}
    assert f"cannot read the scheduler Lease {REF}: {why}; how ReservationFirst moves would go" in " ".join(
        planned["warnings"]
    )


def test_the_table_shows_the_landing_after_the_mode(
    main_in_process: Main, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a table as wide as its rows, whatever the terminal (none, on a worker)
    path = demo_saved(tmp_path / "s.json", {SCHEDULER_LEASE_ANNOTATION: REF})
    code, out, err = main_in_process("plan", "--snapshot", str(path))
    assert code == 0, err
    assert "ReservationFirst (Steered)" in out
