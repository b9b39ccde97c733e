"""Strategy plugins and their registry.

Built-in strategies are registered here; a user's package adds one through the entry-point
group `descheduler.strategies` (name = strategy name, value = the class).
"""

from __future__ import annotations

from importlib.metadata import entry_points

from descheduler.policy import register_strategy_args
from descheduler.strategy import Strategy

ENTRY_POINT_GROUP = "descheduler.strategies"

_REGISTRY: dict[str, type[Strategy]] = {}


def register(strategy: type[Strategy]) -> type[Strategy]:
    """Add a strategy class (and its args model, so policies can name it)."""
    _REGISTRY[strategy.name] = strategy
    register_strategy_args(strategy.name, strategy.args_model)
    return strategy


def registry() -> dict[str, type[Strategy]]:
    """Every known strategy: the built-ins, then those installed through entry points."""
    if not _REGISTRY:
        from strategies.lownodeload import LowNodeLoad
        from strategies.quotareclaim import QuotaReclaim

        register(LowNodeLoad)
        register(QuotaReclaim)
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            if entry.name not in _REGISTRY:
                register(entry.load())
    return dict(_REGISTRY)


def get(name: str) -> Strategy:
    try:
        return registry()[name]()
    except KeyError:
        known = ", ".join(sorted(registry()))
        raise KeyError(f"unknown strategy {name!r}; known: {known}") from None
