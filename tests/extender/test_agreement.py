"""The extender decides what the scheduling core decides, and words each refusal as the scalar predicates do."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.extender.decisions import (
    AFFINITY,
    ANTI_AFFINITY,
    CORDONED,
    NOT_READY,
    NodeFacts,
    extender_scores,
    filter_rows,
    steering,
)
from descheduler.model import Pod
from descheduler.scheduling import ClusterView, build_table, feasible, feasible_mask, scores
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


def _category(scalar: str) -> str:
    """The extender's wording for the reason the scalar predicates give."""
    if scalar.endswith("is not Ready"):
        return NOT_READY
    if scalar.endswith("is cordoned (unschedulable)"):
        return CORDONED
    if scalar.startswith(("nodeSelector", "required node affinity")):
        return AFFINITY
    if scalar.startswith("taint "):
        return scalar
    if scalar.startswith("insufficient "):
        return scalar.split(":", 1)[0]
    if scalar.startswith("pod anti-affinity"):
        return ANTI_AFFINITY.format(keys="zone")
    if scalar.startswith("node metric expired"):
        return "node metric expired (older than 180s)"
    basis, _, rest = scalar.partition("usage: ")
    resource, _, threshold = rest.partition(" would reach ")
    percent = threshold.rsplit("threshold ", 1)[1]
    what = "prod " if basis.startswith("prod") else ""
    return f"load-aware: estimated {what}{resource} usage would exceed {percent.removesuffix('%')} percent"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from([{}, {"usageThresholds": {"cpu": 40}}, {"prodUsageThresholds": {"cpu": 30}}]))
def test_the_filter_matches_the_core_and_the_scalar_reasons(objs: list[Obj], args: dict[str, Any]) -> None:
    snap = snapshot(objs)
    view = ClusterView(build_table(snap, scheduling_args(**args)))
    incoming: Pod = next(p for p in snap.pods if p.name == "incoming")
    table = view.table
    rows = np.arange(table.size)
    decision = filter_rows(incoming, view, NodeFacts.of(table), rows)

    owned, steer = steering(incoming, view)
    core = feasible_mask(incoming, view, owned=owned)
    targets = np.isin(rows, [table.index[r.node_name] for r in steer])
    expected = core & targets if (core & targets).any() else core
    assert decision.passed.tolist() == expected.tolist()

    for row in np.flatnonzero(~decision.passed):
        said = decision.reasons[decision.reason[row]]
        scalar = feasible(incoming, table.names[row], view)
        if scalar is None:  # feasible, but the pod was steered to its reservation
            assert decision.steered == decision.reason[row]
            assert said.startswith("the pod's Reservation ")
        elif said.endswith(HELD):
            # Said only when the room other pods' reservations hold is what is missing.
            assert said.removesuffix(HELD) == _category(scalar) and "held by reservations" in scalar, (scalar, said)
        else:
            assert said == _category(scalar), (scalar, said)

    ext = extender_scores(incoming, view, rows)
    core_scores = scores(incoming, view)
    for row in range(table.size):
        if targets[row]:
            assert ext[row] == 10
        else:
            assert ext[row] == (core_scores[row] * 10 + 50) // 100
