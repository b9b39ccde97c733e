"""The dashboard and the alerts against the real thing: Debian's Prometheus scraping a running
`descheduler run` (a subprocess) on the simulated cluster in real time.

Every panel query (Grafana's variables substituted as Grafana would: "All" is `.*`,
$__rate_interval a fixed window) and every alert expression evaluates without error, and each
panel query returns series. Then faults, one after the other, each make its alert fire: a policy
file made invalid (DeschedulerPolicyRejected), a load source that cannot be reached
(DeschedulerLoadSourceFailing, and, as no cycle plans any more, DeschedulerNoCycle), and a live
policy under which nothing may move (DeschedulerHotNodesNotRelieved).

The alerts are the shipped rules with one change, stated here plainly: every `for:` is scaled
down from minutes to seconds (SECONDS_PER_MINUTE), so a 5m `for` waits 5 s. The expressions, the
windows and the thresholds are the shipped ones; the policy's interval is 1 s, so "3 intervals"
and "10 cycles" pass in seconds too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario
from tests.monitoring.shipped import alert_queries, panel_queries, scaled_rule_file, substitute
from tests.prometheus_server import PrometheusServer, free_port
from tests.waiting import wait_for

SECONDS_PER_MINUTE = 1.0  # each minute of a rule's `for:` lasts this many seconds in this test
INTERVAL = 1.0  # the policy's cycle interval
STARTUP = 60.0  # import, list every kind, sync the cache, win the Lease: seconds on a busy 2-core box
FIRE_WITHIN = 30.0  # an alert's `for` (≤ 10 s here) plus detection, scrape and evaluation
# Panels allowed to show no data in a short healthy run, and why.
QUIET_PANELS = {
    "Watch restarts": "no watch stream restarts in a healthy run of a few seconds",
    "QuotaReclaim rounds without progress": "QuotaReclaim is off here; a stall is counted per group and lender only when it happens",
}

POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {interval}s
dryRun: {dry_run}
{extra}
strategies:
  - name: LowNodeLoad
    args:
      highThresholds: {{cpu: 70}}
      lowThresholds: {{cpu: 45}}
"""
NOTHING_MAY_MOVE = "evictor: {namespaces: {include: [nowhere]}}"


def policy(dry_run: bool = True, extra: str = "") -> str:
    return POLICY.format(interval=f"{INTERVAL:g}", dry_run=str(dry_run).lower(), extra=extra)


def closed_port() -> int:
    return free_port()  # nothing listens there once the probe socket is closed


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(load_demo_scenario()) as c:
        c.advance(60)  # pods running, metrics published; node-a and node-b hot
        with c.running_in_real_time():
            yield c


class Controller:
    """`descheduler run` as a subprocess, its log in a file."""

    def __init__(self, kubeconfig: Path, policy_file: Path, folder: Path) -> None:
        self.port = free_port()
        self.log_path = folder / "controller.log"
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "descheduler", "run", "--policy", str(policy_file)),
                    *("--kubeconfig", str(kubeconfig), "--identity", "replica-a", "--lease-namespace", "default"),
                    *("--port", str(self.port), "--host", "127.0.0.1", "--log-format", "json"),
                    *("--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.25"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def empty_panels(server: PrometheusServer) -> list[str]:
    return [q.where for q in panel_queries() if not server.query(substitute(q.expr)) and not _quiet(q.where)]


def _quiet(where: str) -> bool:
    return any(where.startswith(f"panel {title!r}") for title in QUIET_PANELS)


def rule_health(server: PrometheusServer) -> dict[str, str]:
    groups: list[dict[str, Any]] = server.api("rules")["groups"]
    return {
        r["name"]: r["health"] + (f": {r['lastError']}" if r.get("lastError") else "")
        for g in groups
        for r in g["rules"]
    }


def firing(server: PrometheusServer) -> set[str]:
    return {name for name, state in server.alerts().items() if state == "firing"}


def test_panels_have_data_and_each_fault_fires_its_alert(
    cluster: SimulatedCluster, prometheus_binary: str, tmp_path: Path
) -> None:
    began = time.monotonic()
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy())  # dry run: plans every second, moves nothing
    controller = Controller(cluster.write_kubeconfig(tmp_path / "kubeconfig"), policy_file, tmp_path)
    rules = scaled_rule_file(tmp_path / "rules.yaml", SECONDS_PER_MINUTE)
    scrape = [{"job_name": "descheduler", "static_configs": [{"targets": [f"127.0.0.1:{controller.port}"]}]}]
    fired: dict[str, float] = {}

    def until_firing(names: set[str], since: float, what: str) -> None:
        wait_for(
            lambda: names <= firing(server),
            FIRE_WITHIN,
            what,
            interval=0.2,
            state=lambda: (server.alerts(), controller.log_tail()),
        )
        for name in names:
            fired[name] = round(time.monotonic() - since, 1)

    try:
        with PrometheusServer(prometheus_binary, tmp_path, scrape, rule_files=[rules]) as server:
            # Healthy: the leader plans every second.
            wait_for(
                lambda: server.query("descheduler_last_cycle_timestamp_seconds > 0"),
                STARTUP,
                "the controller's first planned cycle, scraped",
                interval=0.5,
                state=controller.log_tail,
            )
            wait_for(
                lambda: not empty_panels(server),
                20,
                "every panel query to return series",
                interval=0.5,
                state=lambda: empty_panels(server),
            )
            for query in alert_queries():
                server.query(query.expr)  # raises PrometheusError on an evaluation error
            assert set(rule_health(server).values()) <= {"ok", "unknown"}, rule_health(server)
            wait_for(
                lambda: set(rule_health(server).values()) == {"ok"},
                10,
                "every rule evaluated",
                interval=0.2,
                state=lambda: rule_health(server),
            )
            assert firing(server) == set()  # hot nodes in a dry run are no alert

            # The policy ConfigMap edited into something invalid: the last valid policy stays.
            since = time.monotonic()
            policy_file.write_text(policy().replace(f"interval: {INTERVAL:g}s", "interval: -5s"))
            until_firing({"DeschedulerPolicyRejected"}, since, "DeschedulerPolicyRejected to fire")

            # A valid policy whose Prometheus load source is down: every cycle is skipped.
            since = time.monotonic()
            policy_file.write_text(
                policy(extra=f"loadSource: {{type: prometheus, address: 'http://127.0.0.1:{closed_port()}'}}")
            )
            wait_for(
                lambda: "DeschedulerPolicyRejected" not in firing(server),
                FIRE_WITHIN,
                "DeschedulerPolicyRejected to resolve",
                interval=0.2,
            )
            until_firing(
                {"DeschedulerLoadSourceFailing", "DeschedulerNoCycle"}, since, "the load source alerts to fire"
            )

            # Live, load readable again, but nothing may move: the hot nodes stay hot.
            since = time.monotonic()
            policy_file.write_text(policy(dry_run=False, extra=NOTHING_MAY_MOVE))
            until_firing({"DeschedulerHotNodesNotRelieved"}, since, "DeschedulerHotNodesNotRelieved to fire")
            hot_pools = {
                a["labels"]["pool"]
                for a in server.api("alerts")["alerts"]
                if a["labels"]["alertname"] == "DeschedulerHotNodesNotRelieved"
            }
            assert hot_pools == {"default"}
            wait_for(
                lambda: "DeschedulerNoCycle" not in firing(server),
                FIRE_WITHIN,
                "DeschedulerNoCycle to resolve",
                interval=0.2,
            )
    finally:
        controller.stop()
    print(f"alerts fired, seconds after their fault: {fired}; whole test {time.monotonic() - began:.0f} s")
    assert set(fired) == {
        "DeschedulerPolicyRejected",
        "DeschedulerLoadSourceFailing",
        "DeschedulerNoCycle",
        "DeschedulerHotNodesNotRelieved",
    }
