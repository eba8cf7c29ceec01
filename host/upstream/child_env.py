"""The environment a stdio server is started with, and what its stderr says about it.

A stdio child never gets the whole parent environment by default (it would hand every secret of
the shell, e.g. ``OPENAI_API_KEY``, to every third-party server). It gets, by the effective
``inherit_env`` setting (a server's ``toolhost.inherit_env``, else the top-level one):

* ``"minimal"``: :data:`SAFE_ENV_VARS` only (PATH, HOME, user, shell, terminal, locale, TMPDIR, TZ);
* ``"network"`` (the default): those plus :data:`NETWORK_ENV_VARS` / :data:`NETWORK_ENV_PATTERNS`:
  CA bundles (``NODE_EXTRA_CA_CERTS``, ``SSL_CERT_FILE``, ``SSL_CERT_DIR``, ``REQUESTS_CA_BUNDLE``,
  ``CURL_CA_BUNDLE``, …), proxies (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``, ``ALL_PROXY`` in
  both cases) and package-manager settings (``npm_config_*``, ``UV_*`` except ``UV_PUBLISH_*``,
  ``PIP_*``, ``PIPX_*``, ``YARN_*``, …), so ``npx -y``/``uvx`` servers work behind a
  TLS-intercepting proxy exactly as they do in the user's shell;
* ``"all"``: the whole parent environment (every secret of it too);
* a list: the minimal set plus each listed name or shell-style pattern (``"AWS_*"``); the word
  ``"network"`` in the list adds the network set.

Then the server's own ``env`` is applied on top. Values that are shell function exports
(``BASH_FUNC_x%%=() { …``) are never passed.

:func:`stderr_hint` reads a failed server's stderr tail for certificate and proxy errors and
says which variable to set (the status line's reason ends with it).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "NETWORK_ENV_PATTERNS",
    "NETWORK_ENV_VARS",
    "SAFE_ENV_VARS",
    "InheritEnv",
    "inherited_env",
    "stderr_hint",
]

InheritEnv = str | list[str]
"""``"minimal"``, ``"network"``, ``"all"`` or a list of names / patterns (module docstring)."""

SAFE_ENV_VARS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
                 "TMPDIR", "TZ")
"""Parent variables every stdio child inherits (``inherit_env: "minimal"``)."""

_PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY")
NETWORK_ENV_VARS = (
    # CA bundles and TLS trust (Node, OpenSSL/Python, requests, curl, git, AWS SDKs, Deno)
    "NODE_EXTRA_CA_CERTS", "NODE_USE_SYSTEM_CA", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "AWS_CA_BUNDLE", "DENO_CERT", "PIP_CERT",
    # proxies, both spellings (curl and Python read the lower-case ones, Node tools either)
    *_PROXIES, *(p.lower() for p in _PROXIES),
    "GLOBAL_AGENT_HTTP_PROXY", "GLOBAL_AGENT_HTTPS_PROXY", "GLOBAL_AGENT_NO_PROXY",
    # where package managers keep caches and configuration
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
    # container runners (docker / podman entries)
    "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
)
"""Variables added by ``inherit_env: "network"`` (the default), besides :data:`NETWORK_ENV_PATTERNS`."""

NETWORK_ENV_PATTERNS = (
    "npm_config_*", "NPM_CONFIG_*", "YARN_*", "PNPM_*", "BUN_CONFIG_*", "COREPACK_*",
    "UV_*", "PIP_*", "PIPX_*", "POETRY_*",
)
"""Name patterns added by ``inherit_env: "network"`` (package-manager index, registry, cache and
TLS settings)."""

_NEVER_PATTERNS = ("UV_PUBLISH_*",)
"""Left out of the network set (upload credentials no server needs); name them to pass them."""


def _is_function_export(value: str) -> bool:
    return value.startswith("()")


def _network(name: str) -> bool:
    if name in NETWORK_ENV_VARS:
        return True
    if any(fnmatch.fnmatchcase(name, p) for p in _NEVER_PATTERNS):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in NETWORK_ENV_PATTERNS)


def inherited_env(inherit: InheritEnv, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent variables a stdio child inherits under ``inherit`` (module docstring).

    Args:
        inherit: ``"minimal"``, ``"network"``, ``"all"`` or a list of names / ``fnmatch`` patterns
            (case-sensitive; ``"network"`` in the list adds the network set).
        environ: the parent environment (default: ``os.environ``).

    Returns:
        ``{name: value}`` in the parent's order; shell function exports are left out.
    """
    env = os.environ if environ is None else environ
    if inherit == "all":
        return {k: v for k, v in env.items() if not _is_function_export(v)}
    names = list(inherit) if isinstance(inherit, list) else []
    network = inherit == "network" or "network" in names
    patterns = [n for n in names if n != "network"]

    def wanted(name: str) -> bool:
        if name in SAFE_ENV_VARS or (network and _network(name)):
            return True
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    return {k: v for k, v in env.items() if wanted(k) and not _is_function_export(v)}


# -- what a failed server's stderr says ----------------------------------------------------------
_CERT = re.compile(
    r"UNABLE_TO_GET_ISSUER_CERT(?:_LOCALLY)?|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|"
    r"UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_UNTRUSTED|CERTIFICATE_VERIFY_FAILED|certificate verify failed|"
    r"self[- ]signed certificate|unable to get local issuer certificate|invalid peer certificate|UnknownIssuer|"
    r"certificate signed by unknown authority|SSL certificate problem", re.IGNORECASE)
_PROXY_AUTH = re.compile(r"\b407\b|Proxy Authentication Required", re.IGNORECASE)
_PROXY_DOWN = re.compile(
    r"(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|Connection refused|ProxyError|Unable to connect to proxy|"
    r"tunneling socket could not be established)[^\n]*proxy|proxy[^\n]*(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|"
    r"Connection refused|refused|unreachable)|ProxyError|Unable to connect to proxy|"
    r"tunneling socket could not be established", re.IGNORECASE)
_OFFLINE = re.compile(
    r"(?:ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ENETUNREACH|ECONNREFUSED)[^\n]*(?:registry|npmjs|pypi|pythonhosted|github)|"
    r"(?:registry|npmjs|pypi|pythonhosted)[^\n]*(?:ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ENETUNREACH|"
    r"Temporary failure in name resolution|Failed to connect|dns error)", re.IGNORECASE)
_NODE = frozenset({"node", "npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "bun", "deno"})
_PYTHON = frozenset({"uvx", "uv", "python", "python3", "pipx", "pip"})


def _matched_line(pattern: re.Pattern[str], text: str) -> str | None:
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip()[:160]
    m = pattern.search(text)
    return m.group(0) if m else None


def _ca_variables(command: str) -> tuple[tuple[str, ...], str]:
    """The CA variables the server's runtime reads (guessed from its command) and how to say so."""
    kind = Path(command).name.lower().removesuffix(".cmd")
    if kind in _NODE:
        return ("NODE_EXTRA_CA_CERTS",), "NODE_EXTRA_CA_CERTS (Node reads no system store by default)"
    if kind in _PYTHON or kind.startswith("python"):
        return (("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"),
                "SSL_CERT_FILE (and REQUESTS_CA_BUNDLE for requests-based servers; uv also takes UV_NATIVE_TLS=1)")
    return (("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"),
            "NODE_EXTRA_CA_CERTS for Node servers, SSL_CERT_FILE / REQUESTS_CA_BUNDLE for Python ones")


def stderr_hint(
    tail: str,
    *,
    server: str,
    command: str,
    child_env: Mapping[str, str],
    parent_env: Mapping[str, str] | None = None,
) -> str | None:
    """What a failed stdio server's stderr ``tail`` says about TLS trust or proxies, or ``None``.

    Recognised: certificate verification errors (Node's ``UNABLE_TO_GET_ISSUER_CERT_LOCALLY``,
    ``SELF_SIGNED_CERT_IN_CHAIN``, OpenSSL's ``CERTIFICATE_VERIFY_FAILED``, rustls'
    ``invalid peer certificate: UnknownIssuer``, Go's ``certificate signed by unknown authority``,
    curl's ``SSL certificate problem``), ``407 Proxy Authentication Required``, a refused or
    unreachable proxy, and a package registry that cannot be reached. The text quotes the line,
    names the variable to set (for the server's runtime, from ``command``), and says when the
    variable is set in toolhost's environment but was not passed (``inherit_env``).
    """
    parent = os.environ if parent_env is None else parent_env
    where = f"set it in your shell or in mcpServers.{server}.env"

    def unpassed(names: Sequence[str]) -> str:
        held = [n for n in names if n in parent and n not in child_env]
        if not held:
            return ""
        return (f"; {', '.join(held)} {'is' if len(held) == 1 else 'are'} set in toolhost's environment but not "
                f"passed to this server (toolhost.inherit_env: use \"network\")")

    line = _matched_line(_CERT, tail)
    if line is not None:
        names, which = _ca_variables(command)
        set_ca = [n for n in names if n in child_env]
        if set_ca:
            given = ", ".join(f"{n}={child_env[n]}" for n in set_ca)
            return (f"its stderr shows a TLS certificate error ({line!r}) although {given} "
                    f"{'is' if len(set_ca) == 1 else 'are'} passed: check that the bundle holds the CA certificate "
                    "of your proxy (or of the server)")
        return (f"its stderr shows a TLS certificate error ({line!r}): behind a TLS-intercepting proxy, point "
                f"{which} at your CA bundle ({where})" + unpassed(names))
    proxies = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
    line = _matched_line(_PROXY_AUTH, tail)
    if line is not None and "proxy" in tail.lower():
        return (f"its stderr shows the proxy wants credentials ({line!r}): put them in HTTPS_PROXY, e.g. "
                f"http://USER:PASSWORD@proxy:3128 ({where})" + unpassed(proxies))
    line = _matched_line(_PROXY_DOWN, tail)
    if line is not None:
        set_to = next((f"{n}={child_env[n]}" for n in proxies if n in child_env), None)
        what = f"check {set_to}" if set_to else "check HTTPS_PROXY / HTTP_PROXY"
        return (f"its stderr shows the proxy could not be reached ({line!r}): {what} ({where}), "
                "or NO_PROXY for this host")
    line = _matched_line(_OFFLINE, tail)
    if line is not None:
        if any(n in child_env for n in proxies):
            return f"its stderr shows the package registry could not be reached ({line!r}) through the proxy set"
        return (f"its stderr shows the package registry could not be reached ({line!r}): behind a proxy, set "
                f"HTTPS_PROXY (and NO_PROXY) ({where}); a private registry: npm_config_registry / UV_INDEX_URL"
                + unpassed(proxies))
    return None
