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


def _render(table) -> list[str]:
    console = Console(width=80, record=True, color_system=None)
    console.print(table)
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    return [line for line in lines if line.startswith("│")]


def test_tools_via_the_running_serve_keep_names_whole_at_80_columns() -> None:
    from servers.cli.remote import tools_table as remote_tools_table

    rows = [{"name": n, "server": n.split("__")[0], "risk": "destructive", "timeout_seconds": 60,
             "flow": {"short": "private → public"}, "description": "Delete a note for good, with all of its history."}
            for n in ["notes__delete_note", "orders__cancel_order"]]
    body = _render(remote_tools_table(rows, title="2 tools"))
    assert [line.split("│")[1].strip() for line in body] == ["notes__delete_note", "orders__cancel_order"]
    assert [line.split("│")[2].strip() for line in body] == ["notes", "orders"]
    assert len(body) == 2  # one line per tool: the description is cut, never wrapped


def test_search_via_the_running_serve_keeps_names_whole_and_wraps_why() -> None:
    from servers.cli.options import remote_search_table

    why = ["name matches cancel", "description matches order", "parameter order_id matches order"]
    view = {"query": "cancel my order", "hits": [
        {"name": "orders__cancel_order", "server": "orders", "risk": "destructive", "flow": "-", "score": 9.5,
         "why": why}]}
    body = _render(remote_search_table(view))
    assert body[0].split("│")[1].strip() == "orders__cancel_order"
    assert [line.split("│")[1].strip() for line in body[1:]] == [""] * (len(body) - 1)  # only "why" wraps
    assert "".join(line.split("│")[-2].replace(" ", "") for line in body) == "; ".join(why).replace(" ", "")
