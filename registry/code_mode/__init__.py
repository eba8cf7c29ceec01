"""Code mode's pure parts: script identifiers of tools, the capability manifest, typed stubs. No I/O.

A model writes one script that calls many tools (``await orders__list(...)``); before it runs, the
script is parsed for the tools it names (:func:`build_manifest`), which an approval binds to with the
script's sha256. :func:`render_stubs` gives the model typed signatures to paste.
"""

from registry.code_mode.identifiers import RESERVED_NAMES, python_identifier, python_names
from registry.code_mode.manifest import (
    FORBIDDEN_NAMES,
    MAX_SCRIPT_CHARS,
    Manifest,
    ScriptRejected,
    build_manifest,
    script_sha256,
)
from registry.code_mode.stubs import render_stub, render_stubs, schema_type

__all__ = [
    "FORBIDDEN_NAMES",
    "MAX_SCRIPT_CHARS",
    "RESERVED_NAMES",
    "Manifest",
    "ScriptRejected",
    "build_manifest",
    "python_identifier",
    "python_names",
    "render_stub",
    "render_stubs",
    "schema_type",
    "script_sha256",
]
