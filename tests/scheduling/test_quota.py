"""Quota admission on the scheduling side (scheduling/quota.py): every rule, its edges, and trees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from descheduler.model import Pod
from descheduler.scheduling.quota import QUOTA_CANNOT_BORROW, QUOTA_OVER_MAX, QuotaBook
from descheduler.snapshot import load_snapshot_objects
from tests.quota_builders import NOW, node, pod, quota

Obj = dict[str, Any]


def book(objects: Sequence[Obj]) -> tuple[QuotaBook, dict[str, Pod]]:
    snapshot = load_snapshot_objects([node("n1", cpu="64"), *objects], now=NOW)
    found = QuotaBook.of(snapshot)
    assert found is not None
    return found, {p.name: p for p in snapshot.pods}


def asking(name: str, group: str, cpu: int, **labels: str) -> Pod:
    snapshot = load_snapshot_objects([pod(name, group, cpu=cpu, labels=labels)], now=NOW)
    return snapshot.pods[0]


def running(group: str, count: int, cpu: int = 1, prefix: str = "") -> list[Obj]:
    return [pod(f"{prefix or group}-{i}", group, node="n1", cpu=cpu) for i in range(count)]


def waiting(group: str, count: int, cpu: int = 1) -> list[Obj]:
    return [pod(f"{group}-wait-{i}", group, cpu=cpu) for i in range(count)]


def test_no_quotas_no_book() -> None:
    assert QuotaBook.of(load_snapshot_objects([node("n1")], now=NOW)) is None


def test_a_pod_of_no_group_is_never_refused() -> None:
    found, _ = book([quota("team-a", min={"cpu": 1}, max={"cpu": 1}), *running("team-a", 1)])
    assert found.admit(asking("x", "elsewhere", 50)) is None


def test_exactly_at_max_is_admitted_one_more_is_refused() -> None:
    found, _ = book(
        [quota("team-a", min={"cpu": 2}, max={"cpu": 4}), quota("team-b", min={"cpu": 8}), *running("team-a", 3)]
    )
    assert found.admit(asking("fourth", "team-a", 1)) is None
    refusal = found.admit(asking("fifth", "team-a", 2))
    assert refusal is not None and refusal.code == QUOTA_OVER_MAX and refusal.subject == "team-a"
    assert str(refusal) == "quota team-a would be over its max: cpu 3 used + 2 requested > max 4"


def test_a_resource_absent_from_max_is_unlimited() -> None:
    found, _ = book([quota("team-a", min={"cpu": 2}, max={"memory": "1Gi"}), *running("team-a", 2)])
    assert found.admit(asking("more", "team-a", 1)) is not None  # borrows cpu beyond a min no one lends
    found, _ = book([quota("team-a", min={"cpu": 8}, max={"memory": "1Gi"}), *running("team-a", 2)])
    assert found.admit(asking("more", "team-a", 6)) is None


def test_within_min_is_admitted_even_when_every_min_is_in_use() -> None:
    found, _ = book(
        [
            quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
            quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
            *running("team-a", 12),  # borrows all of team-b's min
        ]
    )
    assert found.admit(asking("b-new", "team-b", 8)) is None  # exactly at its min


def test_borrowing_is_admitted_while_the_lenders_min_is_unused_and_unclaimed() -> None:
    objects = [
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
        *running("team-a", 11),
    ]
    found, _ = book(objects)
    assert found.admit(asking("a-new", "team-a", 1)) is None  # 12 of the total min 12
    refusal = found.admit(asking("a-new", "team-a", 2))  # 13 > 12
    assert refusal is not None and refusal.code == QUOTA_CANNOT_BORROW
    assert str(refusal) == (
        "quota team-a would borrow cpu beyond its min 4 (11 used + 2 requested), and the quotas' min cannot "
        "cover it: 11 used or claimed by waiting pods + 2 > 12"
    )


def test_a_lenders_waiting_pods_claim_its_min_so_a_borrowers_replacement_is_refused() -> None:
    objects = [
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
        *running("team-a", 11),  # one borrower was evicted: 11 of 12
        *waiting("team-b", 8),
    ]
    found, _ = book(objects)
    refusal = found.admit(asking("a-replacement", "team-a", 1))
    assert refusal is not None and refusal.code == QUOTA_CANNOT_BORROW
    assert "11 used + 1 requested" in str(refusal) and "19 used or claimed by waiting pods + 1 > 12" in str(refusal)
    assert found.admit(asking("team-b-wait-0", "team-b", 1)) is None
    assert found.admit(asking("a-within-min", "team-a", 1)) is not None  # still borrowing: 12 > min 4


def test_a_lenders_claim_is_capped_at_its_min() -> None:
    objects = [
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 2}, max={"cpu": 16}),
        quota("team-c", min={"cpu": 6}, max={"cpu": 16}),
        *running("team-a", 4),
        *waiting("team-b", 10),  # asks for 10, but claims only its min 2
    ]
    found, _ = book(objects)
    assert found.admit(asking("a-5", "team-a", 6)) is None  # 4 + 6 + 2 = 12 = total min
    assert found.admit(asking("a-5", "team-a", 7)) is not None


def test_a_quota_with_no_min_borrows_everything_it_uses() -> None:
    found, _ = book([quota("team-a", max={"cpu": 4}), quota("team-b", min={"cpu": 2}), *waiting("team-b", 1)])
    assert found.admit(asking("a-0", "team-a", 1)) is None  # team-b claims 1 of its 2
    assert found.admit(asking("a-0", "team-a", 2)) is not None


def test_a_resource_named_in_no_min_is_not_under_quota() -> None:
    found, _ = book([quota("team-a", min={"cpu": 1}), quota("team-b", min={"cpu": 1}), *running("team-a", 1)])
    memory_only = load_snapshot_objects([pod("m", "team-a", memory="64Gi")], now=NOW).pods[0]
    assert found.admit(memory_only) is None


def test_an_untrusted_group_is_not_enforced() -> None:
    found, _ = book([quota("team-a", min={"cpu": 8}, max={"cpu": 4}), *running("team-a", 4)])  # min > max
    assert found.admit(asking("a-5", "team-a", 4)) is None


def test_bindings_and_departures_keep_the_book_current() -> None:
    objects = [
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
        *running("team-a", 12),
        *waiting("team-b", 2),
    ]
    found, pods = book(objects)
    assert found.admit(asking("a-13", "team-a", 1)) is not None
    found.gone(pods["team-a-0"])
    found.gone(pods["team-a-0"])  # twice: counted once
    assert found.admit(asking("a-13", "team-a", 1)) is not None  # team-b's 2 waiting claim 2: 11 + 1 + 2 > 12
    found.gone(pods["team-a-1"])
    assert found.admit(asking("a-13", "team-a", 1)) is not None  # 10 + 1 + 2 > 12
    found.gone(pods["team-a-2"])
    assert found.admit(asking("a-13", "team-a", 1)) is None  # 9 + 1 + 2 = 12
    found.bound(pods["team-b-wait-0"])
    assert found.used["team-b"]["cpu"] == 1000 and found.waiting["team-b"]["cpu"] == 1000


@pytest.mark.parametrize(("ask", "admitted"), [(2, True), (3, False)])
def test_a_child_borrows_from_its_siblings_inside_its_parents_min(ask: int, admitted: bool) -> None:
    objects = [
        quota("org", min={"cpu": 10}, max={"cpu": 20}),
        quota("other", min={"cpu": 0}),
        quota("team-a", min={"cpu": 4}, parent="org"),
        quota("team-b", min={"cpu": 6}, parent="org"),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=1, quota="team-a") for i in range(4)],
        *[pod(f"b-{i}", "team-b", node="n1", cpu=1, quota="team-b") for i in range(4)],
    ]
    found, _ = book(objects)
    pod_ = load_snapshot_objects([pod("a-new", "team-a", cpu=ask, quota="team-a")], now=NOW).pods[0]
    assert (found.admit(pod_) is None) is admitted  # 4 + 4 used of org's 10


def test_a_parents_max_binds_its_children() -> None:
    objects = [
        quota("org", min={"cpu": 4}, max={"cpu": 5}),
        quota("team-a", min={"cpu": 4}, parent="org"),
        *[pod(f"a-{i}", "team-a", node="n1", cpu=1, quota="team-a") for i in range(5)],
    ]
    found, _ = book(objects)
    refusal = found.admit(load_snapshot_objects([pod("a-new", "team-a", cpu=1, quota="team-a")], now=NOW).pods[0])
    assert refusal is not None and refusal.code == QUOTA_OVER_MAX and refusal.subject == "org"
