"""The extender reached over mutual TLS, as deploy/overlays/extender-mtls sets it up, on the real
control plane: kube-scheduler presents its client certificate (`enableHTTPS`, `tlsConfig`) and the
whole loop works as over loopback (every move lands on its Reservation); a client without the
certificate, or with one from another CA, gets no answer at all.

The moves test is test_moves.py's, collected here again with this module's `components`."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator

import pytest
import test_moves
import trustme
from controlplane import ControlPlane
from moves_support import ExtenderTls
from test_moves import (
    Components,
    started_components,
    test_with_the_extender_every_move_lands_on_its_reservation,  # noqa: F401  (collected here too)
)

from descheduler.kube import KubeClient

stage = test_moves.stage  # the fixture, on this module's components


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ExtenderTls:
    return ExtenderTls.make(tmp_path_factory.mktemp("extender-tls"))


@pytest.fixture(scope="module")
def components(
    control_plane: ControlPlane, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory, tls: ExtenderTls
) -> Iterator[Components]:
    with started_components(control_plane, kube, tmp_path_factory.mktemp("moves-mtls"), tls) as started:
        yield started


def _filter(port: int, context: ssl.SSLContext) -> int:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("POST", "/filter", json.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": []}))
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def test_only_a_client_with_a_certificate_from_the_ca_gets_an_answer(components: Components, tls: ExtenderTls) -> None:
    port = components.extender.port
    trusting = ssl.create_default_context(cafile=str(tls.ca))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _filter(port, trusting)  # no client certificate: the handshake fails
    stranger = trustme.CA().issue_cert("kube-scheduler")
    stranger.configure_cert(other := ssl.create_default_context(cafile=str(tls.ca)))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _filter(port, other)  # a certificate of another CA
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        plain.request("POST", "/filter", "{}")
        plain.getresponse().read()  # plain HTTP to the TLS port: no answer
    trusting.load_cert_chain(str(tls.client_cert), str(tls.client_key))
    assert _filter(port, trusting) == 200
    metric = components.extender.metric
    assert (metric("descheduler_extender_tls_handshake_failures_total", reason="no_certificate") or 0) >= 1
    assert (metric("descheduler_extender_tls_handshake_failures_total", reason="bad_certificate") or 0) >= 1
