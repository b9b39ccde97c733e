"""`object_text`: a list item's JSON with apiVersion and kind set, as `list_objects` sets them."""

from __future__ import annotations

import msgspec
import pytest

from descheduler.kube.listing import object_text

HEAD = b'{"apiVersion":"metrics.k8s.io/v1beta1","kind":"PodMetrics",'


@pytest.mark.parametrize(
    ("item", "text"),
    [
        # set already and first, as metrics-server writes them: the item as it is
        (HEAD + b'"metadata":{"name":"a"}}', HEAD + b'"metadata":{"name":"a"}}'),
        (HEAD + b'"metadata": {"name": "a"}}', HEAD + b'"metadata": {"name": "a"}}'),
        # not set: both put first
        (b'{"metadata":{"name":"a"}}', HEAD + b'"metadata":{"name":"a"}}'),
        (b"{}", HEAD[:-1] + b"}"),
        # one of them set, or not first: decoded and encoded again, both first, the item's own kept
        (b'{"metadata":{"name":"a"},"kind":"PodMetrics"}', HEAD + b'"metadata":{"name":"a"}}'),
        (b'{"kind":"Other","metadata":{}}', b'{"apiVersion":"metrics.k8s.io/v1beta1","kind":"Other","metadata":{}}'),
        # not an object: as it is, for the decoder to name
        (b"[1]", b"[1]"),
    ],
)
def test_object_text_sets_api_version_and_kind_first(item: bytes, text: bytes) -> None:
    assert bytes(object_text(msgspec.Raw(item), "metrics.k8s.io/v1beta1", "PodMetrics")) == text
