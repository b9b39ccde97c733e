"""`descheduler extender` without --policy serves with the built-in default policy, as `plan` does."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time

from cli_support import DEMO_SNAPSHOT, ROOT, free_port


def _ready(port: int) -> bool:
    probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        probe.request("GET", "/readyz")
        response = probe.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        probe.close()


def test_extender_without_a_policy_serves_with_the_default_policy(user_env: dict[str, str]) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "descheduler", "extender", "--snapshot", str(DEMO_SNAPSHOT),
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=user_env, cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not _ready(port):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the extender did not become ready"
            time.sleep(0.1)
        pod = {"metadata": {"name": "new", "namespace": "shop"}, "spec": {"containers": [{"name": "c"}]}}
        body = json.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["node-a", "node-d"]})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", "/filter", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        conn.close()
        assert response.status == 200, answer
        assert "node-d" in answer["NodeNames"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate()
    assert "error" not in stderr.lower() and "Traceback" not in stderr, stderr
