"""Every `toolhost` command in README.md runs as written (in README order, on one temporary data
folder, with the venv's bin first on PATH as after `source .venv/bin/activate`), and the Python SDK
example connects with an API key.

`serve` lines get `--port 0` appended (tests never bind 8765) and are stopped with SIGTERM once
they announce their URL; `serve --stdio` gets an empty stdin and must exit 0 at its end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = str(Path(sys.executable).parent)


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def toolhost_lines() -> list[str]:
    """The command lines starting with ``toolhost`` (comments after the command removed)."""
    lines = []
    for block in bash_blocks(README.read_text()):
        for raw in block.splitlines():
            line = re.sub(r"\s{2,}#.*$", "", raw).strip()
            if line.startswith("toolhost "):
                lines.append(line)
    return lines


def python_example() -> str:
    [code] = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)[:1] or [""]
    return textwrap.dedent(code)


def env_for(home: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "TOOLHOST_HOME": str(home),
            "COLUMNS": "200"}


def run_serve(line: str, env: dict[str, str]) -> tuple[int, str, str | None]:
    """Start a serve line (``--port 0`` added), wait for its URL, SIGTERM it: ``(rc, stderr, url)``."""
    stdio = "--stdio" in line
    cmd = line if stdio else f"exec {line} --port 0"
    proc = subprocess.Popen(["bash", "-c", cmd], env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if stdio:
            _out, err = proc.communicate(timeout=120)
            return proc.returncode, err, None
        seen = []
        url = None
        assert proc.stderr is not None
        for got in proc.stderr:
            seen.append(got)
            m = re.search(r"at (http://\S+/mcp)", got)
            if m:
                url = m.group(1)
                break
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=60)[1]
        return proc.returncode, "".join(seen) + rest, url
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_readme_names_commands_to_run() -> None:
    lines = toolhost_lines()
    assert len(lines) >= 15
    assert "source .venv/bin/activate" in README.read_text()


@pytest.mark.timeout(900)
def test_every_readme_command_runs_as_written(tmp_path) -> None:
    home = tmp_path / "home"
    env = env_for(home)
    results = []
    alice_key = None
    for line in toolhost_lines():
        if re.match(r"toolhost serve(\s|$)", line):
            rc, err, _url = run_serve(line, env)
            results.append((line, rc, err[-800:]))
            continue
        proc = subprocess.run(["bash", "-c", line], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)
        results.append((line, proc.returncode, (proc.stdout + proc.stderr)[-800:]))
        if line.startswith("toolhost keys create alice"):
            alice_key = proc.stdout.strip().splitlines()[-1]
    failed = [(line, rc, out) for line, rc, out in results if rc != 0]
    assert failed == [], "\n\n".join(f"$ {line}\nexit {rc}\n{out}" for line, rc, out in failed)
    assert alice_key is not None and alice_key.startswith("th_")

    # The Python SDK example, as written, against a running serve with alice's key.
    serve = subprocess.Popen([f"{BIN}/toolhost", "serve", "--port", "0"], env=env, cwd=ROOT,
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        url = None
        assert serve.stderr is not None
        for got in serve.stderr:
            m = re.search(r"at (http://\S+/mcp)", got)
            if m:
                url = m.group(1)
                break
        assert url is not None
        example = tmp_path / "example.py"
        example.write_text(python_example())
        out = subprocess.run([sys.executable, str(example)],
                             env={**env, "TOOLHOST_URL": url, "TOOLHOST_KEY": alice_key},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "orders__get_order" in out.stdout
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(timeout=10)


def test_python_client_example_waits_longer_than_the_longest_default_call() -> None:
    """The SDK example's read timeout outlasts a tool's default timeout and a script's wall clock plus its
    sandbox wait, so a slow call ends with toolhost's result or error, not the client's ReadTimeout."""
    from host.config_model import CodeModeLimitOptions, CodeModePoolOptions
    from registry.tool import DEFAULT_TIMEOUT_SECONDS

    code = python_example()
    [read] = re.findall(r"httpx2\.Timeout\(\d+, read=(\d+)\)", code)
    assert "timeout=timeout" in code
    longest_script = CodeModeLimitOptions().wall_clock_seconds + CodeModePoolOptions().checkout_timeout_seconds
    assert int(read) == 300
    assert int(read) > max(DEFAULT_TIMEOUT_SECONDS, longest_script)


if __name__ == "__main__":  # pragma: no cover - list the commands
    print("\n".join(toolhost_lines()))
    pytest.main([__file__])


def test_readme_states_the_redaction_scan_budget_and_its_marker() -> None:
    """The 32 KiB budget of one redaction (registry/redaction.py) and the text that replaces what lies
    past it are documented with the values the code uses."""
    from registry.redaction import SCAN_BUDGET_CHARS, redact

    text = " ".join(README.read_text().split())
    assert f"a budget of {SCAN_BUDGET_CHARS // 1024} KiB ({SCAN_BUDGET_CHARS:,} characters;" in text
    marker = redact({"note": "password " + "x" * SCAN_BUDGET_CHARS})["note"]
    assert marker.endswith("[REDACTED: 9 more characters not scanned]")
    assert "reads `[REDACTED: N more characters not scanned]` (N = the characters left out)" in text
