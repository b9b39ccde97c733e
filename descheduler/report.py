"""Render a Plan for people (table, Markdown) and for tools (JSON, YAML); all carry the same content.

People read a skip's reason; JSON and YAML also carry its refusal code (`Plan.to_dict`).
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import yaml
from rich.console import Console
from rich.table import Table

from descheduler.plan import NodeReport, Plan

Format = Literal["table", "json", "yaml", "markdown"]


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def _usage_cell(node: NodeReport, resource: str) -> str:
    if resource not in node.high:
        return ""
    used = _percent(node.usage[resource]) if resource in node.usage else "–"
    return f"{used} ({_percent(node.low[resource])}/{_percent(node.high[resource])})"


def _resources(plan: Plan) -> list[str]:
    names: set[str] = set()
    for node in plan.nodes:
        names.update(node.high)
    return sorted(names, key=lambda r: (r not in ("cpu", "memory"), r))


@dataclass(frozen=True, slots=True)
class Section:
    """One table of the rendered plan: its title, column heads and rows."""

    title: str
    head: list[str]
    rows: list[list[str]]


def _sections(plan: Plan) -> list[Section]:
    """Nodes, Moves and Not moved, in that order."""
    resources = _resources(plan)
    node_head = ["node", "pool", "class", *[f"{r} used (low/high)" for r in resources], "reason"]
    node_rows = [
        [
            n.name,
            n.pool,
            n.node_class + (f", prod {n.prod_class}" if n.prod_class else ""),
            *[_usage_cell(n, r) for r in resources],
            n.reason,
        ]
        for n in plan.nodes
    ]
    move_head = ["pod", "strategy", "from", "to", "mode", "usage", "reason"]
    move_rows = [
        [
            str(m.pod),
            m.strategy,
            m.source_node,
            m.target_node or "(none)",
            m.mode + (f" ({m.landing})" if m.landing else ""),
            ", ".join(f"{k} {v}" for k, v in m.usage.to_quantities().items()),
            m.reason + (f" (for {m.serves})" if m.serves else ""),
        ]
        for m in plan.migrations
    ]
    skip_head = ["pod", "node", "strategy", "reason"]
    skip_rows = [[str(s.pod), s.node, s.strategy, s.reason] for s in plan.skipped]
    return [
        Section("Nodes", node_head, node_rows),
        Section("Moves", move_head, move_rows),
        Section("Not moved", skip_head, skip_rows),
    ]


def _summary_line(plan: Plan) -> str:
    s = plan.summary()
    return (
        f"{s['migrations']} move(s); nodes: {s['hotNodes']} hot, {s['lowNodes']} low, "
        f"{s['normalNodes']} normal, {s['excludedNodes']} excluded; {s['skipped']} pod(s) skipped"
    )


# Columns a narrow terminal loses first, in order: what the rest of the row (or -o json) still tells.
_DROPPABLE = {
    "Nodes": ("pool",),
    "Moves": ("strategy", "mode", "usage"),
    "Not moved": ("strategy",),
}


def terminal_width() -> int:
    """$COLUMNS, else the terminal's width, else 160 (into a pipe: whole rows)."""
    return shutil.get_terminal_size((160, 24)).columns


def _fitted_table(console: Console, title: str, head: list[str], rows: list[list[str]]) -> Table:
    """The table, without its least useful columns while it is wider than the console (rich
    folds what is still too wide), and the title says which columns were left out."""
    left_out: list[str] = []
    while True:
        keep = [i for i, column in enumerate(head) if column not in left_out]
        caption = f"{title} (left out to fit {console.width} columns: {', '.join(left_out)})" if left_out else title
        table = Table(title=caption, title_justify="left", show_lines=False)
        for i in keep:
            table.add_column(head[i], overflow="fold")
        for row in rows:
            table.add_row(*(row[i] for i in keep))
        droppable = [c for c in _DROPPABLE.get(title, ()) if c in head and c not in left_out]
        if (
            not droppable
            or console.measure(table, options=console.options.update_width(10**6)).maximum <= console.width
        ):
            return table
        left_out.append(droppable[0])


def render_table(plan: Plan, width: int | None = None, color: bool | None = None) -> str:
    """The plan as tables no wider than `width` (default: the terminal's, see `terminal_width`)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width or terminal_width(), force_terminal=color, no_color=not color, highlight=False
    )
    console.print(f"Plan at {plan.now.isoformat()}: {_summary_line(plan)}")
    for section in _sections(plan):
        if not section.rows:
            console.print(f"{section.title}: none")
            continue
        console.print(_fitted_table(console, section.title, section.head, section.rows))
    _print_notes(console.print, plan)
    # rich pads titles to the table's width: no trailing blanks in what is piped or copied.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _print_notes(emit: object, plan: Plan) -> None:
    assert callable(emit)
    for warning in plan.warnings:
        emit(f"warning: {warning}")
    for item in plan.unreclaimable:
        emit(f"unreclaimable: {item}")


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(plan: Plan) -> str:
    lines = [f"# Plan at {plan.now.isoformat()}", "", _summary_line(plan), ""]
    for section in _sections(plan):
        lines += [f"## {section.title}", ""]
        lines += _md_table(section.head, section.rows) if section.rows else ["None."]
        lines.append("")
    notes: list[str] = []
    _print_notes(notes.append, plan)
    if notes:
        lines += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines)


def render(plan: Plan, output: Format) -> str:
    if output == "json":
        return json.dumps(plan.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if output == "yaml":
        return yaml.safe_dump(plan.to_dict(), sort_keys=False, allow_unicode=True, width=120)
    if output == "markdown":
        return render_markdown(plan)
    return render_table(plan)
