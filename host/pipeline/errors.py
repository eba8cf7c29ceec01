"""Errors of the call pipeline. They are *not* tool results: they end the turn.

    HostError (host.errors)
    └── PipelineError
        ├── AccumulatorError        a streamed fragment cannot be placed
        │   ├── UnknownCall         fragment/finish for a call never started
        │   ├── CallAlreadyFinished fragment after that call's finish event
        │   └── DuplicateCall       start() twice for the same index/call id
        └── PipelineFatal           protocol corruption or a broken invariant (e.g. N calls, M≠N results)

Everything a model can cause (bad JSON, unknown names, tool failures) becomes a
:class:`host.calls.ToolResult` instead; only adapter/programming faults raise these.
"""

from __future__ import annotations

from host.errors import HostError

__all__ = [
    "AccumulatorError",
    "CallAlreadyFinished",
    "DuplicateCall",
    "PipelineError",
    "PipelineFatal",
    "UnknownCall",
]


class PipelineError(HostError):
    """Base class of the pipeline's own errors."""


def _key(index: int | None, call_id: str | None) -> str:
    parts = []
    if index is not None:
        parts.append(f"index={index}")
    if call_id is not None:
        parts.append(f"call_id={call_id!r}")
    return ", ".join(parts) or "no index or call id"


class AccumulatorError(PipelineError):
    """A streamed tool-call event cannot be applied.

    Attributes:
        index: the call index given with the event, if any.
        call_id: the call id given with the event, if any.
        event: ``feed``, ``finish``, ``set_name`` or ``start``.
    """

    def __init__(self, problem: str, *, index: int | None, call_id: str | None, event: str) -> None:
        self.index = index
        self.call_id = call_id
        self.event = event
        super().__init__(f"accumulator {event}({_key(index, call_id)}): {problem}")


class UnknownCall(AccumulatorError):
    """A fragment, name or finish arrived for a call that was never started (call ``start`` first)."""

    def __init__(self, *, index: int | None, call_id: str | None, event: str) -> None:
        super().__init__(
            "no call was started with that key; the adapter must call start() on the provider's "
            "call-begin event first",
            index=index,
            call_id=call_id,
            event=event,
        )


class CallAlreadyFinished(AccumulatorError):
    """A fragment arrived after the call's finish event."""

    def __init__(self, *, index: int | None, call_id: str | None, event: str) -> None:
        super().__init__("that call was already finished", index=index, call_id=call_id, event=event)


class DuplicateCall(AccumulatorError):
    """``start`` was called twice with the same index or call id within one batch."""

    def __init__(self, *, index: int | None, call_id: str | None) -> None:
        super().__init__("a call with that key was already started", index=index, call_id=call_id, event="start")


class PipelineFatal(PipelineError):
    """Protocol corruption or a broken invariant: the turn must end, no result can be trusted.

    Attributes:
        stage: where it was detected (``execute``, ``pair``, ``accumulate``…).
        problem: what is broken.
    """

    def __init__(self, stage: str, problem: str) -> None:
        self.stage = stage
        self.problem = problem
        super().__init__(f"pipeline invariant broken at {stage}: {problem}")
