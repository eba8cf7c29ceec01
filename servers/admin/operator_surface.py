"""Everything an operator sees of a running ``toolhost serve``, wired in one place.

:class:`OperatorSurface` builds, for one running host: Prometheus metrics (and instruments the
runtime), the event reporter (console + log lines), the admin service/API/console with the local
admin token, ``/healthz`` ``/readyz`` ``/metrics``, and the config reloader; :meth:`routes` goes
to :func:`servers.http.runner.serve_http`, :meth:`run_background` runs SIGHUP/file-watch reloads and
the approval/held-tool watchers until cancelled, :meth:`close` removes the token file.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from sqlalchemy import text

from host.pipeline import STORE_OUTAGE_LOG, find_store_error
from registry import ToolRecord
from servers.admin import AdminAuth, AdminService, ConfigReloader, admin_routes, write_local_token
from servers.observability import EventReporter, Metrics, health_routes
from servers.shared.endpoint import ENDPOINT_FILE, endpoint_record, remove_if_ours

__all__ = ["OperatorSurface"]

_logger = logging.getLogger("toolhost.serve")

WATCH_APPROVALS_SECONDS = 1.0


class OperatorSurface:
    """See module docstring.

    Args:
        runtime: the :class:`host.runtime.HostRuntime` (entered or about to be).
        access: the permission store (``None`` with ``--auth off``).
        data_dir: the data folder (the local admin token goes there).
        config_path: the config file to reload (``None``: the bundled one).
        console: where event lines are printed (``None``: log only).
        watch_config: also reload when the config file changes.
        http: serving over HTTP (the admin API exists, so the local admin token is written).
        enforce: API keys are required (``None``: whether the runtime's policy is per user); then
            ``/metrics`` and ``/readyz``'s details need an admin credential.
    """

    def __init__(self, runtime: Any, access: Any, data_dir: Path, config_path: Path | None,
                 console: Console | None, *, watch_config: bool = False, http: bool = True,
                 db_url: str | None = None, enforce: bool | None = None) -> None:
        self.enforce = (access is not None and bool(runtime.policy.per_user)) if enforce is None else enforce
        self.runtime = runtime
        self.config_path = config_path
        self.db_url = db_url
        self.access = access
        self.data_dir = data_dir
        self.watch_config = watch_config
        self.server: Any = None  # the MCP server, for the open-sessions gauge (set by serve)
        self.metrics = Metrics(
            runtime.statuses,
            pending_approvals=self._pending_count,
            held_tools=self._held_count,
            open_sessions=self._open_sessions,
            audit_pending=self._audit_pending,
        )
        runtime.observe(self.metrics)  # calls, searches and upstream requests counted and timed
        self.events = EventReporter(console, self.metrics)
        runtime.taint.subscribe(self.events.taint_decided)  # session-taint decisions: console + log
        runtime.manager.catalog_holds.subscribe(self._definitions_held)  # poisoned prompts/resources/...
        # without a store (--auth off) the server, tool, search and call views still answer;
        # store actions answer 503 no_store (AdminService raises StoreOff)
        self.service = AdminService(access, runtime, on_approval=self.events.approval, actor="serve",
                                    on_user_state=lambda event, text, fields: self.events.emit(
                                        event, text, "warning", **fields))
        self.reloader = ConfigReloader(runtime, config_path, data_dir, self.events, service=self.service)
        self.token_path: Path | None = None
        self.endpoint_path: Path | None = None
        self._endpoint_text = ""
        token = None
        if http:
            self.token_path, token = write_local_token(data_dir)
        self.auth = AdminAuth(access, token)
        self._seen_approvals: set[str] = set()
        self._held: set[str] = set()
        if access is not None:
            runtime.registry.subscribe(self._registry_changed)

    # -- gauges --------------------------------------------------------------------------------
    def _pending_count(self) -> int:
        return 0 if self.access is None else len(self.access.approvals.list(status="pending", limit=100_000))

    def _audit_pending(self) -> int:
        return 0 if self.access is None else self.access.audit_writer.unwritten

    def _held_count(self) -> int:
        if self.access is None:
            return 0
        return sum(1 for status, _h in self.access.pins.states().values() if status in ("held", "changed"))

    def _open_sessions(self) -> int:
        from servers.http.sessions import open_sessions

        return open_sessions(self.server)

    # -- events --------------------------------------------------------------------------------
    def server_status(self, status: Any) -> None:
        """The manager's ``on_status`` listener once serving (events, log, reconnect counter)."""
        self.events.server_status(status)

    def status_listener(self, printer: Any = None) -> Any:
        """An ``on_status`` listener: ``printer``
        (e.g. :func:`servers.observability.status_events.status_event_printer`) prints the console line,
        this surface logs the event and counts reconnects; with no printer the event reporter prints
        server states itself."""
        self.events.print_server_states = printer is None

        def listener(status: Any) -> None:
            if printer is not None:
                printer(status)
            self.server_status(status)

        return listener

    def _definitions_held(self, server: str, holds: list[Any]) -> None:
        """Console/log event per held prompt, resource, template or instructions, and (with a store)
        an audit row ``action=pin``, ``rule=catalog:suspicious``, tool ``<server>:<trust entry>``."""
        self.events.definitions_held(server, holds)
        if self.access is None:
            return
        try:
            for hold in holds:
                self.access.audit(action="pin", tool=f"{server}:{hold.trust_key}", decision="deny",
                                  rule="catalog:suspicious", status="held",
                                  detail=f"held by the definition scanner ({hold.findings(5)}); {hold.release_hint()}")
        except Exception:  # an audit row is never worth a failed listing
            _logger.exception("toolhost: auditing held definitions failed")

    def _registry_changed(self, server: str, _old: tuple[ToolRecord, ...], new: tuple[ToolRecord, ...]) -> None:
        try:
            states = self.access.pins.states()
            names = [r.qualified_name for r in new]
            held = {n for n in names if states.get(n, ("", None))[0] in ("held", "changed")}
            fresh = sorted(held - self._held)
            self._held = (self._held - set(names)) | held
            self.events.tools_held(server, fresh)
        except Exception:  # an event is never worth a failed listing
            _logger.exception("toolhost: reporting held tools failed")

    async def _watch_approvals(self) -> None:
        while True:
            try:
                rows = await anyio.to_thread.run_sync(lambda: self.access.approvals.list(status="pending", limit=500))
                for r in rows:
                    if r.id not in self._seen_approvals:
                        self._seen_approvals.add(r.id)
                        self.events.approval(r.id, r.user, r.tool, "pending")
                STORE_OUTAGE_LOG.recovered()
            except Exception as exc:
                if (store := find_store_error(exc)) is None:
                    _logger.exception("toolhost: reading pending approvals failed")
                else:  # one rate-limited line per outage, shared with the call pipeline
                    STORE_OUTAGE_LOG.note(store, "approval watcher")
            await anyio.sleep(WATCH_APPROVALS_SECONDS)

    # -- wiring --------------------------------------------------------------------------------
    def _store_check(self) -> None:
        with self.access.store.read() as conn:
            conn.execute(text("SELECT 1"))

    async def restart(self, name: str) -> None:
        await self.runtime.manager.restart_server(name)

    async def _admin_credential(self, request: Any) -> bool:
        user, _reason = await self.auth.from_bearer(request)
        return user is not None

    def routes(self) -> list[Any]:
        """Health, metrics, admin API and console routes for :func:`servers.http.runner.serve_http`."""
        return [
            *health_routes(self.runtime.statuses, self.metrics, self._store_check if self.access else None,
                           authorize=self._admin_credential if self.enforce else None),
            *admin_routes(self.service, self.auth, restart=self.restart, reload=self.reloader.reload),
        ]

    async def run_background(self) -> None:
        """SIGHUP (and optional file watch) reloads, pending-approval events; until cancelled."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.reloader.on_sighup)
            if self.watch_config:
                tg.start_soon(self.reloader.watch_file)
            if self.access is not None:
                tg.start_soon(self._watch_approvals)

    def announce(self, mcp_url: str) -> None:
        """Write ``<data_dir>/serve.json`` (:func:`servers.shared.endpoint.endpoint_record`): where the CLI of
        this data folder finds the running serve (with the local admin token)."""
        import json

        base = mcp_url.rsplit("/", 1)[0]
        self.endpoint_path = self.data_dir / ENDPOINT_FILE
        record = endpoint_record(base, self.data_dir, self.db_url, self.config_path)
        from host.paths import private_opener

        self._endpoint_text = json.dumps(record)
        with open(self.endpoint_path, "w", encoding="utf-8", opener=private_opener) as fh:  # 0600
            fh.write(self._endpoint_text)

    def close(self) -> None:
        """Remove the local admin token and endpoint files this process wrote (the CLI then knows no
        serve runs here); files another serve of the data folder wrote since are left alone."""
        remove_if_ours(self.endpoint_path, self._endpoint_text)
        remove_if_ours(self.token_path, self.auth.local_token or "")
