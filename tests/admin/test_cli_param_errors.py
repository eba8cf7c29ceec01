"""Every command-line parameter error names the parameter (ARGS / --option), what is wrong and how to
fix it, and exits 2 before anything runs: checked for every numeric and choice option of every command,
and for the values parsed by our own code (call's ARGS, audit --since, --max-risk)."""

from __future__ import annotations

import enum

import typer
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from servers.cli.app import app

runner = CliRunner()


def error_text(*args: str) -> tuple[int, str]:
    """Exit code and the error box's text on one line (rich's box drawing and wrapping removed)."""
    result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
    text = " ".join(result.output.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())
    return result.exit_code, text


def commands(group: TyperGroup, path: tuple[str, ...] = ()):
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name), cmd  # a group's own options too (``audit --limit``)
        if isinstance(cmd, TyperGroup):
            yield from commands(cmd, (*path, name))


def test_call_args_that_are_not_a_json_object_name_ARGS_the_problem_and_the_fix(tmp_path) -> None:
    fix = """pass one JSON object in single quotes, e.g. '{"order_id": "A1001"}' ('{}' for none)"""
    data = ["--data-dir", str(tmp_path)]
    code, text = error_text("call", "X", "{bad", *data)
    assert (code, text.split("Error ", 1)[1]) == (
        2, f"Invalid value for 'ARGS': not valid JSON (Expecting property name enclosed in double quotes at column "
           f"2); {fix}")
    code, text = error_text("call", "X", "[1, 2]", *data)
    assert (code, text.split("Error ", 1)[1]) == (2, f"Invalid value for 'ARGS': a JSON list, not an object; {fix}")
    code, text = error_text("call", "X", '"A1001"', *data)
    assert (code, text.split("Error ", 1)[1]) == (2, f"Invalid value for 'ARGS': a JSON str, not an object; {fix}")
    assert "Usage: toolhost call [OPTIONS] {NAME} [ARGS]" in text
    assert not (tmp_path / "toolhost.db").exists()  # nothing ran


def test_values_our_code_parses_name_their_option(tmp_path) -> None:
    data = ["--data-dir", str(tmp_path)]
    assert error_text("audit", "--since", "yesterday", *data)[1].split("Error ", 1)[1] == (
        "Invalid value for '--since': 'yesterday': use a duration like 30s, 15m, 2h, 7d or an ISO time like "
        "2026-11-30T10:00:00Z")
    for cmd in (["grants", "add", "alice", "x"], ["roles", "grant", "ops", "x"]):
        code, text = error_text(*cmd, "--max-risk", "huge", *data)
        assert (code, text.split("Error ", 1)[1]) == (
            2, "Invalid value for '--max-risk': Value error, 'huge' is not one of 'read', 'write', 'destructive'.")


def test_every_numeric_and_choice_option_of_every_command_names_itself_when_given_a_bad_value(tmp_path) -> None:
    root = typer.main.get_command(app)
    checked = []
    for path, cmd in commands(root):
        for param in cmd.params:
            if not isinstance(param, TyperOption) or param.is_flag:
                continue
            kind = param.type_descriptor.annotation
            if kind in (int, float) or (isinstance(kind, type) and issubclass(kind, enum.Enum)):
                flag = max(param.opts, key=len)
                code, text = error_text(*path, flag, "not-a-value", "--data-dir", str(tmp_path))
                assert code == 2 and f"Invalid value for '{flag}'" in text, (path, flag, text)
                checked.append((" ".join(path), flag))
    # the options this covers today (a new one is covered automatically)
    assert {("serve", "--port"), ("serve", "--expose"), ("serve", "--auth"), ("search", "--limit"),
            ("grants add", "--max-risk"), ("audit", "--limit")} <= set(checked), checked


def test_missing_or_unreadable_files_name_their_option(tmp_path) -> None:
    data = ["--data-dir", str(tmp_path)]
    missing = tmp_path / "nope.json"
    for cmd in (["servers"], ["tools"], ["call", "x"], ["serve"]):
        code, text = error_text(*cmd, "--config", str(missing), *data)
        assert (code, text.split("Error ", 1)[1]) == (
            2, f"Invalid value for '--config' / '-c' (env var: 'TOOLHOST_CONFIG'): file '{missing}' does not exist.")
    assert error_text("servers", "--config", str(tmp_path), *data)[1].endswith(
        f"Invalid value for '--config' / '-c' (env var: 'TOOLHOST_CONFIG'): file '{tmp_path}' is a directory.")
    assert error_text("audit", "verify", "--file", str(missing), *data)[1].endswith(
        f"Invalid value for '--file': file '{missing}' does not exist.")
    export = tmp_path / "audit.jsonl"
    export.write_text('{"id": 1}\n\n[1]\n')
    code, text = error_text("audit", "verify", "--file", str(export), *data)
    assert (code, text.split("Error ", 1)[1]) == (2, f"Invalid value for '--file': {export}: line 3 is not a JSON "
                                                     "object; pass a file written by `toolhost audit export`")
    export.write_text("not json\n")
    assert error_text("audit", "verify", "--file", str(export), *data)[1].endswith(
        f"Invalid value for '--file': {export}: line 1 is not JSON (Expecting value: line 1 column 1 (char 0)); "
        "pass a file written by `toolhost audit export`")
