"""The extender's verb listener over mutual TLS, with real sockets and the real `ssl` module: a client
with a certificate of the client CA is answered as over plain HTTP; any other client fails the
handshake and never reaches a verb; certificate files are re-read when they change; a bad file is
one clear error."""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from descheduler import metrics
from descheduler.errors import InputError
from descheduler.extender import Extender, ExtenderServer, SnapshotFileSource
from descheduler.extender import server as server_module
from descheduler.extender.server import ServerTLS, TLSFiles, load_tls_context
from tests.builders import loaded_node, node

from .conftest import extender_args, kube_pod, scheduling_args, write_snapshot
from .test_http import closed, post, read_answer

BODY = extender_args(kube_pod("web-tls"), ["cool", "plain"])
BINDING = json.dumps({"PodName": "web-tls", "PodNamespace": "default", "PodUID": "u1", "Node": "cool"}).encode()


@dataclass
class Pki:
    ca: trustme.CA
    files: TLSFiles
    client: trustme.LeafCert

    def issue_server(self, *names: str) -> trustme.LeafCert:
        """A new serving certificate written over the files, as cert-manager rotates a Secret."""
        leaf = self.ca.issue_cert(*(names or ("127.0.0.1", "localhost", "::1")))
        leaf.private_key_pem.write_to_path(str(self.files.private_key_file))
        leaf.cert_chain_pems[0].write_to_path(str(self.files.cert_file))
        return leaf


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    ca = trustme.CA()
    files = TLSFiles(tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "client-ca.crt")
    ca.cert_pem.write_to_path(str(files.client_ca_file))
    pki = Pki(ca, files, ca.issue_cert("kube-scheduler", common_name="system:kube-scheduler"))
    pki.issue_server()
    return pki


@pytest.fixture
def calls() -> list[tuple[str, int]]:
    """(verb, body length) of every request that reached the Extender."""
    return []


@pytest.fixture
def extender(tmp_path: Path, calls: list[tuple[str, int]]) -> Extender:
    path = write_snapshot(tmp_path / "snapshot.yaml", [*loaded_node("cool", [("c1", "1")]), node("plain")])
    extender = Extender(SnapshotFileSource(path), scheduling_args())
    assert extender.refresh(force=True)
    for verb in ("filter", "prioritize", "bind"):
        setattr(extender, verb, _recorded(verb, getattr(extender, verb), calls))
    return extender


def _recorded(verb: str, answer: Callable[[bytes], bytes], calls: list[tuple[str, int]]) -> Callable[[bytes], bytes]:
    def recorded(body: bytes) -> bytes:
        calls.append((verb, len(body)))
        return answer(body)

    return recorded


@pytest.fixture
def server(extender: Extender, pki: Pki) -> Iterator[ExtenderServer]:
    with ExtenderServer(extender, "127.0.0.1", 0, tls=ServerTLS(pki.files)) as running:
        yield running


def client_context(pki: Pki, certificate: trustme.LeafCert | None) -> ssl.SSLContext:
    """What kube-scheduler's tlsConfig makes: trust in the server's CA, and its own client certificate."""
    context = ssl.create_default_context()
    pki.ca.configure_trust(context)
    if certificate is not None:
        certificate.configure_cert(context)
    return context


def tls_connect(server: ExtenderServer, context: ssl.SSLContext) -> ssl.SSLSocket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return context.wrap_socket(sock, server_hostname="127.0.0.1")


def handshake_failures(reason: str) -> float:
    return metrics.sample("descheduler_extender_tls_handshake_failures_total", {"reason": reason})


def refused(server: ExtenderServer, context: ssl.SSLContext) -> bool:
    """Whether the server ends the connection at the handshake. Over TLS 1.3 the client's side completes
    before the server has checked its certificate: the refusal is then the alert on its first read."""
    try:
        with tls_connect(server, context) as sock:
            sock.sendall(post("/filter", BODY))
            return sock.recv(65536) == b""
    except (ssl.SSLError, ConnectionError):
        return True


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_client_with_a_certificate_of_the_client_ca_reaches_every_verb_on_one_connection(
    server: ExtenderServer, pki: Pki, calls: list[tuple[str, int]]
) -> None:
    assert server.url == f"https://127.0.0.1:{server.port}"
    connection = http.client.HTTPSConnection(
        "127.0.0.1", server.port, timeout=10, context=client_context(pki, pki.client)
    )
    try:
        answers = []
        for verb, body in (("filter", BODY), ("prioritize", BODY), ("bind", BINDING), ("filter", BODY)):
            connection.request("POST", f"/{verb}", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answers.append((response.status, json.loads(response.read())))
        sock = connection.sock
        assert isinstance(sock, ssl.SSLSocket)
        assert sock.version() in ("TLSv1.2", "TLSv1.3")
    finally:
        connection.close()
    assert [status for status, _ in answers] == [200, 200, 200, 200]
    assert answers[0][1]["NodeNames"] == ["cool", "plain"]
    assert "snapshot file" in answers[2][1]["Error"]  # answered by the Extender's bind
    assert [verb for verb, _ in calls] == ["filter", "prioritize", "bind", "filter"]


def test_a_body_larger_than_one_tls_record_arrives_whole(
    server: ExtenderServer, pki: Pki, calls: list[tuple[str, int]]
) -> None:
    names = [f"node-{i:05d}-{'x' * 20}" for i in range(3000)] + ["cool"]  # ~100 KiB: many 16 KiB records
    body = extender_args(kube_pod("web-big"), names)
    assert len(body) > 6 * 16384
    with tls_connect(server, client_context(pki, pki.client)) as sock:
        sock.sendall(post("/filter", body))
        answer = read_answer(sock)
    assert answer.status == 200
    assert calls == [("filter", len(body))]
    result = json.loads(answer.body)
    assert "cool" in result["NodeNames"]  # the last name, read past every record before it
    assert len(answer.body) > 16384  # the answer spans records too


def test_no_alpn_is_chosen_so_a_go_client_offering_h2_speaks_http_1_1(server: ExtenderServer, pki: Pki) -> None:
    context = client_context(pki, pki.client)
    context.set_alpn_protocols(["h2", "http/1.1"])
    with tls_connect(server, context) as sock:
        assert sock.selected_alpn_protocol() is None
        sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(sock).body == b"ok\n"


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_1_2_and_1_3_are_served(server: ExtenderServer, pki: Pki, version: ssl.TLSVersion) -> None:
    context = client_context(pki, pki.client)
    context.minimum_version = context.maximum_version = version
    with tls_connect(server, context) as sock:
        sock.sendall(post("/filter", BODY))
        assert read_answer(sock).status == 200


def test_the_context_requires_a_client_certificate_and_tls_1_2_at_least(pki: Pki) -> None:
    context = load_tls_context(pki.files)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_a_client_without_a_certificate_fails_the_handshake_and_reaches_no_verb(
    server: ExtenderServer,
    pki: Pki,
    calls: list[tuple[str, int]],
    version: ssl.TLSVersion,
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = handshake_failures("no_certificate")
    context = client_context(pki, None)
    context.maximum_version = version
    with caplog.at_level(logging.INFO, logger=server_module.__name__):
        assert refused(server, context)
        assert wait_for(lambda: handshake_failures("no_certificate") == before + 1)
        assert wait_for(lambda: any("handshake" in r.getMessage() for r in caplog.records))
    assert calls == []
    [record] = [r for r in caplog.records if "handshake" in r.getMessage()]
    assert "127.0.0.1:" in record.getMessage() and "no_certificate" in record.getMessage()
    assert record.exc_info is None  # a line, not a stack trace


def test_a_client_certificate_of_another_ca_fails_the_handshake_and_reaches_no_verb(
    server: ExtenderServer, pki: Pki, calls: list[tuple[str, int]]
) -> None:
    before = handshake_failures("bad_certificate")
    stranger = trustme.CA().issue_cert("kube-scheduler", common_name="system:kube-scheduler")
    assert refused(server, client_context(pki, stranger))
    assert wait_for(lambda: handshake_failures("bad_certificate") == before + 1)
    assert calls == []


def test_plain_http_to_the_tls_port_gets_no_answer(server: ExtenderServer, calls: list[tuple[str, int]]) -> None:
    before = handshake_failures("protocol")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(post("/filter", BODY))
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
    assert not data.startswith(b"HTTP/")
    assert wait_for(lambda: handshake_failures("protocol") == before + 1)
    assert calls == []


def test_a_client_stalled_in_its_handshake_blocks_no_other_and_is_closed_after_the_timeout(
    extender: Extender, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "HANDSHAKE_TIMEOUT", 1.0)
    before = handshake_failures("timeout")
    with (
        ExtenderServer(extender, "127.0.0.1", 0, tls=ServerTLS(pki.files)) as running,
        socket.create_connection(("127.0.0.1", running.port), timeout=10) as stalled,
    ):
        stalled.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, and no more
        started = time.monotonic()
        with tls_connect(running, client_context(pki, pki.client)) as sock:
            sock.sendall(post("/filter", BODY))
            assert read_answer(sock).status == 200
        assert time.monotonic() - started < 1.0  # answered while the other waits out its timeout
        assert closed(stalled)
        assert time.monotonic() - started < 5.0
    assert wait_for(lambda: handshake_failures("timeout") == before + 1)


def _served_certificate(server: ExtenderServer, pki: Pki) -> bytes:
    with tls_connect(server, client_context(pki, pki.client)) as sock:
        der = sock.getpeercert(binary_form=True)
    assert der is not None
    return der


def _der(leaf: trustme.LeafCert) -> bytes:
    return ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())


def _touch_later(*paths: Path) -> None:
    """A modification time surely different from the last look, whatever the file system's clock."""
    for path in paths:
        stamp = path.stat().st_mtime + 5
        os.utime(path, (stamp, stamp))


def test_rotated_certificate_files_are_served_to_the_next_connection(
    server: ExtenderServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "TLS_CHECK_INTERVAL", 0.0)
    with tls_connect(server, client_context(pki, pki.client)) as kept:
        first = kept.getpeercert(binary_form=True)
        rotated = pki.issue_server("127.0.0.1", "localhost", "rotated.example")
        _touch_later(pki.files.cert_file, pki.files.private_key_file)
        assert _served_certificate(server, pki) == _der(rotated) != first
        kept.sendall(post("/filter", BODY))  # a connection made before the rotation goes on
        assert read_answer(kept).status == 200


def test_certificate_files_are_looked_at_no_more_than_every_check_interval(
    server: ExtenderServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _served_certificate(server, pki)
    pki.issue_server()
    _touch_later(pki.files.cert_file, pki.files.private_key_file)
    assert _served_certificate(server, pki) == first  # within TLS_CHECK_INTERVAL (10 s) of the start


def test_a_rotation_that_cannot_be_loaded_keeps_the_last_good_certificate_and_warns(
    server: ExtenderServer, pki: Pki, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(server_module, "TLS_CHECK_INTERVAL", 0.0)
    first = _served_certificate(server, pki)
    pki.files.cert_file.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    _touch_later(pki.files.cert_file)
    with caplog.at_level(logging.WARNING, logger=server_module.__name__):
        assert _served_certificate(server, pki) == first
        assert _served_certificate(server, pki) == first
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # once for the change, not once per connection
    assert str(pki.files.cert_file) in warnings[0] and "--tls-cert-file" in warnings[0]
    rotated = pki.issue_server()  # fixed: the next change is loaded
    _touch_later(pki.files.cert_file, pki.files.private_key_file)
    assert _served_certificate(server, pki) == _der(rotated)


def _garbage(path: Path) -> None:
    path.write_text("hello\n")


def _broken_pem(path: Path) -> None:
    path.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")


@pytest.mark.parametrize(
    ("which", "spoil", "flag", "words"),
    [
        ("cert_file", Path.unlink, "--tls-cert-file", "cannot read"),
        ("cert_file", _garbage, "--tls-cert-file", "no PEM certificate"),
        ("cert_file", _broken_pem, "--tls-cert-file", "not a valid PEM certificate"),
        ("private_key_file", Path.unlink, "--tls-private-key-file", "cannot read"),
        ("private_key_file", _garbage, "--tls-private-key-file", "no PEM private key"),
        ("client_ca_file", _garbage, "--client-ca-file", "no PEM certificate"),
        ("client_ca_file", _broken_pem, "--client-ca-file", "not a valid PEM certificate"),
    ],
)
def test_a_bad_file_at_the_start_is_an_input_error_naming_it(
    pki: Pki, which: str, spoil: Callable[[Path], None], flag: str, words: str
) -> None:
    path = getattr(pki.files, which)
    spoil(path)
    with pytest.raises(InputError) as error:
        ServerTLS(pki.files)
    assert str(error.value).startswith(f"{flag}: ")
    assert str(path) in str(error.value) and words in str(error.value)


def test_a_private_key_of_another_certificate_is_named_as_not_belonging_to_it(pki: Pki) -> None:
    pki.ca.issue_cert("other.example").private_key_pem.write_to_path(str(pki.files.private_key_file))
    with pytest.raises(InputError) as error:
        ServerTLS(pki.files)
    message = str(error.value)
    assert message.startswith("--tls-private-key-file: ") and "does not belong to the certificate" in message
    assert str(pki.files.private_key_file) in message and str(pki.files.cert_file) in message


def test_a_certificate_chain_and_a_bundle_of_client_cas_are_accepted(extender: Extender, pki: Pki) -> None:
    intermediate = pki.ca.create_child_ca()
    leaf = intermediate.issue_cert("127.0.0.1")
    leaf.private_key_pem.write_to_path(str(pki.files.private_key_file))
    pki.files.cert_file.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    other = trustme.CA()
    pki.files.client_ca_file.write_bytes(other.cert_pem.bytes() + pki.ca.cert_pem.bytes())
    with ExtenderServer(extender, "127.0.0.1", 0, tls=ServerTLS(pki.files)) as running:
        for client in (pki.client, other.issue_cert("another-scheduler")):
            with tls_connect(running, client_context(pki, client)) as sock:
                sock.sendall(post("/filter", BODY))
                assert read_answer(sock).status == 200
