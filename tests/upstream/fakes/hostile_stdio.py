"""A hand-written MCP stdio server (handshake era, 2025-11-25) that misbehaves on request.

Run: ``python hostile_stdio.py [FLAGS as JSON]``. It answers ``server/discover`` with
"method not found" (so ``auto`` clients fall back to ``initialize``), ``initialize``, ``ping``,
``tools/list`` and ``tools/call``. Flags (JSON object in argv[1], all optional):

* ``garbage``: before every reply, write a non-JSON line, a line of bytes that are not UTF-8,
  a JSON-RPC message of the wrong shape and a reply to an unknown id.
* ``exit_after_list``: seconds after the first ``tools/list`` reply to exit (crash loop).
* ``exit_idle``: seconds after the first ``tools/list`` reply to exit, same as above (idle death).
* ``tools``: extra raw tool definitions appended to the listing (bad schemas).
* ``storm``: on ``notifications/initialized``, send this many ``tools/list_changed`` at 100/s.
* ``storm_changes``: during a storm, change the ``echo`` description on every notification.
* ``starts_file``: a file to which one line (the pid) is appended per start (counts respawns).
* ``calls_file``: a file to which the ``nonce`` (or ``text``) argument of every ``tools/call`` is
  appended when it arrives (proves which calls reached the server).

Tools: ``echo {text}`` → text; ``die`` → exits without replying; ``hang`` → never replies;
``broken`` → a truncated reply that names the request id; ``bare_strings`` (listed with the
``bare_strings_tool`` flag) → a reply whose ``content`` mixes bare strings and a text block;
``slow {seconds}`` → sleeps, then answers; ``garble_then_echo {text}`` → garbage lines, then the
echo reply; ``progress {steps}`` (listed with the ``progress_tool`` flag) → that many
``notifications/progress`` for the request's token and the reply, in one write;
``flood {mib, id_last}`` (listed with the ``flood_tool`` flag) → a reply of one ``mib`` MiB line
(default 65), its id first or (``id_last``) last, or (``as_request``) a server request of that size
reusing the call's id, and no reply.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

FLAGS = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
OUT = sys.stdout.buffer
LOCK = threading.Lock()
STATE = {"version": 0}

if FLAGS.get("starts_file"):
    with open(FLAGS["starts_file"], "a") as fh:
        fh.write(f"{os.getpid()}\n")


def write_raw(data: bytes) -> None:
    with LOCK:
        OUT.write(data + b"\n")
        OUT.flush()


def send(msg: dict) -> None:
    write_raw(json.dumps(msg).encode())


def garbage() -> None:
    write_raw(b"this is not json {")
    write_raw(b'{"jsonrpc": "2.0", "result": \xff\xfe\x80 }')
    write_raw(b'{"jsonrpc": "2.0", "method": 42, "params": "wrong shape"}')
    write_raw(b'{"jsonrpc": "2.0", "id": 987654, "result": {}}')


def tool(name: str, description: str, props: dict | None = None) -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": props or {}}}


def tools() -> list[dict]:
    echo_desc = "Echo the text back." + (f" v{STATE['version']}" if STATE["version"] else "")
    base = [
        tool("echo", echo_desc, {"text": {"type": "string"}}),
        tool("die", "Exit at once without answering."),
        tool("hang", "Never answer."),
        tool("broken", "Answer with a truncated reply."),
        tool("slow", "Sleep, then answer.", {"seconds": {"type": "number"}}),
        tool("garble_then_echo", "Write garbage, then echo.", {"text": {"type": "string"}}),
        *([tool("bare_strings", "Answer with bare strings in content (not content blocks).")]
          if FLAGS.get("bare_strings_tool") else []),
        *([tool("progress", "Report progress, then answer.", {"steps": {"type": "integer"}})]
          if FLAGS.get("progress_tool") else []),
        *([tool("flood", "Answer with one line of `mib` MiB.", {"mib": {"type": "integer"},
                                                                "id_last": {"type": "boolean"},
                                                                "as_request": {"type": "boolean"}})]
          if FLAGS.get("flood_tool") else []),
    ]
    return base + list(FLAGS.get("tools", []))


def text_result(rid, text: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}], "isError": False}})


def storm() -> None:
    count = int(FLAGS["storm"])
    for _ in range(count):
        if FLAGS.get("storm_changes"):
            STATE["version"] += 1
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        time.sleep(0.01)


def exit_later(seconds: float) -> None:
    def run() -> None:
        time.sleep(seconds)
        os._exit(0)

    threading.Thread(target=run, daemon=True).start()


def handle_call(rid, params: dict) -> None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if FLAGS.get("calls_file"):
        with open(FLAGS["calls_file"], "a") as fh:
            fh.write(f"{args.get('nonce', args.get('text', ''))}\n")
    if name == "echo":
        text_result(rid, str(args.get("text", "")))
    elif name == "bare_strings":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": ["first line", {"type": "text", "text": "a block"},
                                                                  "last line"], "isError": False}})
    elif name == "die":
        os._exit(1)
    elif name == "hang":
        return
    elif name == "broken":
        write_raw(b'{"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode() + b', "result": {"content": [{"type": "te')
    elif name == "slow":
        def later() -> None:
            time.sleep(float(args.get("seconds", 1)))
            text_result(rid, str(args.get("nonce", "slept")))

        threading.Thread(target=later, daemon=True).start()
    elif name == "garble_then_echo":
        garbage()
        text_result(rid, str(args.get("text", "")))
    elif name == "progress":
        token = (params.get("_meta") or {}).get("progressToken")
        steps = int(args.get("steps", 3))
        lines = [json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": token, "progress": i + 1, "total": steps}})
                 for i in range(steps)]
        lines.append(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": "done"}], "isError": False}}))
        write_raw("\n".join(lines).encode())  # one write: the reply lands right behind the progress
    elif name == "flood":
        text = b'"' + b"x" * (int(args.get("mib", 65)) << 20) + b'"'
        body = b'"result": {"content": [{"type": "text", "text": ' + text + b"}]}"
        rid_part = b'"id": ' + json.dumps(rid).encode()
        if args.get("as_request"):  # a request of the server's own that reuses the pending call's id
            body = b'"method": "sampling/createMessage", "params": {"pad": ' + text + b"}"
        if args.get("id_last"):  # the TypeScript SDK's order: {result, jsonrpc, id}
            write_raw(b"{" + body + b', "jsonrpc": "2.0", ' + rid_part + b"}")
        else:
            write_raw(b'{"jsonrpc": "2.0", ' + rid_part + b", " + body + b"}")
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": f"unknown tool {name}"}],
                                                       "isError": True}})


def main() -> None:
    listed = False
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if FLAGS.get("garbage") and rid is not None:
            garbage()
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "hostile", "version": "1.0"}}})
        elif method == "notifications/initialized":
            if FLAGS.get("storm"):
                threading.Thread(target=storm, daemon=True).start()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
            if not listed:
                listed = True
                delay = FLAGS.get("exit_after_list", FLAGS.get("exit_idle"))
                if delay is not None:
                    exit_later(float(delay))
        elif method == "tools/call":
            handle_call(rid, msg.get("params") or {})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
