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

aioquic also offers every stream with unsent data a place in every packet,
full or not; with hundreds of one-message streams queued (unordered sends)
most offers find a full packet. Once no stream frame header fits, the rest of
that packet's offers return at once (`_write_stream_frame`).

aioquic also builds, per connection, a table of ~35 frame handlers, each with a new frozenset of the packet
types that may carry it: ~7 KiB per connection at each end for ~10 distinct sets. The sets are replaced by
shared ones (`_share_frame_epochs`), so they cost nothing per connection.

A client offers one TLS key share, secp256r1 (`CLIENT_KEY_SHARE_GROUPS`): aioquic offers four (secp256r1,
secp384r1, X25519, X448) and so generates four key pairs for every ClientHello, ~1 ms of CPU on this machine,
while an aioquic server takes the first share it supports, always secp256r1, which RFC 8446 makes mandatory to
implement (aioquic has no HelloRetryRequest: a group the server lacks would fail the handshake, not add a trip).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aioquic import tls
from aioquic._buffer import Buffer
from aioquic.quic.connection import QuicConnection, QuicConnectionId
from aioquic.quic.packet_builder import QuicDeliveryState
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


_EPOCH_SETS: dict[frozenset[tls.Epoch], frozenset[tls.Epoch]] = {}
"""The frame handlers' sets of encryption levels, one shared object per distinct set."""


FRAME_HANDLERS = "_QuicConnection__frame_handlers"
"""aioquic's per-connection table: frame type -> (bound handler, the levels that may carry it)."""


def _share_frame_epochs(quic: QuicConnection) -> None:
    """Point every entry of aioquic's per-connection frame handler table at the shared set of its levels."""
    handlers: dict[int, tuple[Any, frozenset[tls.Epoch]]] = getattr(quic, FRAME_HANDLERS)
    for frame_type, (handler, epochs) in handlers.items():
        handlers[frame_type] = (handler, _EPOCH_SETS.setdefault(epochs, epochs))


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
    client_auth: ClientAuth | None = None
    """Server: request and verify client certificates under this policy (quic/mtls.py; set before the first packet)."""
    """The packet being built once no stream frame fits it any more."""
    closed_locally: bool = False
    """This end began the close (aioquic's own TLS or protocol checks included), not the peer."""
    cid_tag: int | None = None
    """A server worker's index (workers.py): every connection ID this end issues starts with it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits_due = set()
        _share_frame_epochs(self)

    @classmethod
    def adopt(cls, quic: QuicConnection) -> PacedQuicConnection:
        """Make a plain QuicConnection (aioquic's server builds those) a paced one; ours only adds methods."""
        quic.__class__ = cls
        assert isinstance(quic, cls)
        quic._limits_due = set()
        _share_frame_epochs(quic)
        return quic

    def _initialize(self, peer_cid: bytes) -> None:
        """aioquic builds the TLS context here (a server: at the first Initial); mTLS replaces its class; a
        client offers the one key share (CLIENT_KEY_SHARE_GROUPS)."""
        super()._initialize(peer_cid)
        if self._is_client:
            self.tls._supported_groups = list(CLIENT_KEY_SHARE_GROUPS)
        if self.client_auth is not None:
            require_client_certificates(self.tls, self.client_auth)

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
        space = self._spaces.get(tls.Epoch.ONE_RTT)
        if space is not None and space.ack_at is not None:
            space.ack_at = now

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
