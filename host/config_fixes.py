"""What to write instead of a rejected config value: the fix that follows a pydantic validation error.

A value error of the config reads ``<path>: <pydantic message>, got <input> (<fix>)``; ``toolhost
doctor`` shows the final parenthesis as the fix (:func:`servers.cli.doctor.split_fix`). The fix is
chosen by the error's ``type`` (pydantic's error codes, https://docs.pydantic.dev/latest/errors/validation_errors/)
and the field's name (``*_seconds`` fields take seconds); an error without a known fix gets none, and
doctor falls back to the usual fix of its stage.
"""

from __future__ import annotations

from typing import Any

__all__ = ["value_fix"]

_EXAMPLES = {"timeout_seconds": 30, "connect_timeout_seconds": 30, "first_connect_timeout_seconds": 120,
             "max_output_chars": 20000}


def value_fix(error: Any) -> str | None:
    """The fix for one pydantic error dict (``type``, ``loc``, ``ctx``), e.g. ``write a number of seconds,
    e.g. 30``; ``None`` when there is no better advice than the message."""
    kind = str(error.get("type", ""))
    field = str(error["loc"][-1]) if error.get("loc") else ""
    example = _EXAMPLES.get(field)
    bound = error.get("ctx") or {}
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        limit = next(iter(bound.values()), None)
        words = {"greater_than": "above", "greater_than_equal": "of at least", "less_than": "below",
                 "less_than_equal": "of at most"}[kind]
        shown = f"{limit:g}" if isinstance(limit, int | float) else limit
        return f"write a number {words} {shown}" + (f", e.g. {example}" if example is not None else "")
    if kind in ("float_parsing", "float_type", "int_parsing", "int_type", "int_from_float"):
        whole = kind.startswith("int")
        if field.endswith("_seconds"):
            return f"write a number of seconds without quotes, e.g. {example or 30}"
        noun = "a whole number" if whole else "a number"
        return f"write {noun} without quotes, e.g. {example if example is not None else (5 if whole else 1.5)}"
    if kind in ("bool_parsing", "bool_type"):
        return "write true or false, without quotes"
    if kind in ("string_type",):
        return 'write a string in double quotes, e.g. "text"'
    if kind in ("list_type",):
        return 'write a JSON list, e.g. ["a", "b"]'
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return 'write a JSON object, e.g. {"key": "value"}'
    if kind in ("enum", "literal_error") and bound.get("expected"):
        return f"write one of {bound['expected']}"
    return None
