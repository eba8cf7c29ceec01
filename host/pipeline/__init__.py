"""The standard call pipeline: accumulate → parse → validate → look up → authorize → execute → limit → pair.

See :mod:`host.pipeline.pipeline` for the facade and each module for its stage.
"""

from host.pipeline.accumulate import ArgumentAccumulator, InvalidEncoding
from host.pipeline.call_policy import CallScopedPolicy, call_scope
from host.pipeline.context import BatchCancel, CallContext, ResultCallback
from host.pipeline.errors import (
    AccumulatorError,
    CallAlreadyFinished,
    DuplicateCall,
    PipelineError,
    PipelineFatal,
    UnknownCall,
)
from host.pipeline.format import EMPTY_PLACEHOLDER, FormattedOutput, SpillStore, convert_content, format_result
from host.pipeline.pipeline import Pipeline
from host.pipeline.prepare import ApprovalHook, ApprovalOutcome, Prepared
from host.pipeline.results import classify_exception, error_result, rate_limit_info
from host.pipeline.send_gate import SendGate
from host.pipeline.transcript import (
    Message,
    RepairReport,
    TranscriptIssue,
    check_transcript,
    history_bytes,
    rename_duplicate_ids,
    repair_transcript,
    split_units,
    trim_history,
)

__all__ = [
    "EMPTY_PLACEHOLDER",
    "AccumulatorError",
    "ApprovalHook",
    "ApprovalOutcome",
    "ArgumentAccumulator",
    "BatchCancel",
    "CallAlreadyFinished",
    "CallContext",
    "CallScopedPolicy",
    "DuplicateCall",
    "FormattedOutput",
    "InvalidEncoding",
    "Message",
    "Pipeline",
    "PipelineError",
    "PipelineFatal",
    "Prepared",
    "RepairReport",
    "ResultCallback",
    "SendGate",
    "SpillStore",
    "TranscriptIssue",
    "UnknownCall",
    "call_scope",
    "check_transcript",
    "classify_exception",
    "convert_content",
    "error_result",
    "format_result",
    "history_bytes",
    "rate_limit_info",
    "rename_duplicate_ids",
    "repair_transcript",
    "split_units",
    "trim_history",
]
