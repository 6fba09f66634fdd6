#!/usr/bin/env python3
"""shmbus's Python binding beside Python-first IPC peers: publish and
receive rates of one Python publisher process -> one Python subscriber, at
64 B, 256 B and 4 KiB (not a test).

    python bench_peers.py [--sizes 64,256,4096] [--messages N] [--rounds R]
                          [--only a,b,...] [--durable-dir DIR] [--pin none|same|split]
                    [--no-alone] [--quick]

Rows (publisher -> this process; `--only` takes these names):
  shmbus-batch      Publisher.publish -> Subscriber.recv_batch into NumPy
  shmbus-batch-ll   the same with a lossless subscriber (the publisher waits)
  shmbus-many       Publisher.publish_many (512 a call) -> recv_batch into NumPy
  shmbus-recv       -> Subscriber.recv, one message (bytes) a call
  shmbus-into       -> Subscriber.recv_into, one message a call into a bytearray
  shmbus-journal    JournalPublisher (journal in --durable-dir) -> JournalSubscriber.recv
  shmbus-stream     Producer.push -> Consumer.pop (lossless SPSC stream)
  mmbus-recv        mmbus ring without its WAL: TopicPublisher.publish -> recv_timeout
  mmbus-into        -> Subscription.recv_timeout_into, one message a call into a bytearray
  mmbus-batch       -> Subscription.recv_batch (a list of bytes)
  mmbus-numpy       -> Subscription.recv_into_buffer into NumPy
  mmbus-many        TopicPublisher.publish_many (512 a call) -> recv_into_buffer
  mmbus-wal-recv    mmbus with its WAL (in --durable-dir) -> recv_timeout
  mmbus-wal-numpy   mmbus with its WAL -> recv_into_buffer into NumPy
  tachyon-recv      tachyon-ipc Bus.send -> iterating the Bus (one Message a step)
  tachyon-batch     Bus.send -> Bus.drain_batch, each view copied to bytes
  iceoryx2          iceoryx2 0.10 publish-subscribe, send_copy -> receive
  mp-queue          multiprocessing.Queue put -> get

What is compared: every publisher sends the same N pre-built messages (its
sequence number as a little-endian u64 in the first and in the last 8
bytes, filler between) as fast as its mechanism takes them, one call a
message unless the row says otherwise, from when the receiver says go.
Every receiver gets each message's bytes into memory Python owns (bytes, a
bytearray or NumPy rows) and checks both sequence words: a tail that
differs from the head is a torn message; a head past the next sequence is
a gap no call announced (those messages are missing), one before it a
wrong message. Batch receives take at most 256 KiB a call (4 096 messages
of 64 B, 1 024 of 256 B, 64 of 4 KiB). Lossless mechanisms whose publish
call raises when the ring is full (mmbus's default backpressure,
tachyon-ipc) are retried by the publisher. The shmbus bus without a
lossless subscriber is the one lossy row family: a lapped subscriber is
told how many it lost; those are the lost column, and its rate counts
delivered messages only.

Rates: receive, from the receiver's go to its last message; publish, the
publisher's loop from its first call to its last. Rows run in interleaved
rounds (A, B, C, ..., A, B, C, ...; each round starts one row later) and
each is reported as p50 / min / max over rounds. "publisher alone" runs the
same publisher loop with no subscriber at all: the most a receiver fed by
that publisher can get.

Every ring holds --slots messages (8 192; 1 024 with --quick), so each
wraps many times a round. The shmbus rings and mmbus's without its WAL
are in /dev/shm; the journal and mmbus with its WAL (ring and WAL, one
directory) in --durable-dir. Exits 1 if a shmbus row saw a torn, missing
or wrong message, lost one where lossless, or failed; a peer that is not
installed is skipped with a printed line, and a peer that fails is
reported and skipped.
"""

import argparse
import ctypes
import importlib.metadata
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

U64 = struct.Struct("<Q")
# One budget in bytes for every batch receiver: 4 096 messages of 4 KiB
# (16 MiB) would be copied out of the cache before they are checked.
BATCH_BYTES = 256 << 10
# Messages a publish_many call takes.
MANY = 512
# Seconds a receiver waits for a message before the row fails.
WAIT = 10.0


def batch_max(size):
    return max(1, min(4096, BATCH_BYTES // size))


def message_list(n, size):
    middle = (bytes(range(256)) * (size // 256 + 1))[: size - 16]
    return [s.to_bytes(8, "little") + middle + s.to_bytes(8, "little") for s in range(n)]


def pow2_at_least(x):
    return 1 << (max(x, 64) - 1).bit_length()


# --- publishers (child processes) -------------------------------------------
# argv: --publisher KIND NAME SIZE N SLOTS DIR ALONE. Each prints "ready",
# waits for a line on stdin, publishes, prints "done SECONDS RETRIES", and
# (unless ALONE) stays until the receiver's last line, so that nothing it
# owns goes away under the receiver.


def pin_publisher():
    """Moves this publisher to the CPU --pin gave it (inherited through the
    environment)."""
    cpu = os.environ.get("BENCH_PEERS_PUBLISHER_CPU")
    if cpu:
        os.sched_setaffinity(0, {int(cpu)})


def publisher_main(argv):
    kind, name, size, n, slots, where, alone = argv
    pin_publisher()
    size, n, slots, alone = int(size), int(n), int(slots), alone == "1"
    publish, finish = PUBLISHERS[kind](name, size, slots, where, alone, message_list(n, size))
    print("ready", flush=True)
    if not alone:
        sys.stdin.readline()
    t0, c0 = time.perf_counter(), time.process_time()
    retries = publish()
    t1, c1 = time.perf_counter(), time.process_time()
    print(f"done {t1 - t0:.9f} {retries} {c1 - c0:.9f}", flush=True)
    if not alone:
        sys.stdin.readline()
    finish()


def pub_shmbus(name, size, slots, where, alone, msgs, many=False):
    import shmbus

    if alone:
        pub = shmbus.Publisher.create(name, msg_size=size, capacity=slots)
    else:
        pub = shmbus.Publisher.attach(name)

    def run():
        publish = pub.publish
        for m in msgs:
            publish(m)
        return 0

    # publish_many takes one buffer of messages end to end: built before
    # the go, as every row's messages are.
    blobs = [b"".join(msgs[i : i + MANY]) for i in range(0, len(msgs), MANY)] if many else []

    def run_many():
        publish_many = pub.publish_many
        for b in blobs:
            publish_many(b)
        return 0

    def finish():
        pub.close()
        if alone:
            shmbus.remove(name)

    return (run_many if many else run), finish


def pub_journal(name, size, slots, where, alone, msgs):
    import shmbus

    path = os.path.join(where, name + ".journal")
    pub = shmbus.JournalPublisher.create(name, path, msg_size=size, capacity=slots)

    def run():
        publish = pub.publish
        for m in msgs:
            publish(m)
        return 0

    def finish():
        pub.close()
        shmbus.remove(name)

    return run, finish


def pub_stream(name, size, slots, where, alone, msgs):
    import shmbus

    prod = shmbus.Producer.attach(name)

    def run():
        push = prod.push
        for m in msgs:
            push(m)
        return 0

    return run, prod.close


def pub_mmbus(name, size, slots, where, alone, msgs, many=False, wal=False):
    import mmbus

    bus = mmbus.Bus("bench", base_dir=where, capacity=slots, slot_size=size, wal_enabled=wal)
    topic = bus.topic(name)
    if not alone:
        print("created", flush=True)
        topic.wait_for_subscribers(1, timeout_secs=WAIT)
    full = mmbus.BusFullError

    def run_one():
        publish = topic.publish
        retries = 0
        for m in msgs:
            while True:
                try:
                    publish(m)
                    break
                except full:
                    retries += 1
        return retries

    def run_many():
        publish_many = topic.publish_many
        retries = 0
        for i in range(0, len(msgs), MANY):
            chunk = msgs[i : i + MANY]
            done = publish_many(chunk)
            while done < len(chunk):
                retries += 1
                done += publish_many(chunk[done:])
        return retries

    return (run_many if many else run_one), lambda: None


def pub_tachyon(name, size, slots, where, alone, msgs):
    import tachyon

    bus = tachyon.Bus.listen(os.path.join(where, name + ".sock"), tachyon_capacity(size, slots))
    error = tachyon.TachyonError

    def run():
        send = bus.send
        retries = 0
        for m in msgs:
            while True:
                try:
                    send(m)
                    break
                except error:
                    retries += 1
        return retries

    return run, lambda: bus._bus.destroy()


def tachyon_capacity(size, slots):
    # A record takes its payload plus tachyon's header, rounded to 64 B.
    return pow2_at_least(slots * (((size + 63) // 64) * 64 + 64))


def iox_type(size):
    return type(
        f"BenchMsg{size}",
        (ctypes.Structure,),
        {"_fields_": [("seq", ctypes.c_uint64), ("fill", ctypes.c_uint8 * (size - 16)), ("tail", ctypes.c_uint64)]},
    )


def iox_service(node, name, size, slots):
    import iceoryx2 as iox

    return (
        node.service_builder(iox.ServiceName.new(name))
        .publish_subscribe(iox_type(size))
        .subscriber_max_buffer_size(slots)
        .history_size(0)
        .enable_safe_overflow(False)
        .open_or_create()
    )


def pub_iceoryx2(name, size, slots, where, alone, msgs):
    import iceoryx2 as iox

    node = iox.NodeBuilder.new().create(iox.ServiceType.Ipc)
    service = iox_service(node, name, size, slots)
    pub = (
        service.publisher_builder()
        .backpressure_strategy(iox.BackpressureStrategy.RetryUntilDelivered)
        .create()
    )
    typ = iox_type(size)

    structs = [typ.from_buffer_copy(m) for m in msgs]

    def run():
        send = pub.send_copy
        for s in structs:
            send(s)
        return 0

    return run, pub.delete


PUBLISHERS = {
    "shmbus": pub_shmbus,
    "shmbus-many": lambda *a: pub_shmbus(*a, many=True),
    "journal": pub_journal,
    "stream": pub_stream,
    "mmbus": pub_mmbus,
    "mmbus-many": lambda *a: pub_mmbus(*a, many=True),
    "mmbus-wal": lambda *a: pub_mmbus(*a, wal=True),
    "tachyon": pub_tachyon,
    "iceoryx2": pub_iceoryx2,
}


def queue_publisher(q, go, n, size, conn):
    pin_publisher()
    msgs = message_list(n, size)
    conn.send("ready")
    go.wait()
    put = q.put
    t0, c0 = time.perf_counter(), time.process_time()
    for m in msgs:
        put(m)
    conn.send((time.perf_counter() - t0, time.process_time() - c0))


# --- the receiver's side ------------------------------------------------------


class Result:
    """A row's round. The CPU shares (CPU seconds of the process, all its
    threads, over the loop's wall seconds) say which side had a CPU to
    itself and which waited or was crowded out."""

    def __init__(self, chk, n, pub_seconds, retries, pub_cpu):
        self.delivered, self.lost, self.missing = chk.delivered, chk.lost, chk.missing
        self.bad, self.torn = chk.bad, chk.torn
        wall = chk.end - chk.start
        self.rate = chk.delivered / wall if wall > 0 else 0.0
        self.recv_cpu = (chk.cpu_end - chk.cpu) / wall if wall > 0 else 0.0
        self.pub_rate = n / pub_seconds
        self.pub_cpu = pub_cpu / pub_seconds
        self.retries = retries


class Checker:
    """The check every receiver runs on every message: its tail word equal
    to its head word (else torn), and its head the next sequence. A head
    past it is a gap nobody announced (those messages are missing), one
    before it a message out of order (wrong)."""

    def __init__(self, size, start):
        self.size = size
        self.start = start
        self.cpu = self.cpu_end = time.process_time()
        self.end = start
        self.expect = 0
        self.delivered = self.lost = self.missing = self.bad = self.torn = 0

    def one(self, m):
        """One message as a bytes-like object."""
        head = U64.unpack_from(m, 0)[0]
        tail = U64.unpack_from(m, self.size - 8)[0]
        if head != self.expect or tail != head:
            self.flag(head, tail)
        self.expect = head + 1
        self.delivered += 1

    def flag(self, head, tail):
        if tail != head:
            self.torn += 1
        elif head > self.expect:
            self.missing += head - self.expect
        else:
            self.bad += 1

    def rows(self, rows):
        """k messages as a (k, size) uint8 NumPy array, checked at once."""
        import numpy as np

        k = rows.shape[0]
        heads = rows[:, :8].copy().view("<u8").ravel()
        tails = rows[:, -8:].copy().view("<u8").ravel()
        want = np.arange(self.expect, self.expect + k, dtype=np.uint64)
        if not (np.array_equal(heads, want) and np.array_equal(tails, heads)):
            for h, t in zip(heads.tolist(), tails.tolist()):
                if h != self.expect or t != h:
                    self.flag(h, t)
                self.expect = h + 1
        else:
            self.expect += k
        self.delivered += k

    def skipped(self, n):
        self.lost += n
        self.expect += n

    def stop(self):
        self.end, self.cpu_end = time.perf_counter(), time.process_time()


def spawn(kind, name, size, n, slots, where, alone=False):
    return subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--publisher", kind, name, str(size), str(n),
         str(slots), where, "1" if alone else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def expect_line(proc, word):
    line = proc.stdout.readline().strip()
    if line != word:
        raise RuntimeError(f"publisher said {line!r} where {word!r} was expected (exit {proc.poll()})")


def tell(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()


def start(proc, size):
    """Tells the publisher to go: the receive time runs from here, so a
    receiver that finds a full ring waiting is not credited with it."""
    chk = Checker(size, time.perf_counter())
    tell(proc)
    return chk


def finish(proc, chk, n):
    """The publisher's figures, then let it go."""
    chk.stop()
    line = proc.stdout.readline().split()
    if not line or line[0] != "done":
        raise RuntimeError(f"publisher ended without its figures (exit {proc.poll()})")
    tell(proc)
    proc.wait(30)
    return Result(chk, n, float(line[1]), int(line[2]), float(line[3]))


def stop(proc):
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


class Run:
    """One row at one size: names, places and the child."""

    counter = 0

    def __init__(self, args, size):
        Run.counter += 1
        self.size = size
        self.n = args.count(size)
        self.slots = args.slots
        self.name = f"bench-peers-{os.getpid()}-{Run.counter}"
        self.shm_dir = tempfile.mkdtemp(prefix="bench-peers-", dir="/dev/shm")
        self.durable_dir = tempfile.mkdtemp(prefix="bench-peers-", dir=args.durable_dir)
        self.proc = None

    def spawn(self, kind, durable=False, alone=False):
        where = self.durable_dir if durable else self.shm_dir
        self.proc = spawn(kind, self.name, self.size, self.n, self.slots, where, alone)
        return self.proc

    def close(self):
        stop(self.proc)
        shutil.rmtree(self.shm_dir, ignore_errors=True)
        shutil.rmtree(self.durable_dir, ignore_errors=True)


def recv_shmbus(run, how, many=False):
    import shmbus

    size, n = run.size, run.n
    lossless = how == "batch-ll"
    creator = shmbus.Publisher.create(run.name, msg_size=size, capacity=run.slots, evict_after=30.0)
    creator.close()  # the child attaches as the publisher
    sub = shmbus.Subscriber.open(run.name, "next", lossless=lossless)
    try:
        proc = run.spawn("shmbus-many" if many else "shmbus")
        expect_line(proc, "ready")
        chk = start(proc, run.size)
        if how in ("batch", "batch-ll"):
            recv_batch = sub.recv_batch
            most = batch_max(size)
            while chk.expect < n:
                msgs, skipped = recv_batch(most, timeout=WAIT)
                if skipped:
                    chk.skipped(skipped)
                if msgs.shape[0]:
                    chk.rows(msgs)
                elif not skipped:
                    raise RuntimeError(f"no message for {WAIT:g} s")
        elif how == "recv":
            recv = sub.recv
            one = chk.one
            while chk.expect < n:
                m = recv(WAIT)
                if type(m) is bytes:
                    one(m)
                elif m is None:
                    raise RuntimeError(f"no message for {WAIT:g} s")
                else:
                    chk.skipped(m.skipped)
        else:  # into
            buf = bytearray(size)
            recv_into = sub.recv_into
            one = chk.one
            while chk.expect < n:
                got = recv_into(buf, WAIT)
                if type(got) is int:
                    one(buf)
                elif got is None:
                    raise RuntimeError(f"no message for {WAIT:g} s")
                else:
                    chk.skipped(got.skipped)
        if lossless and chk.lost:
            raise RuntimeError(f"lossless subscriber lost {chk.lost} (evicted: {not sub.lossless})")
        return finish(proc, chk, n)
    finally:
        stop(run.proc)
        sub.close()
        shmbus.remove(run.name)


def recv_journal(run):
    import shmbus

    proc = run.spawn("journal", durable=True)
    expect_line(proc, "ready")
    sub = shmbus.JournalSubscriber.join(run.name)
    try:
        chk = start(proc, run.size)
        recv = sub.recv
        one = chk.one
        while chk.expect < run.n:
            e = recv(WAIT)
            if e is None:
                raise RuntimeError(f"no message for {WAIT:g} s")
            if type(e) is shmbus.Lagged:
                chk.skipped(e.skipped)
            else:
                one(e.data)
        return finish(proc, chk, run.n)
    finally:
        stop(proc)
        sub.close()


def recv_stream(run):
    import shmbus

    cap = pow2_at_least(run.slots * (run.size + 8))
    shmbus.Producer.create(run.name, cap).close()  # the child attaches as the producer
    con = shmbus.Consumer.open(run.name)
    try:
        proc = run.spawn("stream")
        expect_line(proc, "ready")
        chk = start(proc, run.size)
        pop = con.pop
        one = chk.one
        n = run.n
        while chk.expect < n:
            m = pop(WAIT)
            one(m)
        return finish(proc, chk, n)
    finally:
        stop(run.proc)
        con.close()
        shmbus.remove(run.name)


def recv_mmbus(run, how, wal=False, many=False):
    import numpy as np
    import mmbus

    kind = "mmbus-wal" if wal else "mmbus-many" if many else "mmbus"
    proc = run.spawn(kind, durable=wal)
    expect_line(proc, "created")
    bus = mmbus.Bus("bench", base_dir=run.durable_dir if wal else run.shm_dir)
    sub = bus.subscribe(run.name, timeout_secs=WAIT)
    expect_line(proc, "ready")
    n = run.n
    try:
        chk = start(proc, run.size)
        if how == "recv":
            recv = sub.recv_timeout
            one = chk.one
            while chk.expect < n:
                m = recv(WAIT)
                if m is None:
                    raise RuntimeError(f"no message for {WAIT:g} s")
                one(m)
        elif how == "into":
            buf = bytearray(run.size)
            recv_into = sub.recv_timeout_into
            one = chk.one
            while chk.expect < n:
                if recv_into(buf, WAIT) is None:
                    raise RuntimeError(f"no message for {WAIT:g} s")
                one(buf)
        elif how == "batch":
            recv_batch = sub.recv_batch
            one = chk.one
            most = batch_max(run.size)
            while chk.expect < n:
                ms = recv_batch(most, WAIT)
                if not ms:
                    raise RuntimeError(f"no message for {WAIT:g} s")
                for m in ms:
                    one(m)
        else:  # numpy
            buf = np.empty((batch_max(run.size), run.size), dtype=np.uint8)
            recv_into_buffer = sub.recv_into_buffer
            size = run.size
            while chk.expect < n:
                k = recv_into_buffer(buf, size, WAIT)
                if k == 0:
                    raise RuntimeError(f"no message for {WAIT:g} s")
                chk.rows(buf[:k])
        return finish(proc, chk, n)
    finally:
        stop(proc)
        del sub, bus


def recv_tachyon(run, how):
    import tachyon

    path = os.path.join(run.shm_dir, run.name + ".sock")
    proc = run.spawn("tachyon")
    deadline = time.monotonic() + WAIT
    while not os.path.exists(path):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("tachyon: the publisher did not listen")
        time.sleep(0.002)
    bus = tachyon.Bus.connect(path)
    n = run.n
    try:
        expect_line(proc, "ready")
        chk = start(proc, run.size)
        one = chk.one
        if how == "recv":
            it = iter(bus)
            while chk.expect < n:
                m = next(it).data
                one(m)
        else:  # batch
            drain = bus.drain_batch
            most = batch_max(run.size)
            while chk.expect < n:
                with drain(most) as batch:
                    for v in batch:
                        one(bytes(v))
        return finish(proc, chk, n)
    finally:
        stop(proc)
        bus._bus.destroy()


def recv_iceoryx2(run):
    import iceoryx2 as iox

    node = iox.NodeBuilder.new().create(iox.ServiceType.Ipc)
    service = iox_service(node, run.name, run.size, run.slots)
    sub = service.subscriber_builder().buffer_size(run.slots).create()
    n, size = run.n, run.size
    try:
        proc = run.spawn("iceoryx2")
        expect_line(proc, "ready")
        chk = start(proc, run.size)
        receive = sub.receive
        string_at = ctypes.string_at
        one = chk.one
        deadline = time.monotonic() + 60
        while chk.expect < n:
            s = receive()
            if s is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("iceoryx2: timed out")
                continue
            m = string_at(s.payload_ptr, size)
            s.delete()
            one(m)
        return finish(proc, chk, n)
    finally:
        stop(run.proc)
        sub.delete()


def recv_queue(run):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    go_event = ctx.Event()
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=queue_publisher, args=(q, go_event, run.n, run.size, theirs))
    proc.start()
    try:
        if ours.recv() != "ready":
            raise RuntimeError("mp-queue: the publisher is not ready")
        chk = Checker(run.size, time.perf_counter())
        go_event.set()
        get = q.get
        one = chk.one
        for _ in range(run.n):
            m = get(timeout=WAIT)
            one(m)
        chk.stop()
        pub_seconds, pub_cpu = ours.recv()
        proc.join(30)
        return Result(chk, run.n, pub_seconds, 0, pub_cpu)
    finally:
        if proc.is_alive():
            proc.kill()


def alone(kind, durable=False):
    """The publisher loop with no subscriber: its own rate is the row's."""

    def go(run):
        proc = run.spawn(kind, durable=durable, alone=True)
        try:
            expect_line(proc, "ready")
            line = proc.stdout.readline().split()
            proc.wait(30)
            if not line or line[0] != "done" or proc.returncode != 0:
                raise RuntimeError(f"publisher failed (exit {proc.returncode})")
            return Result(Checker(run.size, 0.0), run.n, float(line[1]), 0, float(line[3]))
        finally:
            stop(proc)

    return go


# name: (needs, lossy, receiver or publisher-alone run, what the row is)
ROWS = {
    "shmbus-batch": ("shmbus", True, lambda r: recv_shmbus(r, "batch")),
    "shmbus-batch-ll": ("shmbus", False, lambda r: recv_shmbus(r, "batch-ll")),
    "shmbus-many": ("shmbus", True, lambda r: recv_shmbus(r, "batch", many=True)),
    "shmbus-recv": ("shmbus", True, lambda r: recv_shmbus(r, "recv")),
    "shmbus-into": ("shmbus", True, lambda r: recv_shmbus(r, "into")),
    "shmbus-journal": ("shmbus", False, recv_journal),
    "shmbus-stream": ("shmbus", False, recv_stream),
    "mmbus-recv": ("mmbus", False, lambda r: recv_mmbus(r, "recv")),
    "mmbus-into": ("mmbus", False, lambda r: recv_mmbus(r, "into")),
    "mmbus-batch": ("mmbus", False, lambda r: recv_mmbus(r, "batch")),
    "mmbus-numpy": ("mmbus", False, lambda r: recv_mmbus(r, "numpy")),
    "mmbus-many": ("mmbus", False, lambda r: recv_mmbus(r, "numpy", many=True)),
    "mmbus-wal-recv": ("mmbus", False, lambda r: recv_mmbus(r, "recv", wal=True)),
    "mmbus-wal-numpy": ("mmbus", False, lambda r: recv_mmbus(r, "numpy", wal=True)),
    "tachyon-recv": ("tachyon", False, lambda r: recv_tachyon(r, "recv")),
    "tachyon-batch": ("tachyon", False, lambda r: recv_tachyon(r, "batch")),
    "iceoryx2": ("iceoryx2", False, recv_iceoryx2),
    "mp-queue": (None, False, recv_queue),
}
# The publisher loops alone. A stream's producer and tachyon-ipc's need
# their consumer (tachyon's listen waits for it), so they have no row here.
ALONE = {
    "alone:shmbus": ("shmbus", alone("shmbus")),
    "alone:shmbus-many": ("shmbus", alone("shmbus-many")),
    "alone:shmbus-journal": ("shmbus", alone("journal", durable=True)),
    "alone:mmbus": ("mmbus", alone("mmbus")),
    "alone:mmbus-many": ("mmbus", alone("mmbus-many")),
    "alone:mmbus-wal": ("mmbus", alone("mmbus-wal", durable=True)),
    "alone:iceoryx2": ("iceoryx2", alone("iceoryx2")),
}
MODULES = {"shmbus": "shmbus", "mmbus": "mmbus", "tachyon": "tachyon", "iceoryx2": "iceoryx2"}
DISTRIBUTIONS = {"shmbus": "shmbus", "mmbus": "mmbus", "tachyon": "tachyon-ipc", "iceoryx2": "iceoryx2"}


def available(needs):
    """None if the row's package imports, else why not."""
    if needs is None:
        return None
    try:
        __import__(MODULES[needs])
        return None
    except ImportError as e:
        return f"{DISTRIBUTIONS[needs]} is not installed here (import {MODULES[needs]}: {e})"


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def fs_type(path):
    best, kind = "", "?"
    path = os.path.realpath(path)
    for line in open("/proc/mounts"):
        _, mnt, typ = line.split()[:3]
        if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
            best, kind = mnt, typ
    return kind


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--publisher":
        publisher_main(sys.argv[2:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64,256,4096")
    ap.add_argument("--messages", type=int, default=300_000,
                    help="messages a round (at most 256 MiB of them at one size)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--slots", type=int, default=8192, help="messages each ring holds")
    ap.add_argument("--only", default=None, help="rows, comma-separated (default: all)")
    ap.add_argument("--no-alone", action="store_true", help="skip the publisher-alone rows")
    ap.add_argument("--durable-dir", default="/var/tmp",
                    help="where the journal and mmbus's WAL are written (a disk, for their real cost)")
    ap.add_argument("--pin", choices=("none", "same", "split"), default="none",
                    help="same: publisher and receiver on CPU 0; split: receiver on 0, publisher on 1")
    ap.add_argument("--quick", action="store_true",
                    help="5 000 messages, 1 round, 1 024-message rings: that every row runs and checks")
    args = ap.parse_args()
    if args.quick:
        args.messages, args.rounds, args.slots = 5000, 1, 1024
    args.count = lambda size: min(args.messages, max(1024, (256 << 20) // size))
    if args.pin != "none":
        os.sched_setaffinity(0, {0})
        os.environ["BENCH_PEERS_PUBLISHER_CPU"] = "0" if args.pin == "same" else "1"
    sizes = [int(s) for s in args.sizes.split(",")]
    if min(sizes) < 16:
        ap.error("a message is at least 16 bytes (its sequence number at both ends)")
    names = args.only.split(",") if args.only else list(ROWS) + ([] if args.no_alone else list(ALONE))
    table = {**ROWS, **{k: (v[0], False, v[1]) for k, v in ALONE.items()}}
    unknown = [m for m in names if m not in table]
    if unknown:
        ap.error(f"unknown rows {unknown}; rows: {', '.join(table)}")
    rows = []
    for m in names:
        why = available(table[m][0])
        if why:
            print(f"skipped {m}: {why}", flush=True)
        else:
            rows.append(m)
    results = {(m, s): [] for m in rows for s in sizes}
    failed = {}
    shm_before = set(os.listdir("/dev/shm"))
    load_before = os.getloadavg()
    try:
        for r in range(args.rounds):
            # Each round starts one row later: none always goes first.
            order = rows[r % len(rows):] + rows[: r % len(rows)]
            for size in sizes:
                for m in order:
                    if (m, size) in failed:
                        continue
                    run = Run(args, size)
                    try:
                        res = table[m][2](run)
                    except Exception as e:  # noqa: BLE001 - reported, and fatal for shmbus rows below
                        failed[(m, size)] = f"{type(e).__name__}: {e}"
                        print(f"round {r + 1} {size:5d} B {m:20s} FAILED: {failed[(m, size)]}", flush=True)
                        continue
                    finally:
                        run.close()
                    results[(m, size)].append(res)
                    if m.startswith("alone:"):
                        print(
                            f"round {r + 1} {size:5d} B {m:20s} publish {res.pub_rate:12,.0f}/s  cpu {res.pub_cpu:.0%}",
                            flush=True,
                        )
                    else:
                        print(
                            f"round {r + 1} {size:5d} B {m:20s} recv {res.rate:12,.0f}/s  publish {res.pub_rate:12,.0f}/s"
                            f"  delivered {res.delivered} lost {res.lost} missing {res.missing} wrong {res.bad} torn {res.torn}"
                            f"  full-retries {res.retries}  cpu recv {res.recv_cpu:.0%} pub {res.pub_cpu:.0%}",
                            flush=True,
                        )
    finally:
        # iceoryx2's Python binding leaves its global management file.
        for left in set(os.listdir("/dev/shm")) - shm_before:
            if left.startswith("iox2_"):
                os.unlink(os.path.join("/dev/shm", left))
    return report(args, sizes, rows, results, failed, load_before)


def p50_min_max(xs):
    return statistics.median(xs), min(xs), max(xs)


def report(args, sizes, rows, results, failed, load_before):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    versions = ", ".join(
        f"{d} {version(d)}" for d in ("shmbus", "numpy", "mmbus", "tachyon-ipc", "iceoryx2") if version(d)
    )
    print()
    print(f"machine: {cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}, Python {platform.python_version()}")
    print(f"packages: {versions}")
    la = os.getloadavg()
    print(f"load average: {load_before[0]:.1f} at the start, {la[0]:.1f} at the end")
    print(f"durable dir: {args.durable_dir} ({fs_type(args.durable_dir)})")
    print(
        f"{args.rounds} interleaved rounds; messages a round: "
        + ", ".join(f"{args.count(s)} at {s} B" for s in sizes)
        + f"; rings of {args.slots} messages"
        + {"none": "", "same": "; publisher and receiver pinned to CPU 0",
           "split": "; receiver pinned to CPU 0, publisher to CPU 1"}[args.pin]
    )
    bad_shmbus = []
    for size in sizes:
        print(
            f"\n{size} B | recv p50 msgs/s | min | max | publish p50 msgs/s | recv CPU | pub CPU"
            " | lost | missing | wrong | torn"
        )
        print("|".join(["---"] * 11))
        alone_rates = {}
        for m in rows:
            res = results[(m, size)]
            if (m, size) in failed:
                print(f"{m} | failed: {failed[(m, size)]}")
                if m.startswith(("shmbus", "alone:shmbus")):
                    bad_shmbus.append(f"{m} at {size} B failed")
                continue
            if not res:
                continue
            if m.startswith("alone:"):
                alone_rates[m[6:]] = (*p50_min_max([x.pub_rate for x in res]),
                                      statistics.median([x.pub_cpu for x in res]))
                continue
            p50, lo, hi = p50_min_max([x.rate for x in res])
            pub = statistics.median([x.pub_rate for x in res])
            rcpu = statistics.median([x.recv_cpu for x in res])
            pcpu = statistics.median([x.pub_cpu for x in res])
            lost = sum(x.lost for x in res)
            missing = sum(x.missing for x in res)
            bad = sum(x.bad for x in res)
            torn = sum(x.torn for x in res)
            print(
                f"{m} | {p50:,.0f} | {lo:,.0f} | {hi:,.0f} | {pub:,.0f} | {rcpu:.0%} | {pcpu:.0%}"
                f" | {lost} | {missing} | {bad} | {torn}"
            )
            if m.startswith("shmbus") and (missing or bad or torn or (lost and not ROWS[m][1])):
                bad_shmbus.append(f"{m} at {size} B: {lost} lost, {missing} missing, {bad} wrong, {torn} torn")
        if alone_rates:
            print(f"\n{size} B, publisher alone | p50 msgs/s | min | max | CPU")
            print("|".join(["---"] * 5))
            for k, (p50, lo, hi, c) in alone_rates.items():
                print(f"{k} | {p50:,.0f} | {lo:,.0f} | {hi:,.0f} | {c:.0%}")
    if args.quick:
        print("\n--quick: that every row runs and checks; its rates are no measurement")
    else:
        targets(sizes, rows, results)
    for line in bad_shmbus:
        print(f"FAIL: {line}")
    return 1 if bad_shmbus else 0


def targets(sizes, rows, results):
    """shmbus's recv_batch at 256 B against each peer, publisher like
    publisher: a single-call publish against mmbus's fastest single-call
    row and iceoryx2, the batch publish (shmbus-many) against mmbus's
    (mmbus-many)."""
    if 256 not in sizes:
        return

    def p50(m):
        res = results.get((m, 256))
        return statistics.median([x.rate for x in res]) if res else None

    print()
    one_call = [m for m in ("mmbus-recv", "mmbus-into", "mmbus-batch", "mmbus-numpy") if p50(m)]
    pairs = []
    if one_call:
        best = max(one_call, key=p50)
        pairs.append(("shmbus-batch", f"mmbus (fastest single-call-publisher row, {best})", p50(best)))
    if p50("mmbus-many"):
        pairs.append(("shmbus-many", "mmbus-many (mmbus's batch publish)", p50("mmbus-many")))
    if p50("iceoryx2"):
        pairs.append(("shmbus-batch", "iceoryx2", p50("iceoryx2")))
    for mine, what, theirs in pairs:
        ours = p50(mine)
        if ours is None:
            continue
        verdict = "met" if ours >= theirs else "MISSED"
        print(f"target 256 B {mine} {ours:,.0f}/s >= {what} {theirs:,.0f}/s: {ours / theirs:.2f}x, {verdict}")


if __name__ == "__main__":
    sys.exit(main())
