"""What a failed API call means: budget refusal, throttling, permanent, conflict, retryable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from urllib3.exceptions import NewConnectionError

from descheduler.fakecluster.apiserver.eviction import MULTIPLE_PDBS, PDB_VIOLATION
from descheduler.migration.api import _failure


def _error(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> client.ApiException:
    err = client.ApiException(status=status, reason="x")
    err.body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", **body})
    err.headers = headers or {}
    return err


BUDGET = _error(
    429,
    {
        "reason": "TooManyRequests",
        "message": PDB_VIOLATION,
        "details": {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget web needs 4"}]},
    },
)
THROTTLED = _error(429, {"reason": "TooManyRequests", "message": "Too many requests"}, {"Retry-After": "7"})
TWO_BUDGETS = _error(500, {"message": MULTIPLE_PDBS})
STALE = _error(409, {"reason": "Conflict", "message": "the object has been modified"})
EXISTS = _error(409, {"reason": "AlreadyExists", "message": "already exists"})
BROKEN = _error(500, {"reason": "InternalError", "message": "etcd is sad"})


@pytest.mark.parametrize(
    ("error", "meaning"),
    [
        (BUDGET, {"disruption_budget", "transient"}),  # "not now": retried later, with the budget backoff
        (THROTTLED, {"throttled", "transient"}),
        (TWO_BUDGETS, {"multiple_budgets"}),
        (STALE, {"conflict", "transient"}),
        (EXISTS, {"already_exists", "transient"}),
        (BROKEN, {"transient"}),
        (_error(404, {"reason": "NotFound", "message": "gone"}), {"not_found"}),
        (NewConnectionError(None, "refused"), {"transient"}),  # type: ignore[arg-type]
    ],
)
def test_failure_meanings(error: Exception, meaning: set[str]) -> None:
    failure = _failure(error, "create", "pods/shop/web-0/eviction")
    kinds = {
        "disruption_budget",
        "throttled",
        "multiple_budgets",
        "conflict",
        "already_exists",
        "transient",
        "not_found",
    }
    assert {k for k in kinds if getattr(failure, k)} == meaning


def test_budget_refusal_keeps_the_cause_message_and_throttling_its_retry_after() -> None:
    budget = _failure(BUDGET, "create", "x")
    assert budget.details == ("The disruption budget web needs 4",)
    assert _failure(THROTTLED, "create", "x").retry_after == 7
    assert str(_failure(TWO_BUDGETS, "create", "pods/a/b/eviction")).startswith("create pods/a/b/eviction: 500")
