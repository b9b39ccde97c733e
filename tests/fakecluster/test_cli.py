import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kubernetes import client, config


def serve(*args: str, sigint_ignored: bool = False) -> subprocess.Popen[str]:
    """`descheduler sim serve --port 0 ARGS` as a process (started with SIGINT ignored, as a
    background job of a shell without job control is, when `sigint_ignored`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "descheduler", "sim", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
    )


def wait_for_file(proc: subprocess.Popen[str], path: Path) -> None:
    """Until the served cluster has written `path` (20 s at most), or fail with why."""
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert path.exists(), proc.stderr.read() if proc.poll() is not None and proc.stderr else f"no {path.name}"


def test_sim_serve_writes_a_kubeconfig_a_client_can_use(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = serve("--kubeconfig-out", str(kubeconfig))
    try:
        wait_for_file(proc, kubeconfig)
        line = proc.stdout.readline() if proc.stdout else ""
        while "serving at" not in line and line:
            line = proc.stdout.readline() if proc.stdout else ""
        assert "serving at http://127.0.0.1:" in line
        api = config.new_client_from_config(str(kubeconfig))
        nodes = client.CoreV1Api(api).list_node().items
        assert sorted(n.metadata.name for n in nodes)[:2] == ["node-a", "node-b"]
        api.close()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "stopped" in out


def test_sim_serve_reports_a_bad_scenario_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: descheduler.dev/v1alpha1\nkind: Scenario\n")
    proc = subprocess.run(
        [sys.executable, "-m", "descheduler", "sim", "serve", str(bad), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {bad}: snapshot: required"


def test_sim_serve_with_an_exporter_writes_scrape_configs_whose_targets_answer(tmp_path: Path) -> None:
    import urllib.request

    import yaml

    scrape = tmp_path / "scrape.yml"
    proc = serve("--exporter-port", "0", "--scrape-config-out", str(scrape))
    try:
        wait_for_file(proc, scrape)
        time.sleep(0.2)  # written in one call; let it land
        jobs = yaml.safe_load(scrape.read_text())["scrape_configs"]
        target = jobs[0]["static_configs"][0]
        assert target["labels"]["instance"] == "node-a"
        url = f"http://{target['targets'][0]}{target['labels']['__metrics_path__']}"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert b'node_cpu_seconds_total{cpu="0",mode="idle"}' in response.read()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err


def test_sim_serve_refuses_a_scrape_config_without_an_exporter(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "descheduler", "sim", "serve", "--port", "0", "--scrape-config-out", "x.yml"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: --scrape-config-out: needs --exporter-port (the exporter it configures)"


def test_sim_serve_stops_on_sigint_even_when_started_with_it_ignored(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = serve("--kubeconfig-out", str(kubeconfig), sigint_ignored=True)
    try:
        wait_for_file(proc, kubeconfig)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "stopped" in out
