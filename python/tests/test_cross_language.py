"""Rust (the `shmbus` CLI) and Python (python/examples) on one bus, as real
processes, beyond the matrix (test_matrix.py): the publisher example's
errors, and publishers of two languages on one many-publisher bus. Every
child runs under a timeout; every bus is removed."""

import subprocess

import shmbus
from conftest import CHILD_TIMEOUT, Child, example, run

N = 40


def stdin_of(lines):
    return "".join(line + "\n" for line in lines).encode()


def create(shmbus_bin, name, *args):
    r = run([shmbus_bin, "create", *args, name])
    assert r.returncode == 0, r.stderr


def make_bus(shmbus_bin, kind, name, tmp_path, capacity=64):
    if kind == "bus":
        create(shmbus_bin, name, "--msg-size", "32", "--slots", str(capacity))
    elif kind == "many":
        create(shmbus_bin, name, "--msg-size", "32", "--slots", str(capacity), "--publishers", "many")
    elif kind == "journal":
        create(shmbus_bin, name, "--msg-size", "32", "--slots", str(capacity), "--journal", str(tmp_path / "journal"))
    else:
        create(shmbus_bin, name, "--pool", f"64:{capacity * 2}", "--slots", str(capacity))


def test_python_publisher_refuses_a_line_longer_than_a_message(shmbus_bin, bus_name, tmp_path):
    make_bus(shmbus_bin, "bus", bus_name, tmp_path)
    r = run(example("publisher.py") + [bus_name], input=b"ok\n" + b"x" * 33 + b"\n")
    assert r.returncode == 1
    assert r.stderr.decode().count("\n") == 1 and "33 bytes" in r.stderr.decode()


def test_python_and_rust_publishers_share_a_many_publisher_bus(shmbus_bin, bus_name, tmp_path):
    make_bus(shmbus_bin, "many", bus_name, tmp_path, capacity=256)
    py_lines = [f"py-{i:03d}" for i in range(N)]
    rs_lines = [f"rs-{i:03d}" for i in range(N)]
    sub = Child(example("subscriber.py") + ["--count", str(2 * N), "--timeout", "30", bus_name])
    try:
        assert sub.wait_stderr_line("ready")
        r1 = run(example("publisher.py") + ["--kind", "many", bus_name], input=stdin_of(py_lines))
        r2 = run([shmbus_bin, "pub", bus_name], input=stdin_of(rs_lines))
        assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
        rc, out, err = sub.finish()
    finally:
        sub.kill()
    assert rc == 0, err
    got = out.decode().splitlines()
    assert [l for l in got if l.startswith("py-")] == py_lines
    assert [l for l in got if l.startswith("rs-")] == rs_lines


def test_a_rust_publisher_waits_for_a_python_lossless_subscriber_which_gets_every_line(shmbus_bin, bus_name, tmp_path):
    # Four slots, 40 lines: the CLI's publish waits for the Python reader.
    make_bus(shmbus_bin, "bus", bus_name, tmp_path, capacity=4)
    lines = [f"line-{i:03d}" for i in range(N)]
    with shmbus.Subscriber.open(bus_name, lossless=True) as sub:
        pub = subprocess.Popen([shmbus_bin, "pub", bus_name], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            pub.stdin.write(stdin_of(lines))
            pub.stdin.close()
            got = []
            while len(got) < N:
                m = sub.recv(timeout=CHILD_TIMEOUT)
                assert m is not None and not isinstance(m, shmbus.Lagged), m
                got.append(m.rstrip(b"\0").decode())
            assert pub.wait(timeout=CHILD_TIMEOUT) == 0, pub.stderr.read()
        finally:
            if pub.poll() is None:
                pub.kill()
            pub.wait()
            pub.stderr.close()
        assert got == lines
        assert sub.lossless
