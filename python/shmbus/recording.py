"""``shmbus.Recording``: reads a recording (docs/RECORDING.md) written by
``shmbus record`` or the Rust ``FileRecorder``: its parts as one, records
filtered by bus and receive time, seeks through the index, and a typed
bus's messages as a structured NumPy array (a pandas DataFrame is then
``pandas.DataFrame(array)``).

NumPy is needed only by ``to_numpy``; without it that call raises an
``ImportError`` that says to install it.
"""

from typing import Iterator, NamedTuple, Optional, Union

from . import _support
from ._shmbus import _RecordingFiles, _replay

__all__ = ["Recording", "RecordedBus", "RecordedMessage", "RecordedGap", "KINDS"]

#: A bus record's kind code, named.
KINDS = {1: "bus", 2: "many-publisher", 3: "pool", 4: "stream", 5: "journaled"}


class RecordedBus(NamedTuple):
    """A bus as the recording declares it: its geometry and message type
    (``type_*`` None in a version 1 file)."""

    id: int
    name: str
    kind: str
    msg_size: int
    slots: int
    blocks: int
    lossless: bool
    type_name: Optional[str]
    type_size: Optional[int]
    type_align: Optional[int]
    type_hash: Optional[int]


class RecordedMessage(NamedTuple):
    """One message: its bus's id, sequence, receive times (CLOCK_MONOTONIC
    and wall clock, ns) and bytes."""

    bus: int
    seq: int
    mono_ns: int
    wall_ns: int
    payload: bytes


class RecordedGap(NamedTuple):
    """``count`` messages from sequence ``first`` that the recorder missed."""

    bus: int
    first: int
    count: int


Record = Union[RecordedBus, RecordedMessage, RecordedGap]


def _named(raw):
    if raw[0] == "message":
        return RecordedMessage(*raw[1:])
    if raw[0] == "gap":
        return RecordedGap(*raw[1:])
    _, id, name, kind, *rest = raw
    return RecordedBus(id, name, KINDS.get(kind, str(kind)), *rest)


class Recording:
    """The recording at ``path`` (and its parts ``path.1``, ...).

    Iterating yields each bus once (``RecordedBus``), then messages
    (``RecordedMessage``) and gaps (``RecordedGap``) in file order; with
    ``bus`` (an id or a name) only that bus's messages and gaps, with
    ``start``/``end`` (CLOCK_MONOTONIC ns, inclusive) only messages
    received then, and the gaps among them. Each iteration reads afresh.
    A damaged record raises ``shmbus.RecordingError`` naming its offset
    (the records before it were yielded); a missing file, ``OSError``.
    """

    def __init__(self, path, *, bus: Union[int, str, None] = None,
                 start: Optional[int] = None, end: Optional[int] = None):
        self.path = str(path)
        self._start = start
        self._end = end
        # Opened now, so a bad file fails here, not at the first loop.
        _RecordingFiles(self.path)
        self._bus = self.bus_id(bus) if bus is not None else None

    def _reader(self, bus=None):
        b = self._bus if bus is None else bus
        return _RecordingFiles(self.path, b, self._start, self._end)

    @staticmethod
    def _iterate(reader) -> Iterator[Record]:
        while True:
            raw = reader.next_record()
            if raw is None:
                return
            yield _named(raw)

    def __iter__(self) -> Iterator[Record]:
        return self._iterate(self._reader())

    def parts(self):
        """The files of the recording, in order."""
        return [str(p) for p in self._reader().parts()]

    def buses(self):
        """Every bus the recording declares (reads it to the end)."""
        return [r for r in self._iterate(_RecordingFiles(self.path)) if isinstance(r, RecordedBus)]

    def bus_id(self, bus: Union[int, str]) -> int:
        """The id of the bus named ``bus`` (an int is returned as is);
        ``KeyError`` if the recording has none of that name."""
        if isinstance(bus, int):
            return bus
        for r in self._iterate(_RecordingFiles(self.path)):
            if isinstance(r, RecordedBus) and r.name == bus:
                return r.id
        raise KeyError(f"{self.path}: no bus named {bus!r}")

    def seek_time(self, mono_ns: int) -> Iterator[Record]:
        """The records from the first message received at or after
        ``mono_ns`` (the buses first), found through the index."""
        reader = self._reader()
        reader.seek_time(mono_ns)
        return self._iterate(reader)

    def seek_seq(self, bus: Union[int, str], seq: int) -> Iterator[Record]:
        """The records from the first message or gap of ``bus`` at or past
        sequence ``seq`` (the buses first), found through the index."""
        reader = self._reader()
        reader.seek_seq(self.bus_id(bus), seq)
        return self._iterate(reader)

    def to_numpy(self, bus: Union[int, str], dtype=None):
        """Bus ``bus``'s messages (within ``start``/``end``) as a
        structured array with fields ``seq``, ``mono_ns``, ``wall_ns``
        (``uint64``) and ``msg``: of ``dtype`` (a NumPy dtype of the bus's
        message size, such as the structured dtype a typed bus carries),
        else raw bytes (``V<size>``). ``ValueError`` for a dtype of another
        size, or a pool or stream bus whose messages differ in length."""
        np = _support.numpy()
        bus = self.bus_id(bus)
        decl = next((b for b in self.buses() if b.id == bus), None)
        if decl is None:
            raise KeyError(f"{self.path}: no bus {bus}")
        rows = [r for r in self._iterate(self._reader(bus)) if isinstance(r, RecordedMessage)]
        size = decl.msg_size
        if rows and decl.kind in ("pool", "stream"):
            lengths = {len(r.payload) for r in rows}
            if len(lengths) > 1:
                raise ValueError(
                    f"bus {decl.name}: messages of {len(lengths)} different lengths "
                    "do not make one array (read them by iterating)")
            size = lengths.pop()
        msg = np.dtype(dtype) if dtype is not None else np.dtype(f"V{size}")
        if msg.itemsize != size:
            raise ValueError(
                f"bus {decl.name}: messages of {size} bytes, dtype {msg} of {msg.itemsize}")
        out = np.zeros(len(rows), dtype=[("seq", "<u8"), ("mono_ns", "<u8"),
                                          ("wall_ns", "<u8"), ("msg", msg)])
        out["seq"] = [r.seq for r in rows]
        out["mono_ns"] = [r.mono_ns for r in rows]
        out["wall_ns"] = [r.wall_ns for r in rows]
        if rows:
            out["msg"] = np.frombuffer(b"".join(r.payload for r in rows), dtype=msg)
        return out


def replay(path, map=None, *, to: Optional[str] = None, speed: Optional[float] = 1.0,
           start: Optional[int] = None, end: Optional[int] = None,
           start_seq: Optional[int] = None, end_seq: Optional[int] = None,
           slots: Optional[int] = None, journal_dir=None, passes: int = 1,
           mode: Optional[int] = None) -> dict:
    """Publishes the recording at ``path`` (and its parts) back into buses
    of the recorded kinds, through Rust's ``shmbus::record::Replayer``,
    with the GIL released while it runs.

    ``map`` gives each recorded bus its target (``{"recorded": "bus"}``);
    ``to`` names the one target of a one-bus recording. A target is
    created with the recorded geometry and message type and ``mode``
    (default ``0o600``), or attached to if it exists (of that kind and
    size, your own and granting nothing beyond ``mode``, else
    ``shmbus.Error``: another user's bus is never published into); a
    journaled one is created only with ``journal_dir`` (its journal
    ``journal_dir/NAME.journal``). The mapping and every target are
    checked before any bus is made, so a refused replay leaves none
    behind. ``speed`` 1.0 is the recorded pace, 2.0
    twice as fast, ``None`` as fast as it goes. ``start``/``end`` are ns
    after the recording's first message, ``start_seq``/``end_seq`` a
    sequence (start inclusive, end exclusive). A plain bus gets each gap
    as a skip (its subscribers see the same lag reports); other kinds have
    no skip and the count of gaps left out is ``gaps_dropped``.

    Returns ``passes``, ``messages``, ``bytes``, ``gaps``, ``skipped``,
    ``gaps_dropped`` and ``pace_error_ns`` (p50, p99, max; ``None`` when
    not paced). A mapping that does not fit the recording raises
    ``ValueError``; a damaged recording ``shmbus.RecordingError``; a file
    that cannot be read ``OSError``. A replay runs to its end: Ctrl-C is
    seen when it returns.
    """
    if (start is not None and start_seq is not None) or (end is not None and end_seq is not None):
        raise ValueError("give a start (and an end) as a time or as a sequence, not both")
    targets = list((map or {}).items())
    return _replay(str(path), targets, to, speed, (start, start_seq, end, end_seq),
                   slots, None if journal_dir is None else str(journal_dir), passes, mode)
