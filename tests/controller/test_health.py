"""The process endpoints: /metrics in the Prometheus text format, /healthz and /readyz with reasons."""

from __future__ import annotations

import urllib.error
import urllib.request

from descheduler.controller.health import HealthServer


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_endpoints_answer_with_status_and_reason() -> None:
    ready: list[str | None] = ["cache not synced"]
    server = HealthServer("127.0.0.1", 0, live=lambda: None, ready=lambda: ready[0]).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert get(base + "/healthz") == (200, "ok\n")
        assert get(base + "/readyz") == (503, "cache not synced\n")
        ready[0] = None
        assert get(base + "/readyz") == (200, "ok\n")
        status, text = get(base + "/metrics")
        assert status == 200
        assert "descheduler_build_info" in text
        assert get(base + "/nope")[0] == 404
    finally:
        server.stop()


def test_a_check_that_raises_is_a_failing_check() -> None:
    def broken() -> str | None:
        raise RuntimeError("boom")

    server = HealthServer("127.0.0.1", 0, live=broken, ready=lambda: None).start()
    try:
        assert get(f"http://127.0.0.1:{server.port}/healthz") == (503, "check failed: boom\n")
    finally:
        server.stop()
