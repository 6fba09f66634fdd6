#!/usr/bin/env python3
"""Fails (exit 1) if the top-level modules of a crate's src/ import each
other in a cycle, or the files of one directory module do: layers must
import only downward (docs/ARCHITECTURE.md).

    python3 tools/modcycles.py crates/shmbus/src
    python3 tools/modcycles.py crates/shmbus/src --order docs/ARCHITECTURE.md

With --order, it also checks the declared order: the first fenced block
after the page's "## Layers of" heading lists the top-level modules, the
highest first (a line's first word, `NAME.rs` or `NAME/`, indented by at
most two spaces); a module may import only modules listed below it, and
every module must be listed.

A module's imports are the `crate::NAME` paths in its files (comments,
test-only files and loom models left out); a file's imports of its
siblings are its `super::NAME` and `crate::DIR::NAME` paths. Prints each
cycle found.
"""
import os
import re
import sys


def module_of(src, path):
    top = os.path.relpath(path, src).split(os.sep)[0]
    return top[:-3] if top.endswith(".rs") else top


def imports(src):
    deps = {}
    for root, _, files in os.walk(src):
        for name in files:
            path = os.path.join(root, name)
            # Test files (`tests.rs`, `tests_<topic>.rs`) may use any layer.
            if not name.endswith(".rs") or name == "tests.rs" or name.startswith("tests_"):
                continue
            mod = module_of(src, path)
            if mod == "lib" or mod.startswith("loom"):
                continue
            text = code(path)
            found = set(re.findall(r"crate::(\w+)", text))
            for group in re.findall(r"crate::\{([^}]*)\}", text):
                found |= set(re.findall(r"(?:^|[,\s])(\w+)", group))
            deps.setdefault(mod, set()).update(found - {mod, "self", "super"})
    return deps


def code(path):
    """A file's code without comments and without its `#[cfg(test)] mod`
    (which comes last, by this crate's habit)."""
    text = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
    tests = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    return text[: tests.start()] if tests else text


def sibling_imports(src):
    """For each directory module (bus/, journal/, ...): its files' imports
    of each other, `super::NAME` and `crate::DIR::NAME`."""
    out = {}
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        if rel == ".":
            continue
        names = {f[:-3] for f in files if f.endswith(".rs")} - {"mod", "tests"}
        names |= {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))}
        prefix = "crate::" + "::".join(rel.split(os.sep)) + "::"
        deps = {}
        for f in files:
            me = f[:-3]
            if not f.endswith(".rs") or me in ("mod", "tests") or me.startswith("loom"):
                continue
            text = code(os.path.join(root, f))
            found = set(re.findall(r"\bsuper::(\w+)", text))
            found |= set(re.findall(re.escape(prefix) + r"(\w+)", text))
            for group in re.findall(r"\bsuper::\{([^}]*)\}", text):
                found |= set(re.findall(r"(?:^|[,\s])(\w+)", group))
            deps[me] = (found & names) - {me}
        out[rel] = deps
    return out


def cycles(deps):
    """Every strongly connected set of two or more modules (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def declared_order(page):
    """The top-level modules in the page's layer block, highest first."""
    text = open(page, encoding="utf-8").read()
    at = text.find("\n## Layers of")
    if at < 0:
        sys.exit(f"{page}: no '## Layers of' heading")
    block = re.search(r"```\n(.*?)```", text[at:], re.S)
    if not block:
        sys.exit(f"{page}: no fenced block after '## Layers of'")
    order = []
    for line in block.group(1).splitlines():
        m = re.match(r"^ {0,2}(\w+)(?:\.rs|/)\s", line)
        if m and m.group(1) != "lib":
            order.append(m.group(1))
    return order


def order_violations(deps, order):
    """Imports of a module at or above the importer, and unlisted modules."""
    out = []
    rank = {m: i for i, m in enumerate(order)}
    for mod in sorted(deps):
        if mod not in rank:
            out.append(f"{mod} is not in the declared layer order")
            continue
        for dep in sorted(deps[mod]):
            if dep in rank and rank[dep] <= rank[mod]:
                out.append(f"{mod} imports {dep}, which the declared order puts above it")
    return out


def main():
    args = sys.argv[1:]
    page = None
    if len(args) == 3 and args[1] == "--order":
        page = args[2]
        args = args[:1]
    if len(args) != 1:
        sys.exit("usage: modcycles.py CRATE_SRC_DIR [--order ARCHITECTURE.md]")
    deps = imports(args[0])
    found = cycles(deps)
    for c in found:
        print("import cycle: " + " <-> ".join(c))
    inner = 0
    for rel, sub in sorted(sibling_imports(args[0]).items()):
        for c in cycles(sub):
            inner += 1
            print(f"import cycle in {rel}/: " + " <-> ".join(c))
    print(f"{len(found)} import cycle(s) among {len(deps)} modules, {inner} within them")
    wrong = order_violations(deps, declared_order(page)) if page else []
    for w in wrong:
        print("layer order: " + w)
    if page:
        print(f"{len(wrong)} import(s) against the declared layer order ({page})")
    sys.exit(1 if found or inner or wrong else 0)


if __name__ == "__main__":
    main()
