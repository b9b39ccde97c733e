"""`descheduler extender` as an operator runs it: it serves until SIGTERM, and bad flags are one clear error."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trustme
from typer.testing import CliRunner

from descheduler.cli import app
from descheduler.errors import InputError
from descheduler.extender import command as command_module
from descheduler.extender.command import ExtenderOptions, check_listeners, is_loopback
from descheduler.extender.server import TLSFiles

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


def _wait_ready(process: subprocess.Popen[str], port: int) -> None:
    """Until GET /readyz on port answers 200 (plain HTTP)."""
    deadline = time.monotonic() + 30
    while True:
        probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            probe.request("GET", "/readyz")
            response = probe.getresponse()
            response.read()
            if response.status == 200:
                return
        except (OSError, http.client.HTTPException):
            pass
        finally:
            probe.close()
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the extender did not become ready"
        time.sleep(0.1)


def _stop(process: subprocess.Popen[str]) -> str:
    """SIGTERM, the exit code checked; what the process logged."""
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    return process.communicate()[1]


def test_it_serves_a_snapshot_until_sigterm(tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "descheduler", "extender", "--policy", str(POLICY), "--snapshot", str(DEMO),
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_ready(process, port)
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


def test_the_verbs_listen_on_loopback_by_default_and_no_health_listener_is_added(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[ExtenderOptions] = []
    monkeypatch.setattr(command_module, "run_extender", lambda policy, options: seen.append(options) or 0)
    result = CliRunner().invoke(app, ["extender", "--snapshot", str(DEMO)])
    assert result.exit_code == 0, result.output
    [options] = seen
    assert (options.host, options.tls, options.insecure_listen) == ("127.0.0.1", None, False)
    assert (options.health_host, options.health_port) == ("0.0.0.0", 0)


def test_the_three_tls_files_reach_the_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[ExtenderOptions] = []
    monkeypatch.setattr(command_module, "run_extender", lambda policy, options: seen.append(options) or 0)
    files = ["--tls-cert-file", "c.crt", "--tls-private-key-file", "c.key", "--client-ca-file", "ca.crt"]
    result = CliRunner().invoke(app, ["extender", "--snapshot", str(DEMO), "--host", "0.0.0.0", *files])
    assert result.exit_code == 0, result.output
    assert seen[0].tls == TLSFiles(Path("c.crt"), Path("c.key"), Path("ca.crt"))


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        (["--tls-cert-file", "c.crt"], "--tls-private-key-file, --client-ca-file"),
        (["--tls-cert-file", "c.crt", "--tls-private-key-file", "c.key"], "--client-ca-file"),
        (["--client-ca-file", "ca.crt"], "--tls-cert-file, --tls-private-key-file"),
    ],
)
def test_the_tls_flags_go_together(given: list[str], missing: str) -> None:
    result = CliRunner().invoke(app, ["extender", "--snapshot", str(DEMO), *given])
    assert isinstance(result.exception, InputError)
    message = str(result.exception)
    assert "give --tls-cert-file, --tls-private-key-file, --client-ca-file together" in message
    assert f"(missing {missing})" in message


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.7", "fd00::7", "extender.example", "::ffff:127.0.0.1"])
def test_a_plain_listener_off_loopback_is_refused_with_why_and_the_two_fixes(host: str) -> None:
    result = CliRunner().invoke(app, ["extender", "--snapshot", str(DEMO), "--host", host])
    assert isinstance(result.exception, InputError)
    message = str(result.exception)
    assert message.startswith("--host: refusing plain HTTP without client authentication")
    assert "could bind pods to nodes and read every node's load" in message
    assert "Listen on 127.0.0.1" in message and "sidecar of kube-scheduler" in message
    assert "--tls-cert-file, --tls-private-key-file, --client-ca-file" in message


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST"])
def test_loopback_hosts_are_served_without_tls(host: str) -> None:
    assert is_loopback(host)
    assert check_listeners(ExtenderOptions(host=host)) is None


def test_insecure_listen_serves_off_loopback_with_a_warning() -> None:
    warning = check_listeners(ExtenderOptions(host="0.0.0.0", insecure_listen=True))
    assert warning is not None and "could bind pods" in warning and "0.0.0.0" in warning


def test_with_tls_any_host_is_served_without_a_warning() -> None:
    tls = TLSFiles(Path("c.crt"), Path("c.key"), Path("ca.crt"))
    assert check_listeners(ExtenderOptions(host="0.0.0.0", tls=tls)) is None


@pytest.mark.parametrize(
    ("host", "port", "health_host", "health_port", "clash"),
    [
        ("127.0.0.1", 10262, "0.0.0.0", 10262, True),
        ("0.0.0.0", 10262, "127.0.0.1", 10262, True),
        ("127.0.0.1", 10262, "localhost", 10262, True),
        ("::1", 10262, "::", 10262, True),
        ("127.0.0.1", 10262, "127.0.0.2", 10262, False),
        ("127.0.0.1", 10262, "0.0.0.0", 10263, False),
        ("127.0.0.1", 0, "0.0.0.0", 0, False),
    ],
)
def test_the_health_listener_may_not_share_the_verb_port(
    host: str, port: int, health_host: str, health_port: int, clash: bool
) -> None:
    options = ExtenderOptions(host=host, port=port, health_host=health_host, health_port=health_port)
    if not clash:
        assert check_listeners(options) is None
        return
    with pytest.raises(InputError) as error:
        check_listeners(options)
    assert str(error.value).startswith("--health-port: ") and "own port" in str(error.value)


def test_a_health_port_out_of_range_is_named() -> None:
    result = CliRunner().invoke(app, ["extender", "--snapshot", str(DEMO), "--health-port", "70000"])
    assert isinstance(result.exception, InputError)
    assert str(result.exception) == "--health-port: must be a port number (0–65535), got 70000"


def test_a_bad_certificate_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("not a certificate\n")
    (tmp_path / "tls.key").write_text("")
    (tmp_path / "ca.crt").write_text("")
    result = run(
        "--snapshot", str(DEMO), "--tls-cert-file", str(tmp_path / "tls.crt"),
        "--tls-private-key-file", str(tmp_path / "tls.key"), "--client-ca-file", str(tmp_path / "ca.crt"),
    )  # fmt: skip
    assert result.returncode == 1
    assert (
        result.stderr
        == f"error: --tls-cert-file: {tmp_path / 'tls.crt'}: no PEM certificate in it (a '-----BEGIN CERTIFICATE-----' block)\n"
    )


def test_a_plain_listener_off_loopback_exits_1_with_one_line() -> None:
    result = run("--snapshot", str(DEMO), "--host", "0.0.0.0")
    assert result.returncode == 1
    assert result.stderr.startswith("error: --host: refusing plain HTTP") and result.stderr.count("\n") == 1


def test_with_insecure_listen_it_serves_off_loopback_and_warns_once() -> None:
    port, health_port = _free_port(), _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "descheduler", "extender", "--snapshot", str(DEMO), "--host", "0.0.0.0",
         "--port", str(port), "--insecure-listen", "--health-port", str(health_port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_ready(process, health_port)
        _wait_ready(process, port)  # without TLS, the verb listener answers the probes too
        log = [json.loads(line) for line in _stop(process).splitlines() if line.startswith("{")]
    finally:
        if process.poll() is None:
            process.kill()
    warnings = [entry["event"] for entry in log if entry.get("level") == "warning"]
    assert len(warnings) == 1 and "could bind pods" in warnings[0], log
    [serving] = [entry for entry in log if entry["event"] == "extender serving"]
    assert serving["verbs"] == f"0.0.0.0:{port} (http, INSECURE: no client authentication, reachable from the network)"
    assert serving["health"] == f"0.0.0.0:{health_port} (http, GET /healthz, /readyz, /metrics only)"


def test_it_serves_mutual_tls_and_probes_on_the_health_port(tmp_path: Path) -> None:
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    server.cert_chain_pems[0].write_to_path(str(tmp_path / "tls.crt"))
    server.private_key_pem.write_to_path(str(tmp_path / "tls.key"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    port, health_port = _free_port(), _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "descheduler", "extender", "--policy", str(POLICY), "--snapshot", str(DEMO),
         "--host", "0.0.0.0", "--port", str(port), "--health-port", str(health_port), "--health-host", "127.0.0.1",
         "--tls-cert-file", str(tmp_path / "tls.crt"), "--tls-private-key-file", str(tmp_path / "tls.key"),
         "--client-ca-file", str(tmp_path / "ca.crt")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_ready(process, health_port)
        context = ssl.create_default_context()
        ca.configure_trust(context)
        ca.issue_cert("kube-scheduler").configure_cert(context)
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
        conn.request("POST", "/filter", extender_args(kube_pod("web-new"), ["node-a", "node-d"]))
        assert json.loads(conn.getresponse().read())["NodeNames"] == ["node-d"]
        conn.close()
        health = http.client.HTTPConnection("127.0.0.1", health_port, timeout=5)
        health.request("POST", "/filter", extender_args(kube_pod("web-new"), ["node-a", "node-d"]))
        assert health.getresponse().status == 404
        health.close()
        log = [json.loads(line) for line in _stop(process).splitlines() if line.startswith("{")]
    finally:
        if process.poll() is None:
            process.kill()
    assert not [entry for entry in log if entry.get("level") == "warning"], log
    [serving] = [entry for entry in log if entry["event"] == "extender serving"]
    assert serving["verbs"] == f"0.0.0.0:{port} (https, client certificates signed by --client-ca-file required)"
