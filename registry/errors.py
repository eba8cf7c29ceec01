"""Exception tree of the pure registry layer.

    RegistryError
    ├── InvalidToolName      a name that cannot be made into a valid qualified name
    ├── NameConflict         two tools claim the same qualified name
    ├── InvalidGrantPattern  a permission grant pattern is malformed
    └── ToolNotFound         a lookup by qualified name failed (carries close matches)

Every error carries the values involved as attributes, and builds its message from them.
"""

from __future__ import annotations

__all__ = ["InvalidGrantPattern", "InvalidToolName", "NameConflict", "RegistryError", "ToolNotFound"]


class RegistryError(Exception):
    """Base class of every error raised by :mod:`registry`."""


class InvalidToolName(RegistryError):
    """A server or tool name cannot be turned into a qualified name.

    Attributes:
        name: the offending name as given.
        reason: what is wrong with it and how to fix it.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid tool name {name!r}: {reason}")


class NameConflict(RegistryError):
    """Two tools would get the same qualified name.

    Attributes:
        qualified_name: the contested name.
        existing: ``(server, original_name)`` already registered under it.
        incoming: ``(server, original_name)`` that wanted it.
    """

    def __init__(self, qualified_name: str, existing: tuple[str, str], incoming: tuple[str, str]) -> None:
        self.qualified_name = qualified_name
        self.existing = existing
        self.incoming = incoming
        super().__init__(
            f"qualified name {qualified_name!r} is taken by {existing[0]}/{existing[1]}; "
            f"{incoming[0]}/{incoming[1]} cannot use it (give one of the servers another toolhost.prefix)"
        )


class ToolNotFound(RegistryError):
    """No tool is registered under a qualified name.

    Attributes:
        name: the name that was looked up.
        suggestions: up to a few close, existing qualified names (may be empty).
    """

    def __init__(self, name: str, suggestions: list[str] | None = None) -> None:
        self.name = name
        self.suggestions = list(suggestions or [])
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"unknown tool {name!r}{hint}")


class InvalidGrantPattern(RegistryError):
    """A grant pattern is malformed.

    Attributes:
        pattern: the pattern as given.
        reason: what is wrong with it.
    """

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(
            f"invalid grant pattern {pattern!r}: {reason} "
            "(use server:NAME or a qualified-name glob such as orders__* or git__git_status)"
        )
