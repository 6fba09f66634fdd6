#!/usr/bin/env python3
"""Print each message of a bus as one line, like `shmbus sub`.

    subscriber.py [--kind bus|journal|pool] [--from oldest|next|latest]
                  [--count N] [--timeout SECS] NAME

Opens NAME (bus: a plain or many-publisher bus; journal: a late join that
starts with the journal, --from does not apply; pool: a pool bus), writes
`ready` to stderr once open, then prints each message on stdout as one line
(its bytes up to the first NUL) and each lag as `lagged: skipped N` on
stderr. Exits 0 after N messages (lags do not count); with --timeout, exits
2 with one line on stderr when no message arrives for SECS seconds. Any
error: one line on stderr, exit 1.
"""

import argparse
import sys

import shmbus


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"subscriber.py: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    parser = Parser(description="Print each message of a bus as one line.")
    parser.add_argument("--kind", choices=["bus", "journal", "pool"], default="bus")
    parser.add_argument("--from", dest="start", choices=["oldest", "next", "latest"], default="next")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("name")
    args = parser.parse_args()

    if args.kind == "bus":
        subscriber = shmbus.Subscriber.open(args.name, args.start)
    elif args.kind == "journal":
        subscriber = shmbus.JournalSubscriber.join(args.name)
    else:
        subscriber = shmbus.PoolSubscriber.open(args.name, args.start)

    out = sys.stdout.buffer
    print("ready", file=sys.stderr, flush=True)
    received = 0
    with subscriber:
        while args.count is None or received < args.count:
            got = subscriber.recv(args.timeout)
            if got is None:
                print(
                    f"subscriber.py: no message for {args.timeout:g} s "
                    f"({received} received)",
                    file=sys.stderr,
                )
                return 2
            if isinstance(got, shmbus.Lagged):
                print(f"lagged: skipped {got.skipped}", file=sys.stderr, flush=True)
                continue
            if args.kind == "journal":
                data = got.data
            elif args.kind == "pool":
                with got:
                    data = bytes(got)
            else:
                data = got
            out.write(data.split(b"\0", 1)[0] + b"\n")
            out.flush()
            received += 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except shmbus.Error as e:
        print(f"subscriber.py: {e}", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
