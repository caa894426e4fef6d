"""Aeron's own UDP transport protocol in pure Python: a native Aeron peer.

Select it with `transport=native` in an `aeron:udp` channel URI given to
`Aeron.add_publication` / `add_subscription` (see `hookup`). Modules:
`frames` (frame types) and `codec` (the wire codec), `termlog` (terms and positions),
`publisher` (with its settings in `publisher_config`), `image`
and `receiver` (sans-I/O state machines: time comes in as `now`, datagrams
leave through an outbox), `driver` (the thread that runs them on UDP
sockets), `publication` / `subscription` (the user-facing objects),
`channel` (URI settings), and for interop testing with real Aeron drivers
`interop`, `real_peer`, `proxy` and `vectors`.
"""
