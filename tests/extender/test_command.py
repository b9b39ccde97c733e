"""`descheduler extender` as an operator runs it: it serves until SIGTERM, and bad flags are one clear error."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from descheduler.cli import app
from descheduler.errors import InputError
from descheduler.extender import command as command_module
from descheduler.extender.command import ExtenderOptions

from .conftest import extender_args, kube_pod

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "config" / "policy.yaml"
DEMO = ROOT / "descheduler" / "demo" / "snapshot.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "descheduler", "extender", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--snapshot", str(DEMO), "--kubeconfig", "/nowhere"],
            "give either --snapshot or --kubeconfig/--context, not both",
        ),
        (["--snapshot", str(DEMO), "--refresh-interval", "0"], "--refresh-interval: must be a positive number"),
        (["--snapshot", str(DEMO), "--port", "70000"], "--port: must be a port number (0–65535), got 70000"),
        (["--snapshot", str(DEMO), "--max-request-bytes", "10"], "--max-request-bytes: must be at least 1024"),
        (
            ["--snapshot", str(DEMO), "--scheduler-lease", "a/b/c"],
            "--scheduler-lease: 'a/b/c': expected NAMESPACE/NAME, e.g. descheduler-system/descheduler-scheduler",
        ),
        (
            ["--snapshot", str(DEMO), "--scheduler-lease", "/name"],
            "--scheduler-lease: '/name': expected NAMESPACE/NAME",
        ),
        (["--snapshot", str(DEMO), "--scheduler-name", ""], "--scheduler-name: must be a pod schedulerName"),
    ],
)
def test_bad_flags_are_refused_with_the_flag_named(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["extender", "--policy", str(POLICY), *args])
    assert isinstance(result.exception, InputError)
    assert message in str(result.exception)


@pytest.mark.parametrize(
    ("args", "lease", "names"),
    [
        ([], ("descheduler-system", "descheduler-scheduler"), ("load-aware-scheduler",)),
        (["--scheduler-lease", "kube-system/my-lease"], ("kube-system", "my-lease"), ("load-aware-scheduler",)),
        (["--scheduler-lease", "kube-system"], ("kube-system", "descheduler-scheduler"), ("load-aware-scheduler",)),
        (
            ["--scheduler-name", "a", "--scheduler-name", "b"],
            ("descheduler-system", "descheduler-scheduler"),
            ("a", "b"),
        ),
    ],
)
def test_the_scheduler_lease_and_names_reach_the_extender(
    monkeypatch: pytest.MonkeyPatch, args: list[str], lease: tuple[str, str], names: tuple[str, ...]
) -> None:
    seen: list[ExtenderOptions] = []

    def run_extender(policy: Path | None, options: ExtenderOptions) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(command_module, "run_extender", run_extender)
    result = CliRunner().invoke(app, ["extender", "--policy", str(POLICY), "--kubeconfig", "/nowhere", *args])
    assert result.exit_code == 0, result.output
    [options] = seen
    assert (options.scheduler_lease, options.scheduler_names) == (lease, names)


def test_a_bad_flag_or_a_missing_policy_file_exits_1_with_one_line(tmp_path: Path) -> None:
    result = run("--policy", str(POLICY), "--snapshot", str(DEMO), "--kubeconfig", "/nowhere")
    assert result.returncode == 1
    assert result.stderr == "error: give either --snapshot or --kubeconfig/--context, not both\n"
    result = run("--policy", str(tmp_path / "nope.yaml"), "--snapshot", str(DEMO))
    assert result.returncode == 1
    assert "nope.yaml" in result.stderr and "cannot read" in result.stderr and "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_it_serves_a_snapshot_until_sigterm(tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "descheduler", "extender", "--policy", str(POLICY), "--snapshot", str(DEMO),
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                probe.request("GET", "/readyz")
                response = probe.getresponse()
                response.read()
                if response.status == 200:
                    break
            except (OSError, http.client.HTTPException):
                pass
            finally:
                probe.close()
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the extender did not become ready"
            time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", "/filter", extender_args(kube_pod("web-new"), ["node-a", "node-d"]))
        answer = json.loads(conn.getresponse().read())
        assert answer["NodeNames"] == ["node-d"]
        assert answer["FailedAndUnresolvableNodes"] == {
            "node-a": "load-aware: estimated cpu usage would exceed 65 percent"
        }
        conn.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
