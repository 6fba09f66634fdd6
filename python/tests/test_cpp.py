"""C++ (examples/cpp/, over include/shmbus.hpp) with Rust (the `shmbus`
CLI) and Python on the kinds the matrix (test_matrix.py) does not cover:
a stream and a blackboard, each way, every side a separate process except
the Python one (this test). Every child runs under a timeout; every
segment is removed."""

import subprocess
from pathlib import Path

import pytest

import shmbus
from conftest import CHILD_TIMEOUT, Child, run

CPP_DIR = Path(__file__).resolve().parents[2] / "examples" / "cpp"
LINES = [f"rec-{i:03d}" for i in range(50)]


@pytest.fixture(scope="module", autouse=True)
def built():
    """The C++ examples (ci/python.sh builds them first; CARGO=true there)."""
    subprocess.run(["make", "-s", "-C", str(CPP_DIR)], check=True, timeout=600)


def cpp(program):
    return [str(CPP_DIR / program)]


def stdin_of(lines):
    return "".join(line + "\n" for line in lines).encode()


def test_a_python_producer_feeds_a_cpp_consumer_and_a_cpp_producer_a_python_one(bus_name):
    with shmbus.Producer.create(bus_name, 4096) as prod:
        sub = Child(cpp("subscriber") + ["--kind", "stream", "--count", str(len(LINES)), "--timeout", "30", bus_name])
        try:
            assert sub.wait_stderr_line("ready")
            for line in LINES:
                prod.push(line.encode(), timeout=CHILD_TIMEOUT)
            rc, out, err = sub.finish()
        finally:
            sub.kill()
        assert rc == 0, err
        assert out.decode().splitlines() == LINES
    # The stream's producer is gone: C++ becomes the next one, Python the consumer.
    r = run(cpp("publisher") + ["--kind", "stream", bus_name], input=stdin_of(LINES))
    assert r.returncode == 0, r.stderr
    with shmbus.Consumer.open(bus_name) as cons:
        got = [cons.pop(timeout=CHILD_TIMEOUT).decode() for _ in LINES]
        assert cons.try_pop() is None
    assert got == LINES


def test_a_cpp_producer_feeds_the_rust_cli(shmbus_bin, bus_name):
    r = run([shmbus_bin, "create", bus_name, "--kind", "stream", "--bytes", "4096"])
    assert r.returncode == 0, r.stderr
    r = run(cpp("publisher") + ["--kind", "stream", bus_name], input=stdin_of(LINES))
    assert r.returncode == 0, r.stderr
    r = run([shmbus_bin, "sub", bus_name, "--count", str(len(LINES)), "--timeout", "30"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == LINES


def test_a_blackboard_between_cpp_python_and_rust(shmbus_bin, bus_name):
    r = run(cpp("blackboard") + ["create", bus_name, "8", "8", "16"])
    assert r.returncode == 0, r.stderr
    # C++ writes; Python and Rust read.
    r = run(cpp("blackboard") + ["put", bus_name, "AAPL", "101.5"])
    assert r.returncode == 0 and r.stdout == b"1\n", r.stderr
    with shmbus.Blackboard.open(bus_name) as board:
        value, version = board.get(b"AAPL".ljust(8, b"\0"))
        assert (value.rstrip(b"\0"), version) == (b"101.5", 1)
    r = run([shmbus_bin, "get", "--with-version", bus_name, "AAPL"])
    assert r.returncode == 0 and r.stdout == b"1\t101.5\n", r.stderr
    # Python writes (the C++ writer is gone) and removes; C++ reads.
    with shmbus.Blackboard.attach(bus_name) as board:
        assert board.put(b"MSFT".ljust(8, b"\0"), b"400.25".ljust(16, b"\0")) == 2
        assert board.remove(b"AAPL".ljust(8, b"\0")) == 3
    r = run(cpp("blackboard") + ["get", bus_name, "MSFT"])
    assert r.returncode == 0 and r.stdout == b"2\t400.25\n", r.stderr
    r = run(cpp("blackboard") + ["get", bus_name, "AAPL"])
    assert r.returncode == 3, (r.stdout, r.stderr)
    # Rust writes; C++ reads.
    r = run([shmbus_bin, "put", bus_name, "MSFT", "402"])
    assert r.returncode == 0, r.stderr
    r = run(cpp("blackboard") + ["get", bus_name, "MSFT"])
    assert r.returncode == 0 and r.stdout == b"4\t402\n", r.stderr


def test_a_typed_cpp_subscriber_opens_a_python_bus_of_its_type_and_no_other(bus_name):
    # md.Tick is two uint64_t (16 bytes, 8-aligned), as the C++ test's Tick.
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8, type_name="md.Tick", type_align=8) as pub:
        pub.publish((7).to_bytes(8, "little") + (42).to_bytes(8, "little"))
        r = run(cpp("test_shmbus") + ["recv-tick", bus_name])
        assert r.returncode == 0 and r.stdout == b"7 42\n", (r.stdout, r.stderr)
    shmbus.remove(bus_name)
    with shmbus.Publisher.create(bus_name, msg_size=16, capacity=8, type_name="md.Quote", type_align=8):
        r = run(cpp("test_shmbus") + ["recv-tick", bus_name])
        assert r.returncode == 3, (r.stdout, r.stderr)
        assert r.stdout.startswith(b"TypeMismatch: ") and b"md.Quote" in r.stdout, r.stdout
