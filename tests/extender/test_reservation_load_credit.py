"""The load filter counts a reserved pod once: its Reservation's estimate already sits on the node."""

from __future__ import annotations

from descheduler.policy import default_policy
from descheduler.scheduling import ClusterView, best_node, build_table, feasible_mask, refusal
from descheduler.scheduling.predicates import owned_reservations
from tests.builders import loaded_node, pod, reservation, snapshot


def _view(objs: list[dict[str, object]]) -> ClusterView:
    return ClusterView(build_table(snapshot(objs), default_policy().scheduling))


def _cluster() -> list[dict[str, object]]:
    # n1: 8 cpu, 3 cpu used; the reservation (2 cpu, estimated 1.7) brings the estimate to 4.7 of a 5.2 limit (65%).
    return [
        *loaded_node("n1", [("busy", "3")]),
        reservation("r1", "n1", {"cpu": "2", "memory": "1Gi"}, owner="web"),
        pod("owner", cpu="2", owner="web"),
        pod("stranger", cpu="2", owner="batch"),
    ]


def test_the_owner_of_a_reservation_passes_the_load_filter_on_its_node() -> None:
    view = _view(_cluster())
    owner = next(p for p in view.table.snapshot.pods if p.name == "owner")
    owned = owned_reservations(owner, view)
    assert [r.name for r in owned] == ["r1"]
    assert feasible_mask(owner, view, owned=owned).tolist() == [True]
    assert refusal(owner, "n1", view) is None
    assert best_node(owner, view).node == "n1"


def test_a_pod_without_the_reservation_sees_its_estimate_as_load() -> None:
    view = _view(_cluster())
    stranger = next(p for p in view.table.snapshot.pods if p.name == "stranger")
    assert feasible_mask(stranger, view).tolist() == [False]
    assert str(refusal(stranger, "n1", view)) == "usage: cpu would reach 80% > threshold 65%"
