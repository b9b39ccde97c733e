"""A real Prometheus server for tests: Debian's `prometheus` package (2.42), started on a free
loopback port in a temporary folder, stopped at the end.

Tests that need it take the `prometheus_binary` fixture (tests/conftest.py), which skips, saying
how to get the binary, when it is absent. `$PROMETHEUS_BINARY` names another binary.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.waiting import wait_for

HOW_TO_GET = "no prometheus binary: apt-get install prometheus (Debian's package), or set $PROMETHEUS_BINARY"
STARTUP_TIMEOUT = 30.0


def find_binary(name: str = "prometheus") -> str | None:
    """The binary `name` (prometheus or promtool): $PROMETHEUS_BINARY's folder first, then $PATH."""
    named = os.environ.get("PROMETHEUS_BINARY")
    if named:
        candidate = Path(named).with_name(name) if name != "prometheus" else Path(named)
        return str(candidate) if candidate.is_file() else None
    return shutil.which(name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PrometheusError(AssertionError):
    """Prometheus answered a query with an error (or not at all)."""


class PrometheusServer:
    """One Prometheus process on 127.0.0.1:`port`, its config, rules and TSDB under `folder`.

    `scrape_configs` and `rule_files` (paths) go into prometheus.yml with the given global
    intervals; the lifecycle API is on, so `reload()` re-reads them."""

    def __init__(
        self,
        binary: str,
        folder: Path,
        scrape_configs: list[dict[str, Any]],
        *,
        rule_files: Sequence[Path] = (),
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
        lookback: str = "5m",
    ) -> None:
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lookback = lookback
        self.config_path = folder / "prometheus.yml"
        self.log_path = folder / "prometheus.log"
        self.write_config(scrape_configs, rule_files, scrape_interval, evaluation_interval)
        self._process: subprocess.Popen[bytes] | None = None

    def write_config(
        self,
        scrape_configs: list[dict[str, Any]],
        rule_files: Sequence[Path] = (),
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
    ) -> None:
        config = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
            "scrape_configs": scrape_configs,
            "rule_files": [str(path) for path in rule_files],
        }
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    def start(self) -> PrometheusServer:
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.config_path}",
                f"--storage.tsdb.path={self.folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                f"--query.lookback-delta={self.lookback}",
                "--log.level=info",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        wait_for(self.ready, STARTUP_TIMEOUT, "prometheus /-/ready", interval=0.1, state=self.log_tail)
        return self

    def ready(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise AssertionError(f"prometheus exited with {self._process.returncode}: {self.log_tail()}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def reload(self) -> None:
        """Re-read prometheus.yml and the rule files (POST /-/reload)."""
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200, response.read()

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/`path` with `params`; the `data` of a successful answer."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read() or b"{}")
        if answer.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {answer.get('errorType')}: {answer.get('error')}")
        return answer["data"]

    def query(self, expression: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's result (a vector's samples, or a scalar as one sample)."""
        params = {"query": expression}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self.api("query", **params)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def targets_up(self) -> dict[str, str]:
        """Each active scrape target's scrape URL and health (up, down, unknown)."""
        data = self.api("targets", state="active")
        return {target["scrapeUrl"]: target["health"] for target in data["activeTargets"]}

    def wait_for_targets(self, timeout: float = 30.0) -> None:
        """Until every target has been scraped successfully at least once."""
        wait_for(
            lambda: (up := self.targets_up()) and all(health == "up" for health in up.values()),
            timeout,
            "every prometheus target up",
            interval=0.2,
            state=self.targets_up,
        )

    def alerts(self) -> dict[str, str]:
        """Each alert's name and state (pending, firing)."""
        data = self.api("alerts")
        return {alert["labels"]["alertname"]: alert["state"] for alert in data["alerts"]}
