"""API errors and the Kubernetes `Status` bodies they render to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .resources import ResourceType


class ApiError(Exception):
    """An error the server answers with a `Status` body; `code` is the HTTP status."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details is not None else None
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.group_resource} "{name}" not found', _details(rt, name))


def namespace_not_found(namespace: str) -> ApiError:
    return ApiError(404, "NotFound", f'namespaces "{namespace}" not found', {"name": namespace, "kind": "namespaces"})


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{rt.group_resource} "{name}" already exists', _details(rt, name))


def conflict(group_resource: str, name: str, why: str, kind: str | None = None) -> ApiError:
    details: dict[str, Any] = {"name": name, "kind": kind or group_resource.split(".", 1)[0]}
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {group_resource} "{name}": {why}', details)


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def stale(rt: ResourceType, name: str) -> ApiError:
    return conflict(rt.group_resource, name, STALE_OBJECT)


def invalid(rt: ResourceType, name: str, causes: Sequence[tuple[str, str]]) -> ApiError:
    """422 with one cause per (field, message) pair, worded like the real validation errors."""
    text = ", ".join(f"{field}: {msg}" for field, msg in causes)
    details = _details(rt, name) | {
        "kind": rt.kind,
        "causes": [{"reason": "FieldValueInvalid", "message": msg, "field": field} for field, msg in causes],
    }
    return ApiError(422, "Invalid", f'{rt.kind} "{name}" is invalid: {text}', details)


def unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message, {})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def too_many_requests(message: str, retry_after: int = 0, causes: Sequence[Mapping[str, str]] = ()) -> ApiError:
    details: dict[str, Any] = {}
    if causes:
        details["causes"] = [dict(c) for c in causes]
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return ApiError(429, "TooManyRequests", message, details, retry_after or None)


def internal_error(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unsupported_media_type() -> ApiError:
    """A PATCH whose Content-Type is no patch type, worded as the real server words it."""
    return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def unknown_body_format(accepted: str) -> ApiError:
    """A request body in a media type the server does not read."""
    message = f"the body of the request was in an unknown format - accepted media types include: {accepted}"
    return ApiError(415, "UnsupportedMediaType", message, {})


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def too_large_resource_version(requested: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
        1,
    )
