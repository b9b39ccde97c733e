"""The dashboard and the alerts stay in step with descheduler/metrics.py: every series they query
is one the controller exposes (with its type's suffix), and every series the controller exposes
is on the dashboard or deliberately left off it, for a reason given here."""

from __future__ import annotations

import pytest

from tests.monitoring.shipped import (
    GRAFANA_VARIABLES,
    Query,
    alert_queries,
    dashboard,
    exposed_series,
    panel_queries,
    panels,
    series_in,
    substitute,
)

# Series the controller's dashboard leaves out, and why.
NOT_ON_THE_DASHBOARD = {
    "descheduler_extender_requests": "the extender is another process (`descheduler extender`), not the controller",
    "descheduler_extender_request_duration_seconds": "the extender is another process",
    "descheduler_extender_refreshes": "the extender is another process",
    "descheduler_extender_assumed_pods": "the extender is another process",
    "descheduler_extender_nodes": "the extender is another process",
    "descheduler_extender_lease_renewals": "the extender is another process",
    "descheduler_extender_lease_renewed_timestamp_seconds": "the extender is another process",
    "descheduler_extender_tls_handshake_failures": "the extender is another process",
    "descheduler_extender_binds_refused": "the extender is another process (DeschedulerExtenderBindsRefused alerts on it)",
    "descheduler_extender_reservations_failed": "the extender is another process",
    "descheduler_extender_load_filter_waived": "the extender is another process",
}
GRAFANA_BUILTINS = {"__rate_interval", "__interval"}


@pytest.mark.parametrize("query", panel_queries() + alert_queries(), ids=lambda q: q.where)
def test_every_series_queried_is_one_the_controller_exposes(query: Query) -> None:
    used = series_in(query.expr)
    assert used, f"{query.where} queries no descheduler_ series: {query.expr}"
    unknown = used - exposed_series().keys()
    assert not unknown, (
        f"{query.where}: {sorted(unknown)} not in descheduler/metrics.py (counters end _total, histograms _bucket/_sum/_count)"
    )


def test_every_controller_metric_is_on_the_dashboard_or_deliberately_not() -> None:
    on_dashboard = {exposed_series()[s] for q in panel_queries() for s in series_in(q.expr)}
    metrics = set(exposed_series().values())
    assert metrics - on_dashboard == set(NOT_ON_THE_DASHBOARD)
    assert set(NOT_ON_THE_DASHBOARD) <= metrics  # no stale entry


def test_the_dashboard_shows_what_an_operator_asks_for() -> None:
    titles = {p["title"] for p in panels()}
    assert titles >= {
        "Cycles by result",
        "Cycle duration",
        "Hot nodes per node pool",
        "Moves by strategy and outcome",
        "Jobs in flight by phase",
        "Evictions refused by reason",
        "Policy reloads",
        "Leader",
        "Load-source errors",
    }


def test_every_variable_a_query_uses_is_defined_and_every_panel_uses_the_datasource_variable() -> None:
    defined = {v["name"] for v in dashboard()["templating"]["list"]}
    assert set(GRAFANA_VARIABLES) - GRAFANA_BUILTINS <= defined
    for query in panel_queries():
        substitute(query.expr)  # raises on a variable the test (and so the dashboard) does not define
    for panel in panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]


def test_panel_ids_are_unique_and_the_dashboard_has_a_fixed_uid() -> None:
    ids = [p["id"] for p in dashboard()["panels"]]
    assert len(ids) == len(set(ids))
    assert dashboard()["uid"] == "descheduler"
