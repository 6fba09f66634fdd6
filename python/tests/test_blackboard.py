"""shmbus.Blackboard: the latest value of each key, from Python, and across
languages with the Rust `shmbus get` / `shmbus put` and the C example
examples/c/blackboard (real processes, each under a timeout). Every table
is removed (the bus_name fixture)."""

import os
import struct
import sys
import threading

import pytest

import shmbus
from conftest import CHILD_TIMEOUT, REPO, Child, run


def board(name, **kw):
    return shmbus.Blackboard.create(name, keys=kw.pop("keys", 8), key_size=4, value_size=8, **kw)


def test_a_value_put_is_read_back_with_its_version_and_a_missing_key_is_none(bus_name):
    with board(bus_name) as b, shmbus.Blackboard.open(bus_name) as r:
        assert b.put(b"AAPL", b"101.5\0\0\0") == 1
        assert b.put(b"MSFT", b"400.25\0\0") == 2
        assert b.put(b"AAPL", b"102.0\0\0\0") == 3
        assert r.get(b"AAPL") == (b"102.0\0\0\0", 3)
        assert r.get(b"GOOG") is None
        assert len(r) == 2 and r.version == 3
        assert sorted(r) == [(b"AAPL", b"102.0\0\0\0", 3), (b"MSFT", b"400.25\0\0", 2)]
        assert b.remove(b"MSFT") == 4
        assert b.remove(b"MSFT") is None
        assert r.get(b"MSFT") is None
        assert r.changed_since(3) == [(b"MSFT", None, 4)]
        assert r.changed_since(4) == []


def test_bad_sizes_a_full_table_and_a_reader_that_writes_raise_typed_errors(bus_name):
    with board(bus_name, keys=1) as b, shmbus.Blackboard.open(bus_name) as r:
        with pytest.raises(shmbus.FieldSizeError) as e:
            b.put(b"abc", b"12345678")
        assert (e.value.field, e.value.found, e.value.expected) == ("key", 3, 4)
        assert isinstance(e.value, ValueError)
        with pytest.raises(shmbus.FieldSizeError) as e:
            b.put(b"abcd", b"1234")
        assert (e.value.field, e.value.found, e.value.expected) == ("value", 4, 8)
        with pytest.raises(shmbus.FieldSizeError):
            r.get(b"too long")
        b.put(b"abcd", b"12345678")
        with pytest.raises(shmbus.BlackboardFullError) as e:
            b.put(b"efgh", b"12345678")
        assert e.value.keys == 1
        b.put(b"abcd", b"87654321")  # an update needs no room
        with pytest.raises(shmbus.ReadOnlyError):
            r.put(b"abcd", b"12345678")
        with pytest.raises(shmbus.ReadOnlyError):
            r.remove(b"abcd")
        with pytest.raises(TypeError, match="not str"):
            b.put("abcd", b"12345678")
    with pytest.raises(shmbus.ClosedError):
        b.get(b"abcd")


def test_a_second_writer_is_refused_while_the_first_lives_and_attaches_after(bus_name):
    b = board(bus_name)
    b.put(b"k001", b"v1\0\0\0\0\0\0")
    with pytest.raises(shmbus.RoleTakenError):
        shmbus.Blackboard.attach(bus_name)
    b.close()
    with shmbus.Blackboard.attach(bus_name) as again:
        assert again.writable
        assert again.get(b"k001") == (b"v1\0\0\0\0\0\0", 1)
        assert again.put(b"k001", b"v2\0\0\0\0\0\0") == 2


def test_a_bus_is_not_opened_as_a_blackboard(bus_name):
    shmbus.Publisher.create(bus_name, msg_size=8, capacity=8).close()
    with pytest.raises(shmbus.WrongKindError):
        shmbus.Blackboard.open(bus_name)


def test_a_dtype_gives_numpy_records_and_an_itemsize_mismatch_is_refused(bus_name):
    np = pytest.importorskip("numpy")
    quote = np.dtype([("bid", "<f8"), ("ask", "<f8")])
    with shmbus.Blackboard.create(bus_name, keys=4, key_dtype="<u4", dtype=quote) as b:
        assert (b.key_size, b.value_size) == (4, 16)
        b.put(7, (101.5, 101.75))
        b.put(8, np.array((99.0, 99.5), dtype=quote))
        with shmbus.Blackboard.open(bus_name, key_dtype="<u4", dtype=quote) as r:
            value, version = r.get(7)
            assert (value["bid"], value["ask"], version) == (101.5, 101.75, 1)
            assert value.dtype == quote
            assert sorted((int(k), float(v["ask"])) for k, v, _ in r) == [(7, 101.75), (8, 99.5)]
            # the same bytes as a raw reader sees
            with shmbus.Blackboard.open(bus_name) as raw:
                assert raw.get(struct.pack("<I", 8))[0] == struct.pack("<dd", 99.0, 99.5)
        with pytest.raises(shmbus.TypeMismatchError):
            shmbus.Blackboard.open(bus_name, dtype="<f8")
        with pytest.raises(shmbus.TypeMismatchError):
            shmbus.Blackboard.open(bus_name, key_dtype="<u8")
        with pytest.raises(ValueError, match="one"):
            b.put(9, np.zeros(2, dtype=quote))


def test_a_dtype_without_numpy_says_to_install_it(bus_name, monkeypatch):
    from shmbus import _support

    with board(bus_name):
        monkeypatch.setattr(_support, "_numpy", None)
        monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` fails
        with pytest.raises(ImportError, match="pip install numpy"):
            shmbus.Blackboard.open(bus_name, dtype="<f8")


def test_wait_releases_the_gil_and_wakes_on_a_write_from_another_thread(bus_name):
    with board(bus_name) as b, shmbus.Blackboard.open(bus_name) as r:
        got = {}

        def waiter():
            got["any"] = r.wait(0, timeout=CHILD_TIMEOUT)
            got["key"] = r.wait_key(b"beta", 1, timeout=CHILD_TIMEOUT)

        t = threading.Thread(target=waiter)
        t.start()
        # This thread runs Python while the other waits: the wait let go
        # of the GIL.
        b.put(b"alfa", b"1\0\0\0\0\0\0\0")
        b.put(b"beta", b"2\0\0\0\0\0\0\0")
        t.join(CHILD_TIMEOUT)
        assert not t.is_alive()
        assert got["any"] >= 1
        assert got["key"] == (b"2\0\0\0\0\0\0\0", 2)
        assert r.wait(2, timeout=0.01) is None
        assert r.wait_key(b"beta", 2, timeout=0) is None
        b.remove(b"beta")
        assert r.wait_key(b"beta", 2, timeout=0) == (None, 3)


def test_python_writes_and_the_rust_cli_reads_then_the_cli_writes_and_python_reads(shmbus_bin, bus_name):
    with board(bus_name) as b:
        with pytest.raises(shmbus.FieldSizeError):
            b.put(b"AAPL", b"101.5")  # Python pads nothing: the table's size exactly
        b.put(b"AAPL", b"101.5\0\0\0")
    r = run([shmbus_bin, "get", "--with-version", bus_name, "AAPL"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"1\t101.5\n"
    r = run([shmbus_bin, "get", bus_name, "MSFT"])
    assert r.returncode != 0
    r = run([shmbus_bin, "put", bus_name, "MSFT", "400.25"])
    assert r.returncode == 0, r.stderr
    with shmbus.Blackboard.open(bus_name) as rd:
        assert rd.get(b"MSFT") == (b"400.25\0\0", 2)
        assert rd.get(b"AAPL") == (b"101.5\0\0\0", 1)
    r = run([shmbus_bin, "put", bus_name, "AAPL"])  # no value: removes
    assert r.returncode == 0, r.stderr
    with shmbus.Blackboard.open(bus_name) as rd:
        assert rd.get(b"AAPL") is None
        assert rd.changed_since(2) == [(b"AAPL", None, 3)]


def test_a_table_made_by_the_cli_is_written_from_python(shmbus_bin, bus_name):
    r = run([shmbus_bin, "create", "--kind", "blackboard", "--keys", "16", "--key-size", "8", "--value-size", "8", bus_name])
    assert r.returncode == 0, r.stderr
    with shmbus.Blackboard.attach(bus_name) as b:
        assert (b.capacity, b.key_size, b.value_size) == (16, 8, 8)
        b.put(b"joint.01", b"0.5\0\0\0\0\0")
    r = run([shmbus_bin, "get", bus_name, "joint.01"])
    assert (r.returncode, r.stdout) == (0, b"0.5\n"), r.stderr


def test_python_and_c_share_a_table_both_ways(bus_name):
    c_board = REPO / "examples" / "c" / "blackboard"
    if not os.access(c_board, os.X_OK):
        pytest.fail(f"no C example at {c_board}: run `make -C examples/c`")
    with shmbus.Blackboard.create(bus_name, keys=4, key_size=8, value_size=8) as b:
        b.put(b"joint.01", b"0.25\0\0\0\0")
        r = run([str(c_board), "get", bus_name, "joint.01"])
        assert (r.returncode, r.stdout) == (0, b"1\t0.25\n"), r.stderr
    r = run([str(c_board), "put", bus_name, "joint.02", "-1.5"])
    assert (r.returncode, r.stdout) == (0, b"2\n"), r.stderr
    with shmbus.Blackboard.open(bus_name) as rd:
        assert rd.get(b"joint.02") == (b"-1.5\0\0\0\0", 2)
        assert rd.changed_since(1) == [(b"joint.02", b"-1.5\0\0\0\0", 2)]


def test_an_entry_reads_and_writes_its_key_and_a_read_only_boards_entry_only_reads(bus_name):
    with board(bus_name) as b, shmbus.Blackboard.open(bus_name) as r:
        w, e = b.entry(b"AAPL"), r.entry(b"AAPL")
        assert (w.key, e.key, e.board is r) == (b"AAPL", b"AAPL", True)
        assert w.put(b"101.5\0\0\0") == 1
        assert w.put(b"102.0\0\0\0") == 2
        assert e.get() == (b"102.0\0\0\0", 2) == r.get(b"AAPL")
        assert w.get() == (b"102.0\0\0\0", 2)
        assert w.remove() == 3
        assert w.remove() is None
        assert e.get() is None
        with pytest.raises(shmbus.ReadOnlyError):
            e.put(b"1\0\0\0\0\0\0\0")
        with pytest.raises(shmbus.ReadOnlyError):
            e.remove()
        with pytest.raises(shmbus.FieldSizeError) as err:
            w.put(b"short")
        assert (err.value.field, err.value.found, err.value.expected) == ("value", 5, 8)
        with pytest.raises(shmbus.FieldSizeError) as err:
            r.entry(b"AAP")
        assert (err.value.field, err.value.found, err.value.expected) == ("key", 3, 4)


def test_an_entry_of_a_key_not_yet_put_reads_none_then_the_value(bus_name):
    with board(bus_name) as b, shmbus.Blackboard.open(bus_name) as r:
        e = r.entry(b"MSFT")
        assert e.get() is None
        b.put(b"MSFT", b"400.25\0\0")
        assert e.get() == (b"400.25\0\0", 1)


def test_an_entrys_key_removed_and_put_again_elsewhere_is_still_read_never_the_key_in_its_entry(bus_name):
    with board(bus_name) as b, shmbus.Blackboard.open(bus_name) as r:
        bus = _read_bus(bus_name)
        home = lambda key: bus.bb_hash(key) & (bus.bb["entries"] - 1)
        a, other = [k for k in (b"k%03d" % n for n in range(1000)) if home(k) == home(b"k000")][:2]
        e, w = r.entry(a), b.entry(a)
        w.put(b"a1\0\0\0\0\0\0")  # a's home
        assert e.get() == (b"a1\0\0\0\0\0\0", 1)
        w.remove()
        b.put(other, b"other\0\0\0")  # into a's entry
        assert e.get() is None, "the other key's value read through a's entry"
        assert w.put(b"a2\0\0\0\0\0\0") == 4  # the entry after
        assert e.get() == (b"a2\0\0\0\0\0\0", 4)
        assert r.get(other) == (b"other\0\0\0", 3), "a's put wrote over the other key"
        assert sorted(k for k, _, _ in r) == sorted([a, other])


def test_an_entry_decodes_with_the_boards_dtypes(bus_name):
    np = pytest.importorskip("numpy")
    quote = np.dtype([("bid", "<f8"), ("ask", "<f8")])
    with shmbus.Blackboard.create(bus_name, keys=4, key_dtype="<u4", dtype=quote) as b:
        e = b.entry(7)
        assert e.key == 7 and e.key.dtype == np.dtype("<u4")
        assert e.put((101.5, 101.75)) == 1
        value, version = e.get()
        assert (value["bid"], value["ask"], value.dtype, version) == (101.5, 101.75, quote, 1)


def test_an_entry_of_a_closed_board_raises_the_boards_closed_error(bus_name):
    b = board(bus_name)
    r = shmbus.Blackboard.open(bus_name)
    w, e = b.entry(b"AAPL"), r.entry(b"AAPL")
    w.put(b"101.5\0\0\0")
    r.close()
    with pytest.raises(shmbus.ClosedError, match="the blackboard is closed") as err:
        e.get()
    with pytest.raises(shmbus.ClosedError) as by_board:
        r.get(b"AAPL")
    assert str(err.value) == str(by_board.value)
    b.close()
    for call in (w.get, w.remove, lambda: w.put(b"1\0\0\0\0\0\0\0")):
        with pytest.raises(shmbus.ClosedError, match="the blackboard is closed"):
            call()


def test_python_reads_through_an_entry_what_c_puts_removes_and_puts_again(bus_name):
    c_board = REPO / "examples" / "c" / "blackboard"
    if not os.access(c_board, os.X_OK):
        pytest.fail(f"no C example at {c_board}: run `make -C examples/c`")
    r = run([str(c_board), "create", bus_name, "4", "8", "8"])
    assert r.returncode == 0, r.stderr
    with shmbus.Blackboard.open(bus_name) as rd:
        e = rd.entry(b"joint.01")
        assert e.get() is None
        for args, expected in (
            (["joint.01", "0.25"], (b"0.25\0\0\0\0", 1)),
            (["joint.01"], None),  # removed
            (["joint.02", "9"], None),
            (["joint.01", "0.5"], (b"0.5\0\0\0\0\0", 4)),
        ):
            r = run([str(c_board), "put", bus_name, *args])
            assert r.returncode == 0, r.stderr
            assert e.get() == expected, args


def test_c_reads_through_an_entry_what_python_puts_through_one_removes_and_puts_again(bus_name):
    c_board = REPO / "examples" / "c" / "blackboard"
    if not os.access(c_board, os.X_OK):
        pytest.fail(f"no C example at {c_board}: run `make -C examples/c`")
    with shmbus.Blackboard.create(bus_name, keys=4, key_size=8, value_size=8) as b:
        w = b.entry(b"joint.01")
        w.put(b"0.25\0\0\0\0")
        watch = Child([str(c_board), "watch", bus_name, "joint.01", "0.75"])
        try:
            assert watch.wait_stderr_line("ready"), "the C watch never said ready"
            w.remove()
            b.put(b"joint.02", b"9\0\0\0\0\0\0\0")
            assert w.put(b"0.75\0\0\0\0") == 4
            rc, out, err = watch.finish()
        finally:
            watch.kill()
    assert rc == 0, err
    # What the watch sees between depends on when it wakes: first and last.
    lines = out.decode().splitlines()
    assert (lines[0], lines[-1]) == ("1\t0.25", "4\t0.75"), lines


def _read_bus(name):
    """Table `name` as the independent reader of docs/LAYOUT.md
    (tools/read_bus.py) reads it, §21."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("read_bus", REPO / "tools" / "read_bus.py")
    read_bus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(read_bus)
    return read_bus.Bus(f"/dev/shm/{name}")


def _entries(name):
    """Where each entry of table `name` starts in its file."""
    bus = _read_bus(name)
    return [bus.data + i * bus.bb["entry_size"] for i in range(bus.bb["entries"])]


def _patch_u64(name, at, value):
    with open(f"/dev/shm/{name}", "r+b") as f:
        f.seek(at)
        f.write(struct.pack("<Q", value))


def _live_entry(name, stamp_and_tag):
    """The offset of the one entry whose stamp is even and non-zero and tag LIVE."""
    with open(f"/dev/shm/{name}", "rb") as f:
        data = f.read()
    for at in stamp_and_tag:
        stamp, tag = struct.unpack_from("<QQ", data, at)
        if stamp and stamp % 2 == 0 and tag == 1:
            return at
    raise AssertionError("no live entry")


def test_an_entry_no_writer_wrote_raises_entry_corrupt_and_a_dead_writers_half_write_entry_stuck(bus_name):
    with board(bus_name, keys=1) as b:
        b.put(b"AAPL", b"101.5\0\0\0")
    # The writer has closed: no process holds the table's writer lock.
    at = _live_entry(bus_name, _entries(bus_name))
    with shmbus.Blackboard.open(bus_name) as r:
        assert r.get(b"AAPL") == (b"101.5\0\0\0", 1)
        # A tag no writer stores (LAYOUT §21: 0, 1 or 2).
        _patch_u64(bus_name, at + 8, 7)
        with pytest.raises(shmbus.EntryCorruptError) as e:
            r.get(b"AAPL")
        assert e.value.tag == 7 and isinstance(e.value, shmbus.BlackboardError)
        # An odd stamp and no writer alive: a writer died mid-write.
        _patch_u64(bus_name, at + 8, 1)
        _patch_u64(bus_name, at, 3)
        with pytest.raises(shmbus.EntryStuckError) as e:
            r.get(b"AAPL")
        assert e.value.version == 2


def test_a_key_beside_an_entry_left_mid_write_is_read_and_a_key_never_written_is_none(bus_name):
    with board(bus_name) as b:
        bus = _read_bus(bus_name)
        home = lambda key: bus.bb_hash(key) & (bus.bb["entries"] - 1)
        stuck = b"stuk"
        sharing = (k for k in (b"k%03d" % n for n in range(1000)) if home(k) == home(stuck))
        beside, never = next(sharing), next(sharing)
        # `stuck` in its home entry, `beside` in the next on the same probe.
        b.put(stuck, b"1\0\0\0\0\0\0\0")
        b.put(beside, b"2\0\0\0\0\0\0\0")
    # A writer died writing `stuck` (an odd stamp, no writer alive).
    _patch_u64(bus_name, _entries(bus_name)[home(stuck)], 3)
    with shmbus.Blackboard.open(bus_name) as r:
        with pytest.raises(shmbus.EntryStuckError):
            r.get(stuck)
        assert r.get(beside) == (b"2\0\0\0\0\0\0\0", 2)
        assert r.get(never) is None
        assert r.wait_key(beside, 0, timeout=0) == (b"2\0\0\0\0\0\0\0", 2)
        assert r.wait_key(never, 0, timeout=0) is None
    # The independent reader probes on past it too.
    assert bus.bb_get(beside) == (2, b"2\0\0\0\0\0\0\0")
    assert bus.bb_get(never) is None
    with pytest.raises(RuntimeError, match="stuck"):
        bus.bb_get(stuck)


def test_every_core_error_kind_raises_a_class_of_its_own_busy_and_stuck_their_entry_classes():
    from shmbus import _shmbus

    kinds = dict(_shmbus._kind_classes())
    assert kinds["Busy"] == "EntryBusyError" and kinds["Stuck"] == "EntryStuckError"
    assert kinds.pop("Other") is None
    for kind, cls in kinds.items():
        assert cls is not None, f"ErrorKind::{kind} raises no class of its own"
        assert issubclass(getattr(shmbus.errors, cls), shmbus.errors.Error), cls
