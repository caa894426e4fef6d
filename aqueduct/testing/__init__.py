"""Deterministic simulation of two Aqueduct engines over a virtual network (no asyncio, aioquic or sockets;
impair.py, the UDP impairment proxy for real sockets, is imported on its own: `aqueduct.testing.impair`).

Quick start::

    from aqueduct.core.engine import Engine
    from aqueduct.testing import NetConfig, Simulation
    from aqueduct.wire.channel_id import Side

    sim = Simulation(Engine(Side.CLIENT), Engine(Side.SERVER), NetConfig(datagram_loss=0.1), seed=7)
    sim.client.engine.send(sim.client.engine.entrypoint, b"hi", now=sim.now)
    sim.run_until_idle()
    sim.server.events            # app events the server engine emitted, in order
    sim.server.log               # the same with their virtual times

Anything an engine is told goes through `engine.<method>(..., now=sim.now)`;
the simulation drains commands/events before each step (`sim.pump()` forces it).

Simulation(client, server, net=NetConfig(), seed=0, trace=False)
  .now                       virtual time (seconds); starts at 0
  .client / .server          Endpoint: .engine, .log [(t, AppEvent)], .events, .take_events() (new since last),
                             .handshake_done, .terminated
  .endpoint(side)            the Endpoint of a Side
  .step() -> bool            run the next network delivery or engine timer; False when idle
  .advance(seconds)          run everything due in that window, then move the clock to its end
  .run_until_idle(max_time=, max_steps=)   until nothing in flight and no engine deadline
                             (paused or held traffic does not count); SimulationError otherwise
  .run_until(predicate, max_time=) -> bool
  .hold_stream(sender_side, stream_id) / .release_stream(...)   freeze one direction of one stream
  .drop_next_datagram(sender_side, predicate=None)               one-off drop of the next (matching) datagram
  .delay_next_datagram(sender_side, seconds, predicate=None)     one-off extra delay
  .pause() / .resume()       freeze all network delivery (timers still run)
  .set_rtt(rtt)              report a new RTT to both engines (they get 2*one_way at their handshake)
  .terminate(code, reason)   the QUIC connection dies under both (ConnectionTerminated, by_peer=False)
  .held_bytes(side, sid=None)        bytes held back by receive windows (backpressure)
  .undelivered_bytes(side, sid=None) bytes written but not yet delivered
  .streams(side)             stream IDs a side used
  .stats                     Counter: datagrams_sent/dropped/duplicated/reordered/delivered, stream_chunks, ...
  .misuse                    transport misuse by engines (write after FIN/reset, wrong direction, oversize datagram)
  .overcredit                GrantCredit beyond the bytes a stream delivered
  .trace                     with trace=True, one line per command and delivered event

Network model (NetConfig): stream bytes arrive in order per stream direction, in random chunks, interleaved
across streams; a reset delivers a random prefix of unread bytes (maybe all), then StreamReset; StopSending
becomes StopSendingReceived, and (as aioquic does) the peer's stack resets that stream with the same code, so
the peer's engine must not write on it again; CloseConnection ends both engines (local ConnectionTerminated
by_peer=False now, the peer's after a one-way delay) and drops everything in flight. Handshake: client completes at
2*one_way, server at 3*one_way. With `zero_rtt` and `accept_0rtt`, client data sent earlier arrives early
(the server sees it before its HandshakeCompleted); otherwise early stream bytes reach the server once,
in order, after its handshake, and early datagrams are held (no 0-RTT) or dropped (rejected). With
`stream_window`, each stream direction delivers at most window + sum(GrantCredit) bytes; the rest waits.
With `max_streams`, a side's stream number n (ID // 4) of each type waits until n < limit; the limit grows by
one, a one-way delay later, whenever one of its streams has closed in both directions (QUIC MAX_STREAMS).
`late` holds a datagram or stream write up for up to `late_delay` (past nack deadlines).

FakeEngine (aqueduct.testing.fake) is a scriptable stand-in used to test the simulator itself.

Random driver (aqueduct.testing.driver): `run_seed(seed, actions=40, loss=None, flow_control=None,
ghosts=False, strict=False) -> RunResult` draws a network, an engine config and a script of app actions
(script.py) from the seed, plays it on two real engines, drains and finishes everything, then checks the
ledger's rules (ledger.py: exactly once or reported lost, never both; order; no double ack/nack; end
reasons have causes), liveness (every handle ends) and leaks (state_sizes() after every handle is dropped).
`RunResult.violations` lists what broke; `shrink(result)` deletes actions while the violation persists;
`Run(seed, script, net, config=...)` replays a script. `ghosts` runs without a discarded filter; `strict`
adds late calls on ended handles and over-credit checks. benchmarks/sim_soak.py runs many seeds.
"""

from .endpoint import Endpoint, EngineLike
from .netconfig import NetConfig
from .sim import DatagramRule, Simulation, SimulationError

__all__ = ["DatagramRule", "Endpoint", "EngineLike", "NetConfig", "Simulation", "SimulationError"]
