"""Errors of the provider adapters.

    ProviderError (a host.errors.HostError)
    ├── SchemaCycle          a schema's local $ref refers back to itself and cannot be inlined
    ├── MalformedResponse    a response or stream event does not have the API's documented shape
    └── HistoryError         a conversation cannot be rendered (e.g. a result without its call)

Each error keeps the values involved and names where it happened and how to fix it.
"""

from __future__ import annotations

from host.errors import HostError

__all__ = ["HistoryError", "MalformedResponse", "ProviderError", "SchemaCycle"]


class ProviderError(HostError):
    """Base class of the provider-adapter errors."""


class SchemaCycle(ProviderError):
    """A schema cannot be inlined because some local ``$ref`` is recursive.

    Attributes:
        refs: the recursive refs, e.g. ``["#/$defs/Node"]``.
    """

    def __init__(self, refs: list[str]) -> None:
        self.refs = list(refs)
        super().__init__(f"recursive $ref {', '.join(self.refs)} cannot be inlined; keep $defs instead")


class MalformedResponse(ProviderError):
    """A model response (or one stream event) lacks a field the API documents.

    Attributes:
        api: ``openai_chat``, ``openai_responses`` or ``anthropic_messages``.
        where: JSON path of the offending value, e.g. ``choices[0].message.tool_calls[1].id``.
        problem: what was expected there.
    """

    def __init__(self, api: str, where: str, problem: str) -> None:
        self.api = api
        self.where = where
        self.problem = problem
        super().__init__(f"{api} response at {where}: {problem}")


class HistoryError(ProviderError):
    """A conversation cannot be rendered for an API.

    Attributes:
        api: the target API.
        turn: index of the offending turn in the conversation.
        problem: what is wrong and how to fix it.
    """

    def __init__(self, api: str, turn: int, problem: str) -> None:
        self.api = api
        self.turn = turn
        self.problem = problem
        super().__init__(f"cannot render turn {turn} for {api}: {problem}")
