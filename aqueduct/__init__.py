"""aqueduct: typed, networked message channels over QUIC (the Aqueduct protocol).

The public names are the `__all__` lists of three parts, joined here and written nowhere else (h11's
pattern): `aqueduct.errors` (the errors and how a channel ends), `aqueduct.api` (connections, halves,
codecs, configuration) and `aqueduct.services` (typed remote services; its `connect` and `serve` are the
ones exported). Everything else in the package is the library's own: its modules are not API, however they
are named (decisions API-24, API-27). The errors load at once; the API and the services on
first use, so `import aqueduct.wire` stays free of asyncio and aioquic. `aqueduct.__version__` is the
installed package's version (`aqueduct --version` prints it).
"""

from typing import TYPE_CHECKING, Any

from . import native

native.install()  # first: compiled or pure wire and engine, chosen before errors.py imports the wire (native.py)

from . import errors  # noqa: E402
from .errors import *  # noqa: E402, F403  (the errors' __all__; light: no asyncio)

if TYPE_CHECKING:
    from . import api, services
    from .api import *  # noqa: F403
    from .services import *  # noqa: F403

    __all__ = [*errors.__all__, *api.__all__, *services.__all__]
    __version__: str
else:
    _LATER = ("api", "services")
    """The parts loaded on first use of one of their names."""

    def _parts() -> list[Any]:
        import importlib

        return [errors, *(importlib.import_module(f".{part}", __name__) for part in _LATER)]

    def __getattr__(name: str) -> Any:
        if name == "__version__":  # the installed distribution's, so pyproject.toml is the one place it is written
            from importlib.metadata import PackageNotFoundError, version

            try:
                return version(native.DISTRIBUTION)
            except PackageNotFoundError:  # imported from a source tree that was never installed
                return "0+unknown"
        if name == "__all__":
            return [n for part in _parts() for n in part.__all__]
        if not name.startswith("_"):
            for part in _parts()[1:]:
                if name in part.__all__:
                    value = getattr(part, name)
                    globals()[name] = value  # (found once: later lookups are plain module attributes)
                    return value
        raise AttributeError(f"module 'aqueduct' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*__getattr__("__all__"), "__version__", *(n for n in globals() if n.startswith("__"))})
