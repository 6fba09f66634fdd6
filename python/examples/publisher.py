#!/usr/bin/env python3
"""Publish each line of stdin as one message on an existing bus, like `shmbus pub`.

    publisher.py [--kind bus|many|journal|pool] NAME

Attaches to the bus NAME (made by `shmbus create`): bus = its single
publisher, many = one of the publishers of a many-publisher bus, journal =
the journaled publisher, pool = a pool publisher (single or many, whichever
the bus is). Each line, without its newline, is one message: zero-padded to
the message size on a fixed-size bus, exactly its length on a pool bus. A
line longer than a message: one line on stderr, exit 1. Exit 0 at EOF; any
error: one line on stderr, exit 1.
"""

import argparse
import sys

import shmbus


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"publisher.py: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    parser = Parser(description="Publish each line of stdin as one message.")
    parser.add_argument("--kind", choices=["bus", "many", "journal", "pool"], default="bus")
    parser.add_argument("name")
    args = parser.parse_args()

    if args.kind == "bus":
        publisher = shmbus.Publisher.attach(args.name)
        limit = publisher.msg_size
    elif args.kind == "many":
        publisher = shmbus.ManyPublisher.attach(args.name)
        limit = publisher.msg_size
    elif args.kind == "journal":
        publisher = shmbus.JournalPublisher.attach(args.name)
        limit = publisher.msg_size
    else:
        publisher = shmbus.PoolPublisher.attach(args.name)
        limit = publisher.block_size

    with publisher:
        for number, line in enumerate(sys.stdin.buffer, 1):
            if line.endswith(b"\n"):
                line = line[:-1]
            if len(line) > limit:
                print(
                    f"publisher.py: line {number} is {len(line)} bytes, "
                    f"a message of {args.name} is at most {limit}",
                    file=sys.stderr,
                )
                return 1
            publisher.publish(line)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except shmbus.Error as e:
        print(f"publisher.py: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
