"""deploy/monitoring as installed by deploy/overlays/monitoring: the PrometheusRule as shipped, and
the dashboard in a ConfigMap that Grafana's dashboard sidecar picks up (tests/monitoring checks
the rules and queries themselves)."""

from __future__ import annotations

import json

import yaml

from .deploy_support import DEPLOY, NAMESPACE, find, rendered

MONITORING = DEPLOY / "monitoring"
OVERLAY = DEPLOY / "overlays" / "monitoring"


def test_the_monitoring_overlay_installs_the_alerts_as_shipped() -> None:
    rule = find(rendered(OVERLAY), "PrometheusRule", "descheduler")
    assert rule == yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    assert rule["metadata"]["namespace"] == NAMESPACE


def test_the_dashboard_configmap_holds_the_dashboard_for_the_grafana_sidecar() -> None:
    configmap = find(rendered(OVERLAY), "ConfigMap", "descheduler-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == NAMESPACE
    assert configmap["data"] == {"dashboard.json": (MONITORING / "dashboard.json").read_text()}
    assert json.loads(configmap["data"]["dashboard.json"])["uid"] == "descheduler"


def test_the_base_does_not_need_the_prometheus_operator() -> None:
    assert not [o for o in rendered(DEPLOY / "base") if o["apiVersion"].startswith("monitoring.coreos.com/")]
