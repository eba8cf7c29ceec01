"""The HTTP listener's transport details: Nagle off on accepted connections, one send() per response."""

from __future__ import annotations

import asyncio
import socket

import pytest

from servers.http.runner import _CoalescingTransport, bind_socket, http_protocol


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.eof = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def write_eof(self) -> None:
        self.eof = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default=None):
        return {"peername": ("127.0.0.1", 5)}.get(name, default)


@pytest.mark.anyio
async def test_writes_of_one_loop_turn_leave_as_one_send():
    rec = Recorder()
    t = _CoalescingTransport(rec)
    t.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    t.write(memoryview(b"ok"))
    assert rec.writes == [] and t.get_write_buffer_size() == 40
    await asyncio.sleep(0)  # the next loop turn
    assert rec.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"]
    t.write(b"event 2")
    await asyncio.sleep(0)
    assert rec.writes[1:] == [b"event 2"]
    assert t.get_extra_info("peername") == ("127.0.0.1", 5)  # everything else is the real transport's


@pytest.mark.anyio
async def test_close_and_eof_send_what_is_buffered_first():
    rec = Recorder()
    t = _CoalescingTransport(rec)
    t.write(b"last bytes")
    t.close()
    assert rec.writes == [b"last bytes"] and rec.closed
    await asyncio.sleep(0)
    assert rec.writes == [b"last bytes"]  # the scheduled flush finds nothing more to send
    rec2 = Recorder()
    t2 = _CoalescingTransport(rec2)
    t2.write(b"a")
    t2.write_eof()
    assert rec2.writes == [b"a"] and rec2.eof


def test_listener_is_tcp_with_nagle_off():
    """asyncio turns Nagle off on accepted sockets only when the listener says it is TCP (proto 6)."""
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        sock.close()


def test_http_protocol_coalesces_on_httptools():
    proto = http_protocol()
    assert proto.__name__ == "CoalescingProtocol"
    assert proto.__mro__[1].__name__ == "HttpToolsProtocol"
