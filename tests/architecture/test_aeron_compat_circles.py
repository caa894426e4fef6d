"""aeron_compat's rooms: one subpackage per protocol, as floors, nothing loose at the root, the same exports.

No module circle (test_no_import_circles.py holds aeron_compat to that, counting TYPE_CHECKING and
function-level imports); here the subpackages too form floors once the client's entry point,
client/aeron.py (which picks a driver), is set on top: the Aeron model is client <- (media | native) <-
driver, Marlin Stream (marlin/) stands alone, bymux on it, and the tools and the bench rows on top.
import-linter's contracts in pyproject.toml say the same; this test states the whole graph, so a new edge
between rooms is a decision someone writes down.  A circle is broken with a protocol class or a callback
owned by the lower module (`client.publication.PublicationOwner`, `media.network.NetworkHost`, a link's
`on_control`, ...), never by moving an import into a function.
"""

from __future__ import annotations

from pathlib import Path

from archgraph import circles, import_graph

import aeron_compat

PACKAGE = Path(aeron_compat.__file__).parent
TOP = {"aeron_compat", "aeron_compat.__main__", "aeron_compat.client.aeron"}


def subpackage_graph() -> dict[str, set[str]]:
    """Subpackage -> the subpackages its modules import (the top modules left out)."""
    packages: dict[str, set[str]] = {}
    for module, targets in import_graph(PACKAGE).items():
        if module in TOP:
            continue
        package = ".".join(module.split(".")[:2])
        packages.setdefault(package, set())
        packages[package] |= {".".join(t.split(".")[:2]) for t in targets if t not in TOP} - {package}
    return {package: deps & set(packages) for package, deps in packages.items()}


def test_subpackages_are_floors() -> None:
    packages = subpackage_graph()
    assert packages["aeron_compat.client"] == set()
    # the Marlin Stream media (media/stream.py) carries aeron:udp over stream/'s asyncio endpoint
    assert packages["aeron_compat.media"] == {"aeron_compat.client", "aeron_compat.marlin"}
    assert packages["aeron_compat.marlin"] == set()
    assert packages["aeron_compat.driver"] == {"aeron_compat.client", "aeron_compat.media"}
    assert circles(packages) == []


def test_nothing_loose_at_the_root() -> None:
    # modules live in the subpackage of their concern (client, driver, media, native, bymux, marlin,
    # tools, bench); the root only re-exports the API and runs the command
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]


EXPORTS = {
    "ADMIN_ACTION", "BACK_PRESSURED", "CLOSED", "MAX_POSITION_EXCEEDED", "NOT_CONNECTED", "Action", "Aeron",
    "AeronError", "BackoffIdleStrategy", "BufferClaim", "BusySpinIdleStrategy", "ChannelUri",
    "ChannelUriStringBuilder", "Context", "ControlledFragmentAssembler", "ExclusivePublication", "FragmentAssembler",
    "Header", "Image", "InvalidChannelError", "MediaDriver", "MessageTooLongError", "NoOpIdleStrategy", "Publication",
    "PublicationClosedError", "PublicationResult", "RegistrationError", "SleepingIdleStrategy", "Subscription",
    "UnsafeDirectory", "YieldingIdleStrategy",
}


def test_the_package_still_exports_the_client_api() -> None:
    # the grouping moved modules, not names: `from aeron_compat import ...` is what users write
    assert set(aeron_compat.__all__) == EXPORTS
    for name in EXPORTS:
        assert getattr(aeron_compat, name) is not None
    assert aeron_compat.Aeron.__module__ == "aeron_compat.client.aeron"
    assert aeron_compat.MediaDriver.__module__ == "aeron_compat.driver.media_driver"
