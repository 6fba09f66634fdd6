"""The cross-language matrix: real processes in Rust, C, C++ and Python on one bus.

Every publisher and subscriber here is a separate process with one command
line contract (the `shmbus` tool for Rust, examples/c/ for C, examples/cpp/
for C++ over include/shmbus.hpp, python/examples/ for Python):

    publisher [--kind bus|many|journal|pool] NAME        < lines
    subscriber [--kind bus|journal|pool] [--from ...] [--count N] [--timeout S] NAME

so each pair of languages runs the same checks on a plain, a
many-publisher, a journaled and a pool bus:

- every message delivered, in order, nothing else;
- a slow reader (stopped with SIGSTOP once its position is fixed, while
  more than the ring holds is published) is told exactly what it missed:
  delivered + skipped == published, and what it got is the newest, in
  order; on a journaled bus the journal repairs the lag instead;
- a late joiner on a journaled bus gets what was published before it and
  after it, each once, in order.

Nothing sleeps to widen a race: the subscriber's position is known to be
fixed when `shmbus stat` shows its registry entry, and SIGSTOP holds it
still. Every child runs under a deadline, and every bus is removed.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHMBUS = os.environ.get("SHMBUS_BIN", str(REPO / "target" / "debug" / "shmbus"))
C_DIR = REPO / "examples" / "c"
CPP_DIR = REPO / "examples" / "cpp"
PY_DIR = REPO / "python" / "examples"
DEADLINE = 60.0

LANGS = ["rust", "c", "cpp", "python"]
# Rust and Python each way, and C and C++ each way with both.
PAIRS = [
    ("rust", "python"),
    ("python", "rust"),
    ("c", "python"),
    ("rust", "c"),
    ("python", "c"),
    ("c", "rust"),
    ("cpp", "python"),
    ("python", "cpp"),
    ("rust", "cpp"),
    ("cpp", "rust"),
]
KINDS = ["bus", "many", "journal", "pool"]


@pytest.fixture(scope="session", autouse=True)
def built():
    """The C and C++ examples and the shmbus tool, built once."""
    if not Path(SHMBUS).exists():
        subprocess.run(["cargo", "build", "-q", "-p", "shmbus-cli"], cwd=REPO, check=True)
    subprocess.run(["make", "-s", "-C", str(C_DIR)], check=True, timeout=600)
    subprocess.run(["make", "-s", "-C", str(CPP_DIR)], check=True, timeout=600)


def publisher_cmd(lang, kind, name):
    if lang == "rust":
        return [SHMBUS, "pub", name]  # the tool tells the kinds apart itself
    if lang in ("c", "cpp"):
        return [str((C_DIR if lang == "c" else CPP_DIR) / "publisher"), "--kind", kind, name]
    return [sys.executable, str(PY_DIR / "publisher.py"), "--kind", kind, name]


def subscriber_cmd(lang, kind, name, start="next", count=None, timeout=None):
    sub_kind = "bus" if kind == "many" else kind
    if lang == "rust":
        cmd = [SHMBUS, "sub", name]
        if kind == "journal":
            cmd.append("--bootstrap")
        else:
            cmd += ["--from", start]
    else:
        if lang in ("c", "cpp"):
            cmd = [str((C_DIR if lang == "c" else CPP_DIR) / "subscriber")]
        else:
            cmd = [sys.executable, str(PY_DIR / "subscriber.py")]
        cmd += ["--kind", sub_kind, name]
        if kind != "journal":
            cmd += ["--from", start]
    if count is not None:
        cmd += ["--count", str(count)]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    return cmd


class Bus:
    """A bus made by `shmbus create`, removed afterwards with its journal."""

    def __init__(self, tmp_path, kind, capacity):
        self.name = f"/dev/shm/shmbus-matrix-{os.getpid()}-{kind}-{time.monotonic_ns()}"
        self.journal = tmp_path / "bus.journal"
        args = [SHMBUS, "create", self.name, "--slots", str(capacity)]
        if kind == "pool":
            args += ["--pool", f"4096:{2 * capacity}"]
        else:
            args += ["--msg-size", "32"]
        if kind == "many":
            args += ["--publishers", "many"]
        if kind == "journal":
            args += ["--journal", str(self.journal)]
        run(args)

    def stat(self):
        return json.loads(run([SHMBUS, "stat", self.name, "--json"]).stdout)

    def remove(self):
        if os.path.exists(self.name):
            run([SHMBUS, "rm", self.name])


@pytest.fixture
def make_bus(tmp_path):
    made = []

    def make(kind, capacity):
        bus = Bus(tmp_path, kind, capacity)
        made.append(bus)
        return bus

    yield make
    for bus in made:
        bus.remove()


def run(cmd, stdin=b""):
    done = subprocess.run(cmd, input=stdin, capture_output=True, timeout=DEADLINE)
    if done.returncode != 0:
        raise AssertionError(f"{cmd} exited {done.returncode}: {done.stderr.decode()!r}")
    return done


def lines(n, first=1):
    return [f"m{i:05d}" for i in range(first, first + n)]


def publish(lang, kind, bus, msgs):
    run(publisher_cmd(lang, kind, bus.name), ("\n".join(msgs) + "\n").encode())


def parsed(lines, err):
    """A subscriber's messages (`shmbus sub --bootstrap` prefixes each
    line with its sequence) and the lags it reported on stderr."""
    got = [line.split("\t", 1)[1] if "\t" in line else line for line in lines]
    skipped = [int(l.rsplit(" ", 1)[1]) for l in err.splitlines() if l.startswith("lagged: skipped ")]
    return got, skipped


class Child:
    """A subscriber process under a deadline: killed if still running."""

    def __init__(self, cmd):
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def wait_registered(self, bus):
        """Until the bus's registry names this process: its position is fixed."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"{self.cmd} exited early: {err.decode()!r}")
            if self.proc.pid in bus.stat()["subscriber_pids"]:
                return
            time.sleep(0.01)
        raise AssertionError(f"{self.cmd} never registered")

    def finish(self, ok_codes=(0,)):
        try:
            out, err = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"{self.cmd} ran past {DEADLINE} s: {err.decode()!r}")
        err = err.decode()
        assert self.proc.returncode in ok_codes, f"{self.cmd} exited {self.proc.returncode}: {err!r}"
        assert "panicked" not in err, err
        return parsed(out.decode().splitlines(), err)

    def finish_at(self, last, ok_codes=(0,)):
        """`finish` for a subscriber that is told no count: its lines up to
        `last`, the newest message, which every reader gets (lapped ones
        too); then it is stopped (SIGTERM) rather than waited for through
        its quiet timeout. Ending by its timeout instead, without `last`,
        is an exit as `finish` checks it."""
        err = []
        errs = threading.Thread(target=lambda: err.append(self.proc.stderr.read()), daemon=True)
        errs.start()
        watchdog = threading.Timer(DEADLINE, self.proc.kill)
        watchdog.start()
        out, stopped = [], False
        try:
            for raw in self.proc.stdout:
                line = raw.decode().rstrip("\n")
                out.append(line)
                if line.split("\t", 1)[-1] == last:
                    self.proc.terminate()
                    stopped = True
                    break
            out.extend(self.proc.stdout.read().decode().splitlines())
            self.proc.wait()
            errs.join()
        finally:
            watchdog.cancel()
        err = err[0].decode() if err else ""
        assert self.proc.returncode != -signal.SIGKILL, f"{self.cmd} ran past {DEADLINE} s: {err!r}"
        if not stopped:
            assert self.proc.returncode in ok_codes, f"{self.cmd} exited {self.proc.returncode}: {err!r}"
        assert "panicked" not in err, err
        return parsed(out, err)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def children():
    started = []

    def start(cmd):
        child = Child(cmd)
        started.append(child)
        return child

    yield start
    for child in started:
        child.kill()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pub_lang,sub_lang", PAIRS)
def test_every_message_arrives_in_order_across_languages(pub_lang, sub_lang, kind, make_bus, children):
    bus = make_bus(kind, 256)
    msgs = lines(200)
    sub = children(subscriber_cmd(sub_lang, kind, bus.name, start="next", count=len(msgs)))
    sub.wait_registered(bus)
    publish(pub_lang, kind, bus, msgs)
    got, skipped = sub.finish()
    assert got == msgs
    assert skipped == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pub_lang,sub_lang", PAIRS)
def test_a_stopped_reader_is_told_exactly_what_it_missed(pub_lang, sub_lang, kind, make_bus, children):
    bus = make_bus(kind, 8)
    msgs = lines(100)
    # No --count: how many arrive after the lap is what is checked. The
    # subscriber is stopped once the last message is out; should it never
    # come, it ends 2 s after the last it got.
    sub = children(subscriber_cmd(sub_lang, kind, bus.name, start="next", timeout=2))
    sub.wait_registered(bus)
    os.kill(sub.proc.pid, signal.SIGSTOP)
    try:
        publish(pub_lang, kind, bus, msgs)
    finally:
        os.kill(sub.proc.pid, signal.SIGCONT)
    # shmbus sub ends a --timeout without --count with 0, the examples with 2.
    got, skipped = sub.finish_at(msgs[-1], ok_codes=(0, 2))
    if kind == "journal":
        # The joiner repairs a lap from the journal: nothing lost.
        assert got == msgs
        assert skipped == []
    else:
        assert skipped, "a reader stopped while 100 messages went through 8 slots was lapped"
        assert len(got) + sum(skipped) == len(msgs), (len(got), skipped)
        assert got == msgs[len(msgs) - len(got):], "what it got is the newest, in order"


@pytest.mark.parametrize("pub_lang", LANGS)
@pytest.mark.parametrize("sub_lang", LANGS)
def test_a_late_joiner_gets_before_and_after_each_once(pub_lang, sub_lang, make_bus, children):
    bus = make_bus("journal", 16)
    before, after = lines(300), lines(50, first=301)
    publish(pub_lang, "journal", bus, before)
    sub = children(subscriber_cmd(sub_lang, "journal", bus.name, count=len(before) + len(after)))
    sub.wait_registered(bus)
    publish(pub_lang, "journal", bus, after)
    got, skipped = sub.finish()
    assert got == before + after
    assert skipped == []
