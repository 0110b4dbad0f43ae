#!/usr/bin/env python3
"""Semantic differences between two OpenAPI documents (a development aid for the move of the
documents into code): `python3 compare.py OLD.json NEW.json` lists, per JSON
pointer, what was added, removed or changed, with `$ref`s resolved and `allOf` merged, so
that key order, a schema moved into components, or a `oneOf [X, null]` written
`type: [X, null]` do not show; `required` and `enum` are compared as sets."""

import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def resolve(doc, node, seen=()):
    """`node` with $refs inlined (a ref already being expanded stays a ref) and allOf merged."""
    if isinstance(node, list):
        return [resolve(doc, n, seen) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        if ref in seen:
            return {"$ref": ref}
        target = doc
        for part in ref.lstrip("#/").split("/"):
            target = target[part]
        # Members beside a $ref (3.1: a description) apply to the target too.
        out = dict(resolve(doc, target, seen + (ref,)))
        out.update({k: resolve(doc, v, seen) for k, v in node.items() if k != "$ref"})
        return out
    out = {k: resolve(doc, v, seen) for k, v in node.items()}
    if "allOf" in out:
        merged = {"type": "object", "properties": {}, "required": []}
        for part in out.pop("allOf"):
            part = dict(part)
            part.pop("description", None)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
            for k, v in part.items():
                if k not in ("properties", "required", "type"):
                    merged[k] = v
        merged.update({k: v for k, v in out.items() if k not in merged})
        out = merged
    # oneOf [X, {type: null}] -> X with null added to its type.
    one = out.get("oneOf")
    if isinstance(one, list) and len(one) == 2 and {"type": "null"} in one:
        other = dict(next(o for o in one if o != {"type": "null"}))
        t = other.get("type")
        if isinstance(t, str):
            other["type"] = [t, "null"]
        rest = {k: v for k, v in out.items() if k != "oneOf"}
        other.update(rest)
        out = other
    if isinstance(out.get("type"), list):
        out["type"] = sorted(out["type"])
    for k in ("required", "enum"):
        if isinstance(out.get(k), list):
            out[k] = sorted(out[k], key=json.dumps)
    if out.get("required") == []:
        del out["required"]
    return out


def diff(a, b, at, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            p = f"{at}/{k}"
            if k not in a:
                out.append(f"+ {p}: {json.dumps(b[k])[:160]}")
            elif k not in b:
                out.append(f"- {p}: {json.dumps(a[k])[:160]}")
            else:
                diff(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list) and at.endswith("/parameters"):
        key = lambda p: (p.get("in"), p.get("name"))
        da, db = {key(p): p for p in a}, {key(p): p for p in b}
        diff({f"{k[0]}:{k[1]}": v for k, v in da.items()},
             {f"{k[0]}:{k[1]}": v for k, v in db.items()}, at, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{at}/{i}", out)
    elif a != b:
        out.append(f"~ {at}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")


def main():
    old, new = load(sys.argv[1]), load(sys.argv[2])
    out = []
    for part in ("openapi", "info", "servers", "security", "paths"):
        diff(resolve(old, old.get(part)), resolve(new, new.get(part)), f"/{part}", out)
    diff(old["components"].get("securitySchemes"), new["components"].get("securitySchemes"),
         "/components/securitySchemes", out)
    print("\n".join(out) if out else "no semantic difference")


if __name__ == "__main__":
    main()
