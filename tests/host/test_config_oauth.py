"""``toolhost.oauth`` of an HTTP server entry (host.config_model.OAuthOptions)."""

from __future__ import annotations

from host.config import parse_config


def _server(oauth: object) -> object:
    cfg = parse_config({"mcpServers": {"docs": {"url": "https://mcp.example/mcp", "toolhost": {"oauth": oauth}}}},
                       source="cfg.json")
    return cfg.servers["docs"].toolhost.oauth


def test_true_means_the_authorization_code_flow_with_every_default() -> None:
    oauth = _server(True)
    assert (oauth.grant, oauth.client_name, oauth.scope, oauth.client_id, oauth.redirect_port) == (
        "authorization_code", "toolhost", None, None, 0)
    assert _server(False) is None


def test_options_are_kept_and_a_bad_port_is_refused_naming_it() -> None:
    oauth = _server({"grant": "client_credentials", "client_id": "c1", "client_secret": "s1", "scope": "read"})
    assert (oauth.grant, oauth.client_id, oauth.client_secret, oauth.scope,
            oauth.token_endpoint_auth_method) == ("client_credentials", "c1", "s1", "read", "client_secret_basic")
    cfg = parse_config({"mcpServers": {"docs": {"url": "https://mcp.example/mcp", "toolhost": {
        "oauth": {"redirect_port": 70000}}}}}, source="cfg.json")
    assert cfg.failed["docs"].reason == ("mcpServers.docs.toolhost.oauth.redirect_port: Input should be less than "
                                         "or equal to 65535, got 70000 (write a number of at most 65535)")

def test_a_rejected_object_is_named_by_its_keys_so_no_secret_reaches_the_message() -> None:
    cfg = parse_config({"mcpServers": {"docs": {"url": "https://mcp.example/mcp", "toolhost": {"oauth": {
        "grant": "client_credentials", "client_secret": "sk-live-abcdef1234567890abcdef"}}}}}, source="cfg.json")
    assert "docs" not in cfg.servers
    assert cfg.failed["docs"].reason == (
        'mcpServers.docs.toolhost.oauth: oauth grant "client_credentials" needs client_id and '
        "client_secret (got an object with keys grant, client_secret)")
