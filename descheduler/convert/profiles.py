"""The `profiles` both peers share: which plugins each profile enables, and their `pluginConfig`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from descheduler.convert.draft import Conversion, Fields, LeftOut, items, mapping
from descheduler.policy.errors import join_path

# Extension points whose plugins act on their own: one we do not convert is left out (it can keep
# running in the peer beside us). A plugin at another point (filter, evict, …) shapes what the
# converted strategy moves, so one we cannot convert is an error.
STANDALONE_POINTS = frozenset({"balance", "deschedule"})


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """One `pluginConfig[]` entry: the plugin's name, its args, and where they are in the input."""

    name: str
    args: Mapping[str, Any]
    path: str  # of `args`


@dataclass(frozen=True, slots=True)
class OtherPlugin:
    """A plugin enabled at a standalone extension point that we do not convert."""

    name: str
    point: str
    path: str  # of the entry that enables it


@dataclass(frozen=True, slots=True)
class Profile:
    path: str
    enabled: dict[str, str]  # plugin name -> input path of the entry that enables it
    configs: dict[str, PluginConfig]
    others: tuple[OtherPlugin, ...] = ()


def read_profiles(
    conversion: Conversion, value: Any, path: str, known: Mapping[str, frozenset[str]], named_entries: bool
) -> list[Profile]:
    """Every profile; a plugin we do not convert is an error, unless it acts on its own (STANDALONE_POINTS).

    `known`: extension point -> the plugins we convert there. `named_entries`: Koordinator writes
    `enabled: [{name: X}]`, upstream `enabled: [X]`.
    """
    profiles = []
    for index, raw in enumerate(items(value, path, conversion)):
        at = join_path(path, index)
        fields = Fields(mapping(raw, at, conversion), at, conversion)
        fields.ignore("name")
        others: list[OtherPlugin] = []
        enabled = _enabled(conversion, fields.take("plugins"), fields.at("plugins"), known, named_entries, others)
        configs = _configs(conversion, fields.take("pluginConfig"), fields.at("pluginConfig"))
        fields.unknown()
        profiles.append(Profile(at, enabled, configs, tuple(others)))
    return profiles


def _enabled(
    conversion: Conversion,
    value: Any,
    path: str,
    known: Mapping[str, frozenset[str]],
    named_entries: bool,
    others: list[OtherPlugin],
) -> dict[str, str]:
    enabled: dict[str, str] = {}
    for point, raw in mapping(value, path, conversion).items():
        point_path = join_path(path, str(point))
        fields = Fields(mapping(raw, point_path, conversion), point_path, conversion)
        fields.ignore("disabled")  # turning a plugin off changes nothing we convert
        for index, entry in enumerate(items(fields.take("enabled"), fields.at("enabled"), conversion)):
            at = join_path(fields.at("enabled"), index)
            name = entry.get("name") if named_entries and isinstance(entry, Mapping) else entry
            if not isinstance(name, str):
                shape = "{name: PLUGIN}" if named_entries else "a plugin name"
                conversion.error(at, f"must be {shape}")
            elif name in known.get(str(point), frozenset()):
                enabled.setdefault(name, at)
            elif point in STANDALONE_POINTS:
                others.append(OtherPlugin(name, str(point), at))
            else:
                ours = "; ".join(f"{p}: {', '.join(sorted(n))}" for p, n in sorted(known.items()))
                conversion.error(at, f"plugin {name} ({point}) has no equivalent in our policy; convertible: {ours}")
        fields.unknown()
    return enabled


def _configs(conversion: Conversion, value: Any, path: str) -> dict[str, PluginConfig]:
    configs: dict[str, PluginConfig] = {}
    for index, raw in enumerate(items(value, path, conversion)):
        at = join_path(path, index)
        fields = Fields(mapping(raw, at, conversion), at, conversion)
        name = fields.take("name")
        args = mapping(fields.take("args"), fields.at("args"), conversion)
        fields.unknown()
        if not isinstance(name, str):
            conversion.error(fields.at("name"), "must be a plugin name")
        elif name in configs:
            conversion.error(fields.at("name"), f"a second pluginConfig for {name} (first: {configs[name].path})")
        else:
            configs[name] = PluginConfig(name, args, fields.at("args"))
    return configs


def unused_configs(conversion: Conversion, profiles: list[Profile], always_on: frozenset[str]) -> None:
    """A pluginConfig whose plugin no extension point enables does nothing: said in the header, not converted."""
    for profile in profiles:
        others = {other.name for other in profile.others}
        for name, config in profile.configs.items():
            if name not in profile.enabled and name not in always_on and name not in others:
                conversion.notes.append(f"{config.path}: not converted, {profile.path} does not enable {name}")


def leave_out(
    conversion: Conversion,
    profiles: list[Profile],
    converted: Profile | None,
    peer: str,
    strategy: str,
    removal: str = "",
) -> None:
    """List every plugin not converted, and say once what to do: keep it running in the peer, beside us.

    `removal`: how to stop the peer running the converted strategy (default: take it out of the
    converted profile's plugins.balance.enabled).
    """
    for profile in profiles:
        in_converted = converted is not None and profile.path == converted.path
        for other in profile.others:
            if other.name in _CONFLICTS:
                advice = _CONFLICTS[other.name]
            elif in_converted or removal:
                advice = other.point
            else:
                advice = f"{other.point}; {profile.path} does not run {strategy}: keep that profile as it is"
            conversion.left_out.append(LeftOut(other.path, other.name, advice))
    if converted is not None:
        removal = removal or f"{strategy} removed from {converted.path}.plugins.balance.enabled"
    conversion.left_out_how = f"keep them running in {peer}, which can run beside this one" + (
        f", with {removal}" if removal else ""
    )


# Plugins that work against load balancing: left out, and better not run beside it.
_CONFLICTS = {
    "HighNodeUtilization": "balance; it empties lightly used nodes, the opposite of LowNodeLoad: running it beside "
    "this one would move the same pods back and forth, so keep only one of the two",
}
