"""The harness's own parts that need no control plane: a start that lost its port to another process
is retried on a new one, each process keeps its own log, and the RBAC judge sees a refusal."""

from __future__ import annotations

import socket
import ssl
import sys
import textwrap
from pathlib import Path

import installed
import pytest
from controlplane import ControlPlane, free_port

# Stands in for a control-plane binary: binds the port it is given, as Go's net.Listen reports a
# taken one, then answers "ok" on it.
FAKE_BINARY = textwrap.dedent(
    f"""\
    #!{sys.executable} -IS
    import http.server, sys
    port = int(sys.argv[1])

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        def log_message(self, *args):
            pass

    try:
        server = http.server.HTTPServer(("127.0.0.1", port), Ok)
    except OSError:
        print(f"listen tcp 127.0.0.1:{{port}}: bind: address already in use", flush=True)
        sys.exit(1)
    print("serving", flush=True)
    server.serve_forever()
    """
)


@pytest.fixture
def plane(tmp_path: Path) -> ControlPlane:
    assets = tmp_path / "bin"
    assets.mkdir()
    fake = assets / "fake"
    fake.write_text(FAKE_BINARY)
    fake.chmod(0o755)
    return ControlPlane(assets, tmp_path / "work", ready_timeout=20)


def test_a_start_that_lost_its_port_is_retried_on_a_new_one_with_its_own_log(plane: ControlPlane) -> None:
    plane.workdir.mkdir()
    ports: list[int] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: the health check is refused at once

        def launch() -> tuple[list[str], str, str, ssl.SSLContext | None]:
            # The first port is one another process holds, as when free_port's choice is taken first.
            port = taken.getsockname()[1] if not ports else free_port()
            ports.append(port)
            return [str(port)], f"http://127.0.0.1:{port}/", "ok", None

        try:
            process = plane._start("fake", launch)
            assert process.alive()
            assert len(ports) == 2
            assert [p.log.name for p in plane.processes] == ["fake-2.log"]
            assert "address already in use" in (plane.workdir / "fake.log").read_text()
            # A second process of the same binary does not truncate the first one's log.
            plane._start("fake", lambda: ([str(p := free_port())], f"http://127.0.0.1:{p}/", "ok", None))
            assert [p.log.name for p in plane.processes] == ["fake-2.log", "fake-3.log"]
            assert "serving" in (plane.workdir / "fake-2.log").read_text()
        finally:
            plane.stop()


def test_a_process_that_fails_otherwise_is_not_retried(plane: ControlPlane) -> None:
    plane.workdir.mkdir()
    calls: list[int] = []

    def launch() -> tuple[list[str], str, str, ssl.SSLContext | None]:
        calls.append(1)
        return ["not-a-port"], "http://127.0.0.1:1/", "ok", None

    with pytest.raises(RuntimeError, match="exited"):
        plane._start("fake", launch)
    assert calls == [1]


def test_the_permission_check_sees_a_refusal_and_a_call_the_manifests_do_not_allow() -> None:
    user = installed.user(installed.CONTROLLER)
    events = [
        {
            "verb": "create",
            "user": {"username": user},
            "requestURI": "/api/v1/namespaces/shop/pods/web-1/eviction",
            "objectRef": {"resource": "pods", "subresource": "eviction", "namespace": "shop", "name": "web-1"},
            "responseStatus": {"code": 201},
        },
        {
            "verb": "delete",
            "user": {"username": user},
            "requestURI": "/api/v1/namespaces/shop/pods/web-1",
            "objectRef": {"resource": "pods", "namespace": "shop", "name": "web-1", "apiVersion": "v1"},
            "responseStatus": {"code": 403},
            "annotations": {"authorization.k8s.io/reason": ""},
        },
    ]
    report = installed.audit(events, installed.CONTROLLER)
    assert [str(a) for a in report.not_covered] == ["delete pods.core 'web-1' in namespace shop"]
    assert report.refused == ["delete pods.core 'web-1' in namespace shop ()"]
    assert any(p.verb == "patch" and p.resource == "events" for p in report.unused)
    line = '{"event": "eviction failed", "error": "POST /api/v1/...: 403 Forbidden: pods is forbidden"}'
    assert installed.forbidden_lines(f"fine\n{line}\nport 4031\n") == [line]


def test_the_roles_and_the_service_accounts_are_in_the_namespace_the_leases_use() -> None:
    objects = installed.rendered_rbac()
    accounts = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "ServiceAccount"}
    assert {(installed.NAMESPACE, installed.CONTROLLER), (installed.NAMESPACE, installed.EXTENDER)} <= accounts
    lease_roles = [
        o
        for o in objects
        if o["kind"] == "Role" and any("leases" in r.get("resources", []) for r in o.get("rules") or [])
    ]
    assert lease_roles
    assert {o["metadata"]["namespace"] for o in lease_roles} == {installed.NAMESPACE}
