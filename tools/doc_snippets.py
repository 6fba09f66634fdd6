#!/usr/bin/env python3
"""Runs the docs' code blocks as written, so that a doc that drifts from
the tool fails the gate.

    python3 tools/doc_snippets.py [--python PY] [--cflags FLAGS] [FILE...]
    python3 tools/doc_snippets.py --self-test [--python PY]

FILEs default to README.md, docs/{GUIDE,DEPLOYMENT,TOP,RECORDING,C,CPP,PYTHON}.md
and the READMEs of python/, crates/shmbus-cli and crates/shmbus-ffi.
By the fence's info string:
- sh, bash, shell, console (`$ ` lines only): each file's blocks in order,
  each under `bash -e -o pipefail` and a 60 s timeout, in one fresh
  directory and an empty /dev/shm per file (HOME a fresh directory in
  it), with the `shmbus` of
  SHMBUS_BIN (else target/debug/shmbus) first on PATH. A command the
  block leaves running in the background (`&`) is ended with the block;
  one that already failed fails the block.
- python: each file's blocks in order in one interpreter (PY, default
  python3, which must import shmbus and numpy), in that file's directory.
- c: a block with `main` is compiled (cc, FLAGS, default
  `pkg-config --cflags --libs shmbus`) and run; any other block is a
  fragment, compiled as a function's body.
- rust: type-checked, not run (cargo check, offline, in
  target/doc-snippets): each block the body of an async fn returning
  Result, as fragments read (`?`, `.await`), beside the others of the run.
Other blocks (no info string, text) are output or diagrams, not run. The
prose's `shmbus ...` commands are parsed (check_inline).

An HTML comment right above a block (blank lines between allowed) says
what the page does not show:
- `<!-- not run: REASON -->`: the block is not run; printed with its reason.
- `<!-- run only the lines with "TEXT": REASON -->`: only those lines
  run; the rest is printed as not run, with the reason.
- `<!-- before: ... -->` (may span lines): code in the block's language
  run first (a fragment's declarations); `<!-- before (sh): ... -->`
  shell commands run first (the files a Python block reads).

The whole run is in namespaces of its own (unshare: pid, mount, network):
/dev/shm is a fresh tmpfs, so doc names such as `ticks` meet no other
bus and nothing is left behind; a process a block left is gone with the
pid namespace; the network is a loopback of its own. A failed block
fails the run with its FILE:LINE and its output; so does a run of no
block.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = [
    "README.md",
    "docs/GUIDE.md",
    "docs/DEPLOYMENT.md",
    "docs/TOP.md",
    "docs/RECORDING.md",
    "docs/C.md",
    "docs/CPP.md",
    "docs/PYTHON.md",
    "python/README.md",
    "crates/shmbus-cli/README.md",
    "crates/shmbus-ffi/README.md",
]
SHELL = ("sh", "bash", "shell", "console")
TIMEOUT = 60

FENCE = re.compile(r"^(```+)\s*([^\s`]*)(.*)$")
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
ONLY = re.compile(r'^<!-- run only the lines with "([^"]+)": (.+?) -->$')


class Block:
    def __init__(self, path, line, lang, body, not_run, before, before_sh):
        self.path, self.line, self.lang, self.body = path, line, lang, body
        self.not_run, self.before, self.before_sh = not_run, before, before_sh

    @property
    def where(self):
        return f"{self.path}:{self.line}"


def blocks(path):
    """Every fenced block of PATH, with the comments right above it."""
    lines = open(os.path.join(ROOT, path)).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).split(",")[0].lower()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence)
        not_run, only, before, before_sh, k = None, None, "", "", i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        # The comments above, nearest first: a `before:` may span lines.
        while k >= 0 and lines[k].rstrip().endswith("-->"):
            start = k
            while start >= 0 and not lines[start].startswith("<!--"):
                start -= 1
            text = "\n".join(lines[start : k + 1])
            n, o = NOT_RUN.match(text), ONLY.match(text)
            if n:
                not_run = n.group(1)
            elif o:
                only = o.groups()
            elif text.startswith("<!-- before (sh):"):
                before_sh = text[len("<!-- before (sh):") : -len("-->")].strip("\n ") + "\n"
            elif text.startswith("<!-- before:"):
                before = text[len("<!-- before:") : -len("-->")].strip("\n ") + "\n"
            else:
                break
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
        body = "\n".join(lines[i + 1 : end]) + "\n"
        if only is not None:
            # The other lines are listed as not run, with the reason.
            kept = "".join(l + "\n" if only[0] in l else "\n" for l in lines[i + 1 : end])
            out.append(Block(path, i + 1, lang, body, f"all but the lines with \"{only[0]}\": {only[1]}", "", ""))
            body, not_run = kept, None
        out.append(Block(path, i + 1, lang, body, not_run, before, before_sh))
        i = end + 1
    return out


def fail(block, what, output):
    sys.stderr.write(f"{block.where}: {what}\n{output}")
    if not output.endswith("\n"):
        sys.stderr.write("\n")
    sys.exit(1)


def run(cmd, cwd, env, timeout, stdin=subprocess.DEVNULL):
    """(exit status or None on timeout, stdout and stderr together). The
    command leads a process group, all of which a timeout kills."""
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out.decode(errors="replace") + f"\n(killed after {timeout} s)\n"


# Run first: it notes each background command's pid ($! before each
# command: a non-interactive bash drops a finished job from `jobs` at
# once, but `wait PID` still gives its status), and on the block's exit
# (its end, or a failed command under -e) ends those still running; one
# that already ended in failure (not by a signal the block sent) fails
# the block.
SHELL_START = r"""
__bg=()
__note() { [ -z "${!:-}" ] || case " ${__bg[*]} " in *" $! "*) ;; *) __bg+=("$!") ;; esac; }
trap __note DEBUG
__end() {
    __status=$?
    __note
    for __pid in "${__bg[@]}"; do
        if kill -0 "$__pid" 2>/dev/null; then
            kill "$__pid" 2>/dev/null || true
            wait "$__pid" 2>/dev/null || true
        else
            __s=0; wait "$__pid" 2>/dev/null || __s=$?
            if [ "$__s" != 0 ] && [ "$__s" -lt 128 ]; then
                echo "a background command (pid $__pid) failed with exit $__s" >&2
                [ "$__status" != 0 ] || __status=1
            fi
        fi
    done
    exit "$__status"
}
trap __end EXIT
"""


def shell_text(block):
    body = block.body
    if block.lang == "console":
        body = "".join(l[2:] + "\n" for l in body.split("\n") if l.startswith("$ "))
    return SHELL_START + block.before + block.before_sh + body


def run_shell(blocks_, work, env):
    for b in blocks_:
        status, out = run(["bash", "-e", "-o", "pipefail", "-c", shell_text(b)], work, env, TIMEOUT)
        if status != 0:
            # bash's line numbers count what runs before the block's first line.
            skip = (SHELL_START + b.before + b.before_sh).count("\n")

            def where(m):
                n = int(m.group(1)) - skip
                return m.group(0) + (f" ({b.path}:{b.line + n})" if n > 0 else "")

            fail(b, f"this {b.lang} block failed (exit {status})", re.sub(r"\bline (\d+)", where, out))
        print(f"ok  {b.where} ({b.lang})")


PY_DRIVER = r"""
import json, subprocess, sys, traceback
ns = {"__name__": "__main__"}
for b in json.load(open(sys.argv[1])):
    print("@@block " + b["where"], flush=True)
    try:
        if b["before_sh"]:
            subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b["before_sh"]], check=True)
        if b["before"]:
            exec(compile(b["before"], "<before " + b["where"] + ">", "exec"), ns)
        # Blank lines first: a traceback names the line in the markdown.
        exec(compile("\n" * b["line"] + b["body"], b["path"], "exec"), ns)
    except BaseException:
        traceback.print_exc()
        print("@@failed " + b["where"], flush=True)
        sys.exit(1)
"""


def run_python(blocks_, work, env, python):
    spec = os.path.join(work, ".blocks.json")
    json.dump([dict(where=b.where, path=b.path, line=b.line, body=b.body, before=b.before, before_sh=b.before_sh) for b in blocks_], open(spec, "w"))
    status, out = run([python, "-c", PY_DRIVER, spec], work, env, TIMEOUT * 2)
    os.unlink(spec)
    if status != 0:
        failed = re.findall(r"^@@(?:failed|block) (\S+)$", out, re.M)
        where = failed[-1] if failed else blocks_[0].where
        b = next(b for b in blocks_ if b.where == where)
        fail(b, f"this python block failed (exit {status})", out.split(f"@@block {where}\n")[-1])
    for b in blocks_:
        print(f"ok  {b.where} (python)")


C_HEAD = "#include <inttypes.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <shmbus.h>\n"


def run_c(blocks_, work, env, cflags):
    for b in blocks_:
        src = os.path.join(work, f"block{b.line}.c")
        exe = os.path.join(work, f"block{b.line}")
        whole = re.search(r"\bint\s+main\s*\(", b.body) is not None
        with open(src, "w") as f:
            if whole:
                f.write(b.before + f'#line {b.line + 1} "{b.path}"\n' + b.body)
            else:
                f.write(C_HEAD + b.before)
                f.write(f'void block_{b.line}(void) {{\n#line {b.line + 1} "{b.path}"\n{b.body}}}\n')
        flags = ["-std=c11", "-Wall", "-Werror", "-Wno-unused-variable", "-Wno-unused-but-set-variable"]
        if whole:
            cmd = ["cc", *flags, src, *cflags, "-o", exe]
        else:
            cmd = ["cc", "-fsyntax-only", *flags, *[f for f in cflags if not f.startswith(("-l", "-L"))], src]
        status, out = run(cmd, work, env, TIMEOUT)
        if status != 0:
            fail(b, "this c block does not compile", out)
        if whole:
            status, out = run([exe], work, env, TIMEOUT)
            if status != 0:
                fail(b, f"this c block's program failed (exit {status})", out)
        print(f"ok  {b.where} (c{'' if whole else ', a fragment: compiled'})")


INLINE = re.compile(r"`(shmbus [^`]+)`")
PLACEHOLDER = re.compile(r"\.\.\.|…|\[|\||<|(^|\s)[A-Z][A-Z_0-9]*(:[A-Z_0-9]+)?(\s|$)")


def check_inline(path, tool, work, env):
    """The `shmbus ...` commands in the prose (outside blocks): each parses
    (`shmbus ARGS --help`: the subcommand and every flag exist), a flag
    named alone (`shmbus create --type`) is in its command's help, and a
    quoted `shmbus 0.1.0 (...)` is what `shmbus --version` prints. One with
    a placeholder (NAME, ..., [OPTIONAL]) is left out. Returns how many
    were checked."""
    lines = open(os.path.join(ROOT, path)).read().split("\n")
    fence = None
    for i, l in enumerate(lines):
        m = FENCE.match(l)
        if fence is None and m:
            fence = m.group(1)
            lines[i] = ""
        elif fence is not None:
            fence = None if l.strip() == fence else fence
            lines[i] = ""
    text = "\n".join(lines)
    checked = 0
    for m in INLINE.finditer(text):
        cmd = " ".join(m.group(1).split())
        where = f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
        if re.match(r"shmbus \d", cmd):
            status, out = run([tool, "--version"], work, env, TIMEOUT)
            if out.strip() != cmd:
                sys.exit(f"{where}: says `shmbus --version` prints `{cmd}`; it prints `{out.strip()}`")
            checked += 1
            continue
        if PLACEHOLDER.search(cmd):
            continue
        try:
            args = shlex.split(cmd)[1:]
        except ValueError:
            continue
        status, out = run([tool, *args, "--help"], work, env, TIMEOUT)
        if status != 0 and args[-1].startswith("--") and "a value is required" in out:
            status, out = run([tool, *args[:-1], "--help"], work, env, TIMEOUT)
            if status == 0 and args[-1] not in out:
                status, out = 1, f"`shmbus {' '.join(args[:-1])} --help` names no {args[-1]}\n"
        if status != 0:
            sys.exit(f"{where}: `{cmd}` does not parse:\n{out}")
        checked += 1
    return checked


RUST_MANIFEST = """[package]
name = "doc-snippets"
version = "0.0.0"
edition = "2024"
publish = false

[lib]
path = "lib.rs"

[dependencies]
shmbus = {{ path = "{root}/crates/shmbus", features = ["async-stream"] }}
bytemuck = {{ version = "1", features = ["derive"] }}

[workspace]
"""


def check_rust(blocks_):
    """Type-checks every Rust block (cargo check, offline): each one the
    body of an async fn returning Result, so that `?` and `.await` read
    as in a program, its `before:` first. An error names the block's
    FILE:LINE."""
    if not blocks_:
        return
    crate = os.path.join(ROOT, "target", "doc-snippets")
    os.makedirs(crate, exist_ok=True)
    with open(os.path.join(crate, "Cargo.toml"), "w") as f:
        f.write(RUST_MANIFEST.format(root=ROOT))
    shutil.copy(os.path.join(ROOT, "Cargo.lock"), os.path.join(crate, "Cargo.lock"))
    # A fragment may leave a name unused; it may not drop a Result.
    allow = "unused_variables, unused_imports, unused_mut, unused_assignments, dead_code, unreachable_code"
    src, spans = [f"#![deny(warnings)]\n#![allow({allow})]\n"], []
    for b in blocks_:
        src.append(f"// {b.where}\npub async fn block_{len(spans)}() -> Result<(), Box<dyn std::error::Error>> {{\n")
        src.append(b.before)
        first = sum(part.count("\n") for part in src) + 1
        spans.append((first, first + b.body.count("\n"), b))
        src.append(b.body + "Ok(())\n}\n")
    with open(os.path.join(crate, "lib.rs"), "w") as f:
        f.write("".join(src))
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(crate, "target"), CARGO_TERM_COLOR="never")
    status, out = run(["cargo", "check", "--offline", "--quiet", "--manifest-path", os.path.join(crate, "Cargo.toml")],
                      crate, env, 600)
    if status == 0:
        for b in blocks_:
            print(f"ok  {b.where} (rust: compiles)")
        return

    def where(m):
        n = int(m.group(1))
        for first, last, b in spans:
            if first <= n < last:
                return f"{b.path}:{b.line + 1 + n - first}"
        return m.group(0)

    out = re.sub(r"(?:\S*/)?lib\.rs:(\d+)(?::\d+)?", where, out)
    named = re.search(r"^\s*--> (\S+?):(\d+)", out, re.M)
    b = next((b for _, _, b in spans if named and b.path == named.group(1) and b.line < int(named.group(2))
              and int(named.group(2)) <= b.line + b.body.count("\n")), blocks_[0])
    fail(b, "a rust block does not compile", out)


def isolate():
    """Re-runs this script in namespaces of its own (see the top)."""
    if os.environ.get("DOC_SNIPPETS_ISOLATED") == "1":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "doc-snippets", "/dev/shm"], check=True)
        if not shutil.which("ip"):
            sys.exit("doc_snippets.py: needs ip (iproute2) to bring up its loopback")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    cmd = ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--net", "--propagation", "private"]
    if os.geteuid() != 0:
        cmd.append("--map-root-user")
    if shutil.which("unshare") is None or subprocess.run(cmd + ["true"], capture_output=True).returncode != 0:
        sys.exit(f"doc_snippets.py: needs namespaces of its own ({shlex.join(cmd)} failed): "
                 "run it as root, or where unprivileged user namespaces are allowed")
    env = dict(os.environ, DOC_SNIPPETS_ISOLATED="1")
    os.execvpe(cmd[0], cmd + [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)


SELF_TEST = {
    # name: (markdown, exit status, what the output must hold)
    "broken.md": ("# t\n\n```sh\ntrue\n```\n\n```sh\necho before\nshmbus stat no-such-bus\n```\n", 1,
                  ["broken.md:7: this sh block failed", "before", "/dev/shm/no-such-bus: no such bus"]),
    "line.md": ("```sh\ntrue\nno-such-command\n```\n", 1,
                ["line.md:1: this sh block failed", "(line.md:3): no-such-command: command not found"]),
    "background.md": ("```sh\nshmbus stat no-such-bus &\nwhile kill -0 $! 2>/dev/null; do sleep 0.01; done\n```\n", 1,
                      ["background.md:1: this sh block failed", "a background command"]),
    "python.md": ("```python\nx = 1\n```\n\n```python\nassert x == 2, 'x is 1'\n```\n", 1,
                  ["python.md:5: this python block failed", 'File "', "python.md\", line 6", "x is 1"]),
    "marked.md": ("<!-- not run: needs two hosts -->\n```sh\nfalse\n```\n", 1,
                  ["not run: ", "marked.md:2 (sh): needs two hosts", "no block ran"]),
    "good.md": ("<!-- before: import os -->\n```python\nprint(os.getcwd())\n```\n\n```sh\nshmbus create t --msg-size 8 --slots 4\nshmbus sub t &\n```\n", 0,
                ["ok  ", "good.md:2 (python)", "good.md:6 (sh)", "2 block(s) ran"]),
}


def self_test(args):
    """Runs this script on small pages of its own, each of which must end
    as SELF_TEST says: a failed command, a failed background command and a
    failed Python line each named by FILE:LINE with their output, a page
    whose only block is marked not run failing as a run of none, a good
    page passing."""
    top = tempfile.mkdtemp(prefix="doc-snippets-test-")
    failed = []
    try:
        for name, (text, want_status, want) in SELF_TEST.items():
            path = os.path.join(top, name)
            with open(path, "w") as f:
                f.write(text)
            cmd = [sys.executable, os.path.abspath(__file__), f"--python={args.python}", "--cflags=", path]
            got = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT * 2)
            out = (got.stdout + got.stderr).replace(top + "/", "")
            missing = [w for w in want if w not in out]
            if got.returncode != want_status or missing:
                failed.append(f"{name}: exit {got.returncode} (wanted {want_status}), lacking {missing}:\n{out}")
            else:
                print(f"ok  self-test {name}")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if failed:
        sys.exit("doc_snippets.py --self-test failed:\n" + "\n".join(failed))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default="python3", help="the interpreter the python blocks run in")
    ap.add_argument("--cflags", help="cc flags for the shmbus header and library (default: pkg-config's)")
    ap.add_argument("--self-test", action="store_true", help="check this script on pages made to fail and pass")
    ap.add_argument("files", nargs="*", default=FILES)
    args = ap.parse_args()
    if args.self_test:
        return self_test(args)

    tool = os.environ.get("SHMBUS_BIN") or os.path.join(ROOT, "target/debug/shmbus")
    if not os.access(tool, os.X_OK):
        sys.exit(f"doc_snippets.py: no shmbus tool at {tool}: build it (cargo build -p shmbus-cli) or set SHMBUS_BIN")
    if args.cflags is not None:
        cflags = shlex.split(args.cflags)
    else:
        got = subprocess.run(["pkg-config", "--cflags", "--libs", "shmbus"], capture_output=True, text=True)
        if got.returncode != 0:
            sys.exit("doc_snippets.py: pkg-config finds no shmbus: install the C library "
                     "(make -C examples/c install) or give --cflags")
        cflags = shlex.split(got.stdout)

    isolate()
    ran, not_run, rust, inline = 0, [], [], 0
    top = tempfile.mkdtemp(prefix="doc-snippets-")
    try:
        for path in args.files:
            work = os.path.join(top, path.replace("/", "_"))
            os.makedirs(os.path.join(work, "home"))
            env = dict(os.environ, HOME=os.path.join(work, "home"),
                       PATH=os.path.dirname(os.path.abspath(tool)) + os.pathsep + os.environ["PATH"])
            env.pop("DOC_SNIPPETS_ISOLATED")
            # Each file starts on an empty /dev/shm (this run's own tmpfs).
            for name in os.listdir("/dev/shm"):
                entry = os.path.join("/dev/shm", name)
                if os.path.isdir(entry) and not os.path.islink(entry):
                    shutil.rmtree(entry)
                else:
                    os.unlink(entry)
            bs = blocks(path)
            for b in bs:
                if b.not_run is not None and b.lang in SHELL + ("python", "py", "c", "rust"):
                    not_run.append(b)
            todo = [b for b in bs if b.not_run is None]
            shell = [b for b in todo if b.lang in SHELL]
            python = [b for b in todo if b.lang in ("python", "py")]
            c = [b for b in todo if b.lang == "c"]
            rust += [b for b in todo if b.lang == "rust"]
            inline += check_inline(path, tool, work, env)
            run_shell(shell, work, env)
            if python:
                run_python(python, work, env, args.python)
            run_c(c, work, env, cflags)
            ran += len(shell) + len(python) + len(c)
        check_rust(rust)
        ran += len(rust)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    for b in not_run:
        print(f"not run: {b.where} ({b.lang}): {b.not_run}")
    print(f"{ran} block(s) ran or compiled, {len(not_run)} not run (reasons above); "
          f"{inline} command(s) in the prose parse")
    if ran == 0:
        sys.exit("doc_snippets.py: no block ran")


if __name__ == "__main__":
    main()
