#!/usr/bin/env python3
"""Lists the public items of a crate whose docs have no `# Examples`
section (and functions returning a Result without `# Errors`), from
rustdoc's JSON. Exit 1 if any.

    cargo +nightly rustdoc -p shmbus --lib -- -Z unstable-options --output-format json
    python3 tools/doc_examples.py target/doc/shmbus.json
"""
import json
import sys


def main():
    data = json.load(open(sys.argv[1]))
    index = data["index"]
    paths = data["paths"]
    root = data["root"]
    missing = []

    def visible(item):
        return item.get("visibility") == "public" and "hidden" not in str(item.get("attrs", ""))

    seen = set()

    def walk(item_id, prefix):
        if item_id in seen or str(item_id) not in index:
            return
        seen.add(item_id)
        item = index[str(item_id)]
        inner = item["inner"]
        kind = next(iter(inner))
        name = item.get("name") or ""
        path = f"{prefix}::{name}".lstrip(":") if name else prefix
        docs = item.get("docs") or ""
        attrs = str(item.get("attrs", ""))
        if "doc(hidden)" in attrs or "hidden" in attrs.lower() and "doc" in attrs.lower():
            return
        if kind == "module":
            for child in inner["module"]["items"]:
                walk(child, path)
            return
        if kind == "use":
            target = inner["use"].get("id")
            if target is not None and str(target) in index:
                walk(target, prefix)
            return
        if kind in ("struct", "enum", "trait", "function", "type_alias", "constant"):
            if "# Examples" not in docs:
                missing.append(f"{path} ({kind}): no # Examples")
        if kind == "function":
            out = inner["function"]["sig"].get("output")
            if out and "Result" in json.dumps(out) and "# Errors" not in docs:
                missing.append(f"{path} (fn): returns a Result, no # Errors")
        impls = []
        if kind in ("struct", "enum"):
            impls = inner[kind].get("impls", [])
        if kind == "trait":
            for child in inner["trait"]["items"]:
                walk(child, path)
        for impl_id in impls:
            impl = index.get(str(impl_id))
            if not impl:
                continue
            body = impl["inner"]["impl"]
            if body.get("trait") is not None or body.get("synthetic") or body.get("blanket_impl"):
                continue
            for child in body["items"]:
                walk(child, path)

    walk(root, "")
    for m in missing:
        print(m)
    print(f"{len(missing)} public item(s) without the sections")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
