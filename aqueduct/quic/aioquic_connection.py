"""The adapter's aioquic QuicConnection: receiver-paced flow control, its hot spots mended, its privates named.

This module is one of the doors to aioquic's private state (ARCHITECTURE.md lists them, and
tests/architecture/test_aioquic_stays_in_quic.py fails on a private name outside them): `PacedQuicConnection`
overrides aioquic's private writers and reads its private attributes, and gives the adapter what it needs of
them under names of ours (`is_client`, `peer_max_datagram_frame_size`, `ack_now`, `receive_window`). What
follows is what it changes.

aioquic doubles MAX_DATA and MAX_STREAM_DATA as soon as half the window has
*arrived*, whether or not anyone read it, so a stalled reader lets a fast
sender fill the receiving process without bound. `PacedQuicConnection`
hides that: the windows start at the configured sizes and grow only by
`grant(stream_id, n)`, which the adapter calls when the engine says the
application consumed n bytes (GrantCredit). Bytes a peer reset skips (between
what was delivered and the final size) never reach the application, so they
are credited back to the connection at once.

The overrides wrap aioquic's private writers rather than copy them: they hide
the "used"/"highest offset" counters from the doubling test for the duration
of the call, and leave the frame writing to aioquic. Window updates are
batched: one goes out once the grants not yet announced reach a quarter of
the configured window, or exceed the credit the peer has left (a grant per
message would put a MAX_DATA and a MAX_STREAM_DATA frame, and so a packet,
behind every packet received; a peer that ran out hears of any grant).

aioquic visits every stream of the connection for its MAX_STREAM_DATA on
every packet it builds; here only grants change a stream's window, so the
streams that may have one to announce are kept in a set (a grant, or a lost
MAX_STREAM_DATA, adds one) and written right after the connection limits,
where aioquic's loop would have put them; its per-stream call does nothing.

aioquic keeps a 16 KiB TLS output buffer per encryption level for the
connection's lifetime; once the Initial and Handshake levels are discarded
(their keys gone, so nothing can be written or read there again) their
buffers are replaced by one shared empty buffer, and so is the 1-RTT
level's when the Handshake level goes (the handshake is confirmed): TLS
writes at 1-RTT only a server's NewSessionTicket, pushed out while the
client's Finished was handled, before that; QUIC's TLS has no KeyUpdate
message and aioquic no post-handshake authentication. 48 KiB less per idle
connection at each end.

`_write_application` (what builds the 1-RTT packets) is aioquic 1.7's, copied with three changes (and the per-packet
Python calls of decision QUIC-35 taken out), each behaviour-neutral (tests/quic/test_write_application.py sends the
same seeded schedules through aioquic's and ours and compares every packet's frames): it does not visit every stream
for its MAX_STREAM_DATA on every packet (see above: a call per live stream per packet, to a method that does
nothing); a stream whose data and FIN all went into a frame is marked empty at once, where aioquic finds out at the
next packet by asking it for a frame; and once a packet leaves nothing behind (no stream with data it may send, no
datagram, no CRYPTO data, no stream discarded) no next packet is begun: aioquic begins one, finds it empty and stops
there, after a full pass of its writers, so every call that sends paid one empty packet (the pacer is asked first,
as it would be). The copy is pinned with aioquic (pyproject.toml: <1.8); a new aioquic runs the differential against
its own method first.

aioquic also offers every stream with unsent data a place in every packet,
full or not; with hundreds of one-message streams queued (unordered sends)
most offers find a full packet. Once no stream frame header fits, the rest of
that packet's offers return at once (`_write_stream_frame`).

aioquic logs each stream's creation and discarding at DEBUG through a LoggerAdapter, whose `debug` takes four
Python calls to find DEBUG off; `DebugCheckedAdapter` asks the logger first (two calls, the same records).

aioquic also builds, per connection, a table of ~35 frame handlers, each with a new frozenset of the packet
types that may carry it: ~7 KiB per connection at each end for ~10 distinct sets. The sets are replaced by
shared tuples of the same levels (`_share_frame_epochs`), so they cost nothing per connection.

A channel per call makes and drops QUIC streams at the rate of calls, and aioquic pays Python calls for what
is arithmetic or a held object (decision QUIC-35, each change behaviour-neutral, each with a differential test
against aioquic's own code): its stream lookups (`_get_or_create_stream*`, `_stream_is_discarded`,
`_stream_can_*`, `_stream_limit`) call a module function per bit of the stream ID tested, and ask whether a
stream still in the table was discarded; they test the bits in place and return a stream in the table at once.
Its `tls.Epoch` is a plain Enum whose `__hash__` is a Python call, and it looks up the 1-RTT packet space,
crypto pair and crypto stream by epoch several times per packet and checks each frame's epoch against a
frozenset: the writer holds the 1-RTT objects (made once, in `_initialize`), and the frame handlers' levels are
tuples, whose `in` compares identities in C. The writer reads `stream.is_finished` (a property) as its two
fields, and keeps its stream order list when no stream sent or was discarded.

A client offers one TLS key share, secp256r1 (`CLIENT_KEY_SHARE_GROUPS`): aioquic offers four (secp256r1,
secp384r1, X25519, X448) and so generates four key pairs for every ClientHello, ~1 ms of CPU on this machine,
while an aioquic server takes the first share it supports, always secp256r1, which RFC 8446 makes mandatory to
implement (aioquic has no HelloRetryRequest: a group the server lacks would fail the handshake, not add a trip).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from aioquic import tls
from aioquic._buffer import Buffer
from aioquic.quic.connection import (
    END_STATES,
    Limit,
    QuicConnection,
    QuicConnectionAdapter,
    QuicConnectionId,
)
from aioquic.quic.crypto import CryptoPair
from aioquic.quic.packet import QuicFrameType, QuicPacketType
from aioquic.quic.packet_builder import QuicDeliveryState, QuicPacketBuilder, QuicPacketBuilderStop
from aioquic.quic.recovery import QuicPacketSpace
from aioquic.quic.stream import QuicStream
from aioquic.tls import Group

from .aioquic_tls import require_client_certificates

if TYPE_CHECKING:
    from .mtls import ClientAuth

UPDATE_FRACTION = 4
"""A window update is sent once the unannounced grants reach 1/UPDATE_FRACTION of the configured window."""


SPENT_CRYPTO_BUFFER = Buffer(capacity=0)
"""Stands for a discarded encryption level's TLS output buffer (aioquic only reads it, empty, from then on)."""
SPENT_LEVELS = (tls.Epoch.INITIAL, tls.Epoch.HANDSHAKE)

MIN_STREAM_FRAME_HEADER = 4
"""The smallest STREAM frame header aioquic writes (type, 1-byte stream id, 2-byte length): with less room left in
a packet its `_write_stream_frame` sends nothing, not even a FIN."""


_EPOCH_SETS: dict[frozenset[tls.Epoch], tuple[tls.Epoch, ...]] = {}
"""The frame handlers' sets of encryption levels, one shared tuple per distinct set (see `_share_frame_epochs`)."""

EPOCH_ORDER = (tls.Epoch.ONE_RTT, tls.Epoch.ZERO_RTT, tls.Epoch.HANDSHAKE, tls.Epoch.INITIAL)
"""The order of a shared tuple's levels: the one nearly every packet is at first."""


FRAME_HANDLERS = "_QuicConnection__frame_handlers"
"""aioquic's per-connection table: frame type -> (bound handler, the levels that may carry it)."""


def _share_frame_epochs(quic: QuicConnection) -> None:
    """Point every entry of aioquic's per-connection frame handler table at the shared tuple of its levels.

    aioquic asks `context.epoch not in frame_epochs` for every frame it receives; in a frozenset that hashes the
    `tls.Epoch`, a plain Enum whose `__hash__` is a Python call; a tuple's `in` compares by identity first, in C,
    and a tuple holds the same levels, so the answer is the same (decision QUIC-35)."""
    handlers: dict[int, tuple[Any, Any]] = getattr(quic, FRAME_HANDLERS)
    for frame_type, (handler, epochs) in handlers.items():
        if isinstance(epochs, frozenset):
            shared = _EPOCH_SETS.get(epochs)
            if shared is None:
                shared = _EPOCH_SETS[epochs] = tuple(e for e in EPOCH_ORDER if e in epochs)
            handlers[frame_type] = (handler, shared)


class DebugCheckedAdapter(QuicConnectionAdapter):
    """aioquic's per-connection logger adapter, whose `debug` asks the logger first: aioquic logs each stream's
    creation and discarding at DEBUG, and the adapter's own `debug` takes four Python calls to find it off."""

    def debug(self, msg: object, *args: Any, **kwargs: Any) -> None:
        """As LoggerAdapter.debug (the same records when DEBUG is on), two calls when it is off."""
        if self.logger.isEnabledFor(logging.DEBUG):
            self.log(logging.DEBUG, msg, *args, **kwargs)


CLIENT_KEY_SHARE_GROUPS = (Group.SECP256R1,)
"""The TLS groups a client offers key shares for (see the module comment)."""


def _hold(pending: int, peer_left: int, window: int) -> bool:
    """Whether to keep `pending` granted bytes unannounced: below a quarter window, and the peer still has more
    credit left than the update would add (so a peer that ran out always hears of any grant at once)."""
    return pending <= 0 or (pending < window // UPDATE_FRACTION and peer_left > pending)


class PacedQuicConnection(QuicConnection):
    """A QuicConnection whose receive windows follow what the application has consumed."""

    _limits_due: set[int]
    """Streams whose window may differ from what the peer was last told (see the module comment)."""
    _full_packet: object = None
    """The packet being built once no stream frame fits it any more."""
    client_auth: ClientAuth | None = None
    """Server: request and verify client certificates under this policy (quic/mtls.py; set before the first packet)."""
    closed_locally: bool = False
    """This end began the close (aioquic's own TLS or protocol checks included), not the peer."""
    cid_tag: int | None = None
    """A server worker's index (workers.py): every connection ID this end issues starts with it."""
    _one_rtt_space: QuicPacketSpace | None = None
    """aioquic's 1-RTT packet space, `_spaces[tls.Epoch.ONE_RTT]`, once `_initialize` made it (`_hold_one_rtt`)."""
    _one_rtt_crypto: CryptoPair
    _zero_rtt_crypto: CryptoPair
    _one_rtt_crypto_stream: QuicStream

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits_due = set()
        _share_frame_epochs(self)
        self._logger = DebugCheckedAdapter(self._logger.logger, self._logger.extra)

    @classmethod
    def adopt(cls, quic: QuicConnection) -> PacedQuicConnection:
        """Make a plain QuicConnection (aioquic's server builds those) a paced one; ours only adds methods."""
        quic.__class__ = cls
        assert isinstance(quic, cls)
        quic._limits_due = set()
        _share_frame_epochs(quic)
        quic._logger = DebugCheckedAdapter(quic._logger.logger, quic._logger.extra)
        if quic._spaces:  # (already initialized: aioquic's server adopts before the first packet, but if not)
            quic._hold_one_rtt()
        return quic

    def _initialize(self, peer_cid: bytes) -> None:
        """aioquic builds the TLS context here (a server: at the first Initial); mTLS replaces its class; a
        client offers the one key share (CLIENT_KEY_SHARE_GROUPS)."""
        super()._initialize(peer_cid)
        self._hold_one_rtt()
        if self._is_client:
            self.tls._supported_groups = list(CLIENT_KEY_SHARE_GROUPS)
        if self.client_auth is not None:
            require_client_certificates(self.tls, self.client_auth)

    def _hold_one_rtt(self) -> None:
        """aioquic keys its packet spaces, crypto pairs and crypto streams by `tls.Epoch`, whose `__hash__` is a
        Python call, and looks the 1-RTT ones up several times for every packet; `_initialize` makes them, once,
        and they are never replaced (only the Initial pair is, on a version change), so the writer holds them."""
        self._one_rtt_space = self._spaces[tls.Epoch.ONE_RTT]
        self._one_rtt_crypto = self._cryptos[tls.Epoch.ONE_RTT]
        self._zero_rtt_crypto = self._cryptos[tls.Epoch.ZERO_RTT]
        self._one_rtt_crypto_stream = self._crypto_streams[tls.Epoch.ONE_RTT]

    def grant(self, stream_id: int, nbytes: int) -> None:
        """The application consumed `nbytes` of `stream_id`: extend the stream and connection windows."""
        if nbytes <= 0:
            return
        self._local_max_data.value += nbytes
        stream = self._streams.get(stream_id)
        if stream is not None and stream.max_stream_data_local:
            stream.max_stream_data_local += nbytes
            self._limits_due.add(stream_id)

    def tag_connection_ids(self, worker: int) -> None:
        """Issue only connection IDs that start with `worker` (a server among workers; workers.py). Call before
        the connection's first packet: its first ID is replaced, and the later ones are made tagged."""
        from .workers import tag_cid

        self.cid_tag = worker
        first = self._host_cids[0]
        first.cid = tag_cid(worker, len(first.cid))
        self.host_cid = self._local_initial_source_connection_id = first.cid

    @property
    def is_client(self) -> bool:
        """Whether this end is the client."""
        return bool(self._is_client)

    @property
    def peer_max_datagram_frame_size(self) -> int | None:
        """The peer's max_datagram_frame_size transport parameter (None: it takes no datagrams, or not known yet)."""
        size = self._remote_max_datagram_frame_size
        return int(size) if size is not None else None

    def ack_now(self, now: float) -> None:
        """Send any ACK held back for its delay with the next 1-RTT packet, rather than after the delay."""
        space = self._one_rtt_space
        if space is not None and space.ack_at is not None:
            space.ack_at = now

    def idle_expired(self, now: float) -> bool:
        """Whether the connection's idle timeout has passed while it is still up: its loop timer has not run yet
        (the event loop was held up past the deadline). aioquic would restart the idle timer on the next packet
        received, or on the next ack-eliciting one sent, and so revive a connection the peer has silently closed
        at the same deadline; the adapter ends it first (`AioquicProtocol.end_if_idle`): decision QUIC-34."""
        close_at = self._close_at
        return close_at is not None and now >= close_at and self._state not in END_STATES

    def receive_window(self) -> tuple[int, int]:
        """(bytes received, bytes the peer may send in total) at connection level, for tests and stats."""
        return self._local_max_data.used, self._local_max_data.value

    # ---- aioquic overrides ----
    def close(self, error_code: int = 0, frame_type: int | None = None, reason_phrase: str = "") -> None:
        self.closed_locally = True
        super().close(error_code=error_code, frame_type=frame_type, reason_phrase=reason_phrase)

    def _discard_epoch(self, epoch: tls.Epoch) -> None:
        super()._discard_epoch(epoch)
        buffers = self._crypto_buffers
        if epoch in SPENT_LEVELS and epoch in buffers:
            buffers[epoch] = SPENT_CRYPTO_BUFFER
            if epoch is tls.Epoch.HANDSHAKE and tls.Epoch.ONE_RTT in buffers:
                buffers[tls.Epoch.ONE_RTT] = SPENT_CRYPTO_BUFFER

    def _replenish_connection_ids(self) -> None:
        """aioquic's, with the worker tag as the first byte of each new ID (when tagged)."""
        tag = self.cid_tag
        if tag is None:
            super()._replenish_connection_ids()
            return
        from .workers import tag_cid

        length = self._configuration.connection_id_length
        while len(self._host_cids) < min(8, self._remote_active_connection_id_limit):
            self._host_cids.append(QuicConnectionId(cid=tag_cid(tag, length), sequence_number=self._host_cid_seq,
                                                    stateless_reset_token=os.urandom(16)))
            self._host_cid_seq += 1

    def _write_connection_limits(self, builder: Any, space: Any) -> None:
        limit, bidi, uni = self._local_max_data, self._local_max_streams_bidi, self._local_max_streams_uni
        if limit.value != limit.sent or bidi.value != bidi.sent or uni.value != uni.sent:
            used, limit.used = limit.used, 0  # never trips aioquic's "half used: double it" rule
            value = limit.value
            if _hold(value - limit.sent, limit.sent - used, self._configuration.max_data):
                limit.value = limit.sent  # not worth announcing yet (MAX_STREAMS updates still go out)
            try:
                super()._write_connection_limits(builder=builder, space=space)
            finally:
                limit.used = used
                limit.value = value
        if self._limits_due:
            self._write_due_stream_limits(builder, space)

    def _write_due_stream_limits(self, builder: Any, space: Any) -> None:
        """MAX_STREAM_DATA for the streams in `_limits_due` that have one worth announcing; a stream leaves
        the set once its window is announced (or it is gone), after its frame is written."""
        due, streams = self._limits_due, self._streams
        for stream_id in list(due):
            stream = streams.get(stream_id)
            if stream is None:
                due.discard(stream_id)
                continue
            sent = stream.max_stream_data_local_sent
            if stream.max_stream_data_local == sent:
                due.discard(stream_id)
                continue
            receiver = stream.receiver
            pending, peer_left = stream.max_stream_data_local - sent, sent - receiver.highest_offset
            if _hold(pending, peer_left, self._configuration.max_stream_data):
                continue  # not worth announcing yet: it stays due
            highest, receiver.highest_offset = receiver.highest_offset, 0
            try:
                super()._write_stream_limits(builder=builder, space=space, stream=stream)
            finally:
                receiver.highest_offset = highest
            due.discard(stream_id)

    def _write_stream_limits(self, builder: Any, space: Any, stream: Any) -> None:
        """aioquic's per-stream, per-packet visit: nothing to do (`_write_due_stream_limits` wrote them)."""

    def _write_application(self, builder: QuicPacketBuilder, network_path: Any, now: float) -> None:
        """aioquic 1.7's `_write_application` (its code and comments, line for line), with three changes marked
        `(ours)` (see the module comment): no per-packet visit of every stream for its MAX_STREAM_DATA, a stream
        whose data all went out is marked empty at once, and no packet is begun once nothing is left to send."""
        crypto_stream: QuicStream | None = None
        # (ours) the 1-RTT objects held since `_initialize`, not looked up by `tls.Epoch` (see there)
        if self._one_rtt_crypto.send.is_valid():
            crypto = self._one_rtt_crypto
            crypto_stream = self._one_rtt_crypto_stream
            packet_type = QuicPacketType.ONE_RTT
        elif self._zero_rtt_crypto.send.is_valid():
            crypto = self._zero_rtt_crypto
            packet_type = QuicPacketType.ZERO_RTT
        else:
            return
        space = self._one_rtt_space
        assert space is not None

        while True:
            # apply pacing, except if we have ACKs to send
            if space.ack_at is None or space.ack_at >= now:
                self._pacing_at = self._loss._pacer.next_send_time(now=now)
                if self._pacing_at is not None:
                    break
            builder.start_packet(packet_type, crypto)

            # ACK, which a server sends for 0-RTT packets before the handshake
            # completes (RFC 9000 section 13.2.1), but not in 0-RTT packets.
            if packet_type == QuicPacketType.ONE_RTT and space.ack_at is not None and space.ack_at <= now:
                self._write_ack_frame(builder=builder, space=space, now=now)

            if self._handshake_complete:
                # PATH_CHALLENGE, while the active path is not validated, which only
                # happens on a server whose client migrated (RFC 9000 section 9.3).
                if not (network_path.is_validated or network_path.local_challenge_sent):
                    self._write_path_challenge_frame(builder=builder, network_path=network_path)

                    # RFC 9000 section 8.2.4 recommends abandoning path validation
                    # after three times the larger of the current PTO and the PTO
                    # of a new path, which uses the initial RTT.
                    if network_path.validation_deadline is None:
                        network_path.validation_deadline = now + 3 * max(
                            self._loss.get_probe_timeout(), 2 * self._configuration.initial_rtt)

                # HANDSHAKE_DONE
                if self._handshake_done_pending:
                    self._write_handshake_done_frame(builder=builder)
                    self._handshake_done_pending = False

                # PATH RESPONSE
                while len(network_path.remote_challenges) > 0:
                    self._write_path_response_frame(builder=builder, challenge=network_path.remote_challenges[0])
                    network_path.remote_challenges.popleft()

                # NEW_CONNECTION_ID
                for connection_id in self._host_cids:
                    if not connection_id.was_sent:
                        self._write_new_connection_id_frame(builder=builder, connection_id=connection_id)

                # RETIRE_CONNECTION_ID
                for sequence_number in self._retire_connection_ids[:]:
                    self._write_retire_connection_id_frame(builder=builder, sequence_number=sequence_number)
                    self._retire_connection_ids.pop(0)

                # STREAMS_BLOCKED
                if self._streams_blocked_pending:
                    if self._streams_blocked_bidi:
                        self._write_streams_blocked_frame(
                            builder=builder, frame_type=QuicFrameType.STREAMS_BLOCKED_BIDI,
                            limit=self._remote_max_streams_bidi)
                    if self._streams_blocked_uni:
                        self._write_streams_blocked_frame(
                            builder=builder, frame_type=QuicFrameType.STREAMS_BLOCKED_UNI,
                            limit=self._remote_max_streams_uni)
                    self._streams_blocked_pending = False

                # MAX_DATA and MAX_STREAMS
                self._write_connection_limits(builder=builder, space=space)

            # stream-level limits: (ours) written by _write_connection_limits, for the streams granted credit

            # PING (user-request)
            if self._ping_pending:
                self._write_ping_frame(builder, self._ping_pending)
                self._ping_pending.clear()

            # PING (probe)
            if self._probe_pending:
                self._write_ping_frame(builder, comment="probe")
                self._probe_pending = False

            # CRYPTO
            if crypto_stream is not None and not crypto_stream.sender.buffer_is_empty:
                self._write_crypto_frame(builder=builder, space=space, stream=crypto_stream)

            # DATAGRAM
            while self._datagrams_pending:
                try:
                    self._write_datagram_frame(builder=builder, data=self._datagrams_pending[0],
                                               frame_type=QuicFrameType.DATAGRAM_WITH_LENGTH)
                    self._datagrams_pending.popleft()
                except QuicPacketBuilderStop:
                    break

            sent: set[QuicStream] = set()
            discarded: set[QuicStream] = set()
            left = False  # (ours) a stream that may send still has data or a FIN to send
            try:
                for stream in self._streams_queue:
                    # if the stream is finished, discard it
                    # (ours) `QuicStream.is_finished` and the stream ID tests written out: per stream, per packet
                    if stream.receiver.is_finished and stream.sender.is_finished:
                        stream_id: int = stream.stream_id  # type: ignore[assignment]
                        self._logger.debug("Stream %d discarded", stream_id)
                        self._streams.pop(stream_id)
                        if (not stream_id & 1) != self._is_client:
                            # Let the peer open a new stream for each one that
                            # closes (RFC 9000 section 4.6).
                            self._stream_limit(stream_id).value += 1
                        discarded.add(stream)
                        continue

                    if stream.receiver.stop_pending:
                        # STOP_SENDING
                        self._write_stop_sending_frame(builder=builder, stream=stream)

                    if stream.sender.reset_pending:
                        # RESET_STREAM
                        self._write_reset_stream_frame(builder=builder, stream=stream)
                    elif not stream.is_blocked and not stream.sender.buffer_is_empty:
                        # STREAM
                        used = self._write_stream_frame(
                            builder=builder,
                            space=space,
                            stream=stream,
                            max_offset=min(
                                stream.sender.highest_offset + self._remote_max_data - self._remote_max_data_used,
                                stream.max_stream_data_remote,
                            ),
                        )
                        self._remote_max_data_used += used
                        if used > 0:
                            sent.add(stream)
                        # (ours) what the stream's next get_frame() would find: nothing left, so mark it now
                        sender = stream.sender
                        if len(sender._pending) or sender._pending_eof:
                            left = True
                        else:
                            sender.buffer_is_empty = True

            finally:
                # Make a new stream service order, putting served ones at the end.
                #
                # This method of updating the streams queue ensures that discarded
                # streams are removed and ones which sent are moved to the end even
                # if an exception occurs in the loop.
                if discarded or sent:  # (ours) else the order stays as it is: no new list
                    self._streams_queue = [
                        stream for stream in self._streams_queue if not (stream in discarded or stream in sent)
                    ]
                    self._streams_queue.extend(sent)

            if builder.packet_is_empty:
                # Discarded streams may let the peer open new ones, which the next
                # packet announces with MAX_STREAMS.
                if not discarded:
                    break
            else:
                self._loss._pacer.update_after_send(now=now)
                # (ours) nothing is left for a next packet: aioquic would begin one, find it empty and stop
                # there (the pacer asked first, as it would be)
                if not (left or discarded or self._datagrams_pending
                        or (crypto_stream is not None and not crypto_stream.sender.buffer_is_empty)):
                    if space.ack_at is None or space.ack_at >= now:
                        self._pacing_at = self._loss._pacer.next_send_time(now=now)
                    break

    # aioquic's stream lookups, for every stream frame received and every write: the same answers, with the
    # stream ID's bits tested in place of its module functions (`stream_is_client_initiated`: not bit 0,
    # `stream_is_unidirectional`: bit 1), and a stream still in the table returned at once (aioquic asks first
    # whether it was discarded, which a stream in the table never is). tests/quic/test_aioquic_lookups.py.
    def _get_or_create_stream(self, frame_type: int, stream_id: int) -> QuicStream:
        stream = self._streams.get(stream_id)
        if stream is not None:
            return stream
        return super()._get_or_create_stream(frame_type, stream_id)

    def _get_or_create_stream_for_send(self, stream_id: int) -> QuicStream:
        stream = self._streams.get(stream_id)
        if stream is not None and (not stream_id & 2 or (not stream_id & 1) == self._is_client):  # (can send)
            return stream
        return super()._get_or_create_stream_for_send(stream_id)

    def _stream_can_receive(self, stream_id: int) -> bool:
        return (not stream_id & 1) != self._is_client or not stream_id & 2

    def _stream_can_send(self, stream_id: int) -> bool:
        return (not stream_id & 1) == self._is_client or not stream_id & 2

    def _stream_is_discarded(self, stream_id: int) -> bool:
        if (not stream_id & 1) != self._is_client:
            limit = self._local_max_streams_uni if stream_id & 2 else self._local_max_streams_bidi
            is_opened = stream_id // 4 < limit.used
        elif stream_id & 2:
            is_opened = stream_id < self._local_next_stream_id_uni
        else:
            is_opened = stream_id < self._local_next_stream_id_bidi
        return is_opened and stream_id not in self._streams

    def _stream_limit(self, stream_id: int) -> Limit:
        return self._local_max_streams_uni if stream_id & 2 else self._local_max_streams_bidi

    def _write_stream_frame(self, builder: Any, space: Any, stream: Any, max_offset: int) -> int:
        packet = builder._packet
        if packet is self._full_packet:
            return 0
        if builder.remaining_flight_space < MIN_STREAM_FRAME_HEADER:  # (aioquic's own call writes nothing then)
            self._full_packet = packet
            return 0
        return int(super()._write_stream_frame(builder, space, stream, max_offset))

    def _on_max_stream_data_delivery(self, delivery: QuicDeliveryState, stream: Any) -> None:
        super()._on_max_stream_data_delivery(delivery, stream)
        if delivery != QuicDeliveryState.ACKED:  # lost: announce it again
            self._limits_due.add(stream.stream_id)

    def _handle_reset_stream_frame(self, context: Any, frame_type: int, buf: Buffer) -> None:
        start = buf.tell()
        stream_id = buf.pull_uint_var()
        buf.pull_uint_var()
        final_size = buf.pull_uint_var()
        buf.seek(start)
        stream = self._streams.get(stream_id)
        delivered = stream.receiver.starting_offset() if stream is not None else 0
        was_finished = stream is not None and stream.receiver.is_finished
        super()._handle_reset_stream_frame(context, frame_type, buf)
        if not was_finished and final_size > delivered:
            self._local_max_data.value += final_size - delivered
