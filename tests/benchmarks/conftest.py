"""The baseline strategy registers itself at run time; no test here may leave it registered for the
rest of the suite (the policy schema and the strategy list would then include it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import strategies
from descheduler.policy import STRATEGY_ARGS


@pytest.fixture(autouse=True)
def _restore_strategy_registry() -> Iterator[None]:
    strategies.registry()  # the built-ins first, so they are part of what is restored
    saved_strategies = dict(strategies._REGISTRY)
    saved_args = dict(STRATEGY_ARGS)
    yield
    strategies._REGISTRY.clear()
    strategies._REGISTRY.update(saved_strategies)
    STRATEGY_ARGS.clear()
    STRATEGY_ARGS.update(saved_args)
