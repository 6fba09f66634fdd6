"""shmbus: messages between processes on one Linux machine through shared memory.

- A broadcast bus: ``Publisher`` (one) or ``ManyPublisher`` (many) publish
  fixed-size messages; any number of ``Subscriber``s read them, each at its
  own cursor. A subscriber that falls a whole ring behind receives
  ``Lagged(skipped)`` with the exact number it lost.
- A pool bus: ``PoolPublisher.loan`` a block, write it in place, publish it;
  ``PoolSubscriber.recv`` gives a ``Sample`` viewing the block in place.
- A stream: ``Producer.push`` / ``Consumer.pop`` byte records, lossless.
- A request-response service: ``Server.create``/``attach`` takes requests
  (``Request.respond`` or ``refuse``); ``Client.call`` (or ``send`` then
  ``wait``) gets exactly one outcome per request, the response or a
  ``CallError`` subclass.
- A journal: ``JournalPublisher`` appends every message to a file;
  ``JournalSubscriber.join`` starts with the journal (late join without
  gap), ``State.join`` folds keyed messages into last-value-per-key.

Blocking calls release the GIL and answer Ctrl-C within 50 ms. asyncio:
``await sub.recv_async()`` and ``async for msg in sub`` on the subscribers
(``await consumer.pop_async()`` on a stream consumer) wait without a
thread of their own and without polling (docs/PYTHON.md).
Errors: ``shmbus.errors`` (``shmbus.Error`` and its subclasses).
"""

from . import errors
from ._shmbus import (
    Blackboard,
    BlackboardEntry,
    Client,
    Consumer,
    Entry,
    JournalPublisher,
    JournalSubscriber,
    Lagged,
    Loan,
    ManyPublisher,
    PoolPublisher,
    PoolSubscriber,
    Producer,
    Publisher,
    Request,
    Sample,
    Server,
    State,
    Subscriber,
    aio_registrations,
    remove,
)
from ._support import Batch
from .recording import Recording, RecordedBus, RecordedGap, RecordedMessage, replay
from .errors import (
    AbandonedError,
    AttachError,
    BadResponseError,
    BlackboardError,
    BlackboardFullError,
    BusyError,
    BusExistsError,
    BusNotFoundError,
    CallError,
    CallTimeoutError,
    ClosedError,
    CorruptError,
    CreateError,
    CreatePermissionError,
    EntryBusyError,
    EntryCorruptError,
    EntryStuckError,
    Error,
    FieldSizeError,
    FullError,
    InvalidGeometryError,
    InvalidNameError,
    JoinError,
    JournalError,
    LoanError,
    LoanOutstandingError,
    LosslessRefusedError,
    MessageTooLongError,
    MessageType,
    NoDirectoryError,
    NoServerError,
    NotJournaledError,
    OpenError,
    OpenPermissionError,
    PeerGoneError,
    PoolExhaustedError,
    ReadOnlyError,
    RecordingError,
    RefusedError,
    RoleTakenError,
    ServerGoneError,
    StreamError,
    TimeoutError,
    TooManySamplesError,
    TypeMismatchError,
    UnknownCallError,
    WrongKindError,
)

__version__ = "0.1.0"

__all__ = [
    "Publisher",
    "ManyPublisher",
    "Subscriber",
    "Lagged",
    "Batch",
    "PoolPublisher",
    "PoolSubscriber",
    "Loan",
    "Sample",
    "Producer",
    "Consumer",
    "Recording",
    "replay",
    "RecordedBus",
    "RecordedMessage",
    "RecordedGap",
    "JournalPublisher",
    "JournalSubscriber",
    "Entry",
    "State",
    "Blackboard",
    "BlackboardEntry",
    "Server",
    "Request",
    "Client",
    "remove",
    "aio_registrations",
    "errors",
]
# The exceptions, as shmbus.errors lists them.
__all__ += errors.__all__
