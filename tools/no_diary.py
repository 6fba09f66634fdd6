#!/usr/bin/env python3
"""Fails on text that reads as a diary where users read it: a tracker
number ("issue NN", "issueNN", "#NN") or a note of who did what when
("this session", "other builds running"). History belongs in git.

    python3 tools/no_diary.py [--bin shmbus=PATH] [--bin shmbus-bench=PATH]

Looks at README.md, docs/ (every text file but the JSON and SVG a
benchmark writes), the C header (include/), the Python package, its
README, examples and bench, examples/ and each crate's examples,
the CI step names (`step "..."` in .ci/run and ci/*.sh) and, for each
--bin given, the binary's `--help` and every listed subcommand's, down
to sub-subcommands.
Prints FILE:LINE: TEXT for each hit; exits 1 if there is one.
"""
import os
import re
import subprocess
import sys

# A tracker's number in prose. A Markdown anchor (`](#12-title)`) and a
# colour (`#333333`) are not: the first has `-` after its digits, the
# second more than four digits or letters.
NUMBER = re.compile(
    r"\bissues?\s?#?\d+\b"
    r"|(?<![\w&/\]])#\d{1,4}\b(?![-\w])",
    re.IGNORECASE)
# Who did what when: words no user-facing text needs.
DIARY = re.compile(
    r"\bthis session\b|\bother (?:sessions|agents|builds)\b|\bthat day\b"
    r"|\bfixed (?:today|yesterday)\b",
    re.IGNORECASE)

# The files a benchmark writes are data, not prose.
SKIP_EXT = (".json", ".svg", ".png", ".lock")


def files(root):
    out = [os.path.join(root, "README.md"), os.path.join(root, "python", "README.md")]
    dirs = [os.path.join(root, d) for d in
            ("docs", "examples", "include", "python/examples", "python/bench", "python/shmbus")]
    crates = os.path.join(root, "crates")
    if os.path.isdir(crates):
        dirs += [os.path.join(crates, c, "examples") for c in sorted(os.listdir(crates))]
    for d in dirs:
        for base, subdirs, names in os.walk(d):
            subdirs[:] = sorted(s for s in subdirs if s not in ("target", "build", "__pycache__"))
            out += [os.path.join(base, n) for n in sorted(names) if not n.endswith(SKIP_EXT)]
    return [f for f in out if os.path.isfile(f)]


def hits(name, text):
    """Each hit with its line; a phrase may run across a line break
    ("issue\n30"), so the whole text is searched at once."""
    seen = set()
    for pattern in (NUMBER, DIARY):
        for m in pattern.finditer(text):
            i = text.count("\n", 0, m.start()) + 1
            if i in seen:
                continue
            seen.add(i)
            yield i, f"{name}:{i}: {' '.join(m.group(0).split())!r} in: {text.splitlines()[i - 1].strip()}"


def sorted_hits(name, text):
    return [h for _, h in sorted(hits(name, text))]


def step_names(root):
    paths = [os.path.join(root, ".ci", "run")]
    ci = os.path.join(root, "ci")
    if os.path.isdir(ci):
        paths += [os.path.join(ci, n) for n in sorted(os.listdir(ci)) if n.endswith(".sh")]
    for p in paths:
        if not os.path.isfile(p):
            continue
        for i, line in enumerate(open(p, encoding="utf-8"), 1):
            m = re.match(r'\s*step\s+"(.*)"', line)
            if m and any(hits("", m.group(1))):
                yield f"{os.path.relpath(p, root)}:{i}: step \"{m.group(1)}\""


def subcommands(help_text):
    """The names under a clap help's `Commands:` heading."""
    names, inside = [], False
    for line in help_text.splitlines():
        if line.strip() == "Commands:":
            inside = True
            continue
        if inside:
            m = re.match(r"\s{2}(\S+)", line)
            if not m:
                break
            if m.group(1) != "help":
                names.append(m.group(1))
    return names


def help_texts(label, path):
    def run(args):
        p = subprocess.run([path, *args, "--help"], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            sys.exit(f"no_diary: `{path} {' '.join(args)} --help` exited {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    todo = [[]]
    while todo:
        args = todo.pop(0)
        text = run(args)
        yield from sorted_hits(" ".join([label, *args, "--help"]), text)
        if len(args) < 3:
            todo += [[*args, sub] for sub in subcommands(text)]


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bins = []
    args = iter(argv)
    for a in args:
        if a == "--bin":
            a = next(args, "")
        elif a.startswith("--bin="):
            a = a[len("--bin="):]
        else:
            sys.exit(f"usage: no_diary.py [--bin NAME=PATH]... (got {a!r})")
        label, sep, path = a.partition("=")
        if not sep or not label or not path:
            sys.exit(f"no_diary: --bin wants NAME=PATH, got {a!r}")
        bins.append((label, path))

    found = []
    for f in files(root):
        try:
            text = open(f, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        found += sorted_hits(os.path.relpath(f, root), text)
    found += step_names(root)
    for label, path in bins:
        found += help_texts(label, path)
    for h in found:
        print(h)
    if found:
        print(f"no_diary: {len(found)} tracker number(s) or diary note(s) where users read; "
              "say what holds, not which issue or day brought it (history is git's)",
              file=sys.stderr)
        return 1
    print("no tracker numbers or diary in docs, examples, step names"
          + (", help texts" if bins else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
