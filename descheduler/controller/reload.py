"""The policy file, watched: a valid change replaces the policy, an invalid one is reported and ignored.

The file is mounted from a ConfigMap; the kubelet updates it by swapping a symlink, so neither the
path nor reliably the mtime changes. The watcher compares a hash of the content instead, which
also ignores touches that change nothing.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path

import structlog

from descheduler import metrics
from descheduler.policy import Policy, PolicyError, parse_policy

log = structlog.get_logger(__name__)

ErrorHook = Callable[[PolicyError], None]
UNREADABLE = "unreadable"


class PolicyFile:
    """The last valid policy read from `path`. Construction raises PolicyError when the file is
    unusable: an invalid policy at start-up is an error, not something to run with."""

    def __init__(self, path: str | Path, on_error: ErrorHook | None = None) -> None:
        self.path = Path(path)
        self._on_error = on_error
        self._lock = threading.Lock()
        text, digest = self._read()
        self._policy = parse_policy(text, str(self.path))
        self._digest = digest
        metrics.POLICY_REJECTED.set(0)
        metrics.CYCLE_INTERVAL.set(self._policy.interval.total_seconds())

    @property
    def policy(self) -> Policy:
        with self._lock:
            return self._policy

    def _read(self) -> tuple[str, str]:
        try:
            data = self.path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise PolicyError(str(self.path), [("", f"cannot read the file: {reason}")]) from None
        return text, hashlib.sha256(data).hexdigest()

    def check(self) -> Policy | None:
        """Re-read the file; return the new policy when it changed and is valid, else None.

        An unreadable or invalid file keeps the last valid policy in force; the problem is logged
        with every error, counted, and passed to the error hook (an Event on the ConfigMap). The
        same broken content is reported once, not on every check.
        """
        try:
            text, digest = self._read()
        except PolicyError as err:
            self._reject(err, UNREADABLE)
            return None
        if digest == self._digest:
            return None
        try:
            policy = parse_policy(text, str(self.path))
        except PolicyError as err:
            self._reject(err, digest)
            return None
        with self._lock:
            self._digest = digest
            changed = policy != self._policy
            self._policy = policy
        metrics.POLICY_REJECTED.set(0)  # also when the file went back to the policy in force
        if not changed:
            return None
        metrics.POLICY_RELOADS.labels("success").inc()
        metrics.CYCLE_INTERVAL.set(policy.interval.total_seconds())
        log.info(
            "policy reloaded", file=str(self.path), interval=policy.interval.total_seconds(), dry_run=policy.dry_run
        )
        return policy

    def _reject(self, err: PolicyError, digest: str) -> None:
        with self._lock:
            if digest == self._digest:
                return
            self._digest = digest
        metrics.POLICY_RELOADS.labels("error").inc()
        metrics.POLICY_REJECTED.set(1)
        log.error(
            "policy change rejected; keeping the last valid policy",
            file=str(self.path),
            problems=[f"{path}: {message}" if path else message for path, message in err.problems],
        )
        if self._on_error is not None:
            try:
                self._on_error(err)
            except Exception:
                log.exception("reporting the rejected policy failed")
