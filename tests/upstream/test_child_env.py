"""What a stdio server inherits of toolhost's environment (``inherit_env``), and what a failed
server's stderr tells the user to set (certificate and proxy errors)."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from host.upstream.child_env import SAFE_ENV_VARS, inherited_env, stderr_hint
from host.upstream.manager import ServerManager
from tests.upstream.support import FAKES, config

PY = sys.executable
ENV_SERVER = str(FAKES / "env_server.py")
STDERR_EXIT = str(FAKES / "stderr_then_exit.py")

SHELL = {
    "NODE_EXTRA_CA_CERTS": "/corp/ca.pem", "SSL_CERT_FILE": "/corp/bundle.pem", "SSL_CERT_DIR": "/corp/certs",
    "REQUESTS_CA_BUNDLE": "/corp/bundle.pem", "CURL_CA_BUNDLE": "/corp/bundle.pem",
    "HTTPS_PROXY": "http://proxy:3128", "http_proxy": "http://proxy:3128", "NO_PROXY": "localhost,.corp",
    "all_proxy": "socks5://proxy:1080", "npm_config_registry": "https://npm.corp/", "UV_INDEX_URL": "https://pypi.corp/simple",
    "PIP_INDEX_URL": "https://pypi.corp/simple", "UV_PUBLISH_TOKEN": "pypi-secret",
    "OPENAI_API_KEY": "sk-parent-secret", "AWS_REGION": "eu-west-1",
}
NETWORK = {k: v for k, v in SHELL.items() if k not in ("UV_PUBLISH_TOKEN", "OPENAI_API_KEY", "AWS_REGION")}
_CA_AND_PROXY = ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                 "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
                 "all_proxy", "AWS_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT")


@pytest.fixture
def shell(monkeypatch):
    """toolhost's own environment: the machine's CA/proxy variables removed, the corporate ones set."""
    for name in _CA_AND_PROXY:
        monkeypatch.delenv(name, raising=False)
    for name, value in SHELL.items():
        monkeypatch.setenv(name, value)


def _server(**toolhost) -> dict:
    entry = {"command": PY, "args": [ENV_SERVER]}
    return entry | ({"toolhost": toolhost} if toolhost else {})


@pytest.mark.anyio
async def test_stdio_servers_inherit_network_settings_by_default_and_the_switch_changes_it(tmp_path, shell):
    cfg = config({
        "default": _server(),
        "minimal": _server(inherit_env="minimal"),
        "listed": _server(inherit_env=["AWS_*", "UV_PUBLISH_TOKEN"]),
        "everything": _server(inherit_env="all"),
    })
    with anyio.fail_after(60):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=False) as m:
            seen = {}
            for name in ("default", "minimal", "listed", "everything"):
                res = await m.call_tool(name, "environment", {}, timeout_seconds=20)
                seen[name] = json.loads(res.content[0].text)
    for name in ("default", "minimal", "listed", "everything"):
        assert seen[name]["PATH"] and seen[name]["HOME"]
    default = seen["default"]
    assert {k: default.get(k) for k in NETWORK} == NETWORK
    assert "OPENAI_API_KEY" not in default and "UV_PUBLISH_TOKEN" not in default and "AWS_REGION" not in default
    assert not set(SHELL) & set(seen["minimal"])
    assert set(seen["minimal"]) <= set(SAFE_ENV_VARS)
    assert {k: seen["listed"].get(k) for k in SHELL if k in seen["listed"]} == {
        "AWS_REGION": "eu-west-1", "UV_PUBLISH_TOKEN": "pypi-secret"}
    assert {k: seen["everything"].get(k) for k in SHELL} == SHELL


def test_top_level_switch_is_the_default_and_a_server_overrides_it():
    cfg = config({"a": {"command": "x"}, "b": {"command": "y", "toolhost": {"inherit_env": "all"}}},
                 inherit_env=["network", "AWS_*"])
    assert cfg.servers["a"].toolhost.inherit_env == ["network", "AWS_*"]
    assert cfg.servers["b"].toolhost.inherit_env == "all"
    assert inherited_env(["network", "AWS_*"], {"AWS_REGION": "x", "HTTPS_PROXY": "p", "OPENAI_API_KEY": "k",
                                                "BASH_FUNC_f%%": "() { :; }", "PATH": "/bin"}) == {
        "AWS_REGION": "x", "HTTPS_PROXY": "p", "PATH": "/bin"}
    assert cfg.failed == {}
    bad = config({"c": {"command": "x", "toolhost": {"inherit_env": "netwrk"}}})
    assert bad.failed["c"].reason == ('mcpServers.c.toolhost.inherit_env: expected "network", "minimal", "all" or '
                                      "a list of variable names / patterns; did you mean 'network'? (got 'netwrk')")


@pytest.mark.anyio
async def test_a_certificate_error_on_stderr_names_the_variable_to_set(tmp_path, monkeypatch):
    for name in _CA_AND_PROXY:
        monkeypatch.delenv(name, raising=False)
    node_error = "npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY"
    py_error = ("ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                "self-signed certificate in certificate chain")
    cfg = config({
        "node": {"command": "node", "args": ["-e", "console.error('npm error network request failed'); "
                                                    f"console.error({node_error!r}); process.exit(1)"]},
        "python": {"command": PY, "args": [STDERR_EXIT, py_error]},
        "minimal": {"command": "node", "args": ["-e", f"console.error({node_error!r}); process.exit(1)"],
                    "toolhost": {"inherit_env": "minimal"}},
    })
    with anyio.fail_after(60):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=False) as m:
            errors = {name: m.connections[name].status.error for name in ("node", "python")}
            tail = m.connections["minimal"].status.stderr_tail
    assert errors["node"].endswith(
        f"; its stderr shows a TLS certificate error ({node_error!r}): behind a TLS-intercepting proxy, point "
        "NODE_EXTRA_CA_CERTS (Node reads no system store by default) at your CA bundle (set it in your shell or "
        "in mcpServers.node.env)")
    assert errors["python"].endswith(
        f"; its stderr shows a TLS certificate error ({py_error[:160]!r}): behind a TLS-intercepting proxy, point "
        "SSL_CERT_FILE (and REQUESTS_CA_BUNDLE for requests-based servers; uv also takes UV_NATIVE_TLS=1) at your "
        "CA bundle (set it in your shell or in mcpServers.python.env)")
    assert tail == node_error
    shell = {"NODE_EXTRA_CA_CERTS": "/corp/ca.pem"}  # set in toolhost's environment, not passed under "minimal"
    assert stderr_hint(tail, server="minimal", command="node", child_env={"PATH": "/bin"}, parent_env=shell).endswith(
        "; NODE_EXTRA_CA_CERTS is set in toolhost's environment but not passed to this server "
        '(toolhost.inherit_env: use "network")')
    assert stderr_hint(tail, server="minimal", command="npx", child_env={"NODE_EXTRA_CA_CERTS": "/corp/ca.pem"}) == (
        f"its stderr shows a TLS certificate error ({node_error!r}) although NODE_EXTRA_CA_CERTS=/corp/ca.pem is "
        "passed: check that the bundle holds the CA certificate of your proxy (or of the server)")


@pytest.mark.parametrize(("stderr", "child", "hint"), [
    ("npm error 407 Proxy Authentication Required - GET https://registry.npmjs.org/x", {"HTTPS_PROXY": "http://p:3128"},
     "its stderr shows the proxy wants credentials ('npm error 407 Proxy Authentication Required - GET "
     "https://registry.npmjs.org/x'): put them in HTTPS_PROXY, e.g. http://USER:PASSWORD@proxy:3128 (set it in "
     "your shell or in mcpServers.s.env)"),
    ("npm error request to https://registry.npmjs.org/x failed, reason: connect ECONNREFUSED 10.0.0.1:3128 (proxy)",
     {"HTTPS_PROXY": "http://10.0.0.1:3128"},
     "its stderr shows the proxy could not be reached ('npm error request to https://registry.npmjs.org/x failed, "
     "reason: connect ECONNREFUSED 10.0.0.1:3128 (proxy)'): check HTTPS_PROXY=http://10.0.0.1:3128 (set it in your "
     "shell or in mcpServers.s.env), or NO_PROXY for this host"),
    ("npm error getaddrinfo EAI_AGAIN registry.npmjs.org", {},
     "its stderr shows the package registry could not be reached ('npm error getaddrinfo EAI_AGAIN "
     "registry.npmjs.org'): behind a proxy, set HTTPS_PROXY (and NO_PROXY) (set it in your shell or in "
     "mcpServers.s.env); a private registry: npm_config_registry / UV_INDEX_URL"),
    ("Traceback (most recent call last):\nValueError: bad flag", {}, None),
])
def test_proxy_and_registry_errors_on_stderr_name_the_variable(stderr, child, hint):
    assert stderr_hint(stderr, server="s", command="npx", child_env=child, parent_env={}) == hint
