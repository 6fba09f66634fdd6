#!/usr/bin/env python3
"""Wake latency of ``await sub.recv_async()`` against the blocking
``sub.recv()``, one publisher process -> this process (not a test).

    python aio_latency.py [--messages N] [--rounds R] [--pace-us P]

Each round, a publisher process (Python) attaches to the bus and publishes
N 64-byte messages, one every P microseconds (``time.sleep``, so a little
more), each carrying ``time.monotonic_ns()`` taken just before its publish
in bytes 0..8. The reader takes ``time.monotonic_ns()`` as its receive
returns; the difference is the one-way latency (CLOCK_MONOTONIC, the same
clock in both processes). Paced so that each reader is asleep when its
message comes:

  sync   ``sub.recv()`` in a plain loop (GIL released while it waits; the
         subscriber's default strategy: 50 us of spinning, then its futex)
  async  ``await sub.recv_async()`` in an asyncio task (the event loop
         asleep in its selector, the process's waiter thread in
         futex_waitv; a wake is the waiter's futex wake, the GIL, and
         ``loop.call_soon_threadsafe``'s write to the loop's self-pipe)

Rounds alternate sync, async, sync, ...; the first 20 messages of each round
are dropped (the publisher's start). Reported: p50 / p99 / p99.9 over all
rounds of each reader, and async/sync.
"""

import argparse
import asyncio
import os
import struct
import subprocess
import sys
import time

MSG = 64
WARMUP = 20


def publish(name, count, pace_us):
    import shmbus

    pub = shmbus.Publisher.attach(name)
    filler = bytes(MSG - 8)
    pace = pace_us / 1e6
    time.sleep(0.05)
    for _ in range(count):
        time.sleep(pace)
        pub.publish(struct.pack("<Q", time.monotonic_ns()) + filler)
    pub.close()


def publisher(name, count, pace_us):
    return subprocess.Popen([sys.executable, __file__, "--publish", name, str(count), str(pace_us)])


def sync_round(sub, name, count, pace_us):
    lat = []
    child = publisher(name, count, pace_us)
    try:
        while len(lat) < count:
            msg = sub.recv(timeout=30)
            now = time.monotonic_ns()
            if msg is None:
                raise SystemExit("sync: no message within 30 s")
            if isinstance(msg, bytes):
                lat.append(now - struct.unpack_from("<Q", msg)[0])
    finally:
        child.wait(timeout=60)
    return lat[WARMUP:]


def async_round(sub, name, count, pace_us):
    async def main():
        lat = []
        child = publisher(name, count, pace_us)
        try:
            while len(lat) < count:
                msg = await asyncio.wait_for(sub.recv_async(), 30)
                now = time.monotonic_ns()
                if isinstance(msg, bytes):
                    lat.append(now - struct.unpack_from("<Q", msg)[0])
        finally:
            child.wait(timeout=60)
        return lat[WARMUP:]

    return asyncio.run(main())


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pace-us", type=int, default=500)
    ap.add_argument("--publish", nargs=3, metavar=("NAME", "N", "PACE_US"))
    args = ap.parse_args()
    if args.publish:
        publish(args.publish[0], int(args.publish[1]), int(args.publish[2]))
        return

    import shmbus

    name = f"shmbus-aio-latency-{os.getpid()}"
    shmbus.Publisher.create(name, msg_size=MSG, capacity=1024).close()
    try:
        sub = shmbus.Subscriber.open(name)
        results = {"sync": [], "async": []}
        for _ in range(args.rounds):
            results["sync"] += sync_round(sub, name, args.messages, args.pace_us)
            results["async"] += async_round(sub, name, args.messages, args.pace_us)
        sub.close()
    finally:
        shmbus.remove(name)

    print(f"{args.messages} x {args.rounds} rounds, 64 B, one message every {args.pace_us} us (+ sleep slack)")
    print("reader  p50 us   p99 us   p99.9 us")
    rows = {}
    for mode, lat in results.items():
        rows[mode] = [pct(lat, p) / 1000 for p in (0.5, 0.99, 0.999)]
        print(f"{mode:6} " + " ".join(f"{v:8.1f}" for v in rows[mode]))
    ratio = [a / s for a, s in zip(rows["async"], rows["sync"])]
    print("async/sync " + " ".join(f"{r:5.2f}x" for r in ratio))


if __name__ == "__main__":
    main()
