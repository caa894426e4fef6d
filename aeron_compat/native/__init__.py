"""Aeron's own UDP transport protocol in pure Python: a native Aeron peer.

`frames` is the wire codec, `publisher` and `receiver` are sans-I/O state
machines (time comes in as `now`, datagrams go out as return values), and
`udp` runs them over asyncio datagram endpoints. Select it with
`transport=native` in an `aeron:udp` channel URI.
"""
