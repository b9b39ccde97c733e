"""The extender decides what the scheduling core decides for the rules it applies (the room Reservations hold, the
load filter: kube-scheduler's own filters run before it calls), and refuses each node for the reason the core gives it."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.extender.decisions import STEERED, extender_scores, filter_rows, steering
from descheduler.model import Pod
from descheduler.scheduling import ClusterView, build_table, predicates, scores
from descheduler.scheduling.predicates import for_scheduler
from tests.builders import loaded_node, node, pod, reservation, snapshot

from .conftest import scheduling_args

Obj = dict[str, Any]
HELD = " (room held by reservations)"


@st.composite
def clusters(draw: st.DrawFn) -> list[Obj]:
    objs: list[Obj] = []
    for i in range(draw(st.integers(1, 6))):
        name = f"n{i}"
        kind = draw(st.sampled_from(["loaded", "loaded", "bare", "cordoned", "notready", "tainted"]))
        cpu = draw(st.sampled_from(["2", "4", "8"]))
        zone = draw(st.sampled_from(["a", "b"]))
        if kind == "loaded":
            pods = [
                (
                    {
                        "name": f"{name}-p{j}",
                        "cpu": f"{draw(st.integers(0, 1500))}m",
                        "owner": draw(st.sampled_from(["web", "db"])),
                    },
                    f"{draw(st.integers(0, 3000))}m",
                )
                for j in range(draw(st.integers(0, 3)))
            ]
            objs += loaded_node(name, pods, cpu=cpu, labels={"zone": zone})
        elif kind == "tainted":
            objs.append(
                node(
                    name,
                    cpu=cpu,
                    labels={"zone": zone},
                    taints=[{"key": "spot", "value": "yes", "effect": "NoSchedule"}],
                )
            )
        else:
            objs.append(
                node(name, cpu=cpu, labels={"zone": zone}, unschedulable=kind == "cordoned", ready=kind != "notready")
            )
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    for r in range(draw(st.integers(0, 2))):
        objs.append(
            reservation(
                f"r{r}",
                draw(st.sampled_from(names)),
                {"cpu": f"{draw(st.integers(100, 3000))}m"},
                owner=draw(st.sampled_from(["web", "db"])),
                phase=draw(st.sampled_from(["Available", "Available", "Pending", "Consumed"])),
            )
        )
    tolerate = draw(st.booleans())
    anti = draw(st.booleans())
    objs.append(
        pod(
            "incoming",
            cpu=f"{draw(st.integers(0, 4000))}m",
            owner=draw(st.sampled_from(["web", "db", "batch"])),
            tolerations=[{"key": "spot", "operator": "Exists"}] if tolerate else None,
            node_selector={"zone": draw(st.sampled_from(["a", "b"]))} if draw(st.booleans()) else None,
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                    ]
                }
            }
            if anti
            else None,
        )
    )
    return objs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from([{}, {"usageThresholds": {"cpu": 40}}, {"prodUsageThresholds": {"cpu": 30}}]))
def test_the_filter_matches_the_core_and_its_reasons(objs: list[Obj], args: dict[str, Any]) -> None:
    snap = snapshot(objs)
    view = ClusterView(build_table(snap, scheduling_args(**args)))
    incoming: Pod = next(p for p in snap.pods if p.name == "incoming")
    table = view.table
    rows = np.arange(table.size)
    decision = filter_rows(incoming, view, rows)

    owned, steer = steering(incoming, view)
    # The core's answer for the rules the extender applies (the room Reservations hold, the load
    # filter): kube-scheduler ran its own filters before calling it (scheduling-core.md §2).
    judged = predicates.checks(incoming, view, owned=owned, scheduler_filtered=True)
    core = judged.passed()
    targets = np.isin(rows, [table.index[r.node_name] for r in steer])
    expected = core & targets if (core & targets).any() else core
    assert decision.passed.tolist() == expected.tolist()

    for refused in np.flatnonzero(~decision.passed).tolist():
        row = refused
        said = decision.refusals[decision.reason[row]]
        core_says = judged.refusal(row)
        if core_says is None:  # feasible, but the pod was steered to its reservation
            assert decision.steered == decision.reason[row]
            assert said.code == STEERED
        else:
            # The same rule and subject; nodes refused alike share one text, the core's refusal's.
            assert (said.code, said.subject) == (core_says.code, core_says.subject), (said, core_says)
            assert decision.reasons[decision.reason[row]] == for_scheduler(core_says)
            if decision.reasons[decision.reason[row]].endswith(HELD):
                # Said only when the room other pods' reservations hold is what is missing.
                assert "held by reservations" in str(core_says)

    ext = extender_scores(incoming, view, rows)
    core_scores = scores(incoming, view)
    for row in range(table.size):
        if targets[row]:
            assert ext[row] == 10
        else:
            assert ext[row] == (core_scores[row] * 10 + 50) // 100
