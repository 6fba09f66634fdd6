"""shmbus.Recording: a recording made by `shmbus record` read from Python
(iterate, filter by bus and time, seek through the index, a typed bus as a
structured NumPy array), checked against what was published."""

import json
import os
import signal
import subprocess
import time

import pytest

import shmbus

from conftest import CHILD_TIMEOUT, run


def _wait(what, done):
    deadline = time.monotonic() + CHILD_TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def _messages(path):
    try:
        return [r for r in shmbus.Recording(path) if isinstance(r, shmbus.RecordedMessage)]
    except (OSError, shmbus.RecordingError):
        return []


def _buses(path):
    try:
        return shmbus.Recording(path).buses()
    except (OSError, shmbus.RecordingError):
        return []


@pytest.fixture
def recorded(shmbus_bin, bus_name, tmp_path):
    """Two buses (16-byte messages, a typed one, and a pool), recorded by
    `shmbus record` while the CLI publishes lines 1..N into the first and
    a..e into the pool; the recording's path and N."""
    pool = bus_name + "-pool"
    n = 300
    out = tmp_path / "r.rec"
    assert run([shmbus_bin, "create", bus_name, "--slots", "1024", "--msg-size", "16",
                "--type", "text16:8"]).returncode == 0
    assert run([shmbus_bin, "create", pool, "--capacity", "16", "--pool", "64:32"]).returncode == 0
    rec = subprocess.Popen([shmbus_bin, "record", bus_name, pool, "--lossless",
                            "--rotate-size", "8192", "--out", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait("the recorder to declare its buses", lambda: len(_buses(out)) == 2)
        lines = "".join(f"{i}\n" for i in range(1, n + 1)).encode()
        assert run([shmbus_bin, "pub", bus_name], input=lines).returncode == 0
        assert run([shmbus_bin, "pub", pool], input=b"a\nbb\nccc\ndddd\neeeee\n").returncode == 0
        _wait("the recorder to write every message", lambda: len(_messages(out)) == n + 5)
    finally:
        rec.send_signal(signal.SIGINT)
        rec.wait(timeout=CHILD_TIMEOUT)
        shmbus.remove(pool)
    assert rec.returncode == 0, rec.stderr.read()
    yield out, n


def test_iterating_yields_each_bus_once_then_every_message_in_order(recorded):
    path, n = recorded
    rec = shmbus.Recording(path)
    assert len(rec.parts()) > 1, "rotated into parts, read as one"
    records = list(rec)
    buses = [r for r in records if isinstance(r, shmbus.RecordedBus)]
    assert [(b.id, b.kind, b.msg_size, b.lossless) for b in buses] == [
        (0, "bus", 16, True), (1, "pool", 64, True)]
    assert buses[0].type_name == "text16" and buses[0].type_size == 16 and buses[1].blocks == 32
    msgs = [r for r in records if isinstance(r, shmbus.RecordedMessage) and r.bus == 0]
    assert [m.seq for m in msgs] == list(range(n))
    assert [m.payload.rstrip(b"\0") for m in msgs] == [str(i).encode() for i in range(1, n + 1)]
    pool = [r.payload for r in records if isinstance(r, shmbus.RecordedMessage) and r.bus == 1]
    assert pool == [b"a", b"bb", b"ccc", b"dddd", b"eeeee"], "a pool block's exact bytes"


def test_filters_by_bus_name_and_time_and_seeks_find_the_first_match(recorded):
    path, n = recorded
    all_msgs = _messages(path)
    ones = [m for m in all_msgs if m.bus == 0]
    mid = ones[n // 2]
    pool_name = shmbus.Recording(path).buses()[1].name
    pool_only = [r for r in shmbus.Recording(path, bus=pool_name)
                 if isinstance(r, shmbus.RecordedMessage)]
    assert [m.payload for m in pool_only] == [b"a", b"bb", b"ccc", b"dddd", b"eeeee"]
    late = [r for r in shmbus.Recording(path, bus=0, start=mid.mono_ns)
            if isinstance(r, shmbus.RecordedMessage)]
    assert late == [m for m in ones if m.mono_ns >= mid.mono_ns]
    after = [r for r in shmbus.Recording(path).seek_time(mid.mono_ns)
             if not isinstance(r, shmbus.RecordedBus)]
    assert after[0] == next(m for m in all_msgs if m.mono_ns >= mid.mono_ns)
    at = [r for r in shmbus.Recording(path).seek_seq(0, mid.seq)
          if not isinstance(r, shmbus.RecordedBus)]
    assert at[0] == mid
    with pytest.raises(KeyError):
        shmbus.Recording(path, bus="no such bus")


def test_a_typed_bus_is_a_structured_numpy_array(recorded):
    np = pytest.importorskip("numpy")
    path, n = recorded
    rec = shmbus.Recording(path)
    name = rec.buses()[0].name
    arr = rec.to_numpy(name, dtype=np.dtype([("text", "S16")]))
    assert arr.dtype.names == ("seq", "mono_ns", "wall_ns", "msg")
    assert list(arr["seq"]) == list(range(n))
    assert list(arr["msg"]["text"][:3]) == [b"1", b"2", b"3"]
    assert (np.diff(arr["mono_ns"].astype(np.int64)) >= 0).all()
    raw = rec.to_numpy(0)
    assert raw.dtype["msg"] == np.dtype("V16")
    with pytest.raises(ValueError, match="dtype"):
        rec.to_numpy(0, dtype=np.dtype("<u8"))
    with pytest.raises(ValueError, match="different lengths"):
        rec.to_numpy(1)


def test_a_damaged_or_foreign_file_raises_recording_error(tmp_path, recorded):
    path, _ = recorded
    bad = tmp_path / "bad.rec"
    bad.write_bytes(b"not a recording at all, no")
    with pytest.raises(shmbus.RecordingError, match="not a shmbus recording"):
        shmbus.Recording(bad)
    data = bytearray(path.read_bytes())
    data[200] ^= 0x40
    bad.write_bytes(bytes(data))
    with pytest.raises(shmbus.RecordingError, match="record at offset"):
        list(shmbus.Recording(bad))
    with pytest.raises(OSError):
        shmbus.Recording(tmp_path / "missing.rec")


def test_a_part_cut_inside_its_header_or_a_stray_file_after_the_last_part_ends_it(recorded):
    path, _ = recorded
    parts = shmbus.Recording(path).parts()
    whole = list(shmbus.Recording(path))
    first = path.read_bytes()
    # The next part cut inside its header (a recorder killed as it made
    # it), then a file that is no part (the first part again).
    cut = f"{path}.{len(parts)}"
    after = f"{path}.{len(parts) + 1}"
    with open(cut, "wb") as f:
        f.write(first[:20])
    with open(after, "wb") as f:
        f.write(first)
    assert shmbus.Recording(path).parts() == parts
    assert list(shmbus.Recording(path)) == whole
    # A part after the cut one: a part was lost, and the error names it.
    with open(parts[-1], "rb") as f:
        last = bytearray(f.read())
    last[12:16] = (len(parts) + 1).to_bytes(4, "little")
    with open(after, "wb") as f:
        f.write(last)
    with pytest.raises(shmbus.RecordingError, match=f"^{cut}: the file is 20 bytes"):
        shmbus.Recording(path)


def test_to_numpy_without_numpy_says_to_install_it(recorded, monkeypatch):
    import sys

    from shmbus import _support

    path, _ = recorded
    monkeypatch.setattr(_support, "_numpy", None)
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` fails
    with pytest.raises(ImportError, match="pip install numpy"):
        shmbus.Recording(path).to_numpy(0)


def _drain(sub):
    got = []
    while True:
        m = sub.recv(timeout=0)
        if m is None:
            return got
        got.append(m if isinstance(m, shmbus.Lagged) else bytes(m))


def test_replay_publishes_each_recorded_bus_into_a_bus_of_its_kind_that_python_reads_back(
        recorded, bus_name):
    out, n = recorded
    pool = bus_name + "-pool"
    copy, pool_copy = bus_name + "-copy", bus_name + "-pool-copy"
    want = {b.name: [m.payload for m in shmbus.Recording(out, bus=b.id)
                     if isinstance(m, shmbus.RecordedMessage)]
            for b in shmbus.Recording(out).buses()}
    try:
        stats = shmbus.replay(out, {bus_name: copy, pool: pool_copy}, speed=None)
        assert (stats["messages"], stats["passes"], stats["pace_error_ns"]) == (n + 5, 1, None)
        with shmbus.Subscriber.open(copy, "oldest") as sub:
            assert _drain(sub) == want[bus_name]
        with shmbus.PoolSubscriber.open(pool_copy, "oldest") as sub:
            assert _drain(sub) == want[pool] == [b"a", b"bb", b"ccc", b"dddd", b"eeeee"]
        # Paced, within a sequence window, into the buses it made before.
        stats = shmbus.replay(out, {bus_name: copy, pool: pool_copy}, speed=4.0,
                              start_seq=2, end_seq=4)
        assert stats["messages"] == 4 and stats["pace_error_ns"] is not None
        # A mapping that does not fit the recording: ValueError, nothing hangs.
        with pytest.raises(ValueError, match="no target"):
            shmbus.replay(out, {bus_name: copy}, speed=None)
        with pytest.raises(shmbus.Error, match="is a plain bus"):
            shmbus.replay(out, {bus_name: copy + "-x", pool: copy}, speed=None)
    finally:
        for name in (copy, pool_copy, copy + "-x"):
            try:
                shmbus.remove(name)
            except shmbus.BusNotFoundError:
                pass


def _exists(name):
    return os.path.exists(os.path.join("/dev/shm", name))


def test_a_refused_replay_leaves_no_bus_behind(recorded, bus_name):
    out, _ = recorded
    copy, pool_copy = bus_name + "-copy", bus_name + "-pool-copy"
    # Two recorded buses into one `to`: refused before the first is made.
    with pytest.raises(ValueError, match="more than one bus"):
        shmbus.replay(out, to=copy, speed=None)
    assert not _exists(copy)
    # A map entry the recording does not hold: found out before either
    # target is made.
    with pytest.raises(ValueError, match="has no bus nope"):
        shmbus.replay(out, {bus_name: copy, bus_name + "-pool": pool_copy, "nope": "x"},
                      speed=None)
    assert not _exists(copy) and not _exists(pool_copy)


def test_replay_refuses_to_publish_into_a_bus_another_user_made_first(
        recorded, bus_name, shmbus_bin):
    if os.geteuid() != 0:
        # CI runs as root: there this test must run, not pass unrun.
        assert not os.environ.get("CI"), "only root can run a command as uid 65534"
        pytest.skip("only root can run a command as uid 65534")
    out, _ = recorded
    squat, pool_copy = bus_name + "-squat", bus_name + "-pool-copy"
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    made = run([*nobody, shmbus_bin, "create", squat, "--msg-size", "16", "--slots", "64",
                "--mode", "666"])
    assert made.returncode == 0, made.stderr.decode()
    try:
        with pytest.raises(shmbus.Error, match="owned by uid 65534"):
            shmbus.replay(out, {bus_name: squat, bus_name + "-pool": pool_copy}, speed=None)
        stat = run([shmbus_bin, "stat", squat, "--json"])
        assert json.loads(stat.stdout)["published"] == 0
        assert not _exists(pool_copy)
        # Root's own bus granting more than the replay's mode is refused
        # too, and taken with that mode given.
        shmbus.remove(squat)
        assert run([shmbus_bin, "create", squat, "--msg-size", "16", "--slots", "64",
                    "--mode", "644"]).returncode == 0
        with pytest.raises(shmbus.Error, match="mode 644"):
            shmbus.replay(out, {bus_name: squat, bus_name + "-pool": pool_copy}, speed=None)
        stats = shmbus.replay(out, {bus_name: squat, bus_name + "-pool": pool_copy},
                              speed=None, mode=0o644)
        assert stats["messages"] > 0
    finally:
        for name in (squat, pool_copy):
            try:
                shmbus.remove(name)
            except shmbus.BusNotFoundError:
                pass
