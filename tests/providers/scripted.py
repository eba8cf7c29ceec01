"""The scripted conversation shared by the rendering tests: two parallel calls, one failing."""

from __future__ import annotations

from host.agent.providers import AssistantTurn, Conversation, ResultsTurn, StopReason, UserTurn
from host.calls import ErrorInfo, ImageBlock, ResultStatus, TextBlock, ToolCall, ToolResult

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TIMEOUT_TEXT = "weather/get_forecast did not answer within 60 s; try again later."


def parallel_with_failure() -> Conversation:
    conv = Conversation(system="Be brief.")
    conv.add(UserTurn.text("Weather in Paris and Hangzhou?"))
    conv.add(
        AssistantTurn(
            stop=StopReason.TOOL_USE,
            parts=[
                TextBlock(text="Checking both."),
                ToolCall(call_id="call_1", name="weather__get_forecast", raw_arguments='{"city":"Paris"}', index=0),
                ToolCall(call_id="call_2", name="weather__get_forecast", raw_arguments='{"city":"Hangzhou"}', index=1),
            ],
        )
    )
    conv.add(
        ResultsTurn(
            results=[  # completion order: the failure came back first
                ToolResult(
                    call_id="call_2",
                    name="weather__get_forecast",
                    status=ResultStatus.TIMEOUT,
                    error=ErrorInfo(code="timeout", message=TIMEOUT_TEXT, where="execute"),
                ),
                ToolResult(
                    call_id="call_1", name="weather__get_forecast", content=[TextBlock(text="Paris: 18°C, sunny")]
                ),
            ]
        )
    )
    return conv


def image_result() -> Conversation:
    conv = Conversation()
    conv.add(UserTurn.text("Show chart.png"))
    conv.add(
        AssistantTurn(
            stop=StopReason.TOOL_USE,
            parts=[ToolCall(call_id="call_img", name="files__read_image", raw_arguments='{"path":"chart.png"}')],
        )
    )
    conv.add(
        ResultsTurn(
            results=[
                ToolResult(
                    call_id="call_img",
                    name="files__read_image",
                    content=[TextBlock(text="chart.png (1x1)"), ImageBlock(data=PNG_B64, mime_type="image/png")],
                )
            ]
        )
    )
    return conv
