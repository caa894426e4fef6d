"""Recording channel traffic as Parquet (needs the `spark` extra: pyarrow).

`Recorder(dir)` writes rotating segments on a thread; `Recorder.connection()`
gives the API layer a `ConnectionTap` per connection; `read_recording(dir)`
loads sealed segments. The schema is in schema.py and specs/RECORDING.md.
"""

from .reader import RecordingError, read_events, read_recording
from .recorder import Recorder
from .schema import COLUMNS, SCHEMA, Kind, make_row
from .segments import sealed_segments
from .tap import ConnectionTap

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "ConnectionTap",
    "Kind",
    "Recorder",
    "RecordingError",
    "make_row",
    "read_events",
    "read_recording",
    "sealed_segments",
]
