"""The echo examples end to end (aeron:udp over the in-process loopback, one driver per party)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aeron_compat import Aeron, Context, Publication

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import aeron_echo2 as echo2
import aeron_echo_response as echo_response
import aeron_echo_take1 as take1


def pump(*workers: Any, until: Callable[[], bool], rounds: int = 2000) -> None:
    for _ in range(rounds):
        if until():
            return
        for w in workers:
            w.do_work()
    raise AssertionError("condition not reached")


@pytest.fixture
def drivers() -> Iterator[Callable[[Context | None], Aeron]]:
    opened: list[Aeron] = []

    def make(ctx: Context | None = None) -> Aeron:
        client = Aeron.connect(ctx or Context(counters_interval=0, udp_media="loopback"))
        opened.append(client)
        return client

    yield make
    for client in reversed(opened):
        client.close()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_take1_echoes_numbers_and_forgets_departed_clients(drivers: Callable[..., Aeron]) -> None:
    server = take1.EchoServer(drivers(), "localhost", 19000)
    client_aeron = drivers()
    client = take1.EchoClient(client_aeron, "localhost", 18000, "localhost", 19000)
    client.hello()
    for _ in range(3):
        client.send_number()
    pump(server, client, until=lambda: len(client.responses) == 3)
    assert client.responses == client.sent
    assert len(server.clients) == 1
    client_aeron.close()
    pump(server, until=lambda: not server.clients)


def echo2_context() -> Context:
    ctx = echo2.echo_context()
    ctx.counters_interval = 0
    return ctx


def start_echo2(drivers: Callable[..., Aeron], **limits: Any) -> tuple[Any, Any, FakeClock]:
    clock = FakeClock()
    config = echo2.EchoServerConfiguration(port=19100, control_port=19101, base_port=19110, **limits)
    return echo2.EchoServer(drivers(echo2_context()), config, clock=clock), config, clock


def new_client(drivers: Callable[..., Aeron], config: Any, clock: FakeClock) -> Any:
    return echo2.EchoClient(drivers(echo2_context()), "localhost", config.port, config.control_port, clock=clock)


def raw_echo2_client(drivers: Callable[..., Aeron]) -> tuple[Publication, list[str], Callable[[], int]]:
    """A hand-driven echo2 client: its publication to the server, the answers it got, and its poll function."""
    aeron = drivers(echo2_context())
    pub = aeron.add_publication(echo2.channel(endpoint="localhost:19100"), echo2.STREAM_ID)
    sub = aeron.add_subscription(echo2.channel(endpoint="localhost:0", control="localhost:19101"), echo2.STREAM_ID)
    answers: list[str] = []
    poll = echo2.string_poller(sub, lambda text, hdr: answers.append(text))
    return pub, answers, poll


def test_echo2_connects_through_a_duologue_and_echoes(drivers: Callable[..., Aeron]) -> None:
    server, config, clock = start_echo2(drivers)
    client = new_client(drivers, config, clock)
    pump(server, client, until=lambda: client.state == "ECHO")
    (duologue,) = server.duologues
    assert client.duologue_pub.session_id == duologue.session_id
    assert echo2.RESERVED_SESSION_ID_LOW <= duologue.session_id <= echo2.RESERVED_SESSION_ID_HIGH
    assert client.pub.is_closed and client.sub.is_closed
    client.send_echo("12cbcf2e9c84b2f0")
    pump(server, client, until=lambda: bool(client.responses))
    assert client.responses == ["12cbcf2e9c84b2f0"]


def test_echo2_refuses_clients_over_the_per_ip_limit(drivers: Callable[..., Aeron]) -> None:
    server, config, clock = start_echo2(drivers, max_clients=4, max_duologues_per_ip=2)
    clients = [new_client(drivers, config, clock) for _ in range(3)]
    for client in clients:
        pump(server, client, until=lambda c=client: c.state in ("ECHO", "FAILED"))
    assert [c.state for c in clients] == ["ECHO", "ECHO", "FAILED"]
    assert clients[2].error == "server returned an error: too many connections for IP address"


def test_echo2_refuses_clients_when_full(drivers: Callable[..., Aeron]) -> None:
    server, config, clock = start_echo2(drivers, max_clients=2, max_duologues_per_ip=10)
    clients = [new_client(drivers, config, clock) for _ in range(3)]
    for client in clients:
        pump(server, client, until=lambda c=client: c.state in ("ECHO", "FAILED"))
    assert clients[2].error == "server returned an error: server full"


def test_echo2_bad_message_ends_the_duologue(drivers: Callable[..., Aeron]) -> None:
    server, config, clock = start_echo2(drivers)
    client = new_client(drivers, config, clock)
    pump(server, client, until=lambda: client.state == "ECHO")
    client.send_raw("HELLO again")
    pump(server, client, until=lambda: client.state == "FAILED")
    assert client.error == "bad message" and server.duologues == []


def test_echo2_answers_only_the_session_that_asked(drivers: Callable[..., Aeron]) -> None:
    server, config, clock = start_echo2(drivers)
    a, b = new_client(drivers, config, clock), new_client(drivers, config, clock)
    pump(server, a, b, until=lambda: a.state == b.state == "ECHO")
    assert a.duologue_pub.session_id != b.duologue_pub.session_id
    a.send_echo("for a")
    b.send_echo("for b")
    pump(server, a, b, until=lambda: bool(a.responses and b.responses))
    assert a.responses == ["for a"] and b.responses == ["for b"]


def test_echo2_expires_duologues_nobody_joined(drivers: Callable[..., Aeron]) -> None:
    server, config, clock = start_echo2(drivers, max_clients=1, expiry_seconds=10.0)
    pub, answers, poll = raw_echo2_client(drivers)
    echo2.send_message(pub, "HELLO 0000BEEF")
    pump(server, until=lambda: bool(server.duologues))
    pump(server, until=lambda: poll() > 0 or bool(answers))
    assert answers[0].split()[1] == "CONNECT"
    clock.now = 9.0
    server.do_work()
    assert len(server.duologues) == 1
    late = new_client(drivers, config, clock)
    pump(server, late, until=lambda: late.state == "FAILED")
    assert late.error == "server returned an error: server full"
    clock.now = 10.0
    server.do_work()
    assert server.duologues == [] and len(server.ports.free) == 2
    again = new_client(drivers, config, clock)
    pump(server, again, until=lambda: again.state == "ECHO")


def test_echo2_garbage_hello_gets_an_error(drivers: Callable[..., Aeron]) -> None:
    server, _, _ = start_echo2(drivers)
    pub, answers, poll = raw_echo2_client(drivers)
    echo2.send_message(pub, "HELLO not-hex")
    pump(server, until=lambda: poll() > 0 or bool(answers))
    assert answers == [f"{pub.session_id} ERROR bad message"] and server.duologues == []


def test_response_channels_echo_and_enforce_limits(drivers: Callable[..., Aeron]) -> None:
    server = echo_response.EchoResponseServer(drivers(), "localhost", 19200, max_clients=3, max_per_ip=2)
    clients = [echo_response.EchoResponseClient(drivers(), "localhost", 19200) for _ in range(3)]
    for client in clients:
        pump(server, client, until=lambda c=client: bool(c.responses))
    refused = ["ERROR too many connections for IP address"]
    assert [c.responses for c in clients] == [["CONNECTED"], ["CONNECTED"], refused]
    clients[0].send("ECHO one")
    clients[1].send("nonsense")
    pump(server, *clients[:2], until=lambda: len(clients[0].responses) == 2 and len(clients[1].responses) == 2)
    assert clients[0].responses[1] == "ECHO one" and clients[1].responses[1] == "ERROR bad message"


@pytest.mark.parametrize("module", [take1, echo2, echo_response])
def test_example_demos_run(module: Any, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["demo", "--rounds", "2", "--interval", "0"] if module is take1 else ["demo", "--clients", "3"]
    assert module.main(args) == 0
    assert capsys.readouterr().out


def test_echo2_demo_says_why_a_client_is_refused(capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    assert echo2.main(["demo", "--clients", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "3 per IP address (--per-ip)" in lines[0] and "those beyond the first 3 are refused" in lines[0]
    assert [line.split(": ")[1].split(" ")[0] for line in lines[1:]] == ["ECHO"] * 3 + ["refused"] * 2
    for line in lines[4:]:
        assert line.endswith("too many connections for IP address: the server allows 3 per IP address (--per-ip) "
                             "and every demo client comes from the same one")
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # no bare log line without the why
