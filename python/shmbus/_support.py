"""Helpers the native module calls: views over shared memory, NumPy arrays.

Not public API.
"""

import ctypes

_numpy = None


def numpy():
    """NumPy, imported on first use (only recv_batch and .numpy() need it)."""
    global _numpy
    if _numpy is None:
        try:
            import numpy as np
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise ImportError(
                "shmbus: this call returns NumPy arrays; install numpy (pip install numpy)"
            ) from e
        _numpy = np
    return _numpy


def view(hold, length, readonly):
    """A memoryview of the ``length`` bytes that ``hold`` exports (through
    the buffer protocol, read-only for a sample): ``hold`` is its ``.obj``,
    and every slice, cast or NumPy array made from it keeps ``hold`` alive
    (whatever keeps the memory mapped and the block held)."""
    if length == 0:
        return memoryview(b"") if readonly else memoryview(bytearray())
    return memoryview(hold)


def array(mv, dtype):
    """A NumPy array over the memoryview ``mv`` (writable if ``mv`` is)."""
    np = numpy()
    return np.frombuffer(mv, dtype=np.dtype(dtype) if dtype is not None else np.uint8)


def check_dtype(dtype, msg_size):
    """The dtype, checked to be one message: itemsize == msg_size."""
    from .errors import MessageType, TypeMismatchError

    np = numpy()
    dt = np.dtype(dtype)
    if dt.itemsize != msg_size:
        e = TypeMismatchError(
            f"message type mismatch: bus carries {msg_size}-byte messages, "
            f"expected dtype {dt} of itemsize {dt.itemsize}"
        )
        e.found = MessageType(None, msg_size, None, None)
        e.expected = MessageType(str(dt), dt.itemsize, dt.alignment, None)
        raise e
    return dt


def batch(buf, count, msg_size, dtype):
    """``count`` messages of ``msg_size`` bytes in the bytearray ``buf``, as
    an array of shape (count, msg_size) uint8, or of ``count`` records of
    ``dtype``."""
    np = numpy()
    if dtype is None:
        return np.frombuffer(buf, dtype=np.uint8, count=count * msg_size).reshape(count, msg_size)
    return np.frombuffer(buf, dtype=dtype, count=count)


def address_of(buffer):
    """(address, length, keeper) of a writable bytes-like object; ``keeper``
    holds the buffer export (so it cannot move or be freed) while it lives."""
    mv = memoryview(buffer)
    if mv.readonly:
        raise TypeError("recv_into needs a writable buffer (bytearray, memoryview, NumPy array, ...)")
    if not mv.c_contiguous:
        raise TypeError("recv_into needs a C-contiguous buffer")
    mv = mv.cast("B")
    n = mv.nbytes
    if n == 0:
        return 0, 0, mv
    keeper = (ctypes.c_ubyte * n).from_buffer(mv)
    return ctypes.addressof(keeper), n, keeper


from typing import Any, NamedTuple  # noqa: E402


class Batch(NamedTuple):
    """What ``Subscriber.recv_batch`` returns.

    ``messages``: a NumPy array of n messages, shape (n, msg_size) uint8, or
    a 1-D array of n records of the dtype given. ``skipped``: how many
    messages were lost just before ``messages[0]`` (0 if none), so
    delivered + all skipped == published, as with ``recv``.
    """

    messages: Any
    skipped: int


_bells = None


class _LoopBell:
    """One event loop's bell (``_shmbus._Bell``: an eventfd the loop
    watches, and the tokens the waiter thread rang, without the GIL), the
    futures filed under their tokens, and the wake-ups armed for them.

    The loop owns it (its reader holds it) and nothing global does, so a
    loop dropped unclosed can still be collected. When the loop lets go of
    its reader (``close()``, or the loop collected), every wake-up still
    armed is disarmed: its tasks can never run again, and a registration
    with the waiter thread must not outlive them (it would last until the
    next message)."""

    def __init__(self, loop):
        import weakref

        from ._shmbus import _Bell

        self.bell = _Bell()
        self.futures = {}
        self.armed = {}
        self.next_token = 0
        reader = _Reader(self)
        # Only the wake-ups: a finalizer holding the bell would keep the
        # loop alive (the bell's futures hold it).
        weakref.finalize(reader, _disarm_all, self.armed).atexit = False
        loop.add_reader(self.bell.fileno(), reader)

    def ring(self):
        """The loop's reader: ends the awaits of the tokens rung (unless an
        await already ended: a cancellation)."""
        for token in self.bell.take():
            future = self.futures.pop(token, None)
            if future is not None and not future.done():
                future.set_result(None)


class _Reader:
    """The callback a loop's reader calls; its loop holds the only
    reference, so its end says the loop let go of the reader."""

    __slots__ = ("bell", "__weakref__")

    def __init__(self, bell):
        self.bell = bell

    def __call__(self):
        self.bell.ring()


def _disarm_all(armed):
    for wake_up in list(armed.values()):
        wake_up.disarm()
    armed.clear()


def _bell_of(loop):
    """The running loop's bell, made on its first async receive; it goes
    with the loop (closing the loop closes its selector and disarms what
    is still armed; the eventfd is closed when the bell is collected)."""
    global _bells
    import weakref

    if _bells is None:
        _bells = weakref.WeakKeyDictionary()
    ref = _bells.get(loop)
    bell = ref() if ref is not None else None
    if bell is None:
        bell = _LoopBell(loop)
        _bells[loop] = weakref.ref(bell)
    return bell


async def recv_async(handle):
    """The coroutine of ``recv_async`` / ``pop_async`` on any receiving
    handle: turns of ``handle._recv_or_arm`` (receive without waiting, or
    arm a wake-up that rings this turn's token on the loop's bell),
    awaiting the token's future between them. It consumes only inside
    ``_recv_or_arm``, never across the await: a cancelled receive has taken
    nothing, and its wake-up is disarmed whatever ends the await."""
    return await _turns(handle._recv_or_arm)


async def _turns(turn):
    """Turns of ``turn(bell, token)`` (``(True, result)``, or ``(False,
    armed)`` after arming a wake-up that rings ``token`` on ``bell``),
    awaiting the token's future between them, until one has a result."""
    import asyncio

    loop = asyncio.get_running_loop()
    bell = _bell_of(loop)
    while True:
        token = bell.next_token
        bell.next_token += 1
        future = bell.futures[token] = loop.create_future()
        try:
            got, value = turn(bell.bell, token)
        except BaseException:
            del bell.futures[token]
            raise
        if got:
            del bell.futures[token]
            return value
        bell.armed[token] = value
        try:
            await future
        finally:
            value.disarm()
            bell.armed.pop(token, None)
            bell.futures.pop(token, None)


async def board_wait_async(board, since):
    """``Blackboard.wait_async``: turns of ``board._wait_or_arm`` until the
    table's version passes ``since``; the new version."""
    return await _turns(lambda bell, token: board._wait_or_arm(since, bell, token))


async def board_wait_key_async(board, key, since):
    """``Blackboard.wait_key_async``: looks at ``key`` without waiting
    (``wait_key`` with a timeout of 0), and between looks awaits a change
    of the table past the version read before the look, so that no write
    between the look and the wait is missed."""
    while True:
        before = board.version
        found = board.wait_key(key, since, 0)
        if found is not None:
            return found
        await board_wait_async(board, before)


async def anext(handle):
    """``__anext__``: ``recv_async``, ending the iteration once the handle
    is closed (also by a ``close()`` while it waited)."""
    from .errors import ClosedError

    if handle.closed:
        raise StopAsyncIteration
    try:
        return await recv_async(handle)
    except ClosedError:
        if handle.closed:
            raise StopAsyncIteration from None
        raise


async def call_async(client, data, timeout):
    """``Client.call_async``: ``client.call`` on a thread of the running
    loop's default executor. A service client has no doorbell the loop can
    wait on (its waits are the core's, which end the call when they run
    out), so the blocking call runs off the loop; the client is busy until
    it ends, also when the awaiting task is cancelled."""
    import asyncio

    data = bytes(data)
    return await asyncio.get_running_loop().run_in_executor(None, client.call, data, timeout)


def field_bytes(obj, dtype, size, field):
    """A blackboard key or value as the table's bytes: with ``dtype``, the
    one record ``obj`` makes (a NumPy record, a structured scalar, a tuple
    of the fields, a plain number); without, ``obj`` itself (bytes-like)."""
    if dtype is None:
        return obj
    np = numpy()
    record = np.asarray(obj, dtype=dtype)
    if record.size != 1:
        raise ValueError(f"a blackboard {field} is one {dtype} record, got {record.size} of them")
    return record.reshape(()).tobytes()


def field_value(data, dtype):
    """The table's bytes as the caller's: with ``dtype``, a NumPy scalar of
    it (a structured scalar for a record dtype, owning a copy); without,
    the bytes."""
    if dtype is None:
        return data
    np = numpy()
    return np.frombuffer(data, dtype=dtype, count=1)[0].copy()
