"""Config reload without restart: on SIGHUP, on ``POST /admin/api/reload``, or when the file changes.

The new file is parsed and validated first; an invalid one is refused with its error and the
old configuration keeps serving. Otherwise: added servers connect, removed ones disconnect
(their tools leave the registry), changed ones (any field of their entry differs) reconnect,
unchanged servers and calls in flight on them are untouched. Reloads run one at a time. Each
reload, applied or refused, leaves a ``config.reload`` admin audit row naming who asked
(the admin, ``signal:SIGHUP`` or ``config-watch``).
"""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

import anyio

from host.config import load_config
from host.errors import ConfigError

__all__ = ["ConfigReloader"]

_logger = logging.getLogger("toolhost.reload")

WATCH_INTERVAL_SECONDS = 2.0


class ConfigReloader:
    """Applies a re-read configuration to a running :class:`host.runtime.HostRuntime`.

    Args:
        runtime: the running host.
        config_path: the file to re-read (``None``: the bundled default config).
        data_dir: the data folder (for ``${...}`` paths in the config).
        events: a :class:`servers.observability.EventReporter` (``None``: log only).
        service: the :class:`servers.admin.AdminService` that audits each reload (``None``: none).
    """

    def __init__(self, runtime: Any, config_path: Path | None, data_dir: Path, events: Any = None,
                 service: Any = None) -> None:
        self.service = service
        self.runtime = runtime
        self.config_path = config_path
        self.data_dir = data_dir
        self.events = events
        self._lock = anyio.Lock()

    async def reload(self, by: str = "signal:SIGHUP") -> dict[str, Any]:
        """Re-read and apply for ``by`` (who asked, audited); returns ``{"added", "removed", "changed",
        "unchanged", "error"}`` (``error`` is the refusal reason, or ``None``)."""
        out = await self._reload()
        if self.service is not None:
            detail = (f"refused: {out['error']}" if out["error"] else
                      f"added {out['added'] or '-'}, removed {out['removed'] or '-'}, changed {out['changed'] or '-'}")
            await anyio.to_thread.run_sync(lambda: self.service.acting_as(by).acted("config.reload", detail))
        return out

    async def _reload(self) -> dict[str, Any]:
        async with self._lock:
            try:
                new = await anyio.to_thread.run_sync(lambda: load_config(self.config_path, data_dir=self.data_dir))
            except (ConfigError, OSError) as e:
                if self.events is not None:
                    self.events.config_reloaded([], [], [], error=str(e))
                return {"added": [], "removed": [], "changed": [], "unchanged": [], "error": str(e)}
            manager = self.runtime.manager
            old = {name: conn.config for name, conn in manager.connections.items()}
            added = [n for n in new.servers if n not in old]
            removed = [n for n in old if n not in new.servers]
            changed = [n for n in new.servers if n in old and new.servers[n] != old[n]]
            unchanged = [n for n in new.servers if n in old and n not in changed]
            manager.use_config(new)
            self.runtime.use_config(new)  # also the data-flow labels and the taint rule
            for name in removed + changed:
                await manager.remove_server(name)
            async with anyio.create_task_group() as tg:
                for name in added + changed:
                    tg.start_soon(manager.add_server, new.servers[name])
            if self.events is not None:
                self.events.config_reloaded(added, removed, changed)
            return {"added": added, "removed": removed, "changed": changed, "unchanged": unchanged, "error": None}

    async def on_sighup(self) -> None:
        """Reload on every SIGHUP until cancelled."""
        with anyio.open_signal_receiver(signal.SIGHUP) as signals:
            async for _sig in signals:
                await self.reload()

    async def watch_file(self, interval: float = WATCH_INTERVAL_SECONDS) -> None:
        """Reload when the config file's modification time or size changes (polling; until cancelled)."""
        if self.config_path is None:
            return
        path = Path(self.config_path)

        def stamp() -> tuple[int, int, int] | None:  # an editor's atomic replace changes the inode
            try:
                st = path.stat()
            except OSError:
                return None
            return st.st_mtime_ns, st.st_size, st.st_ino

        last = stamp()
        while True:
            await anyio.sleep(interval)
            now = stamp()
            if now != last and now is not None:
                last = now
                await self.reload(by="config-watch")
