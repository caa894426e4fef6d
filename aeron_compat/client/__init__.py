"""The Aeron client API: what user code calls and holds.

`Aeron` (aeron.py) connects to a driver as its `Context` (context.py) says; publications
(publication.py, with the term log each session appends to), subscriptions and their images, the
`Header` a fragment handler sees, fragment assemblers, idle strategies, channel URIs, result codes,
term arithmetic (logbuffer.py) and the counters AeronStat shows (counters.py).  The package
`aeron_compat` re-exports the public names; import them from there.

Floors: aeron.py is the top (it picks a driver: `aeron_compat.driver`, or `aeron_compat.native`
for transport=native); every other module here sits below the drivers and the media, which build
on them, and reaches its driver through a protocol it defines (`PublicationOwner`,
`SubscriptionOwner`, `ImageOwner`, context's `Driver`).
"""
