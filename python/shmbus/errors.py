"""The exceptions of shmbus, one family per Rust error enum.

Every message is the Rust error's ``Display``: it names what was found and
what was expected. Where a standard exception fits too, the class derives
from it as well, so ``except FileNotFoundError`` works on a missing bus.

    Error
    ├── InvalidNameError (ValueError)          the name is not a bus name
    ├── OpenError                              Rust OpenError
    │   ├── BusNotFoundError (FileNotFoundError)
    │   ├── OpenPermissionError (PermissionError)
    │   ├── TypeMismatchError                  .found / .expected (MessageType)
    │   ├── WrongKindError                     a stream opened as a bus, a pool bus as a plain one, ...
    │   └── LosslessRefusedError               .kind: a lossless subscriber refused (and .max)
    ├── CreateError                            Rust CreateError
    │   ├── BusExistsError (FileExistsError)
    │   ├── CreatePermissionError (PermissionError)
    │   ├── NoDirectoryError (FileNotFoundError)
    │   └── InvalidGeometryError (ValueError)
    ├── AttachError                            Rust AttachError
    │   └── RoleTakenError                     .pid: a live publisher/producer/consumer holds the role
    ├── MessageTooLongError (ValueError)       .length / .max
    ├── AbandonedError                         a many-publisher claim was skipped before its commit
    ├── FullError                              try_publish: a lossless subscriber is behind (.entry, .pid)
    ├── TimeoutError (TimeoutError)            a pop/push/loan that raised at its timeout
    │   └── PoolExhaustedError (LoanError)     no block came free in time (.census in the message)
    ├── LoanError                              Rust LoanError
    │   └── LoanOutstandingError               a second loan while this publisher's loan is out
    ├── TooManySamplesError                    a pool subscriber holds PoolSubscriber.MAX_HELD samples
    ├── StreamError                            Rust PushError / PopError
    │   ├── PeerGoneError (ConnectionError)    the other side died
    │   └── CorruptError                       impossible cursors or record headers
    ├── JoinError                              Rust JoinError
    │   └── NotJournaledError (AttachError)    the bus has no journal
    ├── JournalError                           Rust JournalOpenError / AppendError / CloseError
    ├── BlackboardError                        Rust blackboard GetError / PutError / RemoveError
    │   ├── EntryBusyError                     .entry: a write kept the entry busy through every try
    │   ├── EntryStuckError                    .entry / .version: a writer died writing it
    │   ├── EntryCorruptError                  .entry / .tag: an entry no writer wrote
    │   ├── BlackboardFullError                .keys: a new key and the table is full
    │   ├── FieldSizeError (ValueError)        .field ("key"/"value") / .found / .expected
    │   └── ReadOnlyError                      put/remove on a blackboard opened to read
    ├── CallError                              Rust reqrep::CallError (.call: the call's id)
    │   ├── CallTimeoutError (TimeoutError)    no response by the deadline (a late one is dropped)
    │   ├── ServerGoneError (ConnectionError)  .pid: the server died holding the request
    │   ├── NoServerError (ConnectionError)    no server alive: withdrawn unseen
    │   ├── RefusedError                       .pid: the server dropped the request unanswered
    │   ├── BadResponseError                   a response longer than the service's largest
    │   └── UnknownCallError (ValueError)      no such call outstanding on this client
    ├── BusyError (RuntimeError)               another thread is in a call of this handle
    └── ClosedError (ValueError)               a closed handle, a released sample, a published loan
"""

import builtins
from typing import NamedTuple, Optional

__all__ = [
    "MessageType",
    "Error",
    "InvalidNameError",
    "OpenError",
    "BusNotFoundError",
    "OpenPermissionError",
    "TypeMismatchError",
    "WrongKindError",
    "LosslessRefusedError",
    "CreateError",
    "BusExistsError",
    "CreatePermissionError",
    "NoDirectoryError",
    "InvalidGeometryError",
    "AttachError",
    "RoleTakenError",
    "MessageTooLongError",
    "AbandonedError",
    "FullError",
    "TimeoutError",
    "LoanError",
    "PoolExhaustedError",
    "LoanOutstandingError",
    "TooManySamplesError",
    "StreamError",
    "PeerGoneError",
    "CorruptError",
    "JoinError",
    "NotJournaledError",
    "JournalError",
    "BlackboardError",
    "EntryBusyError",
    "EntryStuckError",
    "EntryCorruptError",
    "BlackboardFullError",
    "FieldSizeError",
    "ReadOnlyError",
    "CallError",
    "CallTimeoutError",
    "ServerGoneError",
    "NoServerError",
    "RefusedError",
    "BadResponseError",
    "UnknownCallError",
    "BusyError",
    "ClosedError",
    "RecordingError",
]


class MessageType(NamedTuple):
    """A bus's message type (its fingerprint; docs/LAYOUT.md "Type fingerprint").

    ``name_hash`` is FNV-1a 64 of ``name``. A field is None where the check
    that failed did not involve it (a dtype checked against a message size).
    """

    name: Optional[str]
    size: int
    align: Optional[int]
    name_hash: Optional[int]


class Error(Exception):
    """Base of every shmbus error."""


class InvalidNameError(Error, ValueError):
    """The name is not a valid bus name."""


class OpenError(Error):
    """A segment could not be opened (Rust ``OpenError``)."""


class BusNotFoundError(OpenError, FileNotFoundError):
    """No bus by that name."""


class OpenPermissionError(OpenError, PermissionError):
    """The bus's file mode does not let this user open it."""


class TypeMismatchError(OpenError):
    """The bus carries another message type than the caller expects.

    ``found`` is the bus's, ``expected`` the caller's (both ``MessageType``).
    """

    found: Optional[MessageType] = None
    expected: Optional[MessageType] = None


class WrongKindError(OpenError):
    """A segment of another kind: a stream opened as a bus, a pool bus
    opened as a plain one, ..."""


class LosslessRefusedError(OpenError):
    """A lossless subscriber (``Subscriber.open(..., lossless=True)``) was
    refused. ``kind`` says which refusal: ``"not_allowed"`` (the bus was
    created with ``lossless_subscribers=0``), ``"too_many"`` (as many as the
    bus allows gate it already; ``max`` is that limit), ``"registry_full"``
    (no registry entry is free)."""

    kind: str = ""
    max: Optional[int] = None


class CreateError(Error):
    """A bus or stream could not be created (Rust ``CreateError``)."""


class BusExistsError(CreateError, FileExistsError):
    """Something already has that name; create never reuses a file."""


class CreatePermissionError(CreateError, PermissionError):
    """The directory does not let this user create the file."""


class NoDirectoryError(CreateError, FileNotFoundError):
    """The directory the bus would live in does not exist."""


class InvalidGeometryError(CreateError, ValueError):
    """An impossible size: a capacity that is not a power of two, ..."""


class AttachError(Error):
    """A publisher, producer or consumer could not take its role (Rust ``AttachError``)."""


class RoleTakenError(AttachError):
    """Another live process holds the role; ``pid`` is its pid."""

    pid: int = 0


class MessageTooLongError(Error, ValueError):
    """A message longer than the bus (block, stream record) carries."""

    length: int = 0
    max: int = 0


class AbandonedError(Error):
    """A many-publisher claim was skipped as abandoned before this publisher
    committed it: the message was not published."""


class FullError(Error):
    """``Publisher.try_publish`` found no room: the lossless subscriber in
    registry entry ``entry`` (process ``pid``) has not read the message it
    would overwrite. Nothing was published."""

    entry: int = 0
    pid: Optional[int] = None


class TimeoutError(Error, builtins.TimeoutError):
    """A wait that raises (``pop``, ``push``, ``loan``) reached its timeout."""


class LoanError(Error):
    """A pool block could not be loaned (Rust ``LoanError``)."""


class PoolExhaustedError(LoanError, TimeoutError):
    """No block came free before the loan's timeout."""


class LoanOutstandingError(LoanError):
    """This publisher's loan is still out (one loan at a time per
    publisher): publish or release it first."""


class TooManySamplesError(Error):
    """The pool subscriber holds as many samples as it may: release one."""


class StreamError(Error):
    """A push or pop failed (Rust ``PushError`` / ``PopError``)."""


class PeerGoneError(StreamError, ConnectionError):
    """The stream's other side died (and the stream is full / empty)."""


class CorruptError(StreamError):
    """The stream's cursors or a record header cannot be right."""


class JoinError(Error):
    """A late join failed (Rust ``JoinError``)."""


class NotJournaledError(JoinError, AttachError):
    """The bus has no journal."""


class JournalError(Error):
    """The journal file could not be opened, read or appended to."""


class BlackboardError(Error):
    """A blackboard read or write refused (Rust ``blackboard::GetError``,
    ``PutError``, ``RemoveError``). Nothing was written."""


class EntryBusyError(BlackboardError):
    """A write kept the entry busy through every try (``.entry``): the
    writer is live and writing it very often. Try again."""

    entry: int = 0


class EntryStuckError(BlackboardError):
    """The entry's stamp stayed odd and no writer lives: a writer died
    writing version ``.version`` of entry ``.entry``. The next writer to
    attach removes it."""

    entry: int = 0
    version: int = 0


class EntryCorruptError(BlackboardError):
    """Entry ``.entry`` has tag ``.tag``, which no writer stores."""

    entry: int = 0
    tag: int = 0


class BlackboardFullError(BlackboardError):
    """A new key, and the table already holds ``.keys`` keys, its capacity."""

    keys: int = 0


class FieldSizeError(BlackboardError, ValueError):
    """A key or value (``.field``) of ``.found`` bytes; the table's are ``.expected``."""

    field: str = ""
    found: int = 0
    expected: int = 0


class ReadOnlyError(BlackboardError):
    """``put`` or ``remove`` on a blackboard opened to read (``Blackboard.open``)."""


class CallError(Error):
    """A request-response call ended without a response (Rust
    ``reqrep::CallError``); ``call`` is the call's id."""

    call: Optional[int] = None


class CallTimeoutError(CallError, TimeoutError):
    """No response before the call's deadline. A response that comes later
    is dropped, never delivered to another call."""


class ServerGoneError(CallError, ConnectionError):
    """The server that took the request (process ``pid``) died before it
    answered: the request may have been partly carried out."""

    pid: int = 0


class NoServerError(CallError, ConnectionError):
    """No server is alive to take the request: it was withdrawn unseen."""


class RefusedError(CallError):
    """The server (process ``pid``) dropped the request unanswered."""

    pid: int = 0


class BadResponseError(CallError):
    """The response is longer than the service's largest: a broken server."""


class UnknownCallError(CallError, ValueError):
    """No such call is outstanding on this client (waited for already,
    cancelled, or another client's)."""


class ClosedError(Error, ValueError):
    """The handle was closed, the sample released, or the loan published."""


class BusyError(Error, RuntimeError):
    """Another thread is in a call of this handle (a wait included): a
    handle serves one thread at a time. ``close()`` is the exception: from
    another thread it ends that wait (which raises ``ClosedError``) and
    closes the handle."""


class RecordingError(Error):
    """A recording (docs/RECORDING.md) that is not one, of another version,
    or damaged: the message names the record's offset (Rust
    ``OpenRecordingError`` / ``ReadError``). A file that cannot be read is
    an ``OSError``."""
