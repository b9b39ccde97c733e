"""README.md's two commands: the first installs only what the product needs and runs the demo, the
second adds the development tools and runs the tests; `.ci/run` runs both as written."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def two_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Two commands") :]
    section = section[: section.index("\n## ", 1)]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL)]


def test_readme_has_two_commands_demo_then_tests() -> None:
    demo, tests = two_commands()
    assert demo.endswith("descheduler simulate")
    assert tests.endswith(".venv/bin/pytest") and "ruff check" in tests and "mypy" in tests


def test_demo_command_installs_only_the_runtime_dependencies() -> None:
    demo, tests = two_commands()
    assert "pip install -e . " in demo and "[" not in demo
    assert "pip install -e '.[dev]'" in tests


def test_ci_runs_the_readme_commands_as_written() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in two_commands():
        assert command in lines


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """The distributions these need, transitively (extras' requirements left out)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo.extend(_name(r) for r in requires if "extra ==" not in r)
    return seen


def dev_only_modules() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _closure({_name(r) for r in project["dependencies"]})
    dev = _closure({_name(r) for r in project["optional-dependencies"]["dev"]}) - runtime
    return {
        module
        for module, dists in metadata.packages_distributions().items()
        if {d.lower().replace("_", "-") for d in dists} <= dev and not module.startswith("_distutils")
    }


BLOCKER = """
import sys
DEV = set({modules!r})

class DevOnly:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in DEV:
            raise ImportError(f"{{name}} is only in the dev extra")
        return None

sys.meta_path.insert(0, DevOnly())
from descheduler.cli import main
sys.argv = ["descheduler", "simulate", "--cycles", "2", "--report", {report!r}]
main()
"""


def test_demo_runs_without_the_dev_extra(tmp_path: Path) -> None:
    modules = dev_only_modules()
    assert {"pytest", "scipy", "mypy"} <= modules  # the check would prove nothing otherwise
    script = BLOCKER.format(modules=sorted(modules), report=str(tmp_path / "report"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "report" / "report.html").is_file()
