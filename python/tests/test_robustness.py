"""The binding met as a hostile or unlucky user meets it: fork,
Ctrl-C in the middle of a wait, a second thread, a store through a
read-only view. Each scenario that could kill or hang the interpreter runs
in a child process under a timeout."""

import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

import shmbus
from conftest import CHILD_TIMEOUT, CTRL_C, readline_within


def run_script(code, *, timeout=CHILD_TIMEOUT, env=None):
    """Runs ``code`` in a fresh interpreter; (returncode, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def stat_json(shmbus_bin, name):
    out = subprocess.run(
        [shmbus_bin, "stat", "--json", name], capture_output=True, timeout=CHILD_TIMEOUT, check=True
    ).stdout
    return json.loads(out)


def wait_until(what, cond, timeout=CHILD_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


# --- fork (item 7) -----------------------------------------------------------

FORK_AND_EXIT = """
pid = os.fork()
if pid == 0:
    sys.exit(0)  # an ordinary exit: finalizers run, and so do Rust drops
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status), flush=True)
"""


def test_a_forked_child_exiting_leaves_the_parents_pool_sample_held(bus_name):
    code = f"""
import os, sys, shmbus
pub = shmbus.PoolPublisher.create({bus_name!r}, block_size=64, blocks=16, capacity=8)
sub = shmbus.PoolSubscriber.open({bus_name!r})
pub.publish(b"AAAAAAAA")
sample = sub.recv(timeout=5)
{FORK_AND_EXIT}
print("held", sub.held, flush=True)
for i in range(40):
    pub.publish(b"B%07d" % i, timeout=5)
print("sample", bytes(sample).decode(), flush=True)
"""
    rc, out, err = run_script(code)
    assert rc == 0, err
    assert out.splitlines() == ["child 0", "held 1", "sample AAAAAAAA"], err


def test_a_forked_child_exiting_does_not_panic_in_a_journal_publishers_drop(bus_name, tmp_path):
    code = f"""
import os, sys, shmbus
pub = shmbus.JournalPublisher.create({bus_name!r}, {str(tmp_path / "j")!r}, msg_size=8)
pub.publish(b"AAAAAAAA")
{FORK_AND_EXIT}
pub.publish(b"BBBBBBBB")
pub.flush()
late = shmbus.JournalSubscriber.join({bus_name!r}, flush_timeout=5)
print("joined", [bytes(late.recv(timeout=5).data) for _ in range(2)], flush=True)
pub.close()
"""
    rc, out, err = run_script(code)
    assert rc == 0, err
    assert "Panic" not in err and "panicked" not in err, err
    assert out.splitlines() == ["child 0", "joined [b'AAAAAAAA', b'BBBBBBBB']"], err


def test_a_forked_child_exiting_leaves_the_stream_pids_that_stat_shows(bus_name, shmbus_bin):
    code = f"""
import os, sys, shmbus
producer = shmbus.Producer.create({bus_name!r}, 4096)
consumer = shmbus.Consumer.open({bus_name!r})
{FORK_AND_EXIT}
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
producer.push(b"after the fork")
print("popped", consumer.pop(timeout=5).decode(), flush=True)
"""
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert child.stdout.readline() == b"child 0\n"
        ready = child.stdout.readline().split()
        assert ready[0] == b"ready", child.stderr.read()
        pid = int(ready[1])
        st = stat_json(shmbus_bin, bus_name)
        assert (st["producer_pid"], st["consumer_pid"]) == (pid, pid)
        assert st["producer_alive"] and st["consumer_alive"]
        out, err = child.communicate(b"\n", timeout=CHILD_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    assert out == b"popped after the fork\n"


# --- Ctrl-C (items 8 and 11) --------------------------------------------------


def forge_a_dead_claim(name):
    """What a many-publisher publisher killed between its claim and its
    commit leaves: the claim cursor one past a sequence never written
    (docs/LAYOUT.md §18; the cursor is the control page's first word, the
    control page at the header's `control_offset`, byte 24)."""
    path = f"/dev/shm/{name}"
    with open(path, "r+b") as f:
        f.seek(24)
        (control,) = struct.unpack("<Q", f.read(8))
        f.seek(control)
        (cursor,) = struct.unpack("<Q", f.read(8))
        f.seek(control)
        f.write(struct.pack("<Q", cursor + 1))


def flush_requests(name):
    """The journal's flush-request counter (docs/LAYOUT.md §5: control
    offset 384, u32), which a joiner bumps once it asks for the flush."""
    with open(f"/dev/shm/{name}", "rb") as f:
        f.seek(24)
        (control,) = struct.unpack("<Q", f.read(8))
        f.seek(control + 384)
        (requests,) = struct.unpack("<I", f.read(4))
    return requests


def test_ctrl_c_during_recv_batch_keeps_the_lag_it_already_took(bus_name, shmbus_bin):
    pub = shmbus.ManyPublisher.create(bus_name, msg_size=8, capacity=8, unblock_timeout=0.05)
    try:
        code = CTRL_C + f"""
import shmbus, sys
sub = shmbus.Subscriber.open({bus_name!r})
print("open", flush=True)
try:
    sub.recv_batch(10)  # takes the dead claim's lag, then waits
    sys.exit(2)
except KeyboardInterrupt:
    print("interrupted", flush=True)
sys.stdin.readline()
batch = sub.recv_batch(10, timeout=5)
print("skipped", batch.skipped, "delivered", len(batch.messages), flush=True)
"""
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            assert readline_within(child.stdout) == b"open\n"
            forge_a_dead_claim(bus_name)
            # The subscriber skipped the dead claim (its lag report is taken
            # from the ring) and waits on: now Ctrl-C.
            wait_until(
                "the subscriber to skip the dead claim",
                lambda: [s["skipped"] for s in stat_json(shmbus_bin, bus_name)["per_subscriber"]] == [1],
            )
            child.send_signal(signal.SIGINT)
            assert readline_within(child.stdout) == b"interrupted\n"
            for i in range(3):
                pub.publish(b"m%d" % i)
            out, err = child.communicate(b"\n", timeout=CHILD_TIMEOUT)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 0, err
        # 4 sequences: 1 lost (the dead claim), 3 delivered.
        assert out == b"skipped 1 delivered 3\n"
    finally:
        pub.close()


@pytest.mark.parametrize("joiner", ["JournalSubscriber", "State"])
def test_ctrl_c_ends_a_join_waiting_for_a_stopped_publishers_flush(bus_name, tmp_path, joiner):
    publisher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import shmbus, sys\n"
            f"p = shmbus.JournalPublisher.create({bus_name!r}, {str(tmp_path / 'j')!r}, msg_size=8)\n"
            f"p.publish(b'x')\n"
            f"print('ready', flush=True)\n"
            f"sys.stdin.readline()\n"
            f"p.close()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    joining = None
    try:
        assert publisher.stdout.readline() == b"ready\n"
        publisher.send_signal(signal.SIGSTOP)  # alive, but serves no flush
        requests = flush_requests(bus_name)
        joining = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CTRL_C + f"import shmbus, sys, time\n"
                f"t = time.monotonic()\n"
                f"try:\n"
                f"    shmbus.{joiner}.join({bus_name!r}, flush_timeout=30)\n"
                f"except KeyboardInterrupt:\n"
                f"    print('interrupted', flush=True)\n"
                f"    sys.exit(0)\n"
                f"sys.exit(1)\n",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # The joiner asked for the flush: it waits for it from now on.
        wait_until("the joiner to ask for the flush", lambda: flush_requests(bus_name) != requests)
        sent = time.monotonic()
        joining.send_signal(signal.SIGINT)
        out, err = joining.communicate(timeout=CHILD_TIMEOUT)
        took = time.monotonic() - sent
        assert joining.returncode == 0, err
        assert out == b"interrupted\n"
        assert took < 1.0, f"Ctrl-C took {took:.2f} s to end the join"
    finally:
        if joining is not None and joining.poll() is None:
            joining.kill()
            joining.communicate()
        publisher.send_signal(signal.SIGCONT)
        try:
            publisher.communicate(b"\n", timeout=CHILD_TIMEOUT)
        finally:
            if publisher.poll() is None:
                publisher.kill()
                publisher.communicate()


# --- read-only views (item 9) ------------------------------------------------


def test_a_samples_view_is_read_only_all_the_way_down(bus_name):
    code = f"""
import ctypes, shmbus
import numpy as np
pub = shmbus.PoolPublisher.create({bus_name!r}, block_size=64, blocks=16, capacity=8)
sub = shmbus.PoolSubscriber.open({bus_name!r})
pub.publish(b"AAAAAAAA")
sample = sub.recv(timeout=5)
mv = sample.memoryview
assert mv.readonly
assert memoryview(mv.obj).readonly, "the exporter under the memoryview is writable"
refused = 0
for write in (
    lambda: memoryview(mv.obj).__setitem__(0, 0x42),
    lambda: (ctypes.c_ubyte * 8).from_buffer(mv.obj),
    lambda: np.frombuffer(mv.obj, dtype=np.uint8).__setitem__(0, 0x42),
    lambda: sample.numpy().__setitem__(0, 0x42),
    lambda: np.frombuffer(mv.obj, dtype=np.uint8).setflags(write=True),
):
    try:
        write()
    except (TypeError, ValueError, BufferError):
        refused += 1
print("refused", refused, bytes(sample).decode(), flush=True)
"""
    rc, out, err = run_script(code)
    assert rc == 0, f"exit {rc} (SIGSEGV is -11): {err}"
    assert out == "refused 5 AAAAAAAA\n"


def test_a_loans_view_stays_writable(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name) as sub:
            loan = pub.loan(4, timeout=5)
            mv = loan.memoryview
            assert not mv.readonly and not memoryview(mv.obj).readonly
            mv[:] = b"abcd"
            loan.publish()
            with sub.recv(timeout=5) as s:
                assert bytes(s) == b"abcd"


def test_loan_while_a_loan_is_out_is_a_loan_outstanding_error_not_closed(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        loan = pub.loan(8)
        with pytest.raises(shmbus.LoanOutstandingError, match="loan outstanding") as e:
            pub.loan(8)
        assert not isinstance(e.value, shmbus.ClosedError)
        assert isinstance(e.value, shmbus.LoanError)
        assert not pub.closed
        loan.release()


# --- a second thread (item 16) -----------------------------------------------


def open_waiter(kind, name, tmp_path):
    """What keeps the bus alive, a handle of `kind`, the call that waits on
    it forever, and a call that does not wait."""
    if kind == "Subscriber":
        keep = shmbus.Publisher.create(name, msg_size=8, capacity=8)
        handle = shmbus.Subscriber.open(name)
        return keep, handle, handle.recv, handle.try_recv
    if kind == "PoolSubscriber":
        keep = shmbus.PoolPublisher.create(name, block_size=64, blocks=16, capacity=8)
        handle = shmbus.PoolSubscriber.open(name)
        return keep, handle, handle.recv, handle.try_recv
    if kind == "Consumer":
        keep = shmbus.Producer.create(name, 4096)
        handle = shmbus.Consumer.open(name)
        return keep, handle, handle.pop, handle.try_pop
    if kind == "JournalSubscriber":
        keep = shmbus.JournalPublisher.create(name, str(tmp_path / "j"), msg_size=8)
        handle = shmbus.JournalSubscriber.join(name)
        return keep, handle, handle.recv, handle.try_recv
    keep = shmbus.JournalPublisher.create(name, str(tmp_path / "j"), msg_size=8)
    handle = shmbus.State.join(name)
    return keep, handle, lambda: handle.wait_for(5), handle.poll


@pytest.mark.parametrize("kind", ["Subscriber", "PoolSubscriber", "Consumer", "JournalSubscriber", "State"])
def test_a_second_thread_gets_busy_error_and_its_close_ends_the_wait(bus_name, tmp_path, kind):
    keep, handle, wait, probe = open_waiter(kind, bus_name, tmp_path)
    ended = []

    def waiter():
        try:
            wait()
            ended.append("returned")
        except BaseException as e:  # noqa: BLE001 - the test reports what it was
            ended.append(e)

    t = threading.Thread(target=waiter, daemon=True)
    try:
        t.start()
        # The waiter is inside its wait once a call from here is refused.
        busy = []

        def refused():
            try:
                probe()
            except shmbus.BusyError as e:
                busy.append(e)
                return True
            return False

        wait_until("the waiter to be inside its wait", refused)
        assert isinstance(busy[0], shmbus.Error) and isinstance(busy[0], RuntimeError)
        assert "another thread" in str(busy[0])
        closing = time.monotonic()
        handle.close()
        t.join(timeout=CHILD_TIMEOUT)
        assert not t.is_alive(), "close() did not end the wait"
        assert time.monotonic() - closing < 1.0
        assert len(ended) == 1 and isinstance(ended[0], shmbus.ClosedError), ended
        assert handle.closed
        with pytest.raises(shmbus.ClosedError):
            wait()
    finally:
        handle.close()
        t.join(timeout=CHILD_TIMEOUT)
        keep.close()


def test_closing_a_subscriber_from_another_thread_ends_its_iteration(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8, capacity=8) as pub:
        sub = shmbus.Subscriber.open(bus_name)
        got = []

        def iterate():
            try:
                for msg in sub:
                    got.append(msg)
                got.append("ended")
            except BaseException as e:  # noqa: BLE001 - the test reports what it was
                got.append(e)

        t = threading.Thread(target=iterate, daemon=True)
        t.start()
        pub.publish(b"one")
        wait_until("the message to be iterated", lambda: len(got) == 1)

        def waiting():
            try:
                sub.position
            except shmbus.BusyError:
                return True
            return False

        wait_until("the iteration to wait again", waiting)
        sub.close()
        t.join(timeout=CHILD_TIMEOUT)
        assert not t.is_alive()
        assert got == [b"one".ljust(8, b"\0"), "ended"]
