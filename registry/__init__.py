"""toolhost registry: the pure core (tool model, naming, metadata, search, policy). No I/O.

Imports flow one way: ``registry`` ← ``host`` ← ``servers``; nothing here imports the others.
"""

from registry.errors import InvalidToolName, NameConflict, RegistryError, ToolNotFound
from registry.naming import (
    MAX_NAME_CHARS,
    NAME_PATTERN,
    assign_qualified_names,
    is_valid_name,
    qualify,
    sanitize_prefix,
    split_qualified,
)
from registry.policy import (
    ANONYMOUS,
    AllowAll,
    Decision,
    Effect,
    PatternPolicy,
    Policy,
    PolicyView,
    Principal,
    PurePolicy,
    RequestPolicy,
    matches_pattern,
)
from registry.schema_check import ToolCheck, check_schema, check_tool
from registry.store import RegistrySnapshot, ToolRegistry
from registry.tool import (
    DEFAULT_MAX_OUTPUT_CHARS,
    DEFAULT_TIMEOUT_SECONDS,
    Risk,
    ToolAnnotations,
    ToolDefinition,
    ToolOverrides,
    ToolRecord,
    build_record,
    definition_hash,
    derive_risk,
)

__all__ = [
    "ANONYMOUS",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_NAME_CHARS",
    "NAME_PATTERN",
    "AllowAll",
    "Decision",
    "Effect",
    "InvalidToolName",
    "NameConflict",
    "PatternPolicy",
    "Policy",
    "PolicyView",
    "Principal",
    "PurePolicy",
    "RegistryError",
    "RegistrySnapshot",
    "RequestPolicy",
    "Risk",
    "ToolAnnotations",
    "ToolCheck",
    "ToolDefinition",
    "ToolNotFound",
    "ToolOverrides",
    "ToolRecord",
    "ToolRegistry",
    "assign_qualified_names",
    "build_record",
    "check_schema",
    "check_tool",
    "definition_hash",
    "derive_risk",
    "is_valid_name",
    "matches_pattern",
    "qualify",
    "sanitize_prefix",
    "split_qualified",
]
