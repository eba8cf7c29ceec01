"""One HTTP serve per data folder: a second serve on a folder whose recorded serve is alive refuses
to start, naming the running one and how to proceed, and leaves its ``serve.json`` and
``admin.token`` alone; a record left by a crash never blocks; a serve removes only the files it
wrote."""

from __future__ import annotations

import json
import subprocess

from tests.admin.support import TOOLHOST, Serve, config, people


def _serve_once(cfg, data) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLHOST, "serve", "--port", "0", "--config", str(cfg), "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)


def test_a_second_serve_on_a_live_folder_refuses_and_touches_nothing(tmp_path) -> None:
    data = tmp_path / "data"
    people(data)
    cfg = config(tmp_path)
    with Serve(cfg, data) as first:
        record, token = (data / "serve.json").read_text(), first.token
        second = _serve_once(cfg, data)
        assert second.returncode == 2
        pid = first.proc.pid
        assert (f"another toolhost serve (pid {pid}, {first.url}/mcp) is running on this data folder"
                in second.stderr)
        assert f"stop it (kill {pid}) or start this one with another --data-dir" in second.stderr
        assert (data / "serve.json").read_text() == record and first.token == token
        assert first.api().get("/servers").status_code == 200  # the first serve's token still works
    assert not (data / "serve.json").exists() and not (data / "admin.token").exists()


def test_a_record_left_by_a_crash_does_not_block(tmp_path) -> None:
    data = tmp_path / "data"
    people(data)
    ghost = subprocess.Popen(["true"])
    ghost.wait(timeout=10)
    (data / "serve.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": ghost.pid}))
    (data / "admin.token").write_text("tha_stale")
    with Serve(config(tmp_path), data) as serve:
        assert json.loads((data / "serve.json").read_text())["pid"] == serve.proc.pid
        assert serve.token != "tha_stale"


def test_a_serve_leaves_files_another_serve_wrote(tmp_path) -> None:
    data = tmp_path / "data"
    people(data)
    with Serve(config(tmp_path), data):
        # a later serve took the folder over (as after a restart): its files are not ours to delete
        (data / "serve.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": 1}))
        (data / "admin.token").write_text("tha_other")
    assert (data / "admin.token").read_text() == "tha_other"
    assert json.loads((data / "serve.json").read_text())["pid"] == 1


def test_a_serve_still_starting_holds_the_folder_and_a_killed_one_does_not(tmp_path) -> None:
    import fcntl
    import os

    data = tmp_path / "data"
    people(data)
    cfg = config(tmp_path)
    fd = os.open(data / "serve.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a serve does before it writes admin.token
        starting = _serve_once(cfg, data)
        assert starting.returncode == 2
        assert "another toolhost serve is starting on this data folder (it holds serve.lock)" in starting.stderr
        assert not (data / "admin.token").exists()
    finally:
        os.close(fd)
    with Serve(cfg, data) as crashed:
        crashed.proc.kill()  # SIGKILL: no clean-up; its serve.json and admin.token stay behind
        crashed.proc.wait(timeout=30)
    assert (data / "serve.json").exists()
    with Serve(cfg, data) as again:  # the kernel released the lock; the stale record does not block
        assert json.loads((data / "serve.json").read_text())["pid"] == again.proc.pid
