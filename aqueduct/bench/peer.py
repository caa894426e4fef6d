"""The peer process: serves every benchmarked transport at once on loopback.

    python -m aqueduct.bench.peer --cert CERT --key KEY [--uvloop]

Listens with Aqueduct (raw codec and CBOR codec, single-use tickets so 0-RTT
work runs at once; and raw codec with large packets: settings.py), raw aioquic (same ALPN-free setup, datagrams on) and
asyncio TCP, prints one JSON line with the ports, and serves the commands of
protocol.py until its stdin closes (the measuring process ended).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from typing import Any, ClassVar

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import serve as quic_serve
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration

import aqueduct

from ..quic import introspect
from . import aqserver
from .extras import extras
from .framing import Deframer, frame
from .protocol import DATAGRAMS, ECHO, PING, SINK, STREAMS_ECHO, STREAMS_SINK, encode_count
from .settings import RAW_ALPN, bench_settings
from .tally import Tally

# ---------------------------------------------------------------- raw aioquic


TALLY: Tally | None = None
"""What this process's raw aioquic and TCP servers saw (tally.py), when a test sets it (None: not counted). Counted
per command, per stream's end and per event, never per frame, so the reference servers stay as fast."""


class _RawStream:
    def __init__(self) -> None:
        self.cmd: bytes | None = None
        self.deframer = Deframer()
        self.count = 0
        self.datagrams_at_start = 0


class RawServerProtocol(QuicConnectionProtocol):
    """Raw aioquic peer: per-stream commands with length-prefixed frames; counts datagrams; counts or echoes
    messages that come one per unidirectional stream (for the STREAMS_* command running on this connection)."""

    live: ClassVar[set[RawServerProtocol]] = set()
    """The connections not yet terminated (the connection benchmark counts them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        RawServerProtocol.live.add(self)
        self.early_data_accepted: bool | None = None
        """Whether the handshake took the client's 0-RTT data (None until it completed)."""
        if TALLY is not None:
            TALLY.connected(self)
        self._streams: dict[int, _RawStream] = {}
        self._datagrams = 0
        self._uni: dict[int, Deframer] = {}
        self._uni_target: tuple[int, _RawStream] | None = None

    def quic_event_received(self, event: qe.QuicEvent) -> None:
        if isinstance(event, qe.StreamDataReceived):
            if event.stream_id & 2:
                self._on_uni(event.stream_id, event.data, event.end_stream)
            else:
                self._on_stream(event.stream_id, event.data, event.end_stream)
        elif isinstance(event, qe.DatagramFrameReceived):
            self._datagrams += 1
        elif isinstance(event, qe.HandshakeCompleted):
            self.early_data_accepted = event.early_data_accepted
        elif isinstance(event, qe.ConnectionTerminated):
            RawServerProtocol.live.discard(self)

    def _on_uni(self, sid: int, data: bytes, end: bool) -> None:
        if end:
            if TALLY is not None:
                TALLY.channels += 1  # one more stream ended: per-message sending uses one per message
            deframer = self._uni.pop(sid, None) or Deframer()
        else:
            deframer = self._uni.get(sid) or self._uni.setdefault(sid, Deframer())
        frames = deframer.feed(data)
        target = self._uni_target
        if not frames or target is None:
            return
        target_sid, st = target
        if st.cmd == STREAMS_SINK:
            st.count += len(frames)
        else:
            if TALLY is not None:
                TALLY.messages += len(frames)
            quic = introspect.connection_of(self)
            for payload in frames:
                quic.send_stream_data(target_sid, frame(payload))

    def _on_stream(self, sid: int, data: bytes, end: bool) -> None:
        st = self._streams.get(sid)
        if st is None:
            st = self._streams[sid] = _RawStream()
        quic = introspect.connection_of(self)
        if st.cmd is None or st.cmd == ECHO:
            frames = st.deframer.feed(data)
            if st.cmd is None and frames:
                st.cmd = frames.pop(0)
                st.datagrams_at_start = self._datagrams
                if TALLY is not None:
                    TALLY.commands[st.cmd] += 1
                if st.cmd == SINK and frames:
                    st.count += len(frames)
                    frames = []
                if st.cmd == PING:
                    quic.send_stream_data(sid, frame(b"p"), end_stream=True)
                elif st.cmd in (STREAMS_SINK, STREAMS_ECHO):
                    self._uni_target = (sid, st)
            if st.cmd == ECHO:
                if TALLY is not None:
                    TALLY.messages += len(frames)
                for payload in frames:
                    quic.send_stream_data(sid, frame(payload))
        else:
            st.count += st.deframer.count(data)[0]
        if end:
            del self._streams[sid]
            if self._uni_target is not None and self._uni_target[0] == sid:
                self._uni_target = None
            if TALLY is not None and st.cmd in (SINK, STREAMS_SINK):
                TALLY.messages += st.count
            elif TALLY is not None and st.cmd == DATAGRAMS:
                TALLY.messages += self._datagrams - st.datagrams_at_start
            if st.cmd in (SINK, STREAMS_SINK):
                quic.send_stream_data(sid, frame(encode_count(st.count)), end_stream=True)
            elif st.cmd == STREAMS_ECHO:
                quic.send_stream_data(sid, b"", end_stream=True)
            elif st.cmd == DATAGRAMS:
                quic.send_stream_data(sid, frame(encode_count(self._datagrams - st.datagrams_at_start)), True)
            elif st.cmd == ECHO:
                quic.send_stream_data(sid, b"", end_stream=True)


class _SingleUseTickets:
    def __init__(self) -> None:
        self._tickets: dict[bytes, Any] = {}

    def add(self, ticket: Any) -> None:
        self._tickets[ticket.ticket] = ticket

    def fetch(self, label: bytes) -> Any:
        return self._tickets.pop(label, None)


# ---------------------------------------------------------------- TCP


async def _tcp_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    deframer = Deframer()
    cmd: bytes | None = None
    count = 0
    if TALLY is not None:
        TALLY.connected(writer)  # (one writer per connection: TCP, or an extra such as Marlin Stream)
    try:
        while True:
            data = await reader.read(256 * 1024)
            if not data:
                break
            if cmd is None or cmd == ECHO:
                frames = deframer.feed(data)
                if cmd is None and frames:
                    cmd = frames.pop(0)
                    if TALLY is not None:
                        TALLY.commands[cmd] += 1
                    if cmd == PING:
                        writer.write(frame(b"p"))
                    elif cmd == SINK:
                        count += len(frames)
                        frames = []
                if cmd == ECHO and frames:
                    if TALLY is not None:
                        TALLY.messages += len(frames)
                    writer.write(b"".join(frame(p) for p in frames))
                    await writer.drain()
            else:
                count += deframer.count(data)[0]
        if cmd == SINK:
            if TALLY is not None:
                TALLY.messages += count
            writer.write(frame(encode_count(count)))
        await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


# ---------------------------------------------------------------- main


async def start_raw_server(cert: str, key: str, idle_timeout: float | None = None) -> Any:
    """The raw aioquic server (RawServerProtocol; single-use session tickets as Aqueduct's bench server) on a
    free loopback port; `idle_timeout` in seconds, else aioquic's default."""
    raw_cfg = QuicConfiguration(is_client=False, alpn_protocols=[RAW_ALPN], max_datagram_frame_size=65536)
    if idle_timeout is not None:
        raw_cfg.idle_timeout = idle_timeout
    raw_cfg.load_cert_chain(cert, key)
    tickets = _SingleUseTickets()
    return await quic_serve("127.0.0.1", 0, configuration=raw_cfg, create_protocol=RawServerProtocol,
                            session_ticket_fetcher=tickets.fetch, session_ticket_handler=tickets.add)


def _udp_port(server: Any) -> int:
    return introspect.server_port(server)


async def stdin_closed() -> None:
    """Return once this process's stdin closes: how every benchmark server process (a peer, the proxy, a peer
    library's server) is told to stop (`stop` closes it). Read by a daemon thread, as a pipe may not be
    watchable by the event loop on every platform."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def watch() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(done.set)

    threading.Thread(target=watch, daemon=True).start()
    await done.wait()


async def serve_all(cert: str, key: str) -> None:
    """Serve every transport; print the ports; return when stdin closes."""
    settings = bench_settings()
    async with (
        aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.RawCodec(), settings=settings,
                       single_use_tickets=True) as aq_raw,
        aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.CborCodec(), settings=settings,
                       single_use_tickets=True) as aq_cbor,
        aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.RawCodec(),
                       settings=bench_settings(tuned=True), single_use_tickets=True) as aq_tuned,
    ):
        raw_server = await start_raw_server(cert, key)
        tcp_server = await asyncio.start_server(_tcp_client, "127.0.0.1", 0)
        served = {extra.key: await extra.serve(_tcp_client) for extra in extras()}
        accept = [asyncio.ensure_future(aqserver.accept(server, codec))
                  for server, codec in ((aq_raw, "raw"), (aq_cbor, "cbor"), (aq_tuned, "raw"))]
        ports = {
            "aqueduct-raw": aq_raw.address[1],
            "aqueduct-cbor": aq_cbor.address[1],
            "aqueduct-tuned": aq_tuned.address[1],
            "aioquic": _udp_port(raw_server),
            "tcp": tcp_server.sockets[0].getsockname()[1],
            **{key: extra.port for key, extra in served.items()},
        }
        print(json.dumps(ports), flush=True)
        await stdin_closed()
        for task in accept:
            task.cancel()
        tcp_server.close()
        raw_server.close()
        for extra in served.values():
            extra.close()


def spawn(cert: str, key: str, uvloop: bool = False) -> tuple[subprocess.Popen[str], dict[str, int]]:
    """Start a peer process (this module's `main`); (the process, its port per transport)."""
    cmd = [sys.executable, "-m", "aqueduct.bench.peer", "--cert", cert, "--key", key]
    if uvloop:
        cmd.append("--uvloop")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("the benchmark peer process failed to start")
    return proc, json.loads(line)


def stop(proc: subprocess.Popen[str]) -> None:
    """End a process that serves until its stdin closes (a peer, the proxy process); kill it after 10 s."""
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def main() -> None:
    """Command-line entry of the peer process."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--uvloop", action="store_true")
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.install()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_all(args.cert, args.key))


if __name__ == "__main__":
    main()
