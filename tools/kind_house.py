#!/usr/bin/env python3
"""Each kind in its own house: which of the library's modules may name a kind.

docs/ARCHITECTURE.md, "Adding a kind", lists the places a kind touches
outside its folder. This reads every non-test source file of
crates/shmbus/src and fails, naming file and line, where code (not a
comment) reaches into a kind (`crate::pool`, `use crate::{pool, ..}`) from
a module not on that list, or where the header's kind flags are read
outside segment/ and wire/.

Usage: tools/kind_house.py [crates/shmbus/src]
"""
import os
import re
import sys

KINDS = ["pool", "stream", "journal", "blackboard"]
# Modules that name every kind on purpose (ARCHITECTURE, "Adding a kind").
EVERY_KIND = {"lib.rs", "stat", "record", "segment", "error"}
# A kind that uses another: the journal keeps its state in a blackboard.
PAIRS = {("journal", "blackboard")}
FLAGS = re.compile(r"flags::(POOL|JOURNALED|MULTI_PUBLISHER)\b")


def code_lines(text):
    """Lines with comments removed (line comments; block comments are rare)."""
    for n, line in enumerate(text.split("\n"), 1):
        cut = line.split("//", 1)[0]
        if cut.strip():
            yield n, cut


def is_test(rel):
    base = os.path.basename(rel)
    return base == "tests.rs" or base.startswith("tests_") or rel.startswith("loom/")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "crates/shmbus/src"
    bad = []
    files = 0
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            files += 1
            top = rel.split("/", 1)[0]
            text = open(path, encoding="utf-8").read()
            # In-source test modules (`#[cfg(test)] mod tests { .. }` at the
            # end of a file) may build any kind they test against.
            cut = re.search(r"(?m)^#\[cfg\(test\)\]\s*\n\s*mod \w+ \{", text)
            if cut:
                text = text[: cut.start()]
            for n, line in code_lines(text):
                if FLAGS.search(line) and top not in ("segment", "wire"):
                    bad.append(f"{root}/{rel}:{n}: reads a kind flag outside segment/ and wire/: {line.strip()}")
                if is_test(rel):
                    continue
                for kind in KINDS:
                    if top in (kind, kind + ".rs") or top in EVERY_KIND or (top, kind) in PAIRS:
                        continue
                    if re.search(r"\bcrate::" + kind + r"\b", line) or re.search(
                        r"\buse crate::\{[^}]*\b" + kind + r"\b", line
                    ):
                        bad.append(f"{root}/{rel}:{n}: {top} names the {kind} kind: {line.strip()}")
    if files == 0:
        sys.exit(f"kind_house: no source file under {root}")
    for b in bad:
        print(b)
    if bad:
        sys.exit(
            f"kind_house: {len(bad)} place(s) outside the list in docs/ARCHITECTURE.md, "
            '"Adding a kind": move the code into the kind, or add the place to the list and here'
        )
    print(f"kind_house: {files} files; every kind is named only where ARCHITECTURE's list says")


main()
