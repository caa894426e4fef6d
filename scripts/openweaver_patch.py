"""Write patched copies of OpenWeaver's Stream example server.cpp and client.cpp into a build directory.

Run by scripts/build_openweaver.sh; the originals (../shared/anchors/openweaver-stream) are read,
never changed, and nothing of them enters this repository. The patches make the examples usable as
interop peers (see specs/DECISIONS.md, "OpenWeaver interop peers"):
- addresses come from the environment (OW_LISTEN, OW_BIND, OW_DIAL) instead of fixed ports;
- the server hashes what it receives (SHA-256, libsodium) and prints `RECEIVED <n> <hex>` once it has
  OW_BYTES bytes;
- the client sends OW_BYTES bytes of a known pattern (byte i = (7 i + 3) mod 256) once, not 125 MB of
  zeros forever, and prints `SENT <n>` when they are acknowledged;
- the client starts receiving (`listen`) before it dials: unpatched, its socket never reads, so it
  never sees the DIALCONF (even from the example server) and retries its DIAL until it gives up.
- a patched copy of stream/include/marlin/stream/StreamFiber.hpp goes to OUT_DIR/include (searched
  first): its send_DIAL sealed the DIAL in place (`crypto_box_seal(buf, buf, ...)`), and libsodium
  writes the seal's ephemeral key over the start of the plaintext before encrypting it, so the
  listener read that key as the dialer's static key and sealed its DIALCONF to it: the dialer could
  never open the DIALCONF ("DIALCONF: Unseal failure") and no C++ client ever finished a handshake.
  The copy seals from a separate plaintext buffer.
Usage: openweaver_patch.py SRC_DIR OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

HELPERS = r"""
#include <cstdio>
#include <cstdlib>
static uint64_t ow_bytes() {
	char const* v = std::getenv("OW_BYTES"); return v ? std::strtoull(v, nullptr, 10) : 0;
}
static char const* ow_env(char const* name, char const* fallback) {
	char const* v = std::getenv(name); return v ? v : fallback;
}
static crypto_hash_sha256_state ow_hash;
static uint64_t ow_received = 0;
static void ow_count(uint8_t const* data, size_t size) {
	if(ow_received == 0) { crypto_hash_sha256_init(&ow_hash); }
	uint64_t target = ow_bytes();
	uint64_t before = ow_received;
	ow_received += size;
	if(target == 0 || before >= target) { return; }
	size_t take = ow_received > target ? (size_t)(target - before) : size;
	crypto_hash_sha256_update(&ow_hash, data, take);
	if(ow_received >= target) {
		unsigned char out[crypto_hash_sha256_BYTES];
		crypto_hash_sha256_final(&ow_hash, out);
		std::printf("RECEIVED %llu ", (unsigned long long)target);
		for(unsigned char c : out) { std::printf("%02x", c); }
		std::printf("\n");
		std::fflush(stdout);
	}
}
"""


def replace(text: str, old: str, new: str, name: str) -> str:
    if old not in text:
        raise SystemExit(f"openweaver_patch: {name}: expected text not found: {old!r}")
    return text.replace(old, new)


SK = "uint8_t static_sk[crypto_box_SECRETKEYBYTES];"
RECV = "\t\tuint8_t stream_id [[maybe_unused]],\n\t\tSocketAddress\n\t) {"


def patch_server(text: str) -> str:
    text = replace(text, SK, HELPERS + SK, "server")
    text = replace(text, RECV, RECV + "\n\t\tow_count(packet.data(), packet.size());", "server")
    text = replace(text, 'SocketAddress::from_string("127.0.0.1:8000")',
                   'SocketAddress::from_string(ow_env("OW_LISTEN", "127.0.0.1:8000"))', "server")
    return text


def patch_client(text: str) -> str:
    text = replace(text, SK, HELPERS + SK, "client")
    text = replace(text, "\t\tdid_dial(transport, addr);\n\t}",
                   '\t\tstd::printf("SENT %llu\\n", (unsigned long long)ow_bytes());\n\t\tstd::fflush(stdout);\n\t}',
                   "client")
    text = replace(text, "\t\tauto buf = Buffer(SIZE);\n\t\tstd::memset(buf.data(), 0, SIZE);",
                   "\t\tauto buf = Buffer(ow_bytes());\n\t\tfor(size_t i = 0; i < ow_bytes(); i++) { "
                   "buf.data()[i] = (uint8_t)(7 * i + 3); }", "client")
    text = replace(text, 'c.template outer_call<"bind"_tag>(0, SocketAddress::from_string("127.0.0.1:7000"));',
                   'c.template outer_call<"bind"_tag>(0, '
                   'SocketAddress::from_string(ow_env("OW_BIND", "127.0.0.1:7000")));\n'
                   '\tc.template outer_call<"listen"_tag>(0);', "client")
    text = replace(text, 'SocketAddress::from_string("127.0.0.1:8000")',
                   'SocketAddress::from_string(ow_env("OW_DIAL", "127.0.0.1:8000"))', "client")
    return text


DIAL_SEAL = ("\tstd::memcpy(buf, static_pk, crypto_box_PUBLICKEYBYTES);\n"
             "\tstd::memcpy(buf + crypto_box_PUBLICKEYBYTES, ephemeral_pk, crypto_kx_PUBLICKEYBYTES);\n"
             "\tcrypto_box_seal(buf, buf, pt_len, remote_static_pk);")


def patch_fiber(text: str) -> str:
    for rel in ("protocol/SendStream.hpp", "protocol/RecvStream.hpp", "protocol/AckRanges.hpp", "Messages.hpp"):
        text = replace(text, f'#include "{rel}"', f"#include <marlin/stream/{rel}>", "StreamFiber.hpp")
    return replace(text, DIAL_SEAL,
                   "\tuint8_t dial_pt[pt_len];\n"
                   "\tstd::memcpy(dial_pt, static_pk, crypto_box_PUBLICKEYBYTES);\n"
                   "\tstd::memcpy(dial_pt + crypto_box_PUBLICKEYBYTES, ephemeral_pk, crypto_kx_PUBLICKEYBYTES);\n"
                   "\tcrypto_box_seal(buf, dial_pt, pt_len, remote_static_pk);", "StreamFiber.hpp")


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    examples = src / "stream" / "examples"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ow_server.cpp").write_text(patch_server((examples / "server.cpp").read_text()))
    (out / "ow_client.cpp").write_text(patch_client((examples / "client.cpp").read_text()))
    fiber = Path("include") / "marlin" / "stream" / "StreamFiber.hpp"
    (out / fiber).parent.mkdir(parents=True, exist_ok=True)
    (out / fiber).write_text(patch_fiber((src / "stream" / fiber).read_text()))


if __name__ == "__main__":
    main()
