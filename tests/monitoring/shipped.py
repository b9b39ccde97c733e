"""What deploy/monitoring ships, read the way Prometheus and Grafana read it: the alert rules of
the PrometheusRule, the dashboard's panel queries with Grafana's variables substituted, and the
series names both use."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from descheduler import metrics

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
RULE_FILE = MONITORING / "prometheusrule.yaml"
DASHBOARD_FILE = MONITORING / "dashboard.json"

# What Grafana puts in place of its variables when the dashboard shows every namespace and pool
# over a short range: "All" of a multi-value variable is its allValue (.*); $__rate_interval is at
# least four scrape intervals (here 1 s scrapes, so 30 s leaves room for a slow scrape or two).
GRAFANA_VARIABLES = {"namespace": ".*", "pool": ".*", "__rate_interval": "30s", "__interval": "5s"}
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
_SERIES = re.compile(r"\bdescheduler_\w+")


@dataclass(frozen=True, slots=True)
class Query:
    """One PromQL expression the dashboard or the alerts evaluate, and where it comes from."""

    where: str
    expr: str


def rule_groups() -> list[dict[str, Any]]:
    """The PrometheusRule's spec.groups: a Prometheus rule file's `groups`."""
    rule = yaml.safe_load(RULE_FILE.read_text())
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def alerts() -> list[dict[str, Any]]:
    return [r for g in rule_groups() for r in g["rules"] if "alert" in r]


def alert_queries() -> list[Query]:
    return [Query(f"alert {r['alert']}", r["expr"]) for r in alerts()]


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text())
    return loaded


def panels() -> list[dict[str, Any]]:
    """Every panel, rows' nested panels included, rows themselves excluded."""
    out: list[dict[str, Any]] = []
    for panel in dashboard()["panels"]:
        out.extend(panel.get("panels") or [])
        if panel["type"] != "row":
            out.append(panel)
    return out


def panel_queries() -> list[Query]:
    return [Query(f"panel {p['title']!r} {t['refId']}", t["expr"]) for p in panels() for t in p.get("targets") or []]


def substitute(expr: str, values: dict[str, str] = GRAFANA_VARIABLES) -> str:
    """`expr` with Grafana's variables replaced as Grafana would; an unknown variable is an error."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise KeyError(f"no test value for Grafana variable ${name} in {expr!r}")
        return values[name]

    return _VARIABLE.sub(value, expr)


def series_in(expr: str) -> set[str]:
    return set(_SERIES.findall(expr))


def exposed_series() -> dict[str, str]:
    """Every series name descheduler/metrics.py's REGISTRY exposes (with the suffixes its type
    adds: _total, _bucket/_sum/_count, _info), mapped to the metric it belongs to."""
    out: dict[str, str] = {}
    for family in metrics.REGISTRY.collect():
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_sum", "_count"),
            "info": ("_info",),
            "gauge": ("",),
        }[family.type]
        for suffix in suffixes:
            out[family.name + suffix] = family.name
    return out


def scaled_rule_file(path: Path, seconds_per_minute: float) -> Path:
    """The shipped rules with every `for:` scaled down (a minute becomes `seconds_per_minute`
    seconds) and nothing else changed, written as a Prometheus rule file at `path`."""
    groups = rule_groups()
    for group in groups:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = f"{max(1, round(_seconds(rule['for']) / 60 * seconds_per_minute))}s"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def _seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    total = 0.0
    for amount, unit in re.findall(r"(\d+)(ms|s|m|h|d)", duration):
        total += int(amount) * units[unit]
    return total
