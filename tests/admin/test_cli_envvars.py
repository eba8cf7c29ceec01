"""Every option a client may not own on the command line has a ``TOOLHOST_*`` variable; a flag on
the command line wins over its variable, and a bad value in a variable is refused like the flag's."""

from __future__ import annotations

import json
import os
import subprocess

import typer
from typer.testing import CliRunner

from servers.cli.options import AuthChoice, Expose, LogFormat, LogLevel
from servers.cli.serve_options import (
    SERVE_ENVVARS,
    AuthOpt,
    ExposeOpt,
    HostOpt,
    LogFormatOpt,
    LogLevelOpt,
    MetricsHostOpt,
    MetricsPortOpt,
    PortOpt,
    ServeUserOpt,
    StdioOpt,
    WatchConfigOpt,
)
from tests.admin.support import TOOLHOST, config


def _probe() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def serve(host: HostOpt = "127.0.0.1", port: PortOpt = 8765, stdio: StdioOpt = False,
              expose: ExposeOpt = Expose.search, auth: AuthOpt = AuthChoice.auto, user: ServeUserOpt = None,
              log_level: LogLevelOpt = LogLevel.info, log_format: LogFormatOpt = LogFormat.text,
              watch_config: WatchConfigOpt = False, metrics_host: MetricsHostOpt = "127.0.0.1",
              metrics_port: MetricsPortOpt = None) -> None:
        typer.echo(json.dumps([host, port, stdio, expose.value, auth.value, user, log_level.value,
                               log_format.value, watch_config, metrics_host, metrics_port]))

    return app


def test_every_serve_option_reads_its_variable_and_the_flag_wins() -> None:
    env = {"TOOLHOST_HOST": "0.0.0.0", "TOOLHOST_PORT": "9000", "TOOLHOST_STDIO": "1", "TOOLHOST_EXPOSE": "all",
           "TOOLHOST_AUTH": "on", "TOOLHOST_USER": "alice", "TOOLHOST_LOG_LEVEL": "debug",
           "TOOLHOST_LOG_FORMAT": "json", "TOOLHOST_WATCH_CONFIG": "true", "TOOLHOST_METRICS_HOST": "0.0.0.0",
           "TOOLHOST_METRICS_PORT": "9100"}
    assert set(env) | {"TOOLHOST_CONFIG"} == set(SERVE_ENVVARS.values())
    run = CliRunner().invoke(_probe(), [], env=env)
    assert (run.exit_code, json.loads(run.output)) == (
        0, ["0.0.0.0", 9000, True, "all", "on", "alice", "debug", "json", True, "0.0.0.0", 9100])
    flags = CliRunner().invoke(_probe(), ["--auth", "off", "--port", "1", "--metrics-port", "9200"], env=env)
    assert [json.loads(flags.output)[i] for i in (1, 4, 10)] == [1, "off", 9200]
    bad = CliRunner().invoke(_probe(), [], env={"TOOLHOST_AUTH": "maybe"})
    assert bad.exit_code == 2 and "Invalid value for '--auth'" in bad.output and "'maybe'" in bad.output
    port = CliRunner().invoke(_probe(), [], env={"TOOLHOST_METRICS_PORT": "70000"})
    said = " ".join(port.output.replace("│", "").split())
    assert port.exit_code == 2 and "Invalid value for '--metrics-port' (env var: 'TOOLHOST_METRICS_PORT')" in said
    assert "less than or equal to 65535" in said


def test_config_comes_from_toolhost_config_for_every_command(tmp_path) -> None:
    cfg = config(tmp_path)
    env = {**os.environ, "TOOLHOST_CONFIG": str(cfg), "TOOLHOST_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    listed = subprocess.run([TOOLHOST, "servers", "--json"], check=False, env=env, capture_output=True, text=True,
                            timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert [(s["name"], s["state"]) for s in json.loads(listed.stdout)] == [("orders", "connected"),
                                                                            ("rug", "connected")]
    missing = subprocess.run([TOOLHOST, "servers"], check=False,
                             env={**env, "TOOLHOST_CONFIG": str(tmp_path / "nope.json")},
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert "Invalid value for '--config'" in " ".join(missing.stderr.replace("│", "").split())
    assert "nope.json' does not exist" in " ".join(missing.stderr.replace("│", "").split())
