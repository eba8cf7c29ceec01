"""Upstream OAuth: an HTTP upstream that answers ``401`` with ``WWW-Authenticate`` resource metadata.

MCP authorization (spec 2025-11-25 / 2026-07-28, basic/authorization): toolhost is the OAuth
client of such a server when its entry says ``"toolhost": {"oauth": true}`` (or an object, see
:class:`host.config_model.OAuthOptions`). The SDK's :class:`mcp.client.auth.OAuthClientProvider`
does the protocol (protected resource metadata, authorization server metadata, dynamic client
registration or a pre-registered client, PKCE, RFC 8707 ``resource``, scope step-up, refresh);
with ``"grant": "client_credentials"`` the SDK's :class:`ClientCredentialsOAuthProvider` gets
tokens machine-to-machine (no browser). This module gives them:

* :class:`FileTokenStorage`: tokens and the client registration in
  ``<data_dir>/oauth/<server>.json`` (folder 0700, file 0600, replaced atomically). Tokens are
  never logged and never part of an error message.
* the authorization-code round trip through a **loopback redirect**
  (``http://127.0.0.1:<port>/callback``, RFC 8252 §7.3): the authorization URL goes to the
  *browser* of the running context (:func:`authorization_browser`; default: a warning in the
  server's log and toolhost's log naming the URL), and the code comes back to a one-shot local
  listener, bounded by :data:`AUTHORIZATION_TIMEOUT_SECONDS`. The port is the configured
  ``redirect_port``, else the one registered earlier (kept in the token file), else a free one.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from host.paths import private_opener, safe_file_name

__all__ = [
    "AUTHORIZATION_TIMEOUT_SECONDS",
    "Browser",
    "FileTokenStorage",
    "authorization_browser",
    "oauth_provider",
    "token_path",
]

AUTHORIZATION_TIMEOUT_SECONDS = 300.0
"""Longest wait for the authorization server's redirect back to toolhost (seconds)."""
CALLBACK_PATH = "/callback"
MAX_REQUEST_BYTES = 16384

Browser = Callable[[str], Awaitable[None]]
"""Opens an authorization URL for the user (a browser, or a test stand-in that follows it)."""

log = logging.getLogger("toolhost.oauth")
_BROWSER: ContextVar[Browser | None] = ContextVar("toolhost_oauth_browser", default=None)


@contextmanager
def authorization_browser(browser: Browser | None) -> Iterator[None]:
    """Within this block (and tasks started in it), authorization URLs go to ``browser``."""
    token = _BROWSER.set(browser)
    try:
        yield
    finally:
        _BROWSER.reset(token)


def token_path(data_dir: Path, server: str) -> Path:
    """Where the tokens of ``server`` are kept: ``<data_dir>/oauth/<server>.json``."""
    return data_dir / "oauth" / f"{safe_file_name(server)}.json"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over one private JSON file (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8", opener=private_opener) as fh:
            json.dump(data, fh)
        os.replace(tmp, self.path)

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self._read().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))

    def registered_port(self) -> int | None:
        """The loopback port of the stored client registration, if any."""
        uris = (self._read().get("client_info") or {}).get("redirect_uris") or []
        for uri in uris:
            port = urlsplit(str(uri)).port
            if port:
                return port
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _LoopbackRedirect:
    """The redirect/callback handlers of one provider: a one-shot listener on 127.0.0.1:``port``."""

    def __init__(self, server: str, port: int) -> None:
        self.server = server
        self.port = port
        self._url: str | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def redirect(self, url: str) -> None:
        self._url = url

    async def callback(self) -> AuthorizationCodeResult:
        url, self._url = self._url, None
        if url is None:
            raise OAuthFlowError("toolhost: no authorization URL to open")
        result: dict[str, str] = {}
        got = anyio.Event()

        async def handle(stream: Any) -> None:
            async with stream:
                request = b""
                with anyio.move_on_after(10):
                    while b"\r\n\r\n" not in request and len(request) < MAX_REQUEST_BYTES:
                        request += await stream.receive()
                target = request.split(b" ", 2)[1].decode("latin-1") if request.count(b" ") >= 2 else ""
                parts = urlsplit(target)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                ok = parts.path == CALLBACK_PATH and ("code" in query or "error" in query) and not got.is_set()
                text = ("toolhost: authorization received, you can close this tab." if ok
                        else "toolhost: not an authorization response.")
                status = "200 OK" if ok else "400 Bad Request"
                body = text.encode()
                await stream.send(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                  f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
                if ok:
                    result.update(query)
                    got.set()

        browser = _BROWSER.get() or self._announce
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        try:
            async with listener, anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, handle)
                tg.start_soon(browser, url)
                with anyio.move_on_after(AUTHORIZATION_TIMEOUT_SECONDS):
                    await got.wait()
                tg.cancel_scope.cancel()
        except OSError as err:
            raise OAuthFlowError(f"toolhost: cannot listen on 127.0.0.1:{self.port} for the authorization "
                                 f"redirect ({err.strerror or err}); set toolhost.oauth.redirect_port") from None
        if not got.is_set():
            raise OAuthFlowError(f"toolhost: {self.server!r} was not authorized within "
                                 f"{AUTHORIZATION_TIMEOUT_SECONDS:g} s")
        if "error" in result:
            raise OAuthFlowError(f"toolhost: the authorization server refused: {result['error']}"
                                 + (f" ({result['error_description']})" if result.get("error_description") else ""))
        return AuthorizationCodeResult(code=result["code"], state=result.get("state"), iss=result.get("iss"))

    async def _announce(self, url: str) -> None:
        log.warning("server %r needs authorization: open %s in a browser on this machine", self.server, url)


def oauth_provider(server: str, url: str, options: Any, data_dir: Path) -> OAuthClientProvider:
    """The httpx2 ``auth`` of one HTTP upstream (``options``: its :class:`OAuthOptions`)."""
    storage = FileTokenStorage(token_path(data_dir, server))
    if options.grant == "client_credentials":
        return ClientCredentialsOAuthProvider(url, storage, options.client_id, options.client_secret,
                                              token_endpoint_auth_method=options.token_endpoint_auth_method,
                                              scope=options.scope)
    port = options.redirect_port or storage.registered_port() or _free_port()
    redirect = _LoopbackRedirect(server, port)
    metadata = OAuthClientMetadata(
        client_name=options.client_name,
        redirect_uris=[redirect.redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=options.scope,
    )
    if options.client_id and storage._read().get("client_info") is None:
        # a pre-registered client: stored once, so the SDK skips dynamic registration
        storage._write("client_info", OAuthClientInformationFull(
            client_id=options.client_id, client_secret=options.client_secret, redirect_uris=[redirect.redirect_uri],
            token_endpoint_auth_method="client_secret_basic" if options.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
        ).model_dump(mode="json", exclude_none=True))
    return OAuthClientProvider(url, metadata, storage, redirect_handler=redirect.redirect,
                               callback_handler=redirect.callback)
