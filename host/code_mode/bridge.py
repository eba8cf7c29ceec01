"""How tool results cross into the sandbox, and the exceptions a script sees for error results.

A successful result becomes its structured content when the tool returned one, else its text.
An error result raises, in the script, a builtin exception chosen by status (pydantic-monty crosses
exceptions by type name and message only, ``ExternalExceptionData``):

============================================  =================
status                                        exception
============================================  =================
``permission_denied``, ``approval_required``  ``PermissionError``
``unknown_tool``                              ``LookupError``
``invalid_arguments``                         ``ValueError``
``timeout``                                   ``TimeoutError``
everything else                               ``RuntimeError``
============================================  =================

The message is ``"<status> at <where>: <message>"`` plus ``" [retry_after=<s>]"`` and
``" [approval_id=<id>]"`` when known; :data:`PRELUDE` defines ``tool_error(e)`` in the sandbox,
which parses it back into ``{"status", "where", "message", "retry_after", "approval_id"}``.
"""

from __future__ import annotations

from typing import Any

from host.calls import ResultStatus, ToolResult

__all__ = ["PRELUDE", "error_message", "exception_data", "sandbox_value"]

_EXC_TYPES = {
    ResultStatus.PERMISSION_DENIED: "PermissionError",
    ResultStatus.APPROVAL_REQUIRED: "PermissionError",
    ResultStatus.UNKNOWN_TOOL: "LookupError",
    ResultStatus.INVALID_ARGUMENTS: "ValueError",
    ResultStatus.TIMEOUT: "TimeoutError",
}

PRELUDE = '''
def tool_error(e):
    """{"status", "where", "message", "retry_after", "approval_id"} of a tool call's exception, else None."""
    text = str(e)
    head, sep, rest = text.partition(": ")
    status, at, where = head.partition(" at ")
    if not sep or not at or " " in status:
        return None
    info = {"status": status, "where": where, "message": rest, "retry_after": None, "approval_id": None}
    for key in ("approval_id", "retry_after"):
        marker = " [" + key + "="
        if rest.endswith("]") and marker in rest:
            rest, _, value = rest[:-1].rpartition(marker)
            info[key] = float(value) if key == "retry_after" else value
    info["message"] = rest
    return info
'''
"""Sandbox code fed before every script (same session; the script's line numbers are unchanged)."""


def error_message(
    status: str, where: str, message: str, *, retry_after: float | None = None, approval_id: str | None = None
) -> str:
    """The exception message for an error (format in the module doc)."""
    text = f"{status} at {where or 'code_mode'}: {message}"
    if retry_after is not None:
        text += f" [retry_after={retry_after:g}]"
    if approval_id:
        text += f" [approval_id={approval_id}]"
    return text


def exception_data(result: ToolResult) -> dict[str, str]:
    """The monty ``ExternalExceptionData`` for an error result."""
    err = result.error
    message = err.message if err else (result.text or result.status.value)
    return {
        "exc_type": _EXC_TYPES.get(result.status, "RuntimeError"),
        "message": error_message(
            result.status.value,
            err.where if err else "",
            message,
            retry_after=err.retry_after_seconds if err else None,
            approval_id=err.approval_id if err else None,
        ),
    }


def sandbox_value(result: ToolResult) -> Any:
    """What ``await tool(...)`` returns for a successful result: structured content, else the text."""
    return result.structured if result.structured is not None else result.text
