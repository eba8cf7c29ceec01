"""Programmatic callers: which tools the provider's own code runtime may call, and who called.

Both providers host "programmatic tool calling": the model writes a program in the provider's
sandbox, and each tool call the program makes comes back to the application as an ordinary tool
call carrying a ``caller``. toolhost decides which tools may be called that way from risk and
grants, as for its own code mode: **read-risk tools** may be called from the provider's runtime;
write and destructive ones only directly, unless a grant allows it (``allow``). Every call that
comes back is still run through the pipeline like any other.

Shapes (looked up 2026-12-01):

* Anthropic Messages (https://platform.claude.com/docs/en/agents-and-tools/tool-use/programmatic-tool-calling):
  a tool opts in with ``"allowed_callers": ["direct", "code_execution_20250825"]``; a ``tool_use``
  block made by the program carries ``"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_…"}``
  (``{"type": "direct"}`` otherwise).
* OpenAI Responses (``CallableToolAllowedCaller``, ``ProgramToolCallCaller``): a function tool
  declares ``"allowed_callers": ["direct", "programmatic"]``; a ``function_call`` item made by a
  program carries ``"caller": {"type": "program", "caller_id": "<the program item's call id>"}``.

* OpenAI Chat Completions has **no** programmatic callers: a tool call there is always a direct
  call, and :func:`allowed_callers` refuses ``openai_chat``.

Pure (no I/O): :func:`declare_programmatic` adds ``allowed_callers`` to an adapter's rendered tools
and declares the provider's code runtime (Anthropic ``{"type": "code_execution_20250825", "name":
"code_execution"}``, Responses ``{"type": "programmatic_tool_calling"}``) once;
:func:`program_caller` reads the program id of a returned call. Which non-read tools a grant lets a
program call is decided by :class:`host.agent.programmatic.ProgrammaticPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from host.agent.providers.base import API_ANTHROPIC, API_RESPONSES, Declarations
from registry.tool import Risk, ToolRecord

__all__ = [
    "ANTHROPIC_CODE_EXECUTION",
    "PROGRAMMATIC_APIS",
    "RESPONSES_PROGRAM_ITEMS",
    "allowed_callers",
    "anthropic_server_block",
    "declare_programmatic",
    "may_call_programmatically",
    "program_caller",
    "program_caller_object",
]

ANTHROPIC_CODE_EXECUTION = "code_execution_20250825"
"""The Anthropic code-execution tool version whose programs may call tools."""

PROGRAMMATIC_APIS = (API_ANTHROPIC, API_RESPONSES)
"""The APIs with programmatic tool calling (not OpenAI Chat Completions)."""

RESPONSES_PROGRAM_ITEMS = ("program", "program_output")
"""Responses output items of a program (``program`` carries the ``fingerprint`` that must be
round-tripped): replayed verbatim, like reasoning."""


def anthropic_server_block(kind: object) -> bool:
    """Whether an Anthropic content block type is the code runtime's own (``server_tool_use``,
    ``code_execution_tool_result`` and the other ``*_tool_result`` blocks): replayed verbatim."""
    return kind == "server_tool_use" or (isinstance(kind, str) and kind.endswith("_tool_result"))


def _runtime_tool(api: str, code_execution: str) -> dict[str, Any]:
    if api == API_ANTHROPIC:
        return {"type": code_execution, "name": "code_execution"}
    return {"type": "programmatic_tool_calling"}


def may_call_programmatically(tool: ToolRecord, *, allow: Callable[[ToolRecord], bool] | None = None) -> bool:
    """True for read-risk tools, and for others that ``allow`` (e.g. a grant) permits."""
    return tool.risk is Risk.READ or (allow is not None and allow(tool))


def allowed_callers(
    tool: ToolRecord, api: str, *, allow: Callable[[ToolRecord], bool] | None = None,
    code_execution: str = ANTHROPIC_CODE_EXECUTION,
) -> list[str]:
    """The ``allowed_callers`` value of ``tool`` for ``api`` (``["direct"]`` when only direct calls may run).

    Raises:
        ValueError: ``api`` has no programmatic callers (OpenAI Chat Completions).
    """
    programmatic = {API_ANTHROPIC: code_execution, API_RESPONSES: "programmatic"}.get(api)
    if programmatic is None:
        raise ValueError(f"{api} has no programmatic tool calling (use anthropic_messages or openai_responses)")
    return ["direct", programmatic] if may_call_programmatically(tool, allow=allow) else ["direct"]


def declare_programmatic(
    decl: Declarations, tools: Iterable[ToolRecord], api: str, *,
    allow: Callable[[ToolRecord], bool] | None = None, code_execution: str = ANTHROPIC_CODE_EXECUTION,
) -> Declarations:
    """Set ``allowed_callers`` on every declared function tool of ``decl`` that is one of ``tools``
    (in place; meta tools such as ``tool_search`` stay direct-only) and, when any tool may be called
    by a program, append the provider's code-runtime tool unless declared already; returns ``decl``.

    Raises:
        ValueError: ``api`` has no programmatic tool calling (OpenAI Chat Completions).
    """
    by_name = {t.qualified_name: t for t in tools}
    any_programmatic = False
    for entry in decl.tools:
        record = by_name.get(entry.get("name", ""))
        if record is not None:
            entry["allowed_callers"] = allowed_callers(record, api, allow=allow, code_execution=code_execution)
            any_programmatic = any_programmatic or len(entry["allowed_callers"]) > 1
            decl.notes.append(f"{record.qualified_name}: allowed_callers {entry['allowed_callers']}")
    runtime = _runtime_tool(api, code_execution)
    if any_programmatic and not any(t.get("type") == runtime["type"] for t in decl.tools):
        decl.tools.append(runtime)
    return decl


def program_caller_object(call: Mapping[str, Any], api: str) -> dict[str, Any] | None:
    """The ``caller`` object of a returned call, as received, when the provider's program made it
    (see :func:`program_caller`), else ``None``: what :attr:`AssistantTurn.callers` keeps."""
    return dict(call["caller"]) if program_caller(call, api) is not None else None


def program_caller(call: Mapping[str, Any], api: str) -> str | None:
    """The program id of a returned tool call (Anthropic ``tool_use`` block, Responses
    ``function_call`` item) made by the provider's code runtime, else ``None`` (a direct call)."""
    caller = call.get("caller")
    if not isinstance(caller, Mapping):
        return None
    kind = caller.get("type")
    if api == API_ANTHROPIC and isinstance(kind, str) and kind.startswith("code_execution_"):
        value = caller.get("tool_id")
    elif api == API_RESPONSES and kind == "program":
        value = caller.get("caller_id")
    else:
        return None
    return value if isinstance(value, str) and value else None
