#!/usr/bin/env python3
"""Import graph of a crate's top-level modules and its import cycles.

Usage: tools/modgraph.py [SRC_DIR] [--max-cycle N] [--acyclic MOD ...] [--edges]
Reads every .rs file under SRC_DIR (default crates/blinkdb-server/src), maps it to its
top-level module (the first path component), and collects `crate::m` references,
including grouped `use crate::{a, b::c}` forms. Prints the strongly connected
components with more than one module. With --max-cycle N it exits 1 when the largest
exceeds N; with --acyclic it exits 1 when a named module is in any cycle.
"""
import os
import re
import sys


def top_module(src, path):
    rel = os.path.relpath(path, src)
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def grouped(body):
    """Top-level names inside a `{...}` group of a use statement."""
    names, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            names.append(cur)
            cur = ""
            continue
        if depth == 0 or ch not in "{}":
            cur += ch if depth == 0 else ""
    names.append(cur)
    out = []
    for n in names:
        n = n.strip()
        m = re.match(r"(\w+)", n)
        if m and m.group(1) not in ("self",):
            out.append(m.group(1))
    return out


def refs(text):
    out = set(re.findall(r"crate::(\w+)", text))
    for m in re.finditer(r"crate::\{", text):
        i, depth = m.end(), 1
        j = i
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        out.update(grouped(text[i : j - 1]))
    return out


def graph(src):
    mods = set()
    edges = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            p = os.path.join(root, f)
            m = top_module(src, p)
            if m in ("lib", "main"):
                continue
            mods.add(m)
            with open(p, encoding="utf-8") as fh:
                edges.setdefault(m, set()).update(refs(strip_comments(fh.read())))
    return {m: {t for t in edges.get(m, ()) if t in mods and t != m} for m in mods}


def sccs(g):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
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
            out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main(argv):
    src, max_cycle, acyclic, show_edges = "crates/blinkdb-server/src", None, [], False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--max-cycle":
            max_cycle = int(argv[i + 1])
            i += 1
        elif a == "--acyclic":
            while i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                acyclic.append(argv[i + 1])
                i += 1
        elif a == "--edges":
            show_edges = True
        else:
            src = a
        i += 1
    g = graph(src)
    cycles = [c for c in sccs(g) if len(c) > 1]
    cycles.sort(key=len, reverse=True)
    print(f"{len(g)} top-level modules; cycles: {[len(c) for c in cycles] or 'none'}")
    for c in cycles:
        print(f"  {len(c)}: {' '.join(c)}")
        if show_edges:
            for m in c:
                print(f"     {m} -> {' '.join(sorted(t for t in g[m] if t in c))}")
    bad = False
    if max_cycle is not None and cycles and len(cycles[0]) > max_cycle:
        print(f"largest cycle {len(cycles[0])} > {max_cycle}")
        bad = True
    for m in acyclic:
        if any(m in c for c in cycles):
            print(f"{m} is in an import cycle")
            bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
