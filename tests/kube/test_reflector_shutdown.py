"""Cutting a watch: `_shutdown` closes the response whatever its shutdown says, so a watch that
ended on a dropped connection reports that, not the clean-up's own complaint."""

from __future__ import annotations

import urllib3

from descheduler.kube.reflector import _shutdown


class _Response:
    """A watch response whose socket was shut down already (urllib3 2 then raises ValueError)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def shutdown(self) -> None:
        self.calls.append("shutdown")
        raise ValueError("Cannot shutdown socket as self._sock_shutdown is not set")

    def release_conn(self) -> None:
        self.calls.append("release_conn")

    def close(self) -> None:
        self.calls.append("close")


def test_a_response_shut_down_already_is_still_released_and_closed() -> None:
    response = _Response()
    _shutdown(response)  # no ValueError escapes to replace the watch's own error
    assert response.calls == ["shutdown", "release_conn", "close"]


def test_shutting_down_a_real_response_twice_is_quiet() -> None:
    response = urllib3.HTTPResponse(body=b"", preload_content=False, sock_shutdown=lambda how: None)
    _shutdown(response)
    _shutdown(response)
