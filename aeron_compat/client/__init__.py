"""The Aeron client API: what user code calls and holds.

`Aeron` (aeron.py) connects to a driver; publications (publication.py, with the term log each
session appends to), subscriptions and their images, the `Header` a fragment handler sees,
fragment assemblers, idle strategies, channel URIs, result codes and term arithmetic
(logbuffer.py).  The package `aeron_compat` re-exports the public names; import them from there.
"""
