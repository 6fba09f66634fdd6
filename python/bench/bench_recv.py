#!/usr/bin/env python3
"""Receive throughput of a Python subscriber, 64-byte messages (not a test).

    python bench_recv.py [--messages N] [--rounds R] [--only a,b,...]

Mechanisms, each one publisher process -> this process:
  shmbus-batch  shmbus.Subscriber.recv_batch into NumPy (max 4096 a call)
  shmbus-recv   shmbus.Subscriber.recv, one message a call
  mp-queue      multiprocessing.Queue, one message (bytes) a get
  iceoryx2      iceoryx2 0.10 Python binding, publish-subscribe (blocking
                backpressure, so lossless), one sample a receive

Fairness: every publisher is a Python process that sends the same N
messages (its sequence number as a little-endian u64 in bytes 0..8, then 56
filler bytes) as fast as its mechanism takes them, starting when the
receiver says go. Every receiver gets each message's 64 bytes and checks
its sequence number (the NumPy path checks every sequence of the batch and
sums all its bytes). Lost messages (the shmbus bus is lossy: a lapped
subscriber skips) are counted and reported, and the rate counts only the
messages delivered. Rounds are interleaved (A, B, C, D, A, B, ...); each
mechanism's rate is reported as p50 / min / max over rounds, in msgs/s from
the first message received to the last.
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

import numpy as np

MSG = 64
FILLER = bytes(range(8, 64))
BUS_CAPACITY = 1 << 16


def message(seq):
    return seq.to_bytes(8, "little") + FILLER


# --- publishers (child processes) -------------------------------------------


def publish_shmbus(name, n):
    import shmbus

    pub = shmbus.Publisher.attach(name)
    print("ready", flush=True)
    sys.stdin.readline()
    publish = pub.publish
    for seq in range(n):
        publish(message(seq))
    pub.close()


class IoxMsg(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("fill", ctypes.c_uint8 * 56)]


def iox_service(node, name):
    import iceoryx2 as iox

    return (
        node.service_builder(iox.ServiceName.new(name))
        .publish_subscribe(IoxMsg)
        .subscriber_max_buffer_size(BUS_CAPACITY)
        .history_size(0)
        .enable_safe_overflow(False)
        .open_or_create()
    )


def publish_iceoryx2(name, n):
    import iceoryx2 as iox

    node = iox.NodeBuilder.new().create(iox.ServiceType.Ipc)
    service = iox_service(node, name)
    pub = (
        service.publisher_builder()
        .backpressure_strategy(iox.BackpressureStrategy.RetryUntilDelivered)
        .create()
    )
    print("ready", flush=True)
    sys.stdin.readline()
    msg = IoxMsg()
    msg.fill[:] = list(FILLER)
    for seq in range(n):
        msg.seq = seq
        pub.send_copy(msg)
    print("done", flush=True)
    sys.stdin.readline()  # stay until the receiver is done with the service
    pub.delete()


def queue_publisher(q, go, n):
    go.wait()
    put = q.put
    for seq in range(n):
        put(message(seq))


# --- receivers (this process) -----------------------------------------------


class Result:
    def __init__(self, delivered, lost, seconds):
        self.delivered, self.lost, self.seconds = delivered, lost, seconds
        self.rate = delivered / seconds if seconds > 0 else 0.0


def child(args):
    return subprocess.Popen(
        [sys.executable, __file__, "--publisher", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def go(proc):
    assert proc.stdout.readline().strip() == "ready"
    proc.stdin.write("go\n")
    proc.stdin.flush()


def run_shmbus(n, batch):
    import shmbus

    name = f"bench-recv-{os.getpid()}"
    creator = shmbus.Publisher.create(name, msg_size=MSG, capacity=BUS_CAPACITY)
    creator.close()  # the child attaches as the publisher
    sub = shmbus.Subscriber.open(name, "next")
    proc = child(["shmbus", name, str(n)])
    try:
        go(proc)
        delivered = lost = 0
        expect = 0
        first = None
        checksum = 0
        while expect < n:
            if batch:
                msgs, skipped = sub.recv_batch(4096, timeout=10)
                if first is None:
                    first = time.perf_counter()
                got = msgs.shape[0]
                if skipped:
                    lost += skipped
                    expect += skipped
                if got == 0:
                    if skipped:
                        continue
                    raise RuntimeError("no message for 10 s")
                seqs = msgs[:, :8].copy().view("<u8").ravel()
                if seqs[0] != expect or seqs[-1] != expect + got - 1:
                    raise RuntimeError(f"sequence {seqs[0]} where {expect} was expected")
                checksum += int(msgs.sum(dtype=np.uint64))
                delivered += got
                expect += got
            else:
                m = sub.recv(10)
                if first is None:
                    first = time.perf_counter()
                if m is None:
                    raise RuntimeError("no message for 10 s")
                if type(m) is not bytes:
                    lost += m.skipped
                    expect += m.skipped
                    continue
                if int.from_bytes(m[:8], "little") != expect:
                    raise RuntimeError("out of sequence")
                delivered += 1
                expect += 1
        end = time.perf_counter()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        sub.close()
        shmbus.remove(name)
    return Result(delivered, lost, end - first)


def run_queue(n):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    go_event = ctx.Event()
    proc = ctx.Process(target=queue_publisher, args=(q, go_event, n))
    proc.start()
    go_event.set()
    get = q.get
    first = None
    delivered = 0
    for expect in range(n):
        m = get(timeout=10)
        if first is None:
            first = time.perf_counter()
        if int.from_bytes(m[:8], "little") != expect:
            raise RuntimeError("out of sequence")
        delivered += 1
    end = time.perf_counter()
    proc.join(30)
    return Result(delivered, n - delivered, end - first)


def run_iceoryx2(n):
    import iceoryx2 as iox

    name = f"bench-recv-{os.getpid()}"
    node = iox.NodeBuilder.new().create(iox.ServiceType.Ipc)
    service = iox_service(node, name)
    sub = service.subscriber_builder().buffer_size(BUS_CAPACITY).create()
    proc = child(["iceoryx2", name, str(n)])
    try:
        go(proc)
        first = None
        delivered = 0
        expect = 0
        receive = sub.receive
        string_at = ctypes.string_at
        deadline = time.monotonic() + 60
        while expect < n:
            s = receive()
            if s is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("iceoryx2: timed out")
                continue
            if first is None:
                first = time.perf_counter()
            m = string_at(s.payload_ptr, MSG)
            s.delete()
            if int.from_bytes(m[:8], "little") != expect:
                raise RuntimeError(f"iceoryx2: sequence {int.from_bytes(m[:8], 'little')}, expected {expect}")
            delivered += 1
            expect += 1
        end = time.perf_counter()
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        sub.delete()
    return Result(delivered, n - delivered, end - first)


MECHANISMS = {
    "shmbus-batch": lambda n: run_shmbus(n, batch=True),
    "shmbus-recv": lambda n: run_shmbus(n, batch=False),
    "mp-queue": run_queue,
    "iceoryx2": run_iceoryx2,
}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--publisher":
        kind, name, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        (publish_shmbus if kind == "shmbus" else publish_iceoryx2)(name, n)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(MECHANISMS))
    args = ap.parse_args()
    mechs = args.only.split(",")
    results = {m: [] for m in mechs}
    shm_before = set(os.listdir("/dev/shm"))
    try:
        run_rounds(args, mechs, results)
    finally:
        # iceoryx2's Python binding leaves its global management file.
        for left in set(os.listdir("/dev/shm")) - shm_before:
            if left.startswith("iox2_"):
                os.unlink(os.path.join("/dev/shm", left))
    report(args, mechs, results)


def run_rounds(args, mechs, results):
    for r in range(args.rounds):
        # Each round starts with the next mechanism: none always goes first.
        order = mechs[r % len(mechs):] + mechs[: r % len(mechs)]
        for m in order:
            res = MECHANISMS[m](args.messages)
            results[m].append(res)
            print(
                f"round {r + 1} {m:13s} {res.rate:12,.0f} msgs/s  delivered {res.delivered}  lost {res.lost}",
                flush=True,
            )


def report(args, mechs, results):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"\nmachine: {os.cpu_count()} CPUs, {cpu}; Python {sys.version.split()[0]}")
    print(f"{args.messages} messages of {MSG} B a round, {args.rounds} rounds, interleaved")
    print(f"{'mechanism':13s} {'p50 msgs/s':>13s} {'min':>13s} {'max':>13s} {'lost (all rounds)':>18s}")
    p50 = {}
    for m in mechs:
        rates = [x.rate for x in results[m]]
        p50[m] = statistics.median(rates)
        lost = sum(x.lost for x in results[m])
        print(f"{m:13s} {p50[m]:13,.0f} {min(rates):13,.0f} {max(rates):13,.0f} {lost:18d}")
    if "shmbus-batch" in p50:
        for m in mechs:
            if m != "shmbus-batch" and p50[m] > 0:
                print(f"shmbus-batch / {m}: {p50['shmbus-batch'] / p50[m]:.1f}x (p50)")
        targets = [("mp-queue", 10.0), ("iceoryx2", 1.0)]
        for m, want in targets:
            if m in p50 and p50[m] > 0:
                ratio = p50["shmbus-batch"] / p50[m]
                verdict = "met" if ratio >= want else "MISSED"
                print(f"target shmbus-batch / {m} >= {want:g}x: {ratio:.1f}x, {verdict}")


if __name__ == "__main__":
    main()
