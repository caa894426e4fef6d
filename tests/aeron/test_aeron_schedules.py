"""Random schedules of offers, claims, polls and late subscribers against a simple model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aeron_compat import BACK_PRESSURED, Aeron, Context, FragmentAssembler

ops = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.integers(0, 3000)),
        st.tuples(st.just("claim"), st.integers(0, 200), st.booleans()),
        st.tuples(st.just("poll"), st.integers(1, 40)),
        st.tuples(st.just("join"), st.just(0)),
    ),
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_every_subscriber_gets_exactly_the_accepted_messages_from_its_join(schedule: list[tuple]) -> None:
    with Aeron.connect(Context(counters_interval=0, udp_media="loopback")) as aeron:
        channel = "aeron:ipc?term-length=64k|mtu=512"
        pub = aeron.add_publication(channel, 1)
        subs: list[tuple[object, FragmentAssembler, list[bytes], int]] = []
        accepted: list[bytes] = []

        def join() -> None:
            got: list[bytes] = []
            sub = aeron.add_subscription(channel, 1)
            subs.append((sub, FragmentAssembler(lambda buf, hdr, got=got: got.append(bytes(buf))), got,
                         len(accepted)))

        join()
        last_position = 0
        for i, op in enumerate(schedule):
            kind = op[0]
            if kind == "offer":
                data = bytes([i % 256]) * op[1]
                result = pub.offer(data)
                if result > 0:
                    accepted.append(data)
            elif kind == "claim":
                with pub.try_claim(op[1]) as claim:
                    if claim:
                        claim.put_bytes(bytes([i % 256]) * op[1])
                        if op[2]:
                            accepted.append(bytes([i % 256]) * op[1])
                        else:
                            claim.abort()
                result = claim.result
            elif kind == "poll":
                for sub, assembler, _, _ in subs:
                    sub.poll(assembler, op[1])  # type: ignore[attr-defined]
                continue
            else:
                join()
                continue
            if result > 0:
                assert result % 32 == 0 and result > last_position
                last_position = result
            else:
                assert result == BACK_PRESSURED
                assert pub.position >= min(s.images[0].position for s, *_ in subs) + 32768  # type: ignore[attr-defined]
        for sub, assembler, _, _ in subs:
            while sub.poll(assembler, 1000):  # type: ignore[attr-defined]
                pass
        for _, _, got, joined_at in subs:
            assert got == accepted[joined_at:]
