"""The HTTP wire of ``toolhost serve``: runner, per-user sessions, transport, 2026 entry, events, headers, keys."""
