"""Every escape attempt is refused or bounded with a clear error, and the pool serves the next script.

Each attack runs in a real worker; right after it, a normal script runs in the same pool and must
return its value. Scripts the manifest parser already refuses (eval, dunders) are also run with a
hand-made manifest, to show the sandbox refuses them too.
"""

from __future__ import annotations

import anyio
import pytest

from host.code_mode import ScriptOutcome
from registry.code_mode import Manifest, ScriptRejected, build_manifest, script_sha256
from tests.code_mode.fakes import NAMES, FakeCaller, open_pool, run

pytestmark = pytest.mark.anyio

NORMAL = "r = await orders__get(id=4)\nr['total']"


async def _then_normal(pool) -> None:
    outcome = await run(pool, NORMAL)
    assert (outcome.status, outcome.value) == ("ok", 40), outcome.message


def _last_line(outcome: ScriptOutcome) -> str:
    return outcome.message.strip().splitlines()[-1]


SANDBOX_REFUSALS = [
    ("import os\nos.system('id')", "AttributeError: module 'os' has no attribute 'system'"),
    ("import sys\nsys.modules", "AttributeError: module 'sys' has no attribute 'modules'"),
    ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
    ("import socket", "ModuleNotFoundError: No module named 'socket'"),
    ("open('/etc/passwd').read()", "PermissionError: Permission denied: '/etc/passwd'"),
    ("import pathlib\npathlib.Path('/etc/passwd').read_text()", "PermissionError: Permission denied: '/etc/passwd'"),
    ("import os\nos.listdir('/')", "PermissionError: Permission denied: '/'"),
    ("import os\nos.environ['HOME']", "RuntimeError: 'os.environ' is not supported in this environment"),
    ("import os\nos.getenv('PATH')", "RuntimeError: 'os.getenv' is not supported in this environment"),
    ("[].__class__", "AttributeError: 'list' object has no attribute '__class__'"),
    ("().__class__.__base__.__subclasses__()", "AttributeError: 'tuple' object has no attribute '__class__'"),
    ("(lambda: 1).__globals__", "AttributeError: 'function' object has no attribute '__globals__'"),
    ("__builtins__", "NameError: name '__builtins__' is not defined"),
    ("eval('orders__cancel')", "NameError: name 'orders__cancel' is not defined"),
    (
        "exec('orders__cancel(id=1)')",
        (
            "NameError: unknown_tool at code_mode.manifest: name 'orders__cancel' is not defined"
            " (no tool of this name is in the script's capability manifest)"
        ),
    ),
]


@pytest.mark.parametrize("script", ["raise ValueError(open)", "raise KeyError(1, 2)"])
async def test_a_construct_the_sandbox_does_not_support_is_a_clean_script_error(script):
    async with open_pool() as pool:
        with anyio.fail_after(20):
            outcome = await run(pool, script)
        assert (outcome.status, outcome.where) == ("script_error", "code_mode.sandbox")
        assert outcome.message == (
            "the sandbox rejected the script: exceptions can only be called with zero or one string argument;"
            " the sandbox runs a subset of Python, so rewrite that statement")
        await _then_normal(pool)


@pytest.mark.parametrize(
    ("script", "last_line"), SANDBOX_REFUSALS, ids=[s.splitlines()[-1][:40] for s, _ in SANDBOX_REFUSALS]
)
async def test_the_sandbox_refuses_imports_files_environment_and_introspection(script, last_line):
    caller = FakeCaller()
    manifest = Manifest(script_sha256(script), tools={"orders__get": "orders__get"})  # parse checks skipped on purpose
    async with open_pool() as pool:
        with anyio.fail_after(20):
            outcome = await pool.run(script, manifest, caller)
        assert outcome.status == "script_error"
        assert outcome.where == "code_mode.sandbox"
        assert last_line in _last_line(outcome)
        assert caller.calls == []
        await _then_normal(pool)


@pytest.mark.parametrize(
    "script", ["eval('orders__cancel')", "exec('x = 1')", "().__class__", "globals()", "__import__('os')"]
)
def test_the_manifest_refuses_code_built_at_run_time_before_anything_runs(script):
    with pytest.raises(ScriptRejected, match="not available in code mode"):
        build_manifest(script, NAMES)


async def test_a_tool_name_built_at_run_time_is_refused_and_never_reaches_the_host():
    caller = FakeCaller()
    script = "await orders__get(id=1)\nname = 'orders__' + 'cancel'\nawait call_tool(name, {'id': 1})"
    async with open_pool() as pool:
        outcome = await run(pool, script, caller)
        assert outcome.status == "script_error"
        assert _last_line(outcome) == (
            "PermissionError: not_in_manifest at code_mode.manifest: tool 'orders__cancel' is not in this script's"
            " capability manifest (tools named literally: orders__get); name every tool literally so the manifest"
            " and its approval cover it"
        )
        assert [(c.name, c.status) for c in outcome.calls] == [
            ("orders__get", "ok"),
            ("orders__cancel", "not_in_manifest"),
        ]
        assert [n for _, n, _ in caller.calls] == ["orders__get"]
        await _then_normal(pool)


async def test_a_hidden_tool_called_by_name_is_unknown():
    caller = FakeCaller()
    async with open_pool() as pool:
        outcome = await run(pool, "await admin__drop_everything(really=True)", caller)
        assert outcome.status == "script_error"
        assert _last_line(outcome) == (
            "NameError: unknown_tool at code_mode.manifest: name 'admin__drop_everything'"
            " is not defined (no tool of this name is in the script's capability manifest)"
        )
        assert caller.calls == []
        await _then_normal(pool)


async def test_the_worker_has_an_empty_environment():
    async with open_pool() as pool:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                caller = _Pause()
                tg.start_soon(run, pool, "await orders__list()", caller)
                await caller.reached.wait()
                (pid,) = pool.worker_pids_in_use()
                environ = await anyio.Path(f"/proc/{pid}/environ").read_bytes()
                caller.go.set()
    assert environ == b""


class _Pause(FakeCaller):
    def __init__(self) -> None:
        super().__init__()
        self.reached, self.go = anyio.Event(), anyio.Event()

    async def call(self, name, arguments, *, step):
        self.reached.set()
        await self.go.wait()
        return await super().call(name, arguments, step=step)


MEMORY = (
    "the script needed more than 67108864 bytes of memory (toolhost.code_mode.limits.max_memory_bytes = 67108864);"
    " build smaller values"
)

LIMITS = [
    (
        "await orders__slow()",
        {"wall_clock_seconds": 1.5},
        "wall_clock",
        "the script ran longer than 1.5 s of wall-clock time (counted from when it got its sandbox worker, inner"
        " calls included) (toolhost.code_mode.limits.wall_clock_seconds = 1.5); make fewer or faster tool calls per"
        " script, or ask an operator to raise the limit",
    ),
    ("import time\ntime.sleep(3600)", {"wall_clock_seconds": 1.5}, "wall_clock", "wall-clock time"),
    ("import asyncio\nawait asyncio.sleep(3600)", {"wall_clock_seconds": 1.5}, "wall_clock", "wall-clock time"),
    (
        "while True:\n    pass",
        {"cpu_seconds": 1.0},
        "cpu_time",
        "the script used more than 1 s of CPU time in the sandbox (toolhost.code_mode.limits.cpu_seconds = 1);"
        " look for an endless loop",
    ),
    ("while True:\n    pass", {"cpu_seconds": 30.0, "wall_clock_seconds": 1.5}, "wall_clock", "wall-clock time"),
    (
        "for i in range(1000):\n    await orders__get(id=i)",
        {"max_inner_calls": 50},
        "inner_calls",
        "the script made more than 50 tool calls (toolhost.code_mode.limits.max_inner_calls = 50); batch the work",
    ),
    (
        "import asyncio\nawait asyncio.gather(*[orders__get(id=i) for i in range(1000)])",
        {"max_inner_calls": 50},
        "inner_calls",
        "more than 50 tool calls",
    ),
    ("x = 'a' * (10 ** 9)", {}, "memory", MEMORY),
    ("x = []\nwhile True:\n    x.append([0] * 1000)", {}, "memory", MEMORY),
    (
        "def f(n):\n    return f(n + 1)\nf(0)",
        {},
        "recursion",
        "the script recursed deeper than 200 calls (toolhost.code_mode.limits.max_recursion_depth = 200);"
        " use a loop instead of recursion",
    ),
    (
        "while True:\n    print('flood' * 100)",
        {},
        "print",
        "the script printed more than 65536 bytes (toolhost.code_mode.limits.max_print_bytes = 65536);"
        " print less: return a summary as the script's result instead",
    ),
    (
        "'y' * 5_000_000",
        {},
        "output",
        "the script's result is 5000002 bytes, more than 1048576 (toolhost.code_mode.limits.max_output_bytes"
        " = 1048576); return a summary, not the raw data",
    ),
]


@pytest.mark.parametrize(
    ("script", "limits", "limit", "message"),
    LIMITS,
    ids=[f"{lim}-{s.splitlines()[-1][:30]}" for s, _, lim, _ in LIMITS],
)
async def test_hostile_scripts_are_bounded_and_the_pool_keeps_serving(script, limits, limit, message):
    caller = FakeCaller()
    async with open_pool(**limits) as pool:
        outcome = await run(pool, script, caller)
        assert (outcome.status, outcome.limit, outcome.where) == ("limit_exceeded", limit, "code_mode.limit")
        assert message in outcome.message
        assert caller.in_flight == 0  # a call still running when the limit hit was cancelled
        if limit == "wall_clock":
            assert outcome.seconds < limits["wall_clock_seconds"] + 3.0
        if limit == "inner_calls" and "gather" in script:  # refused before the batch started: none ran
            assert caller.calls == []
            assert [c.status for c in outcome.calls] == ["not_executed"] * 50 + ["limit_exceeded"]
        elif limit == "inner_calls":
            assert [step for step, _, _ in caller.calls] == list(range(50))
            assert [c.status for c in outcome.calls] == ["ok"] * 50 + ["limit_exceeded"]
        await _then_normal(pool)
