"""The `profiles` both peers share: which plugins each profile enables, and their `pluginConfig`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from descheduler.convert.draft import Conversion, Fields, items, mapping
from descheduler.policy.errors import join_path


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """One `pluginConfig[]` entry: the plugin's name, its args, and where they are in the input."""

    name: str
    args: Mapping[str, Any]
    path: str  # of `args`


@dataclass(frozen=True, slots=True)
class Profile:
    path: str
    enabled: dict[str, str]  # plugin name -> input path of the entry that enables it
    configs: dict[str, PluginConfig]


def read_profiles(
    conversion: Conversion, value: Any, path: str, known: Mapping[str, frozenset[str]], named_entries: bool
) -> list[Profile]:
    """Every profile; a plugin enabled at an extension point we have no equivalent for is an error.

    `known`: extension point -> the plugins we convert there. `named_entries`: Koordinator writes
    `enabled: [{name: X}]`, upstream `enabled: [X]`.
    """
    profiles = []
    for index, raw in enumerate(items(value, path, conversion)):
        at = join_path(path, index)
        fields = Fields(mapping(raw, at, conversion), at, conversion)
        fields.ignore("name")
        enabled = _enabled(conversion, fields.take("plugins"), fields.at("plugins"), known, named_entries)
        configs = _configs(conversion, fields.take("pluginConfig"), fields.at("pluginConfig"))
        fields.unknown()
        profiles.append(Profile(at, enabled, configs))
    return profiles


def _enabled(
    conversion: Conversion, value: Any, path: str, known: Mapping[str, frozenset[str]], named_entries: bool
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
            elif name not in known.get(str(point), frozenset()):
                ours = "; ".join(f"{p}: {', '.join(sorted(n))}" for p, n in sorted(known.items()))
                conversion.error(at, f"plugin {name} ({point}) has no equivalent in our policy; convertible: {ours}")
            else:
                enabled.setdefault(name, at)
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
        for name, config in profile.configs.items():
            if name not in profile.enabled and name not in always_on:
                conversion.notes.append(f"{config.path}: not converted, {profile.path} does not enable {name}")
