"""Fault injection and request accounting, driven from Python by tests and the simulator."""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field

from . import errors
from .errors import ApiError
from .store import ResourceRef, Store

_REASONS = {
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What a fault rule matches on: the HTTP method, the path (no query) and the Kubernetes verb;
    and the client's User-Agent, for the audit log."""

    method: str
    path: str
    verb: str
    user_agent: str = ""


@dataclass(slots=True)
class _Rule:
    pattern: re.Pattern[str]
    method: str | None
    verb: str | None
    remaining: int | None  # None: forever

    def matches(self, request: RequestInfo) -> bool:
        return (
            (self.remaining is None or self.remaining > 0)
            and (self.method is None or self.method.upper() == request.method)
            and (self.verb is None or self.verb == request.verb)
            and self.pattern.search(request.path) is not None
        )

    def consume(self) -> None:
        if self.remaining is not None:
            self.remaining -= 1


@dataclass(slots=True)
class _Failure:
    rule: _Rule
    error: ApiError
    served: int = 0


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One answered request, as the real API server's audit log has it at level Metadata."""

    at: float  # the store's clock when the answer was sent
    method: str
    path: str
    verb: str
    status: int
    user_agent: str = ""  # as the real audit log's userAgent: which client asked


@dataclass(slots=True)
class _Delay:
    rule: _Rule
    seconds: float
    served: int = 0


@dataclass
class Faults:
    """Rules are checked in the order they were added; the first live matching rule applies."""

    store: Store
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _failures: list[_Failure] = field(default_factory=list)
    _delays: list[_Delay] = field(default_factory=list)
    _counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    _audit: list[AuditEntry] | None = None  # None: not recording

    def fail_next(
        self,
        count: int = 1,
        *,
        path: str = "",
        method: str | None = None,
        verb: str | None = None,
        status: int = 500,
        message: str | None = None,
        retry_after: int = 1,
    ) -> object:
        """Make the next `count` requests whose path matches the regex `path` fail with `status`.

        The body is a proper Status; 429 carries Retry-After (header and details.retryAfterSeconds).
        Returns a handle for `served` and `cancel`.
        """
        text = message or f"injected fault ({status})"
        if status == 500:
            error = errors.internal_error(text)
        elif status == 429:
            error = errors.too_many_requests(text, retry_after=retry_after)
        else:
            error = ApiError(status, _REASONS.get(status, "Unknown"), text, {})
        failure = _Failure(_Rule(re.compile(path), method, verb, count), error)
        with self._lock:
            self._failures.append(failure)
        return failure

    def served(self, handle: object) -> int:
        """How many requests the rule `handle` (from `fail_next`) has failed so far."""
        assert isinstance(handle, _Failure)
        with self._lock:
            return handle.served

    def cancel(self, handle: object) -> int:
        """Withdraw the rule `handle` (from `fail_next` or `delay`); returns how often it applied."""
        with self._lock:
            if isinstance(handle, _Failure):
                if handle in self._failures:
                    self._failures.remove(handle)
                return handle.served
            assert isinstance(handle, _Delay)
            if handle in self._delays:
                self._delays.remove(handle)
            return handle.served

    def delay(
        self,
        seconds: float,
        *,
        path: str = "",
        method: str | None = None,
        verb: str | None = None,
        count: int | None = None,
    ) -> object:
        """Hold matching responses for `seconds` (the next `count` of them, or all if None).
        Returns a handle for `cancel`."""
        delay = _Delay(_Rule(re.compile(path), method, verb, count), seconds)
        with self._lock:
            self._delays.append(delay)
        return delay

    def drop_watches(self, resource: ResourceRef | None = None, *, abrupt: bool = False) -> int:
        """End open watches; `abrupt` resets the connection instead of ending the stream cleanly."""
        return self.store.close_watches(resource, abrupt=abrupt)

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._delays.clear()

    def failure_for(self, request: RequestInfo) -> ApiError | None:
        with self._lock:
            for failure in self._failures:
                if failure.rule.matches(request):
                    failure.rule.consume()
                    failure.served += 1
                    return failure.error
        return None

    def delay_for(self, request: RequestInfo) -> float:
        with self._lock:
            for delay in self._delays:
                if delay.rule.matches(request):
                    delay.rule.consume()
                    delay.served += 1
                    return delay.seconds
        return 0.0

    def record(self, request: RequestInfo) -> None:
        with self._lock:
            self._counts[(request.verb, request.path)] += 1

    def request_counts(self) -> Counter[tuple[str, str]]:
        """Requests seen so far, keyed by (Kubernetes verb, path); injected failures count too."""
        with self._lock:
            return Counter(self._counts)

    def count(self, *, verb: str | None = None, path: str = "") -> int:
        """How many requests matched `verb` (if given) and the path regex."""
        pattern = re.compile(path)
        with self._lock:
            return sum(n for (v, p), n in self._counts.items() if (verb is None or v == verb) and pattern.search(p))

    def start_audit(self) -> None:
        """Record every answered request from now on (`audit_log`); watches when they open."""
        with self._lock:
            self._audit = []

    def audited(self, request: RequestInfo, status: int) -> None:
        with self._lock:
            if self._audit is not None:
                entry = AuditEntry(
                    self.store.clock(), request.method, request.path, request.verb, status, request.user_agent
                )
                self._audit.append(entry)

    def audit_length(self) -> int:
        """How many answers the audit log holds (a mark for `audit_log(since=…)`)."""
        with self._lock:
            return 0 if self._audit is None else len(self._audit)

    def audit_log(self, since: int = 0) -> list[AuditEntry]:
        """The answered requests recorded since `start_audit`, from the `since`-th on."""
        with self._lock:
            return [] if self._audit is None else self._audit[since:]

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()
