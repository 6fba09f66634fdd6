"""Unit tests of the Python binding, one bus kind after another."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import shmbus
from conftest import CHILD_TIMEOUT, CTRL_C, readline_within


def u64(i):
    return i.to_bytes(8, "little")


# --- broadcast bus ---------------------------------------------------------


def test_a_message_published_is_received_zero_padded_with_its_sequence(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8) as pub:
        with shmbus.Subscriber.open(bus_name, "next") as sub:
            assert pub.publish(b"hello") == 0
            assert pub.publish(bytearray(b"world")) == 1
            assert pub.publish(memoryview(b"!")) == 2
            assert sub.recv(timeout=5) == b"hello" + bytes(11)
            assert sub.recv(timeout=5) == b"world" + bytes(11)
            assert sub.try_recv() == b"!" + bytes(15)
            assert sub.try_recv() is None
            assert sub.position == 3
            assert sub.msg_size == 16 and sub.capacity == 8


def test_recv_returns_none_when_nothing_comes_within_the_timeout(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8):
        with shmbus.Subscriber.open(bus_name) as sub:
            t = time.monotonic()
            assert sub.recv(timeout=0.05) is None
            assert time.monotonic() - t >= 0.05


def test_a_lapped_subscriber_is_told_exactly_how_many_it_missed(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8) as pub:
        sub = shmbus.Subscriber.open(bus_name, "oldest")
        for i in range(20):
            pub.publish(u64(i))
        got = []
        while (m := sub.try_recv()) is not None:
            got.append(m)
        lags = [g for g in got if isinstance(g, shmbus.Lagged)]
        messages = [int.from_bytes(g, "little") for g in got if not isinstance(g, shmbus.Lagged)]
        assert len(lags) == 1 and lags[0] == shmbus.Lagged(lags[0].skipped)
        assert lags[0].skipped + len(messages) == 20
        assert messages == list(range(lags[0].skipped, 20))
        assert repr(lags[0]) == f"Lagged(skipped={lags[0].skipped})"
        sub.close()


def test_iteration_yields_messages_and_lags_and_stops_when_closed(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=4) as pub:
        sub = shmbus.Subscriber.open(bus_name, "oldest")
        for i in range(6):
            pub.publish(u64(i))
        seen = []
        for item in sub:
            seen.append(item)
            if item == u64(5):
                sub.close()
        assert isinstance(seen[0], shmbus.Lagged)
        assert seen[0].skipped + len(seen) - 1 == 6
        assert list(sub) == []


def test_latest_reads_the_newest_message_without_moving_the_subscriber(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8) as pub:
        with shmbus.Subscriber.open(bus_name, "next") as sub:
            assert sub.latest() is None
            pub.publish(u64(1))
            pub.publish(u64(2))
            assert sub.latest() == u64(2)
            assert sub.position == 0


def test_recv_into_writes_into_a_bytearray_or_numpy_array(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8) as pub:
        with shmbus.Subscriber.open(bus_name) as sub:
            pub.publish(b"abc")
            pub.publish(u64(7))
            buf = bytearray(10)
            assert sub.recv_into(buf, timeout=5) == 8
            assert bytes(buf) == b"abc" + bytes(7)
            arr = np.zeros(1, dtype="<u8")
            assert sub.recv_into(arr, timeout=5) == 8
            assert arr[0] == 7
            with pytest.raises(ValueError, match="buffer is 4 bytes, a message is 8"):
                sub.recv_into(bytearray(4))
            with pytest.raises(TypeError):
                sub.recv_into(b"readonly")


def test_recv_batch_returns_a_uint8_array_and_the_lag_before_it(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8) as pub:
        with shmbus.Subscriber.open(bus_name, "oldest") as sub:
            for i in range(20):
                pub.publish(u64(i))
            batch = sub.recv_batch(100, timeout=0)
            assert batch.messages.dtype == np.uint8
            n = batch.messages.shape[0]
            assert batch.messages.shape == (n, 8)
            assert batch.skipped + n == 20
            keys = batch.messages.view("<u8").ravel().tolist()
            assert keys == list(range(batch.skipped, 20))
            empty = sub.recv_batch(10, timeout=0.01)
            assert empty.messages.shape == (0, 8) and empty.skipped == 0


def test_recv_batch_with_a_huge_max_returns_what_there_is(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=64, capacity=8) as pub:
        with shmbus.Subscriber.open(bus_name, "oldest") as sub:
            pub.publish(b"one")
            batch = sub.recv_batch(2**62, timeout=0)
            assert batch.messages.shape == (1, 64)


def test_recv_batch_with_a_structured_dtype_returns_records(bus_name):
    tick = np.dtype([("key", "<u8"), ("price", "<f4"), ("qty", "<u4")])
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=64) as pub:
        with shmbus.Subscriber.open(bus_name, "oldest", dtype=tick) as sub:
            for i in range(10):
                pub.publish(np.array([(i, i * 1.5, i * 10)], dtype=tick).tobytes())
            got = sub.recv_batch(4, timeout=5)
            assert got.skipped == 0 and got.messages.dtype == tick
            assert got.messages["key"].tolist() == [0, 1, 2, 3]
            rest = sub.recv_batch(100, timeout=5, dtype=tick)
            assert rest.messages["qty"].tolist() == [40, 50, 60, 70, 80, 90]
            assert rest.messages["price"][-1] == pytest.approx(13.5)


# --- lossless subscribers ---------------------------------------


def drain(sub):
    """Receives until nothing is there: (skipped, the messages as ints)."""
    skipped, got = 0, []
    while (m := sub.try_recv()) is not None:
        if isinstance(m, shmbus.Lagged):
            skipped += m.skipped
        else:
            got.append(int.from_bytes(m, "little"))
    return skipped, got


def test_a_lossless_subscriber_beside_a_lossy_one_gets_every_message(bus_name):
    n = 200
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8) as pub:
        lossless = shmbus.Subscriber.open(bus_name, lossless=True)
        lossy = shmbus.Subscriber.open(bus_name)
        assert lossless.lossless and not lossy.lossless

        # The publisher waits for the lossless subscriber 190 times: with
        # the GIL released, or this thread could not read and the wait
        # would end in an eviction (a Lagged below).
        def publish_all():
            for i in range(n):
                pub.publish(u64(i))

        t = threading.Thread(target=publish_all)
        t.start()
        got = []
        while len(got) < n:
            m = lossless.recv(timeout=CHILD_TIMEOUT)
            assert m is not None and not isinstance(m, shmbus.Lagged), m
            got.append(int.from_bytes(m, "little"))
        t.join(timeout=CHILD_TIMEOUT)
        assert not t.is_alive()
        assert got == list(range(n))
        assert lossless.lossless
        # The lossy one, which read nothing meanwhile, was lapped, not
        # waited for, and is told exactly what it missed.
        skipped, rest = drain(lossy)
        assert skipped > 0 and skipped + len(rest) == n
        assert rest == list(range(skipped, n))
        lossless.close()
        lossy.close()


def test_publish_many_publishes_every_message_of_a_buffer_in_order_and_waits_for_a_lossless_subscriber(bus_name):
    import numpy as np

    n = 200
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8) as pub:
        sub = shmbus.Subscriber.open(bus_name, lossless=True)
        # 200 messages of 8 bytes (zero-padded to 16), from a NumPy array's
        # memory: more than the ring holds, so the call waits for the
        # reader (with the GIL released) 192 times.
        seqs = np.arange(n, dtype="<u8")
        last = []
        t = threading.Thread(target=lambda: last.append(pub.publish_many(seqs, size=8)))
        t.start()
        got = []
        while len(got) < n:
            m = sub.recv(timeout=CHILD_TIMEOUT)
            assert m is not None and not isinstance(m, shmbus.Lagged), m
            assert m[8:] == bytes(8)
            got.append(int.from_bytes(m[:8], "little"))
        t.join(timeout=CHILD_TIMEOUT)
        assert not t.is_alive()
        assert got == list(range(n))
        assert last == [n - 1] and pub.next_sequence == n
        # Whole messages of the bus's size by default; a ragged buffer, an
        # empty one or a size past msg_size publishes nothing.
        assert pub.publish_many(bytes(range(32))) == n + 1
        assert sub.recv(timeout=CHILD_TIMEOUT) == bytes(range(16))
        assert sub.recv(timeout=CHILD_TIMEOUT) == bytes(range(16, 32))
        for data, size in ((bytes(20), None), (b"", None), (bytes(17), 17), (bytes(8), 0)):
            with pytest.raises(ValueError):
                pub.publish_many(data, size=size)
        assert pub.next_sequence == n + 2
        sub.close()


def test_try_publish_raises_full_error_naming_the_lossless_subscriber_in_the_way(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=4) as pub:
        with shmbus.Subscriber.open(bus_name, lossless=True) as sub:
            for i in range(4):
                assert pub.try_publish(u64(i)) == i
            with pytest.raises(shmbus.FullError) as e:
                pub.try_publish(u64(4))
            assert isinstance(e.value, shmbus.Error)
            assert e.value.pid == os.getpid()
            assert isinstance(e.value.entry, int)
            assert f"registry entry {e.value.entry} (pid {os.getpid()})" in str(e.value)
            assert pub.next_sequence == 4  # nothing published
            assert sub.try_recv() == u64(0)
            assert pub.try_publish(u64(4)) == 4
            with pytest.raises(shmbus.MessageTooLongError):
                pub.try_publish(bytes(9))


def test_a_lossless_subscriber_that_does_not_read_is_evicted_and_told_its_lag(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=4, evict_after=0.05) as pub:
        with shmbus.Subscriber.open(bus_name, lossless=True) as sub:
            t = time.monotonic()
            for i in range(10):
                pub.publish(u64(i))
            assert time.monotonic() - t >= 0.05
            assert not sub.lossless
            first = sub.try_recv()
            assert isinstance(first, shmbus.Lagged)
            skipped, rest = drain(sub)
            assert skipped == 0
            assert first.skipped + len(rest) == 10
            assert rest == list(range(first.skipped, 10))


def test_lossless_subscribers_refused_raise_lossless_refused_error_with_the_refusal(bus_name):
    refusing = bus_name + "-refusing"
    try:
        with shmbus.Publisher.create(refusing, msg_size=8, capacity=8, lossless_subscribers=0):
            with pytest.raises(shmbus.LosslessRefusedError) as e:
                shmbus.Subscriber.open(refusing, lossless=True)
            assert e.value.kind == "not_allowed" and isinstance(e.value, shmbus.OpenError)
            shmbus.Subscriber.open(refusing).close()  # lossy ones are welcome
    finally:
        shmbus.remove(refusing)
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8, lossless_subscribers=1):
        with shmbus.Subscriber.open(bus_name, lossless=True):
            with pytest.raises(shmbus.LosslessRefusedError) as e:
                shmbus.Subscriber.open(bus_name, lossless=True)
            assert (e.value.kind, e.value.max) == ("too_many", 1)
            assert "at most 1" in str(e.value)
    many = bus_name + "-many"
    try:
        with shmbus.ManyPublisher.create(many, msg_size=8, capacity=8, lossless_subscribers=0):
            with pytest.raises(shmbus.LosslessRefusedError) as e:
                shmbus.Subscriber.open(many, lossless=True)
            assert e.value.kind == "not_allowed"
    finally:
        shmbus.remove(many)


def test_a_many_publisher_bus_waits_for_a_lossless_subscriber(bus_name):
    n = 100
    with shmbus.ManyPublisher.create(bus_name, msg_size=8, capacity=8, evict_after=10.0) as pub:
        with shmbus.Subscriber.open(bus_name, lossless=True) as sub:
            t = threading.Thread(target=lambda: [pub.publish(u64(i)) for i in range(n)])
            t.start()
            got = [int.from_bytes(sub.recv(timeout=CHILD_TIMEOUT), "little") for _ in range(n)]
            t.join(timeout=CHILD_TIMEOUT)
            assert got == list(range(n)) and sub.lossless


def test_a_lossless_pool_subscriber_reads_every_block_while_the_publisher_waits_for_it(bus_name):
    n = 100
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=8, capacity=4, evict_after=10.0) as pub:
        with shmbus.PoolSubscriber.open(bus_name, lossless=True) as sub:
            assert sub.lossless
            # The publisher thread waits for this one 96 times: without the
            # GIL, or this thread could not read and it would be evicted.
            t = threading.Thread(target=lambda: [pub.publish(u64(i) * 4, timeout=CHILD_TIMEOUT) for i in range(n)])
            t.start()
            got = []
            for _ in range(n):
                with sub.recv(timeout=CHILD_TIMEOUT) as s:
                    assert len(s) == 32
                    got.append(int.from_bytes(bytes(s)[:8], "little"))
            t.join(timeout=CHILD_TIMEOUT)
            assert got == list(range(n)) and sub.lossless


@pytest.mark.parametrize("evict_after", [0, 0.0, 0.0009, -1.0, float("nan"), 61.0, float("inf")])
def test_an_evict_after_of_0_negative_nan_or_outside_1_ms_to_60_s_is_a_value_error_naming_the_bounds(
        bus_name, evict_after):
    # 0 is refused, as by the CLI and the library, not a bus that evicts at once.
    with pytest.raises(ValueError, match=r"evict_after must be a number of seconds from 0.001 to 60"):
        shmbus.Publisher.create(bus_name, msg_size=8, capacity=8, evict_after=evict_after)
    with pytest.raises(ValueError, match=r"evict_after must be a number of seconds from 0.001 to 60"):
        shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=8, capacity=4, evict_after=evict_after)
    assert not os.path.exists(f"/dev/shm/{bus_name}")


@pytest.mark.parametrize("unblock_timeout", [0, 0.0009, -1.0, float("nan"), 61.0])
def test_an_unblock_timeout_of_0_or_outside_1_ms_to_60_s_is_a_value_error_naming_the_bounds(
        bus_name, unblock_timeout):
    with pytest.raises(ValueError, match=r"unblock_timeout must be a number of seconds from 0.001 to 60"):
        shmbus.ManyPublisher.create(bus_name, msg_size=8, capacity=8, unblock_timeout=unblock_timeout)
    assert not os.path.exists(f"/dev/shm/{bus_name}")


def test_the_timeout_bounds_themselves_are_taken(bus_name):
    for seconds in (0.001, 60.0):
        shmbus.ManyPublisher.create(bus_name, msg_size=8, capacity=8, unblock_timeout=seconds,
                                    evict_after=seconds).close()
        shmbus.remove(bus_name)


def test_a_dtype_whose_itemsize_is_not_the_message_size_is_a_type_mismatch(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8):
        with pytest.raises(shmbus.TypeMismatchError, match="bus carries 16-byte messages") as e:
            shmbus.Subscriber.open(bus_name, dtype=np.dtype("<u8"))
        assert e.value.found.size == 16 and e.value.expected.size == 8
        with shmbus.Subscriber.open(bus_name) as sub:
            with pytest.raises(shmbus.TypeMismatchError):
                sub.recv_batch(1, timeout=0, dtype="<u4")


def test_many_publishers_publish_in_one_order(bus_name):
    a = shmbus.ManyPublisher.create(bus_name, msg_size=8, capacity=64)
    b = shmbus.ManyPublisher.attach(bus_name)
    sub = shmbus.Subscriber.open(bus_name, "oldest")
    seqs = [p.publish(u64(i)) for i, p in enumerate([a, b] * 10)]
    assert seqs == list(range(20))
    assert [sub.recv(timeout=5) for _ in range(20)] == [u64(i) for i in range(20)]
    for h in (a, b, sub):
        h.close()


# --- errors ----------------------------------------------------------------


def test_a_missing_bus_is_a_file_not_found_error_naming_the_path(bus_name):
    with pytest.raises(FileNotFoundError) as e:
        shmbus.Subscriber.open(bus_name)
    assert isinstance(e.value, shmbus.BusNotFoundError)
    assert isinstance(e.value, shmbus.OpenError) and isinstance(e.value, shmbus.Error)
    assert str(e.value) == f"/dev/shm/{bus_name}: no such bus"
    with pytest.raises(shmbus.BusNotFoundError):
        shmbus.Publisher.attach(bus_name)


def test_creating_an_existing_bus_is_a_file_exists_error(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8):
        with pytest.raises(FileExistsError, match="already exists") as e:
            shmbus.Publisher.create(bus_name, msg_size=8)
        assert isinstance(e.value, shmbus.CreateError)


def test_an_impossible_capacity_is_an_invalid_geometry_error(bus_name):
    with pytest.raises(shmbus.InvalidGeometryError, match="invalid geometry") as e:
        shmbus.Publisher.create(bus_name, msg_size=8, capacity=100)
    assert isinstance(e.value, ValueError)


def test_attaching_while_the_publisher_lives_names_its_pid(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8):
        with pytest.raises(shmbus.RoleTakenError, match=f"live publisher \\(pid {os.getpid()}\\)") as e:
            shmbus.Publisher.attach(bus_name)
        assert e.value.pid == os.getpid() and isinstance(e.value, shmbus.AttachError)


def test_a_message_too_long_names_its_length_and_the_maximum(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8) as pub:
        with pytest.raises(shmbus.MessageTooLongError) as e:
            pub.publish(b"123456789")
        assert str(e.value) == "message is 9 bytes, the bus carries at most 8"
        assert (e.value.length, e.value.max) == (9, 8)
        with pytest.raises(TypeError, match="not str"):
            pub.publish("text")


def test_a_stream_opened_as_a_bus_is_a_wrong_kind_error(bus_name):
    with shmbus.Producer.create(bus_name, 1024):
        with pytest.raises(shmbus.WrongKindError, match="segment kind is stream, expected broadcast"):
            shmbus.Subscriber.open(bus_name)


def test_a_pool_bus_opened_by_a_plain_subscriber_says_which_handle_to_use(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8):
        with pytest.raises(shmbus.WrongKindError, match="PoolSubscriber"):
            shmbus.Subscriber.open(bus_name)


def test_a_bus_this_user_may_not_open_is_a_permission_error(bus_name):
    check = (
        "import shmbus, sys\n"
        "try:\n"
        "    shmbus.Subscriber.open(sys.argv[1])\n"
        "except PermissionError as e:\n"
        "    assert isinstance(e, shmbus.OpenError), type(e)\n"
        "    assert 'permission denied' in str(e), str(e)\n"
        "    sys.exit(0)\n"
        "sys.exit('opened a bus of mode 000')\n"
    )
    with shmbus.Publisher.create(bus_name, msg_size=8, mode=0o000):
        cmd = [sys.executable, "-c", check, bus_name]
        if os.geteuid() == 0:
            # Root opens any file: ask as nobody instead.
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        done = subprocess.run(cmd, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr.decode()


def test_a_closed_handle_raises_closed_error(bus_name):
    pub = shmbus.Publisher.create(bus_name, msg_size=8)
    pub.close()
    assert pub.closed
    with pytest.raises(shmbus.ClosedError, match="closed"):
        pub.publish(b"x")


def test_an_invalid_start_or_timeout_is_a_value_error(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8):
        with pytest.raises(ValueError, match="start must be"):
            shmbus.Subscriber.open(bus_name, "first")
        with shmbus.Subscriber.open(bus_name) as sub:
            with pytest.raises(ValueError, match="timeout"):
                sub.recv(timeout=-1)


# --- waiting: the GIL and Ctrl-C --------------------------------------------


def test_another_python_thread_progresses_while_recv_waits(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8) as pub:
        sub = shmbus.Subscriber.open(bus_name)
        started = threading.Event()
        result = []

        def receive():
            started.set()
            result.append(sub.recv(timeout=CHILD_TIMEOUT))

        t = threading.Thread(target=receive)
        t.start()
        assert started.wait(CHILD_TIMEOUT)
        # Pure Python work: it could not run if recv held the GIL while waiting.
        total = sum(i * i for i in range(200_000))
        assert total > 0
        assert t.is_alive(), "recv returned before anything was published"
        pub.publish(b"done")
        t.join(CHILD_TIMEOUT)
        assert not t.is_alive()
        assert result == [b"done" + bytes(4)]
        sub.close()


def test_ctrl_c_interrupts_a_recv_that_waits_forever(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8):
        code = (
            CTRL_C + "import shmbus, sys\n"
            f"sub = shmbus.Subscriber.open({bus_name!r})\n"
            "try:\n"
            "    print('waiting', flush=True)\n"
            "    sub.recv()\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n"
            "    sys.exit(0)\n"
            "sys.exit(1)\n"
        )
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert readline_within(child.stdout) == b"waiting\n"
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=CHILD_TIMEOUT)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 0, err
        assert out == b"interrupted\n"


# --- pool bus ---------------------------------------------------------------


def test_a_loan_is_written_in_place_and_the_sample_read_in_place(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=256, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name, "next") as sub:
            loan = pub.loan(12, timeout=5)
            assert len(loan) == 12
            loan.memoryview[:4] = b"head"
            loan.numpy()[4:] = np.arange(8, dtype=np.uint8)
            assert loan.publish() == 0
            assert not loan.active
            with pytest.raises(shmbus.ClosedError):
                loan.memoryview
            sample = sub.recv(timeout=5)
            assert isinstance(sample, shmbus.Sample) and sample.sequence == 0
            assert len(sample) == 12
            assert bytes(sample) == b"head" + bytes(range(8))
            assert sample.memoryview.readonly
            arr = sample.numpy()
            assert not arr.flags.writeable
            with pytest.raises(ValueError):
                arr.flags.writeable = True
            del arr
            sample.release()
            assert pub.publish(b"second", timeout=5) == 1
            with sub.recv(timeout=5) as s:
                assert bytes(s.memoryview) == b"second"


def test_a_sample_is_released_on_with_exit_and_cannot_be_read_after(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name) as sub:
            pub.publish(b"abc")
            with sub.recv(timeout=5) as sample:
                view = sample.memoryview
                assert sub.held == 1
                assert bytes(view) == b"abc"
            assert sample.released and sub.held == 0
            with pytest.raises(shmbus.ClosedError, match="released"):
                sample.memoryview
            with pytest.raises(shmbus.ClosedError):
                bytes(sample)
            with pytest.raises(ValueError, match="released"):
                view[0]


def test_a_numpy_array_of_a_sample_keeps_its_block_held_until_it_is_gone(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name) as sub:
            pub.publish(b"keep")
            with sub.recv(timeout=5) as sample:
                arr = sample.numpy()
            assert sub.held == 1, "the array still views the block"
            assert arr.tobytes() == b"keep"
            del arr
            assert sub.held == 0


def test_a_loan_left_unpublished_is_freed_and_nothing_is_delivered(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name) as sub:
            with pub.loan(8) as loan:
                loan.memoryview[:] = b"never!!!"
            assert not loan.active
            assert sub.recv(timeout=0.05) is None
            with pytest.raises(shmbus.MessageTooLongError, match="asked of a pool of 64-byte blocks"):
                pub.loan(65)


def test_one_loan_at_a_time_per_pool_publisher(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        loan = pub.loan(8)
        with pytest.raises(shmbus.LoanOutstandingError, match="loan outstanding"):
            pub.loan(8)
        loan.release()
        pub.loan(8).release()


def test_a_pool_subscriber_holding_too_many_samples_must_release_one(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=64, capacity=32) as pub:
        with shmbus.PoolSubscriber.open(bus_name) as sub:
            held = []
            for i in range(shmbus.PoolSubscriber.MAX_HELD + 1):
                pub.publish(u64(i))
            for _ in range(shmbus.PoolSubscriber.MAX_HELD):
                held.append(sub.recv(timeout=5))
            with pytest.raises(shmbus.TooManySamplesError, match="drop one"):
                sub.recv(timeout=5)
            held.pop(0).release()
            assert bytes(sub.recv(timeout=5)) == u64(shmbus.PoolSubscriber.MAX_HELD)


def test_a_lapped_pool_subscriber_is_told_exactly_how_many_it_missed(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name, "oldest") as sub:
            for i in range(30):
                pub.publish(u64(i))
            delivered, skipped = [], 0
            while (got := sub.try_recv()) is not None:
                if isinstance(got, shmbus.Lagged):
                    skipped += got.skipped
                else:
                    with got:
                        delivered.append(int.from_bytes(bytes(got), "little"))
            assert skipped + len(delivered) == 30
            assert delivered == list(range(30 - len(delivered), 30))


def test_a_pool_records_the_block_type_python_names_and_openers_of_another_are_refused(bus_name):
    with pytest.raises(ValueError, match="type_name needs the message size"):
        shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8, type_name="md.Tick")
    with pytest.raises(ValueError, match="applies only with type_name"):
        shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8, msg_size=16)
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8,
                                     type_name="md.Tick", msg_size=16, type_align=8) as pub:
        with pytest.raises(shmbus.TypeMismatchError, match="md.Tick.*md.Quote"):
            shmbus.PoolSubscriber.open(bus_name, type_name="md.Quote", msg_size=16, type_align=8)
        with shmbus.PoolSubscriber.open(bus_name, "oldest", type_name="md.Tick", msg_size=16,
                                        type_align=8) as sub:
            pub.publish(u64(7) + u64(8))
            with sub.recv(timeout=5) as got:
                assert bytes(got) == u64(7) + u64(8)
        with shmbus.PoolSubscriber.open(bus_name) as raw:
            assert raw.position == 1


# --- stream -----------------------------------------------------------------


def test_a_stream_records_the_record_type_python_names_and_openers_of_another_are_refused(bus_name):
    with pytest.raises(ValueError, match="applies only with type_name"):
        shmbus.Producer.create(bus_name, 4096, type_align=8)
    with shmbus.Producer.create(bus_name, 4096, type_name="md.Tick", type_align=8) as prod:
        with pytest.raises(shmbus.TypeMismatchError, match="md.Tick.*md.Quote"):
            shmbus.Consumer.open(bus_name, type_name="md.Quote", msg_size=16, type_align=8)
        with shmbus.Consumer.open(bus_name, type_name="md.Tick", msg_size=16, type_align=8) as cons:
            prod.push(u64(7) + u64(8))
            assert cons.pop(timeout=5) == u64(7) + u64(8)


def test_a_stream_delivers_every_record_in_order(bus_name):
    with shmbus.Producer.create(bus_name, 4096) as prod, shmbus.Consumer.open(bus_name) as cons:
        for i in range(100):
            prod.push(f"record {i}".encode(), timeout=5)
            assert cons.pop(timeout=5) == f"record {i}".encode()
        assert cons.try_pop() is None


def test_a_stream_pop_and_push_raise_timeout_error_at_their_timeout(bus_name):
    with shmbus.Producer.create(bus_name, 64) as prod, shmbus.Consumer.open(bus_name) as cons:
        with pytest.raises(TimeoutError, match="stream stayed empty for 20ms") as e:
            cons.pop(timeout=0.02)
        assert isinstance(e.value, shmbus.TimeoutError)
        prod.push(bytes(24))
        prod.push(bytes(24))
        with pytest.raises(shmbus.TimeoutError, match="stream stayed full"):
            prod.push(b"x", timeout=0.02)
        with pytest.raises(shmbus.TimeoutError, match="stream is full"):
            prod.push(b"x", timeout=0)
        with pytest.raises(shmbus.MessageTooLongError, match="record is 25 bytes, the stream carries at most 24"):
            prod.push(bytes(25))


def test_another_python_thread_progresses_while_pop_waits(bus_name):
    with shmbus.Producer.create(bus_name, 4096) as prod, shmbus.Consumer.open(bus_name) as cons:
        result = []
        t = threading.Thread(target=lambda: result.append(cons.pop(timeout=CHILD_TIMEOUT)))
        t.start()
        sum(i for i in range(100_000))
        prod.push(b"late")
        t.join(CHILD_TIMEOUT)
        assert result == [b"late"]


# --- journal ----------------------------------------------------------------


def test_a_late_joiner_gets_every_sequence_exactly_once(bus_name, tmp_path):
    with shmbus.JournalPublisher.create(bus_name, tmp_path / "j", msg_size=16, capacity=8) as pub:
        for i in range(30):
            assert pub.publish(u64(i)) == i
        with shmbus.JournalSubscriber.join(bus_name) as late:
            for i in range(30, 45):
                pub.publish(u64(i))
            seqs = []
            while len(seqs) < 45:
                e = late.recv(timeout=5)
                assert isinstance(e, shmbus.Entry), e
                assert e.data == u64(e.sequence) + bytes(8)
                seqs.append(e.sequence)
            assert seqs == list(range(45))
            assert late.try_recv() is None


def test_state_folds_keyed_messages_into_the_last_value_per_key(bus_name, tmp_path):
    with shmbus.JournalPublisher.create(bus_name, tmp_path / "j", msg_size=16) as pub:
        for i in range(10):
            pub.publish(u64(i % 3) + u64(i))
        with shmbus.State.join(bus_name) as state:
            assert len(state) == 0
            assert state.poll() == 10
            assert state.keys() == [0, 1, 2]
            assert state[1] == u64(1) + u64(7)
            last = pub.publish(u64(1) + u64(99))
            assert state.wait_for(last, timeout=5)
            assert state[1][8:] == u64(99)
            assert 2 in state and 5 not in state and state.get(5) is None
            assert dict(state.items())[0] == u64(0) + u64(9)
            assert list(state) == [0, 1, 2]
            assert state.last_seq == last
            assert not state.wait_for(last + 1, timeout=0.01)
            with pytest.raises(KeyError):
                state[7]


def test_joining_a_bus_without_a_journal_is_not_journaled_error(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8):
        with pytest.raises(shmbus.NotJournaledError, match="has no journal"):
            shmbus.JournalSubscriber.join(bus_name)


def test_a_plain_publisher_may_not_attach_to_a_journaled_bus(bus_name, tmp_path):
    pub = shmbus.JournalPublisher.create(bus_name, tmp_path / "j", msg_size=8)
    pub.close()
    with pytest.raises(shmbus.AttachError, match="journaled"):
        shmbus.Publisher.attach(bus_name)
    with shmbus.JournalPublisher.attach(bus_name) as again:
        assert again.publish(b"x") == 0


# --- message types ------------------------------------------------------------


def test_an_opener_insisting_on_another_message_type_gets_both_named(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8, type_name="md.Tick", type_align=8):
        with shmbus.Subscriber.open(bus_name, type_name="md.Tick", msg_size=16, type_align=8):
            pass
        with pytest.raises(shmbus.TypeMismatchError, match="md.Tick.*md.Quote") as e:
            shmbus.Subscriber.open(bus_name, type_name="md.Quote", msg_size=16, type_align=8)
        assert e.value.found.name == "md.Tick" and e.value.expected.name == "md.Quote"
        assert e.value.found.size == 16 and e.value.found.align == 8
        with pytest.raises(ValueError, match="needs the message size"):
            shmbus.Subscriber.open(bus_name, type_name="md.Tick")


def test_a_dtype_gives_a_typed_opener_its_message_size(bus_name):
    tick = np.dtype([("key", "<u8"), ("val", "<u8")])
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8, type_name="md.Tick", type_align=8) as pub:
        with shmbus.Subscriber.open(bus_name, "oldest", type_name="md.Tick", dtype=tick, type_align=8) as sub:
            pub.publish(np.array([(7, 42)], dtype=tick).tobytes())
            batch = sub.recv_batch(8, timeout=5)
            assert batch.messages["val"].tolist() == [42]
        with pytest.raises(shmbus.TypeMismatchError, match="md.Tick.*md.Quote"):
            shmbus.Subscriber.open(bus_name, type_name="md.Quote", dtype=tick, type_align=8)


def test_a_journal_joiner_may_insist_on_the_message_type(bus_name, tmp_path):
    with shmbus.JournalPublisher.create(bus_name, tmp_path / "j", msg_size=16, type_name="md.Tick", type_align=8):
        with shmbus.JournalSubscriber.join(bus_name, type_name="md.Tick", msg_size=16, type_align=8):
            pass
        with pytest.raises(shmbus.TypeMismatchError):
            shmbus.JournalSubscriber.join(bus_name, type_name="md.Other", msg_size=16, type_align=8)
