"""Tool-argument parsing, JSON Schema validation and the lossless coercion policy. Pure: no I/O.

Parsing: empty or whitespace-only argument text means ``{}``; anything else must
be a JSON object. :func:`parse_arguments` never raises: it returns the object or an
:class:`ArgumentParseError` value describing where parsing failed, with a short excerpt.

Validation: the whole ``inputSchema`` is used, root keywords included (``$defs``,
``definitions``, local ``$ref``), with the draft named by ``$schema`` (draft 4, 6, 7, 2019-09,
2020-12; 2020-12 when absent, as MCP 2025-11-25 specifies). Remote ``$ref`` are never fetched.
Formats are not asserted (annotation only, as in the JSON Schema default vocabulary).
Each violation is reported as a :class:`Violation` (JSON path, given, expected, how to fix).

Coercion policy (documented decision, numbers sent as strings): **lossless string → number only**.
A string is turned into a number only when the schema at that exact location requires
``integer`` or ``number`` and does not also allow ``string``, and only when the string is the
canonical JSON text of that number, so that ``json.dumps(value) == text`` (it round-trips):
``"12"`` → ``12``, ``"-3"`` → ``-3``, ``"2.5"`` → ``2.5`` (number only). Rejected: ``"1e3"``,
``"0x10"``, ``"1,000"``, ``"12px"``, ``" 12"``, ``"012"``, ``"1.50"``, ``"12.0"`` for an integer,
``"NaN"``. Nothing else is coerced (no bool/null/array guessing). Every coercion is reported.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import validators as _validators
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for

from registry.redaction import REDACTED, is_secret_key, redact_text
from registry.safe_regex import RegexSyntaxError, RegexTimeout
from registry.safe_regex import search as safe_search

__all__ = [
    "ArgumentParseError",
    "Coercion",
    "ValidationOutcome",
    "Violation",
    "compile_validator",
    "excerpt",
    "parse_arguments",
    "validate_arguments",
]

EXCERPT_CHARS = 120
"""Longest excerpt of raw argument text or of a given value shown in an error (characters)."""

_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUM_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` with secrets masked (``registry.redaction``), cut to ``limit`` characters (``…`` marks the cut)."""
    text = redact_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class ArgumentParseError:
    """Why argument text is not a JSON object.

    Attributes:
        reason: ``invalid_json`` or ``not_an_object``.
        message: one sentence for the model (what and how to fix).
        position: character offset where JSON parsing failed (``None`` for ``not_an_object``).
        line, column: 1-based location of ``position``.
        excerpt: the raw text around the failure, at most :data:`EXCERPT_CHARS` characters.
        got_type: JSON type found for ``not_an_object`` (``array``, ``string``, ``null``…).
    """

    reason: str
    message: str
    position: int | None = None
    line: int | None = None
    column: int | None = None
    excerpt: str = ""
    got_type: str | None = None


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def parse_arguments(raw: str) -> dict[str, Any] | ArgumentParseError:
    """Parse a tool call's argument text (``""`` or whitespace is ``{}``).

    Args:
        raw: the argument text exactly as the model produced it.

    Returns:
        The JSON object (``{}`` for empty/whitespace text), or an :class:`ArgumentParseError`.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        start = max(0, exc.pos - EXCERPT_CHARS // 2)
        return ArgumentParseError(
            reason="invalid_json",
            message=(
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                "send a single JSON object such as {\"key\": \"value\"}"
            ),
            position=exc.pos,
            line=exc.lineno,
            column=exc.colno,
            excerpt=excerpt(raw[start:]),
        )
    except RecursionError:
        return ArgumentParseError(
            reason="invalid_json",
            message="arguments are nested too deeply to parse; send a flatter JSON object",
            excerpt=excerpt(raw),
        )
    except ValueError as exc:  # e.g. an integer longer than Python's 4300-digit conversion limit
        return ArgumentParseError(
            reason="invalid_json",
            message=f"arguments cannot be parsed ({exc}); send ordinary JSON values",
            excerpt=excerpt(raw),
        )
    if not isinstance(value, dict):
        kind = _json_type(value)
        return ArgumentParseError(
            reason="not_an_object",
            message=f"arguments must be a JSON object, got a JSON {kind}; wrap them as {{\"name\": value}}",
            excerpt=excerpt(raw),
            got_type=kind,
        )
    return value


@dataclass(frozen=True)
class Violation:
    """One schema violation.

    Attributes:
        path: JSON path of the offending value (``$.items[2].id``); for a missing property,
            the path the property should have.
        given: short JSON excerpt of what was given (``"<missing>"`` when absent).
        expected: what the schema expects there.
        fix: one sentence on how to fix it.
        keyword: the JSON Schema keyword that failed (``type``, ``required``, ``enum``…).
    """

    path: str
    given: str
    expected: str
    fix: str
    keyword: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "given": self.given, "expected": self.expected, "fix": self.fix}


@dataclass(frozen=True)
class Coercion:
    """A lossless coercion that was applied: ``path``, the string ``given``, the ``value`` used
    (both ``"[REDACTED]"`` under a secret-looking key, so they never reach a log)."""

    path: str
    given: str
    value: int | float | str


@dataclass(frozen=True)
class ValidationOutcome:
    """Result of :func:`validate_arguments`.

    Attributes:
        arguments: the arguments to send (coerced copies where coercions were applied).
        violations: empty when valid.
        coercions: coercions applied (only kept when the result is valid).
        schema_problem: set when the tool's own schema is invalid (validation was skipped).
    """

    arguments: dict[str, Any]
    violations: tuple[Violation, ...] = ()
    coercions: tuple[Coercion, ...] = ()
    schema_problem: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations


def _safe_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """``pattern`` with a time budget: the caller controls the string, the server the pattern."""
    if not validator.is_type(instance, "string"):
        return
    try:
        found = safe_search(pattern, instance)
    except RegexTimeout:
        yield ValidationError(
            f"the value is too expensive to check against the pattern {pattern!r}; send a shorter value"
        )
    except RegexSyntaxError:
        return  # a pattern the engine cannot read is the schema's problem, not the caller's
    else:
        if found is None:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _safe_pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                hit = safe_search(pattern, key)
            except (RegexTimeout, RegexSyntaxError):
                continue
            if hit is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@functools.lru_cache(maxsize=16)
def _safe_class(cls: type) -> type:
    return _validators.extend(cls, {"pattern": _safe_pattern, "patternProperties": _safe_pattern_properties})


def compile_validator(schema: dict[str, Any]) -> Validator | str:
    """A validator for ``schema`` honoring its ``$schema`` draft, or a problem string when invalid.

    ``pattern`` and ``patternProperties`` run with a time budget (:mod:`registry.safe_regex`),
    so a crafted value cannot freeze the host on a backtracking pattern.
    """
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        return _safe_class(cls)(schema)
    except SchemaError as exc:
        return f"the tool's inputSchema is invalid: {exc.message}"
    except Exception as exc:  # noqa: BLE001 - unknown $schema URI etc.
        return f"the tool's inputSchema cannot be used: {exc}"


def _secret_path(parts: list[Any] | tuple[Any, ...]) -> bool:
    return any(isinstance(p, str) and is_secret_key(p) for p in parts)


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return excerpt(text, 80)


def _path(parts: list[Any] | tuple[Any, ...]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (
            f".{p}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(p)) else f"[{json.dumps(p)}]")
    return out


def _describe(error: Any) -> list[Violation]:
    kw = error.validator
    val = error.validator_value
    where = list(error.absolute_path)
    if kw == "required":
        missing = re.match(r"'(.*)' is a required property", error.message)
        names = [missing.group(1)] if missing else [str(v) for v in val]
        return [
            Violation(_path([*where, n]), "<missing>", f"required property {n!r}", f"add the property {n!r}", kw)
            for n in names
        ]
    if kw == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set((error.schema.get("properties") or {}).keys())
        extra = [k for k in error.instance if k not in allowed] or ["?"]
        exp = f"only the properties {sorted(allowed)}" if allowed else "no other properties"
        return [
            Violation(_path([*where, k]), REDACTED if _secret_path([*where, k]) else _short(error.instance.get(k)),
                      exp, f"remove the property {k!r}", kw)
            for k in extra
        ]
    secret = _secret_path(where)
    given = REDACTED if secret else _short(error.instance)
    if kw == "type":
        types = val if isinstance(val, list) else [val]
        exp = " or ".join(types)
        got = _json_type(error.instance)
        fix = f"send a JSON {exp}, not {_a(got)} {got}"
    elif kw in ("enum", "const"):
        options = val if kw == "enum" else [val]
        exp = "one of " + _short(options)
        fix = "use one of the allowed values"
    elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
                "minItems", "maxItems", "pattern", "multipleOf", "uniqueItems", "minProperties", "maxProperties"):
        exp = f"{kw} {val!r}"
        fix = f"change the value so that {kw} {val!r} holds"
    elif kw in ("anyOf", "oneOf"):
        exp = f"a value matching {kw} of {len(val)} alternatives"
        sub = [] if secret else [redact_text(c.message) for c in (error.context or [])][:3]
        fix = "match one alternative" + (f" ({'; '.join(sub)})" if sub else "")
    else:
        exp = f"{kw}: {_short(val)}"
        fix = REDACTED if secret else redact_text(error.message)
    return [Violation(_path(where), given, exp, fix, kw)]


def _coercible(error: Any) -> int | float | None:
    """The lossless number for a ``type`` error on a string, or ``None`` (see module policy)."""
    if error.validator != "type" or not isinstance(error.instance, str):
        return None
    types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    if "string" in types:
        return None
    text = error.instance
    if "integer" in types and _INT_RE.fullmatch(text):
        value: int | float = int(text)
    elif "number" in types and _NUM_RE.fullmatch(text):
        value = int(text) if _INT_RE.fullmatch(text) else float(text)
    else:
        return None
    return value if json.dumps(value) == text else None


def _set_at(obj: Any, parts: list[Any], value: Any) -> Any:
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(obj, dict):
        new = dict(obj)
    else:
        new = list(obj)
    new[head] = _set_at(obj[head], rest, value)
    return new


def validate_arguments(
    validator: Validator | str, arguments: dict[str, Any], *, coerce: bool = True, max_violations: int = 20
) -> ValidationOutcome:
    """Validate ``arguments`` against a compiled ``validator`` (see :func:`compile_validator`).

    With ``coerce``, applies the module's lossless string→number policy first, then validates
    the coerced copy; the caller's dict is never mutated.

    Returns:
        A :class:`ValidationOutcome`; ``schema_problem`` is set (and nothing is checked) when
        ``validator`` is a problem string.
    """
    if isinstance(validator, str):
        return ValidationOutcome(arguments, schema_problem=validator)
    try:
        errors = list(validator.iter_errors(arguments))
    except RecursionError:
        return ValidationOutcome(arguments, violations=(Violation(
            "$", "<deeply nested value>", "a value the schema can check", "send less deeply nested arguments",
            "depth"),))
    except Exception as exc:  # noqa: BLE001 - e.g. a dangling or remote $ref: the schema's problem
        return ValidationOutcome(arguments, schema_problem=f"the tool's inputSchema cannot be applied: {exc}")
    if not errors:
        return ValidationOutcome(arguments)
    coercions: list[Coercion] = []
    if coerce:
        current: Any = arguments
        for err in errors:
            value = _coercible(err)
            if value is not None:
                parts = list(err.absolute_path)
                current = _set_at(current, parts, value)
                given = REDACTED if _secret_path(parts) else err.instance
                coercions.append(Coercion(_path(parts), given, REDACTED if _secret_path(parts) else value))
        if coercions:
            errors = list(validator.iter_errors(current))
            if not errors:
                return ValidationOutcome(current, coercions=tuple(coercions))
    violations: list[Violation] = []
    for err in sorted(errors, key=lambda e: (list(map(str, e.absolute_path)), e.validator)):
        violations.extend(_describe(err))
    return ValidationOutcome(arguments, violations=tuple(violations[:max_violations]))
