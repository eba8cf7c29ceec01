"""The CLI's tools table never breaks a tool name across lines (it is copied into `toolhost
call`); at 80 columns the description is cut with an ellipsis instead."""

from __future__ import annotations

from rich.console import Console

from registry.tool import ToolDefinition, build_record
from servers.cli.display import tools_table

NAMES = ["github__list_workflow_runs", "fs__read_text_file", "orders__cancel_order"]
LONG = ["github__create_pull_request_review_comment", *NAMES]


def _body(names: list[str]) -> list[str]:
    records = [build_record(server=n.split("__")[0], qualified_name=n, definition=ToolDefinition(
        name=n.split("__")[1], description="A long description of what this tool does, far wider than the room left."))
        for n in names]
    console = Console(width=80, record=True, color_system=None)
    console.print(tools_table(records))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    return [line for line in lines if line.startswith("│")]


def test_at_80_columns_names_stay_whole_and_descriptions_are_cut() -> None:
    body = _body(NAMES)
    assert [line.split("│")[1].strip() for line in body] == NAMES  # one line per tool, the name whole
    assert [line.split("│")[-2].strip() for line in body] == ["A long desc…"] * 3


def test_a_name_too_long_for_a_description_still_stays_whole() -> None:
    assert [line.split("│")[1].strip() for line in _body(LONG)] == LONG
