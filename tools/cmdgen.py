#!/usr/bin/env python3
"""Prints command-table entries (crates/blinkdb-server/src/commands/table.rs,
the `cmd!` format of spec.rs) from what a running redis-server 7.0.15 reports
with COMMAND INFO and COMMAND DOCS, so that an entry matches Redis's exactly.

Usage: tools/cmdgen.py PORT name=module::handler ...
(a subcommand is `container|sub=module::handler`)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from resp import RespConnection, plain  # noqa: E402

FLAGS = {
    "write": "WRITE", "readonly": "READONLY", "denyoom": "DENYOOM", "module": "MODULE",
    "admin": "ADMIN", "pubsub": "PUBSUB", "noscript": "NOSCRIPT", "blocking": "BLOCKING",
    "loading": "LOADING_OK", "stale": "STALE", "skip_monitor": "SKIP_MONITOR",
    "skip_slowlog": "SKIP_SLOWLOG", "asking": "ASKING", "fast": "FAST", "no_auth": "NO_AUTH",
    "no_mandatory_keys": "NO_MANDATORY_KEYS", "no_async_loading": "NO_ASYNC_LOADING",
    "no_multi": "NO_MULTI", "allow_busy": "ALLOW_BUSY",
}
ARG_TYPES = {"string", "integer", "double", "key", "pattern", "unix-time", "pure-token",
             "oneof", "block"}


def text(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [text(x) for x in v]
    if isinstance(v, dict):
        return {text(k): text(x) for k, x in v.items()}
    return v


def pairs(v):
    """A RESP2 flat map or a RESP3 map, as a dict."""
    if isinstance(v, dict):
        return v
    return dict(zip(v[::2], v[1::2]))


def derived_acl(flags, cats):
    d = set()
    f = set(flags)
    if "write" in f:
        d.add("write")
    if "admin" in f:
        d |= {"admin", "dangerous"}
    if "pubsub" in f:
        d.add("pubsub")
    if "fast" in f:
        d.add("fast")
    if "blocking" in f:
        d.add("blocking")
    if "readonly" in f and "scripting" not in cats:
        d.add("read")
    if "fast" not in cats:
        d.add("slow")
    return d


def key_spec(ks):
    ks = pairs(ks)
    flags = ",".join(ks["flags"])
    bs = pairs(ks["begin_search"])
    spec = pairs(bs["spec"]) if bs["spec"] else {}
    if bs["type"] == "index":
        begin = f"index:{spec['index']}"
    elif bs["type"] == "keyword":
        begin = f"keyword:{spec['keyword']}:{spec['startfrom']}"
    else:
        begin = "unknown"
    fk = pairs(ks["find_keys"])
    spec = pairs(fk["spec"]) if fk["spec"] else {}
    if fk["type"] == "range":
        find = f"range:{spec['lastkey']}:{spec['keystep']}:{spec['limit']}"
    elif fk["type"] == "keynum":
        find = f"keynum:{spec['keynumidx']}:{spec['firstkey']}:{spec['keystep']}"
    else:
        find = "unknown"
    out = f"{flags} {begin} {find}"
    if "notes" in ks:
        out += f" | {ks['notes']}"
    return out


def arg(a):
    a = pairs(a)
    kind = a["type"]
    out = a["name"] + ":"
    if kind == "pure-token":
        out += a["token"]
    else:
        out += kind
        if "token" in a:
            out += "=" + a["token"]
    if kind != "key" and "key_spec_index" in a:
        out += f"#{a['key_spec_index']}"
    elif kind == "key" and a.get("key_spec_index", 0) != 0:
        out += f"#{a['key_spec_index']}"
    flags = a.get("flags", [])
    if "optional" in flags:
        out += "?"
    if "multiple" in flags:
        out += "*"
    if "multiple_token" in flags:
        out += "+"
    if "since" in a:
        out += "^" + a["since"]
    if "deprecated_since" in a:
        out += "~" + a["deprecated_since"]
    if "arguments" in a:
        out += "(" + " ".join(arg(c) for c in a["arguments"]) + ")"
    return out


def call(conn, *args):
    r = conn.call(*args)
    return plain((r.kind, r.value))


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def entry(conn, name, handler):
    info = text(call(conn, "COMMAND", "INFO", name))[0]
    if info is None:
        raise SystemExit(f"unknown command {name}")
    _, arity, flags, first, last, step, cats, tips, specs, _subs = info
    docs = pairs(text(call(conn, "COMMAND", "DOCS", name)))
    doc = pairs(docs[name])
    cats = [c.lstrip("@") for c in cats]
    flagexpr = " | ".join(FLAGS[f] for f in flags if f in FLAGS) or "0"
    keys = {(0, 0, 0): "NOKEYS", (1, 1, 1): "KEY1", (1, -1, 1): "ALLKEYS"}.get(
        (first, last, step), f"({first}, {last}, {step})")
    lines = [f'    cmd!({quote(name)}, {arity}, {flagexpr}, {keys}, {quote(doc["group"])}, '
             f'{quote(doc["since"])}, {quote(doc["summary"])}, {handler};']
    extra = [c for c in cats if c not in derived_acl(flags, cats)]
    fields = []
    if extra:
        fields.append("acl: " + " | ".join(f"acl::{c.upper()}" for c in extra))
    if "complexity" in doc:
        fields.append(f"complexity: {quote(doc['complexity'])}")
    if specs:
        fields.append("keys: " + quote("; ".join(key_spec(k) for k in specs)))
    if "arguments" in doc:
        fields.append("args: " + quote(" ".join(arg(a) for a in doc["arguments"])))
    if "history" in doc:
        hist = ", ".join(f"({quote(v)}, {quote(t)})" for v, t in doc["history"])
        fields.append(f"history: &[{hist}]")
    if tips:
        fields.append("tips: &[" + ", ".join(quote(t) for t in tips) + "]")
    dflags = doc.get("doc_flags", [])
    if dflags:
        fields.append("doc_flags: " + " | ".join(f"doc::{f.upper()}" for f in dflags))
    if "deprecated_since" in doc:
        fields.append(f"deprecated_since: {quote(doc['deprecated_since'])}")
    if "replaced_by" in doc:
        fields.append(f"replaced_by: {quote(doc['replaced_by'])}")
    body = ",\n".join("        " + f for f in fields)
    return lines[0] + ("\n" + body if body else "") + "),"


def main():
    port = int(sys.argv[1])
    with RespConnection(port) as conn:
        for spec in sys.argv[2:]:
            name, handler = spec.split("=")
            print(entry(conn, name, handler))


if __name__ == "__main__":
    main()
