"""The key-exchange material OpenWeaver's Stream puts in DIAL and DIALCONF (profile "openweaver").

Theory: each side has a static X25519 key pair. The dialer sends, sealed to
the listener's static public key (libsodium `crypto_box_seal`), its own
static public key and a fresh ephemeral public key (32 + 32 bytes, 112 on the
wire). The listener opens it and answers with its own ephemeral public key
sealed to the dialer's static key (80 bytes). OpenWeaver derives session keys
from the ephemerals but, with encryption off (its default, and the only mode
here), never uses them; so a dialer need not open the DIALCONF. A DIAL that
does not open with our key is refused.
"""

from __future__ import annotations

from nacl.exceptions import CryptoError
from nacl.public import PrivateKey, PublicKey, SealedBox

DIAL_PAYLOAD = 112
DIALCONF_PAYLOAD = 80


class OpenWeaverKeys:
    """One endpoint's static key pair and the DIAL/DIALCONF payloads made with it."""

    def __init__(self, static_secret: bytes | None = None) -> None:
        self.static = PrivateKey(static_secret) if static_secret is not None else PrivateKey.generate()

    @property
    def static_public(self) -> bytes:
        return bytes(self.static.public_key)

    def dial_payload(self, remote_static_public: bytes) -> bytes:
        """DIAL's payload for a listener whose static public key is `remote_static_public`."""
        ephemeral = PrivateKey.generate()
        plain = self.static_public + bytes(ephemeral.public_key)
        return bytes(SealedBox(PublicKey(remote_static_public)).encrypt(plain))

    def answer_dial(self, payload: bytes) -> bytes | None:
        """DIALCONF's payload answering a DIAL's, or None if the DIAL was not sealed to us."""
        if len(payload) < DIAL_PAYLOAD:
            return None
        try:
            plain = SealedBox(self.static).decrypt(payload[:DIAL_PAYLOAD])
        except CryptoError:
            return None
        ephemeral = PrivateKey.generate()
        return bytes(SealedBox(PublicKey(plain[:32])).encrypt(bytes(ephemeral.public_key)))
