"""HTTP authentication for the registry server: toolhost API keys as MCP bearer tokens.

:class:`ApiKeyVerifier` is the SDK's ``TokenVerifier`` (``mcp.server.auth.provider``) backed by
:class:`host.access.AccessControl`: a valid, unrevoked key ``th_<key_id>_<secret>`` gives an
``AccessToken`` with ``client_id = subject = <user>``, ``scopes = ["tools"]`` and
``claims = {"key_id": <key_id>}``; anything else gives ``None`` (a 401 whose text says whether the
key is missing, not a ``Bearer`` token, or not recognised: :mod:`servers.http.key_challenge`), and
the failure is written to the audit log (action ``auth``, the token redacted to its key id),
aggregated to at most one row per key id (or for all unknown keys) per minute
(:meth:`host.access.AccessControl.audit_auth_failure`).

:func:`principal_resolver` maps each request to its :class:`registry.policy.Principal`: the
authenticated user over HTTP; over stdio (no HTTP request) the ``--user`` principal.

Wiring (see also :func:`auth_settings`)::

    verifier = ApiKeyVerifier(access)
    server = create_registry_server(runtime, principal_for=principal_resolver(access))
    await serve_http(server, token_verifier=verifier, auth=auth_settings(host, port))
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from host.access import AccessControl
from host.access.key_cache import VerifiedKeys
from host.store import UserDisabled
from registry.policy import Principal
from servers.gateway.request_view import RequestView
from servers.http.key_challenge import refused_token

__all__ = ["NOBODY", "SCOPE", "ApiKeyVerifier", "auth_settings", "principal_from_access_token", "principal_resolver"]

SCOPE = "tools"
"""The one scope toolhost API keys carry."""

NOBODY = Principal(user="<unauthenticated>")
"""The principal of a request without valid credentials: not a valid user name, so no grant can match."""


class ApiKeyVerifier:
    """``TokenVerifier`` for toolhost API keys (structural: ``async verify_token(token) -> AccessToken | None``).

    Successful verifications are reused while the access revision is unchanged
    (:class:`host.access.key_cache.VerifiedKeys`): a known key costs one revision read per request.
    """

    def __init__(self, access: AccessControl, local_token: str | None = None) -> None:
        self.access = access
        self.local_token = local_token  # the admin API's local token: no API key, but no failed log-in either
        self.verified = VerifiedKeys()

    async def verify_token(self, token: str) -> AccessToken | None:
        if self.local_token and hmac.compare_digest(token.encode(), self.local_token.encode()):
            return None  # the admin API checks it (loopback only); MCP routes still answer 401
        # A key verified at the current access revision is reused (no thread hop, no key read);
        # any key/user/role change bumps the revision, so a revocation holds on the next request.
        revision = self.access.revision
        principal = self.verified.get(token, revision) if token else None
        if principal is None:
            try:
                principal = await anyio.to_thread.run_sync(self.access.authenticate, token)
            except UserDisabled as e:
                return refused_token(token, e.user, str(e))  # a 403 naming the state (key_challenge)
            if principal is None:
                await self.access.audit_auth_failure_async(token)
                return None
            self.verified.put(token, revision, principal)
        return AccessToken(
            token=token,
            client_id=principal.user,
            subject=principal.user,
            scopes=[SCOPE],
            claims={"key_id": principal.key_id, "roles": list(principal.roles)},
        )


def principal_from_access_token(token: AccessToken | None) -> Principal:
    """The principal an ``AccessToken`` from :class:`ApiKeyVerifier` stands for (``NOBODY`` for ``None``)."""
    if token is None or not token.subject:
        return NOBODY
    claims = token.claims or {}
    return Principal(user=token.subject, roles=tuple(claims.get("roles") or ()), key_id=claims.get("key_id"))


def _token_of(request: RequestView) -> AccessToken | None:
    """The bearer token the SDK's auth middleware verified for ``request``: its ASGI scope's
    authenticated user (Starlette ``AuthenticationMiddleware``), else the SDK's auth context variable."""
    user = request.http.scope.get("user") if request.http is not None else None
    if isinstance(user, AuthenticatedUser):
        return user.access_token
    return get_access_token()


def principal_resolver(
    access: AccessControl | None = None, *, stdio_user: str | None = None
) -> Callable[[RequestView], Principal]:
    """A ``PrincipalResolver`` for ``create_registry_server(principal_for=...)``.

    HTTP requests map to the authenticated key's user (``NOBODY`` without one). Requests without
    an HTTP request (stdio) map to ``stdio_user``, checked once here.

    Raises:
        host.store.NotFound: ``stdio_user`` is not a known user.
    """
    local = access.principal_for_user(stdio_user) if (access is not None and stdio_user) else None

    def resolve(request: RequestView) -> Principal:
        if request.http is None and local is not None:
            return local
        return principal_from_access_token(_token_of(request))

    return resolve


def auth_settings(resource_server_url: str, *, issuer_url: str | None = None) -> AuthSettings:
    """``AuthSettings`` for API-key auth: scope ``tools`` required.

    ``resource_server_url`` is the public MCP endpoint, e.g. ``http://127.0.0.1:8765/mcp``.
    Without ``issuer_url`` (toolhost's API keys: no OAuth authorization server exists) the settings
    carry no ``resource_server_url``, so no RFC 9728 protected-resource metadata is served or named
    in ``WWW-Authenticate``: a client that followed it would try dynamic client registration at an
    authorization server that is not there. With ``issuer_url`` (a real authorization server that
    issues tokens for this endpoint), the metadata is served and names it.
    """
    return AuthSettings(
        issuer_url=issuer_url or resource_server_url.rsplit("/mcp", 1)[0] or resource_server_url,
        resource_server_url=resource_server_url if issuer_url else None,
        required_scopes=[SCOPE],
        validate_token_resource=False,
    )
