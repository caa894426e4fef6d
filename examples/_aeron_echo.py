# Helpers shared by the aeron echo examples (the guide's EchoMessages): UTF-8 strings in, UTF-8
# strings out, a send that retries back pressure for a bounded number of attempts, and a duty-cycle
# loop (`run_until`) for the single-threaded demos.
"""Sending and receiving UTF-8 strings on aeron_compat publications and subscriptions."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aeron_compat import FragmentAssembler, Header, Publication, PublicationResult, Subscription

log = logging.getLogger("aeron_echo")


class EchoSendError(Exception):
    """A message could not be sent within the allowed attempts."""


def send_message(pub: Publication, text: str, timeout: float = 0.5, raise_on_failure: bool = True) -> bool:
    """Offer `text`, retrying BACK_PRESSURED / NOT_CONNECTED / ADMIN_ACTION for up to `timeout` seconds."""
    data = text.encode()
    deadline = time.monotonic() + timeout
    attempts = 0
    while True:
        result = pub.offer(data)
        if result > 0:
            log.debug("[%d] send: %s", pub.session_id, text)
            return True
        if result == PublicationResult.CLOSED or time.monotonic() > deadline:
            break
        attempts += 1
        if attempts > 10:
            time.sleep(0.0005)
    if raise_on_failure:
        raise EchoSendError(f"could not send {text!r}: {PublicationResult(result).name}")
    log.error("could not send %r: %s", text, PublicationResult(result).name)
    return False


def string_poller(sub: Subscription, on_text: Callable[[str, Header], object], limit: int = 10) -> Callable[[], int]:
    """A do-work function polling `sub` and handing each whole message to `on_text(text, header)`."""
    assembler = FragmentAssembler(lambda buf, hdr: on_text(bytes(buf).decode("utf-8", "replace"), hdr))
    return lambda: sub.poll(assembler, limit)


def run_until(step: Callable[[], int], done: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Call `step` until `done()` or `seconds` pass, idling 1 ms whenever a step did no work."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        if not step():
            time.sleep(0.001)
    return True

