"""Provider adapters: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages.

One provider-neutral conversation (:class:`Conversation`), three adapters with the same
interface (:class:`ProviderAdapter`): declare registry tools, build requests (tool_choice,
parallelism, deferred loading), parse whole and streamed responses into tool calls (streams
feed the pipeline's ``ArgumentAccumulator``), render results, import history.
The adapters work on plain dicts; the ``openai``/``anthropic`` SDKs are test dependencies only.
"""

from host.agent.providers.anthropic_messages import AnthropicMessagesAdapter, AnthropicStreamParser
from host.agent.providers.base import (
    API_ANTHROPIC,
    API_CHAT,
    API_RESPONSES,
    AccumulatorLike,
    AssistantTurn,
    Conversation,
    Declarations,
    PreparedRequest,
    ProviderAdapter,
    Reasoning,
    ResultsTurn,
    StopReason,
    StreamParser,
    UserTurn,
)
from host.agent.providers.choice import ChoiceParams, ToolChoice, anthropic_choice, chat_choice, responses_choice
from host.agent.providers.deferred import (
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_PARAMETERS,
    deferred_state,
    loaded_from_conversation,
    loaded_names,
    run_tool_search,
    search_result,
)
from host.agent.providers.dialects import gemini_schema
from host.agent.providers.driver import ProviderModel, WithToolSearch, to_conversation, to_messages
from host.agent.providers.errors import HistoryError, MalformedResponse, ProviderError, SchemaCycle
from host.agent.providers.openai_chat import ChatStreamParser, OpenAIChatAdapter
from host.agent.providers.openai_responses import OpenAIResponsesAdapter, ResponsesStreamParser
from host.agent.providers.schema import NormalizedSchema, find_ref_cycles, inline_refs, normalize_schema
from host.agent.providers.sse import SSEDecoder, iter_sse_events
from host.agent.providers.strict import (
    StrictConversion,
    decode_strict_arguments,
    encode_strict_arguments,
    to_strict_schema,
)

__all__ = [
    "API_ANTHROPIC",
    "API_CHAT",
    "API_RESPONSES",
    "AccumulatorLike",
    "AnthropicMessagesAdapter",
    "AnthropicStreamParser",
    "AssistantTurn",
    "ChatStreamParser",
    "ChoiceParams",
    "Conversation",
    "Declarations",
    "HistoryError",
    "MalformedResponse",
    "NormalizedSchema",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "PreparedRequest",
    "ProviderAdapter",
    "ProviderError",
    "ProviderModel",
    "Reasoning",
    "ResponsesStreamParser",
    "ResultsTurn",
    "SSEDecoder",
    "SchemaCycle",
    "StopReason",
    "StreamParser",
    "StrictConversion",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_PARAMETERS",
    "ToolChoice",
    "UserTurn",
    "WithToolSearch",
    "adapter_for",
    "anthropic_choice",
    "chat_choice",
    "decode_strict_arguments",
    "deferred_state",
    "encode_strict_arguments",
    "find_ref_cycles",
    "gemini_schema",
    "inline_refs",
    "iter_sse_events",
    "loaded_from_conversation",
    "loaded_names",
    "normalize_schema",
    "responses_choice",
    "run_tool_search",
    "search_result",
    "to_conversation",
    "to_messages",
    "to_strict_schema",
]


def adapter_for(api: str) -> ProviderAdapter:
    """The adapter for ``api`` (``openai_chat``, ``openai_responses``, ``anthropic_messages``).

    Raises:
        ValueError: unknown API name (the message lists the known ones).
    """
    adapters = {
        API_CHAT: OpenAIChatAdapter,
        API_RESPONSES: OpenAIResponsesAdapter,
        API_ANTHROPIC: AnthropicMessagesAdapter,
    }
    if api not in adapters:
        raise ValueError(f"unknown provider API {api!r}; use one of {sorted(adapters)}")
    return adapters[api]()
