"""The standard call pipeline: accumulate → parse → validate → look up → authorize → execute → limit → pair.

See :mod:`host.pipeline.pipeline` for the facade and each module for its stage.
"""

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
from host.pipeline.prepare import ApprovalHook, ApprovalOutcome, DenialDisclosure, NoDisclosure, Prepared
from host.pipeline.results import classify_exception, error_result, rate_limit_info
from host.pipeline.send_gate import SendGate
from host.pipeline.store_outage_log import (
    LOG_INTERVAL_SECONDS,
    STORE_OUTAGE_LOG,
    StoreOutageLog,
    find_store_error,
    store_reason,
)
from host.pipeline.taint import TaintEvent, TaintListener, TaintStage

__all__ = [
    "EMPTY_PLACEHOLDER",
    "LOG_INTERVAL_SECONDS",
    "STORE_OUTAGE_LOG",
    "AccumulatorError",
    "ApprovalHook",
    "ApprovalOutcome",
    "BatchCancel",
    "CallAlreadyFinished",
    "CallContext",
    "DenialDisclosure",
    "DuplicateCall",
    "FormattedOutput",
    "NoDisclosure",
    "Pipeline",
    "PipelineError",
    "PipelineFatal",
    "Prepared",
    "ResultCallback",
    "SendGate",
    "SpillStore",
    "StoreOutageLog",
    "TaintEvent",
    "TaintListener",
    "TaintStage",
    "UnknownCall",
    "classify_exception",
    "convert_content",
    "error_result",
    "find_store_error",
    "format_result",
    "rate_limit_info",
    "store_reason",
]
