import pytest
from hypothesis import given
from hypothesis import strategies as st

from descheduler.fakecluster.usage import (
    Diurnal,
    Series,
    UsageModel,
    UsageSpec,
    diurnal_factor,
    models_for,
    unchanged_until,
    usage_units,
)

GI = 2**30


def _at(model: UsageModel, request: int = 1000, elapsed: float = 0, instant: float = 0, key: str = "ns/p") -> int:
    return usage_units(model, "cpu", request, instant=instant, elapsed=elapsed, key=key, seed=1)


def test_constant_is_a_quantity() -> None:
    assert usage_units(UsageModel(constant="1.5Gi"), "memory", 0, instant=0, elapsed=0, key="k", seed=0) == 3 * GI // 2


def test_fraction_is_of_the_request() -> None:
    assert _at(UsageModel(fraction=0.75), request=2000) == 1500


def test_series_steps_and_repeats() -> None:
    model = UsageModel(series=Series(values=[0.5, "300m", 1.0], step_seconds=60))
    assert [_at(model, elapsed=t) for t in (0, 59, 60, 120, 180)] == [500, 500, 300, 1000, 500]


def test_diurnal_interpolates_over_the_day() -> None:
    assert diurnal_factor([1.0, 2.0], 0) == 1.0
    assert diurnal_factor([1.0, 2.0], 21_600) == 1.5
    assert diurnal_factor([1.0, 2.0], 43_200) == 2.0
    assert _at(UsageModel(fraction=0.5, diurnal=Diurnal(curve=[1.0, 2.0])), instant=43_200) == 1000


def test_noise_is_deterministic_and_varies_by_pod() -> None:
    model = UsageModel(fraction=0.5, noise=0.2)
    assert _at(model, instant=600) == _at(model, instant=600)
    values = {_at(model, instant=600, key=f"ns/p{i}") for i in range(10)}
    assert len(values) > 1


@pytest.mark.parametrize(
    "fields",
    [{}, {"constant": "1", "fraction": 0.5}, {"constant": "lots"}, {"fraction": -1}, {"fraction": 0.5, "noise": 2}],
)
def test_invalid_models_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        UsageModel.model_validate(fields)


def test_a_cluster_started_now_loads_as_its_scenario_start_does() -> None:
    """The demo's load is its afternoon peak (its `start`), not the wall clock's time of day."""
    from descheduler.fakecluster.cluster import SimulatedCluster
    from descheduler.fakecluster.scenario import load_demo_scenario

    def usage(cluster: SimulatedCluster) -> dict[str, tuple[int, int]]:
        cluster.advance(60)
        return {key: (u.cpu, u.memory) for key, u in cluster.kubelet.usage.items()}

    demo = load_demo_scenario()
    assert demo.scenario.start is not None
    assert usage(SimulatedCluster(demo)) == usage(SimulatedCluster(demo, start=demo.scenario.start))
    assert usage(SimulatedCluster(demo)) != usage(SimulatedCluster(demo, start=demo.scenario.start - 12 * 3600))


def test_the_first_matching_rule_wins_per_resource_in_the_rules_order() -> None:
    spec = UsageSpec.model_validate(
        {
            "pods": [
                {
                    "selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
                    "cpu": {"fraction": 0.1},
                },
                {
                    "selector": {"matchLabels": {"app": "a", "tier": "web"}},
                    "cpu": {"fraction": 0.2},
                    "memory": {"fraction": 0.3},
                },
                {"selector": {"matchLabels": {"tier": "web"}}, "namespace": "other", "memory": {"fraction": 0.4}},
                {"selector": {}, "memory": {"fraction": 0.5}},
            ]
        }
    )
    web_a = models_for(spec, "ns", {"app": "a", "tier": "web"})
    assert (web_a["cpu"].fraction, web_a["memory"].fraction) == (0.1, 0.3)
    other = models_for(spec, "other", {"tier": "web"})
    assert (other["cpu"].fraction, other["memory"].fraction) == (0.1, 0.4)
    # matchLabels must match whole: app=a alone lacks tier=web.
    assert models_for(spec, "ns", {"app": "a"})["memory"].fraction == 0.5


@given(
    base=st.sampled_from(["constant", "fraction", "series"]),
    step=st.integers(1, 600),
    values=st.lists(st.floats(0, 3), min_size=1, max_size=5),
    noise=st.sampled_from([0.0, 0.1]),
    diurnal=st.booleans(),
    elapsed=st.floats(-100, 5000),
    offset=st.floats(0, 86_400),
    later=st.floats(0, 1),
)
def test_usage_holds_until_the_time_unchanged_until_gives(
    base: str,
    step: int,
    values: list[float],
    noise: float,
    diurnal: bool,
    elapsed: float,
    offset: float,
    later: float,
) -> None:
    """The kubelet reuses a pod's usage before this time: the model must give the same value anywhere in it."""
    model = UsageModel(
        constant="250m" if base == "constant" else None,
        fraction=0.4 if base == "fraction" else None,
        series=Series(values=list(values), step_seconds=step) if base == "series" else None,
        noise=noise,
        diurnal=Diurnal(curve=[1.0, 1.5, 0.5]) if diurnal else None,
    )
    until = unchanged_until(model, instant=elapsed + offset, elapsed=elapsed)
    assert until >= elapsed
    if diurnal:
        assert until == elapsed  # the curve moves continuously
    if base != "series" and not noise and not diurnal:
        assert until == float("inf")
    probe = elapsed + later * (min(until, elapsed + 10_000) - elapsed)
    if probe < until:
        now = _at(model, elapsed=elapsed, instant=elapsed + offset)
        assert _at(model, elapsed=probe, instant=probe + offset) == now
