"""Shared fixtures: unique bus names removed afterwards, the Rust CLI, and
bounded child processes."""

import itertools
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import shmbus

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "python" / "examples"
SHMBUS_BIN = os.environ.get("SHMBUS_BIN", str(REPO / "target" / "debug" / "shmbus"))
PREFIX = f"pytest-shmbus-{os.getpid()}-"
_counter = itertools.count()

# Every child process and every wait is bounded by this.
CHILD_TIMEOUT = 60.0

# The first line of a Python child that a test interrupts with SIGINT. A
# Python process that starts with SIGINT ignored (what a shell's `&` or a
# CI runner's background job passes down) installs no KeyboardInterrupt
# handler, so the Ctrl-C under test would never arrive: it hung a whole CI
# run once. The default handler makes the test mean the same wherever it
# runs.
CTRL_C = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def readline_within(stream, timeout=CHILD_TIMEOUT):
    """One line from a child's pipe, or a failure after `timeout`, never a
    hang (a plain `readline` waits for ever on a child that stays silent)."""
    fd = stream.fileno()
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            pytest.fail(f"no line from the child within {timeout} s (so far {line!r})")
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return line


def _leftovers():
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(PREFIX))


@pytest.fixture
def bus_name():
    """A fresh bus name in /dev/shm; the bus is removed after the test."""
    name = f"{PREFIX}{next(_counter)}"
    yield name
    try:
        shmbus.remove(name)
    except shmbus.BusNotFoundError:
        pass


@pytest.fixture(scope="session", autouse=True)
def nothing_left_in_dev_shm():
    yield
    left = _leftovers()
    for n in left:
        try:
            shmbus.remove(n)
        except shmbus.Error:
            pass
    assert not left, f"buses left in /dev/shm: {left}"


@pytest.fixture(scope="session")
def shmbus_bin():
    if not os.access(SHMBUS_BIN, os.X_OK):
        pytest.fail(f"no shmbus binary at {SHMBUS_BIN}: run `cargo build -p shmbus-cli` or set SHMBUS_BIN")
    return SHMBUS_BIN


def run(cmd, input=b"", timeout=CHILD_TIMEOUT):
    """Runs a child to completion under a timeout; returns CompletedProcess."""
    return subprocess.run(cmd, input=input, capture_output=True, timeout=timeout)


def example(script):
    return [sys.executable, str(EXAMPLES / script)]


class Child:
    """A child process whose stderr is read line by line with a deadline."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._err = b""

    def wait_stderr_line(self, line, timeout=CHILD_TIMEOUT):
        """Reads stderr until `line` appears (True), EOF or the deadline (False)."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stderr.fileno()
        while (line.encode() + b"\n") not in self._err:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return False
            chunk = os.read(fd, 4096)
            if not chunk:
                return False
            self._err += chunk
        return True

    def finish(self, timeout=CHILD_TIMEOUT):
        """Waits for exit (killing it at the deadline); returns (rc, stdout, stderr)."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            pytest.fail(f"child {self.proc.args} did not finish within {timeout} s; stderr: {self._err + err!r}")
        return self.proc.returncode, out, self._err + err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()
