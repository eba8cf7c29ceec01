"""tool_choice and parallelism mapped per API; the tools array never changes with the choice."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from host.agent.providers import (
    AnthropicMessagesAdapter,
    Conversation,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ToolChoice,
    UserTurn,
    anthropic_choice,
    chat_choice,
    responses_choice,
)

from .records import catalog
from .sdk_check import validate_anthropic_request, validate_chat_request, validate_responses_request

A, B = "weather__get_forecast", "files__read_image"
CHOICES = {
    "auto": ToolChoice.auto(),
    "required": ToolChoice.required(),
    "none": ToolChoice.none(),
    "tool": ToolChoice.tool(A),
    "allowed": ToolChoice.allowed([A, B]),
    "allowed_required": ToolChoice.allowed([A, B], require=True),
    "required_serial": ToolChoice.required(parallel=False),
}

CHAT = {
    "auto": {"tool_choice": "auto"},
    "required": {"tool_choice": "required"},
    "none": {"tool_choice": "none"},
    "tool": {"tool_choice": {"type": "function", "function": {"name": A}}},
    "allowed": {
        "tool_choice": {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "auto",
                "tools": [{"type": "function", "function": {"name": A}}, {"type": "function", "function": {"name": B}}],
            },
        }
    },
    "allowed_required": {
        "tool_choice": {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": A}}, {"type": "function", "function": {"name": B}}],
            },
        }
    },
    "required_serial": {"tool_choice": "required", "parallel_tool_calls": False},
}
RESPONSES = {
    "auto": {"tool_choice": "auto"},
    "required": {"tool_choice": "required"},
    "none": {"tool_choice": "none"},
    "tool": {"tool_choice": {"type": "function", "name": A}},
    "allowed": {
        "tool_choice": {
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": A}, {"type": "function", "name": B}],
        }
    },
    "allowed_required": {
        "tool_choice": {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "function", "name": A}, {"type": "function", "name": B}],
        }
    },
    "required_serial": {"tool_choice": "required", "parallel_tool_calls": False},
}
ANTHROPIC = {
    "auto": ({"tool_choice": {"type": "auto"}}, False),
    "required": ({"tool_choice": {"type": "any"}}, False),
    "none": ({"tool_choice": {"type": "none"}}, False),
    "tool": ({"tool_choice": {"type": "tool", "name": A}}, False),
    "allowed": ({"tool_choice": {"type": "auto"}}, True),
    "allowed_required": ({"tool_choice": {"type": "any"}}, True),
    "required_serial": ({"tool_choice": {"type": "any", "disable_parallel_tool_use": True}}, False),
}


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_choice_mapping_per_api(key):
    choice = CHOICES[key]
    assert chat_choice(choice).params == CHAT[key]
    assert responses_choice(choice).params == RESPONSES[key]
    mapped = anthropic_choice(choice)
    assert (mapped.params, mapped.host_enforced) == ANTHROPIC[key]


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_choice_requests_validate_and_keep_the_tools_array(key):
    conv = Conversation(turns=[UserTurn.text("hi")])
    tools = catalog()
    base = {
        a.api: a.prepare(conv, tools, model="m", max_tokens=8)
        if a.api == "anthropic_messages"
        else a.prepare(conv, tools, model="m")
        for a in (OpenAIChatAdapter(), OpenAIResponsesAdapter(), AnthropicMessagesAdapter())
    }
    chat = OpenAIChatAdapter().prepare(conv, tools, model="m", choice=CHOICES[key]).params
    responses = OpenAIResponsesAdapter().prepare(conv, tools, model="m", choice=CHOICES[key]).params
    anthropic = AnthropicMessagesAdapter().prepare(conv, tools, model="m", choice=CHOICES[key], max_tokens=8)
    validate_chat_request(chat)
    validate_responses_request(responses)
    validate_anthropic_request(anthropic.params)
    assert chat["tools"] == base["openai_chat"].params["tools"]
    assert responses["tools"] == base["openai_responses"].params["tools"]
    assert anthropic.params["tools"] == base["anthropic_messages"].params["tools"]
    assert anthropic.host_enforced_choice is ANTHROPIC[key][1]


def test_single_required_allowed_tool_is_a_forced_tool_for_anthropic():
    assert anthropic_choice(ToolChoice.allowed([A], require=True)).params == {
        "tool_choice": {"type": "tool", "name": A}
    }


def test_permits():
    assert ToolChoice.auto().permits("x") and not ToolChoice.none().permits("x")
    assert ToolChoice.allowed([A]).permits(A) and not ToolChoice.allowed([A]).permits(B)


def test_forcing_the_search_tool_on_responses_uses_allowed_tools():
    params = responses_choice(ToolChoice.tool("tool_search"), search_tool="tool_search").params
    assert params == {"tool_choice": {"type": "allowed_tools", "mode": "required", "tools": [{"type": "tool_search"}]}}


@pytest.mark.parametrize("kwargs", [{"mode": "tool"}, {"mode": "allowed"}, {"mode": "auto", "names": ("x",)}])
def test_invalid_choices_are_rejected_with_a_clear_message(kwargs):
    with pytest.raises(ValidationError):
        ToolChoice(**kwargs)
