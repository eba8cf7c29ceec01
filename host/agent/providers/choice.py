"""One internal tool_choice, mapped to each API.

Internal choice (:class:`ToolChoice`): ``auto`` (model decides), ``required`` (at least one call),
``none`` (no call), ``tool`` (exactly this tool), ``allowed`` (only these tools; ``require``
makes a call mandatory), plus ``parallel`` (``False``: at most one call per response).

Mapping (the ``tools`` array is never changed by a choice, so the prompt-cache prefix stays):

* auto: Chat/Responses ``"auto"``; Anthropic ``{"type": "auto"}``.
* required: Chat/Responses ``"required"``; Anthropic ``{"type": "any"}``.
* none: Chat/Responses ``"none"``; Anthropic ``{"type": "none"}``.
* tool: Chat ``{"type": "function", "function": {"name"}}``; Responses ``{"type": "function",
  "name"}``; Anthropic ``{"type": "tool", "name"}``.
* allowed: Chat ``{"type": "allowed_tools", "allowed_tools": {"mode", "tools": [...]}}``;
  Responses ``{"type": "allowed_tools", "mode", "tools": [...]}`` (``mode`` is ``required`` when
  ``require``); Anthropic ``auto``/``any`` (one required name: ``tool``), enforced by the host.
* no parallel calls: Chat/Responses ``parallel_tool_calls: false``; Anthropic
  ``disable_parallel_tool_use: true`` inside ``tool_choice``.

Anthropic has no allowed-subset choice: :attr:`ChoiceParams.host_enforced` is then ``True`` and
the host must reject calls outside :meth:`ToolChoice.permits` (the loop turns them into error
results). Sources: OpenAI API reference ``tool_choice``/``parallel_tool_calls`` (Chat and
Responses); Anthropic Messages API ``tool_choice`` (``disable_parallel_tool_use``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["ChoiceParams", "ToolChoice", "anthropic_choice", "chat_choice", "responses_choice"]

ChoiceMode = Literal["auto", "required", "none", "tool", "allowed"]


class ToolChoice(BaseModel):
    """What the model may or must call in the next response.

    Attributes:
        mode: ``auto``, ``required``, ``none``, ``tool`` or ``allowed``.
        names: the tool (``tool``: exactly one) or the allowed subset (``allowed``: one or more).
        require: for ``allowed``: the model must call one of them (else it may answer in text).
        parallel: ``False`` asks for at most one call per response.
    """

    model_config = ConfigDict(frozen=True)

    mode: ChoiceMode = "auto"
    names: tuple[str, ...] = ()
    require: bool = False
    parallel: bool = True

    @model_validator(mode="after")
    def _check(self) -> ToolChoice:
        if self.mode == "tool" and len(self.names) != 1:
            raise ValueError("tool_choice mode 'tool' needs exactly one name in names")
        if self.mode == "allowed" and not self.names:
            raise ValueError("tool_choice mode 'allowed' needs at least one name in names")
        if self.mode in ("auto", "required", "none") and self.names:
            raise ValueError(f"tool_choice mode {self.mode!r} takes no names; use mode 'allowed' or 'tool'")
        return self

    @classmethod
    def auto(cls, *, parallel: bool = True) -> ToolChoice:
        return cls(mode="auto", parallel=parallel)

    @classmethod
    def required(cls, *, parallel: bool = True) -> ToolChoice:
        return cls(mode="required", parallel=parallel)

    @classmethod
    def none(cls) -> ToolChoice:
        return cls(mode="none")

    @classmethod
    def tool(cls, name: str, *, parallel: bool = True) -> ToolChoice:
        return cls(mode="tool", names=(name,), parallel=parallel)

    @classmethod
    def allowed(cls, names: list[str] | tuple[str, ...], *, require: bool = False, parallel: bool = True) -> ToolChoice:
        return cls(mode="allowed", names=tuple(names), require=require, parallel=parallel)

    def permits(self, name: str) -> bool:
        """True when a call to ``name`` is within this choice (``none`` permits nothing)."""
        if self.mode == "none":
            return False
        if self.mode in ("tool", "allowed"):
            return name in self.names
        return True


@dataclass(frozen=True)
class ChoiceParams:
    """Request parameters for one API.

    Attributes:
        params: keys to merge into the request (``tool_choice``, ``parallel_tool_calls``).
        host_enforced: the API cannot express the restriction; the host must check
            :meth:`ToolChoice.permits` on every call.
    """

    params: dict[str, Any] = field(default_factory=dict)
    host_enforced: bool = False


def chat_choice(choice: ToolChoice) -> ChoiceParams:
    """Map to Chat Completions ``tool_choice`` / ``parallel_tool_calls``."""
    if choice.mode == "tool":
        value: Any = {"type": "function", "function": {"name": choice.names[0]}}
    elif choice.mode == "allowed":
        value = {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required" if choice.require else "auto",
                "tools": [{"type": "function", "function": {"name": n}} for n in choice.names],
            },
        }
    else:
        value = choice.mode
    params: dict[str, Any] = {"tool_choice": value}
    if not choice.parallel and choice.mode != "none":
        params["parallel_tool_calls"] = False
    return ChoiceParams(params)


def responses_choice(choice: ToolChoice, *, search_tool: str | None = None) -> ChoiceParams:
    """Map to Responses ``tool_choice`` / ``parallel_tool_calls``.

    Args:
        search_tool: name of the client ``tool_search`` tool, which Responses lists as
            ``{"type": "tool_search"}`` (not a function) inside ``allowed_tools``.
    """

    def entry(name: str) -> dict[str, Any]:
        return {"type": "tool_search"} if name == search_tool else {"type": "function", "name": name}

    if choice.mode == "tool":
        name = choice.names[0]
        value: Any = (
            entry(name)
            if name != search_tool
            else {"type": "allowed_tools", "mode": "required", "tools": [entry(name)]}
        )
    elif choice.mode == "allowed":
        value = {
            "type": "allowed_tools",
            "mode": "required" if choice.require else "auto",
            "tools": [entry(n) for n in choice.names],
        }
    else:
        value = choice.mode
    params: dict[str, Any] = {"tool_choice": value}
    if not choice.parallel and choice.mode != "none":
        params["parallel_tool_calls"] = False
    return ChoiceParams(params)


def anthropic_choice(choice: ToolChoice) -> ChoiceParams:
    """Map to Anthropic ``tool_choice`` (``disable_parallel_tool_use`` inside it)."""
    host_enforced = False
    if choice.mode == "none":
        return ChoiceParams({"tool_choice": {"type": "none"}})
    if choice.mode == "tool" or (choice.mode == "allowed" and choice.require and len(choice.names) == 1):
        value: dict[str, Any] = {"type": "tool", "name": choice.names[0]}
    elif choice.mode == "allowed":
        value = {"type": "any" if choice.require else "auto"}
        host_enforced = True
    elif choice.mode == "required":
        value = {"type": "any"}
    else:
        value = {"type": "auto"}
    if not choice.parallel:
        value["disable_parallel_tool_use"] = True
    return ChoiceParams({"tool_choice": value}, host_enforced=host_enforced)
