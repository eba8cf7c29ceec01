"""A script's capability manifest: the tools it names, found by parsing it before it runs.

The manifest and the script's sha256 are what an approval binds to: a script that changes after
approval has another hash, and a call at run time to a tool outside the manifest is refused.

What counts as naming a tool (Python's :mod:`ast`; code mode's language is a Python subset):

* a free name (read as a global by some scope and never bound at module level; Python's scope rules
  via :mod:`symtable`) that is a visible tool's identifier, e.g. ``await orders__list(status="open")``
  or ``f = orders__list``;
* the literal first argument of ``call_tool("orders__list", {...})``; a ``call_tool`` whose name is
  not a string literal is allowed to parse, and is checked against the manifest at run time.

Refused before running (:class:`ScriptRejected`, with line and column): syntax errors, scripts over
:data:`MAX_SCRIPT_CHARS`, code built at run time (``eval``, ``exec``, ``compile``, ``__import__``),
namespace introspection (``globals``, ``locals``, ``vars``, ``breakpoint``) and dunder attributes
(``x.__class__``): the sandbox has none of these either, the parse check names them clearly.

Pure (no I/O).
"""

from __future__ import annotations

import ast
import hashlib
import symtable
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["FORBIDDEN_NAMES", "MAX_SCRIPT_CHARS", "Manifest", "ScriptRejected", "build_manifest", "script_sha256"]

MAX_SCRIPT_CHARS = 100_000
"""Longest script accepted (characters)."""

FORBIDDEN_NAMES = frozenset({"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint"})
"""Names a script may not mention: they build code or names at run time, or expose namespaces."""


class ScriptRejected(ValueError):
    """The script cannot run; ``line``/``column`` (1-based, 0 when unknown) say where, ``message`` how to fix."""

    def __init__(self, message: str, *, line: int = 0, column: int = 0) -> None:
        self.message = message
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line else ""
        super().__init__(f"script rejected at code_mode.parse: {where}{message}")


@dataclass(frozen=True)
class Manifest:
    """What a script may call.

    Attributes:
        script_sha256: hex sha256 of the script's UTF-8 text.
        tools: ``{identifier: qualified_name}`` of the tools it names, sorted by identifier.
        dynamic_call_tool: the script calls ``call_tool`` with a name that is not a literal
            (checked against :attr:`tools` at run time).
    """

    script_sha256: str
    tools: Mapping[str, str]
    dynamic_call_tool: bool = False

    @property
    def qualified_names(self) -> tuple[str, ...]:
        """The named tools' qualified names, sorted."""
        return tuple(sorted(set(self.tools.values())))

    def resolve(self, name: str) -> str | None:
        """The qualified name for ``name`` (an identifier or a qualified name) if the manifest holds it."""
        if name in self.tools:
            return self.tools[name]
        return name if name in self.tools.values() else None


def script_sha256(script: str) -> str:
    """Hex sha256 of ``script`` encoded as UTF-8."""
    return hashlib.sha256(script.encode("utf-8")).hexdigest()


def build_manifest(script: str, visible: Mapping[str, str]) -> Manifest:
    """Parse ``script`` and collect the tools it names.

    Args:
        script: the Python-subset source.
        visible: ``{identifier: qualified_name}`` of the tools the caller may see
            (:func:`registry.code_mode.identifiers.python_names`); other names are not tools.

    Raises:
        ScriptRejected: too long, a syntax error, or a forbidden construct (see module doc).
    """
    if len(script) > MAX_SCRIPT_CHARS:
        raise ScriptRejected(f"the script has {len(script)} characters; at most {MAX_SCRIPT_CHARS} are accepted")
    try:
        tree = ast.parse(script, filename="script.py", mode="exec")
    except SyntaxError as exc:
        raise ScriptRejected(f"syntax error: {exc.msg}", line=exc.lineno or 0, column=exc.offset or 0) from None
    literal_calls: set[str] = set()
    dynamic = False
    by_qualified = {q: i for i, q in visible.items()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            raise _forbidden(node, f"{node.id!r} is not available in code mode (no code or names built at run time)")
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            raise _forbidden(node, f"dunder attribute {node.attr!r} is not available in code mode")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "call_tool":
            first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                literal_calls.add(first.value)
            else:
                dynamic = True
    try:
        table = symtable.symtable(script, "script.py", "exec")
    except SyntaxError as exc:
        raise ScriptRejected(f"syntax error: {exc.msg}", line=exc.lineno or 0, column=exc.offset or 0) from None
    tools = {name: visible[name] for name in _free_names(table) if name in visible}
    for name in literal_calls:
        if name in visible:
            tools[name] = visible[name]
        elif name in by_qualified:
            tools[by_qualified[name]] = name
    return Manifest(script_sha256=script_sha256(script), tools=dict(sorted(tools.items())), dynamic_call_tool=dynamic)


def _free_names(top: symtable.SymbolTable) -> set[str]:
    """Names some scope reads as globals that the script never binds at module level (Python's own
    scope rules, via :mod:`symtable`: a parameter or local of a function shadows, a class body does not
    enclose its methods)."""
    module_bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read: set[str] = set()
    stack = [top]
    while stack:
        table = stack.pop()
        stack.extend(table.get_children())
        for sym in table.get_symbols():
            if sym.is_declared_global() and sym.is_assigned():
                module_bound.add(sym.get_name())
            elif sym.is_global() and sym.is_referenced():
                read.add(sym.get_name())
    return read - module_bound


def _forbidden(node: ast.AST, message: str) -> ScriptRejected:
    return ScriptRejected(message, line=getattr(node, "lineno", 0), column=getattr(node, "col_offset", -1) + 1)
