"""The extender's HTTP/1.1 framing, byte by byte on a raw socket: keep-alive, refusals and what the
connection does after each, as kube-scheduler's Go client and other clients rely on."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from descheduler import metrics
from descheduler.extender import Extender, ExtenderServer, SnapshotFileSource
from descheduler.extender import server as server_module
from tests.builders import loaded_node, node

from .conftest import extender_args, kube_pod, scheduling_args, write_snapshot

BODY = extender_args(kube_pod("web-http"), ["cool", "plain"])


@pytest.fixture
def extender(tmp_path: Path) -> Extender:
    path = write_snapshot(tmp_path / "snapshot.yaml", [*loaded_node("cool", [("c1", "1")]), node("plain")])
    extender = Extender(SnapshotFileSource(path), scheduling_args())
    assert extender.refresh(force=True)
    return extender


@pytest.fixture
def server(extender: Extender) -> Iterator[ExtenderServer]:
    with ExtenderServer(extender, "127.0.0.1", 0, max_body=4096) as running:
        yield running


def connect(server: ExtenderServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def read_answer(sock: socket.socket, pending: bytearray | None = None) -> Answer:
    """One response off the socket (bytes past it stay in `pending`)."""
    data = pending if pending is not None else bytearray()
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer; got {bytes(data)!r}"
        data += chunk
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    length = int(headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the middle of a body"
        rest += chunk
    data[:] = rest[length:]
    return Answer(int(status_line.split(" ")[1]), headers, rest[:length])


def closed(sock: socket.socket) -> bool:
    """Whether the server closed the connection (recv sees the end of the stream)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_many_requests_are_answered_on_one_kept_alive_connection(server: ExtenderServer) -> None:
    with connect(server) as sock:
        for verb in ("filter", "prioritize", "filter"):
            sock.sendall(post(f"/{verb}", BODY))
            answer = read_answer(sock)
            assert answer.status == 200 and "connection" not in answer.headers
            assert answer.headers["content-type"] == "application/json"
            json.loads(answer.body)


def test_pipelined_requests_are_answered_in_order(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(post("/filter", BODY) + post("/prioritize", BODY) + b"GET /healthz HTTP/1.1\r\n\r\n")
        pending = bytearray()
        assert json.loads(read_answer(sock, pending).body)["NodeNames"] == ["cool", "plain"]
        assert {h["Host"] for h in json.loads(read_answer(sock, pending).body)} == {"cool", "plain"}
        assert read_answer(sock, pending).body == b"ok\n"


def test_a_request_written_a_few_bytes_at_a_time_is_answered(server: ExtenderServer) -> None:
    request = post("/filter", BODY)
    with connect(server) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for start in range(0, len(request), 7):
            sock.sendall(request[start : start + 7])
        assert read_answer(sock).status == 200


def test_answers_carry_a_date_and_the_server_name(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
        answer = read_answer(sock)
    assert answer.headers["server"] == "descheduler-extender"
    assert answer.headers["date"].endswith(" GMT")


@pytest.mark.parametrize(
    ("request_bytes", "status", "reason"),
    [
        (b"POST /filter HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 411, b"chunked"),
        (b"POST /filter HTTP/1.1\r\n\r\n{}", 411, b"Content-Length is required"),
        (b"POST /filter HTTP/1.1\r\nContent-Length: -2\r\n\r\n{}", 411, b"is not a number"),
        (b"POST /filter HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, b"two different"),
        (b"POST /filter HTTP/1.1 extra\r\n\r\n", 400, b"bad request line"),
        (b"POST /filter SPDY/3\r\n\r\n", 400, b"bad request version"),
        (b"POST /filter HTTP/2.0\r\n\r\n", 505, b"use HTTP/1.1"),
        (b"POST /filter HTTP/1.1\r\nno colon here\r\n\r\n", 400, b"bad header line"),
        (b"PUT /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 501, b"'PUT' is not supported"),
    ],
    ids=["chunked", "no-length", "negative-length", "two-lengths", "request-line", "version", "http2", "header", "put"],
)
def test_a_request_framed_badly_is_refused_with_the_reason_and_the_connection_closes(
    server: ExtenderServer, request_bytes: bytes, status: int, reason: bytes
) -> None:
    with connect(server) as sock:
        sock.sendall(request_bytes)
        answer = read_answer(sock)
        assert answer.status == status and reason in answer.body, (answer.status, answer.body)
        assert answer.headers["connection"] == "close"
        assert closed(sock)


def test_an_oversized_body_is_read_and_dropped_and_the_connection_goes_on(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(post("/filter", b"x" * 10_000))
        answer = read_answer(sock)
        assert answer.status == 413 and b"body of 10000 bytes exceeds the limit of 4096 bytes" in answer.body
        assert "connection" not in answer.headers
        sock.sendall(post("/filter", BODY))
        assert read_answer(sock).status == 200


def test_a_body_past_the_discard_limit_is_not_read_and_the_connection_closes(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(f"POST /filter HTTP/1.1\r\nContent-Length: {server_module.DISCARD_LIMIT + 1}\r\n\r\n".encode())
        answer = read_answer(sock)
        assert answer.status == 413 and answer.headers["connection"] == "close"
        assert closed(sock)


def test_a_head_longer_than_the_limit_gets_431(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Long: " + b"a" * (server_module.MAX_HEAD + 10))
        answer = read_answer(sock)
        assert answer.status == 431 and closed(sock)


def test_a_body_cut_short_by_the_client_gets_400(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nContent-Length: 100\r\n\r\n{}")
        sock.shutdown(socket.SHUT_WR)
        answer = read_answer(sock)
        assert answer.status == 400 and b"body ended after 2 of 100 bytes" in answer.body


def test_an_unknown_verb_gets_404_and_the_connection_stays_in_step(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(post("/scheduler/preempt", BODY) + post("/scheduler/filter", BODY))
        pending = bytearray()
        answer = read_answer(sock, pending)
        assert answer.status == 404 and json.loads(answer.body)["Error"].startswith("no such verb 'preempt'")
        assert read_answer(sock, pending).status == 200


def test_a_failure_inside_the_extender_is_a_500_for_that_request_only(extender: Extender) -> None:
    def broken(body: bytes) -> bytes:
        raise KeyError("boom")

    extender.filter = broken  # type: ignore[method-assign]
    with ExtenderServer(extender, "127.0.0.1", 0) as running, connect(running) as sock:
        sock.sendall(post("/filter", BODY))
        answer = read_answer(sock)
        assert answer.status == 500
        assert json.loads(answer.body) == {"Error": "internal error: KeyError: 'boom'"}
        sock.sendall(post("/prioritize", BODY))
        assert read_answer(sock).status == 200


@pytest.mark.parametrize(
    ("version", "connection", "stays_open"),
    [
        ("HTTP/1.1", None, True),
        ("HTTP/1.1", "close", False),
        ("HTTP/1.0", None, False),
        ("HTTP/1.0", "keep-alive", True),
    ],
)
def test_the_connection_header_and_version_decide_keep_alive(
    server: ExtenderServer, version: str, connection: str | None, stays_open: bool
) -> None:
    header = f"Connection: {connection}\r\n" if connection else ""
    with connect(server) as sock:
        sock.sendall(f"GET /healthz {version}\r\n{header}\r\n".encode())
        answer = read_answer(sock)
        assert answer.status == 200
        assert (answer.headers.get("connection") == "close") is not stays_open
        if stays_open:
            sock.sendall(b"GET /readyz HTTP/1.1\r\n\r\n")
            assert read_answer(sock).body == b"ok\n"
        else:
            assert closed(sock)


def test_expect_100_continue_gets_the_interim_answer_before_the_body(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(f"POST /filter HTTP/1.1\r\nContent-Length: {len(BODY)}\r\nExpect: 100-continue\r\n\r\n".encode())
        assert sock.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(BODY)
        assert read_answer(sock).status == 200


def test_an_idle_connection_is_closed_after_the_idle_timeout(
    extender: Extender, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "IDLE_TIMEOUT", 0.2)
    with ExtenderServer(extender, "127.0.0.1", 0) as running, connect(running) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
        assert read_answer(sock).status == 200
        assert closed(sock)  # the client's own timeout (10 s) would raise instead


def test_answers_leave_without_nagle_delay(server: ExtenderServer) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
        read_answer(sock)
        (accepted,) = server._connections
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_stop_closes_the_open_connections(extender: Extender) -> None:
    running = ExtenderServer(extender, "127.0.0.1", 0).start()
    with connect(running) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
        assert read_answer(sock).status == 200
        running.stop()
        assert closed(sock)


def test_requests_are_counted_by_verb_and_code_and_timed(server: ExtenderServer) -> None:
    def count(verb: str, code: str) -> float:
        return metrics.sample("descheduler_extender_requests_total", {"verb": verb, "code": code})

    before = {key: count(*key) for key in [("filter", "200"), ("other", "404"), ("filter", "411"), ("health", "200")]}
    timed = metrics.sample("descheduler_extender_request_duration_seconds_count", {"verb": "filter"})
    with connect(server) as sock:
        sock.sendall(post("/filter", BODY) + post("/nothing", BODY) + b"GET /healthz HTTP/1.1\r\n\r\n")
        pending = bytearray()
        for _ in range(3):
            read_answer(sock, pending)
        sock.sendall(b"POST /filter HTTP/1.1\r\n\r\n")
        read_answer(sock, pending)
    assert {key: count(*key) - value for key, value in before.items()} == {
        ("filter", "200"): 1,
        ("other", "404"): 1,
        ("filter", "411"): 1,
        ("health", "200"): 1,
    }
    assert metrics.sample("descheduler_extender_request_duration_seconds_count", {"verb": "filter"}) == timed + 1


@pytest.mark.parametrize(
    ("host", "url_host"), [("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1"), ("::1", "[::1]")]
)
def test_it_listens_on_each_loopback_form(extender: Extender, host: str, url_host: str) -> None:
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with ExtenderServer(extender, host, 0) as running:
        assert running.url == f"http://{url_host}:{running.port}"
        family = socket.AF_INET6 if host == "::1" else socket.AF_INET
        with socket.socket(family) as sock:
            sock.settimeout(10)
            sock.connect((url_host.strip("[]"), running.port))
            sock.sendall(post("/filter", BODY))
            assert read_answer(sock).status == 200


@pytest.fixture
def health(extender: Extender) -> Iterator[ExtenderServer]:
    with ExtenderServer(extender, "127.0.0.1", 0, verbs=False) as running:
        yield running


@pytest.mark.parametrize(("path", "body"), [("/healthz", b"ok\n"), ("/readyz", b"ok\n"), ("/metrics", b"# HELP")])
def test_the_health_listener_answers_probes_and_prometheus(health: ExtenderServer, path: str, body: bytes) -> None:
    with connect(health) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        answer = read_answer(sock)
    assert answer.status == 200
    assert answer.body.startswith(body)


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind"])
def test_the_health_listener_serves_no_verb(extender: Extender, monkeypatch: pytest.MonkeyPatch, verb: str) -> None:
    called: list[bytes] = []
    for name in ("filter", "prioritize", "bind"):
        monkeypatch.setattr(extender, name, called.append)  # before the server takes the methods
    with ExtenderServer(extender, "127.0.0.1", 0, verbs=False) as health, connect(health) as sock:
        sock.sendall(post(f"/{verb}", BODY))
        answer = read_answer(sock)
        assert closed(sock)
    assert answer.status == 404
    assert "served on the verb port" in json.loads(answer.body)["Error"]
    assert called == []
