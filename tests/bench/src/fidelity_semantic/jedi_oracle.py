"""Oracle of `evident-bench fidelity-semantic` for Python: every call, class base and
annotation name of the given files, resolved by jedi (`Script.goto`, imports followed) within
the project at ROOT. Prints one JSON object per resolved use:
{"kind", "file", "line", "target_file", "target_line", "target_name", "target_type"}.
Usage: python3 jedi_oracle.py ROOT FILE...  (FILE relative to ROOT)."""
import ast
import json
import os
import sys

import jedi


def name_position(node):
    """(line, column) of the name a Name/Attribute designates."""
    if isinstance(node, ast.Name):
        return node.lineno, node.col_offset
    if isinstance(node, ast.Attribute) and node.end_lineno == node.lineno:
        return node.end_lineno, node.end_col_offset - len(node.attr)
    return None


def annotation_names(node):
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) or isinstance(n, ast.Name):
            out.append(n)
    # An attribute chain yields its inner names too; keep the outermost of each chain.
    inner = {id(a.value) for a in out if isinstance(a, ast.Attribute)}
    return [n for n in out if id(n) not in inner]


def string_annotations(tree):
    """Names inside string annotations (`"Console"`, `"Optional[Foo]"`): resolved at module
    level, where Python evaluates them."""
    out = []

    def names_of(ann):
        for n in ast.walk(ann):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                try:
                    inner = ast.parse(n.value, mode="eval")
                except SyntaxError:
                    continue
                for m in annotation_names(inner):
                    if isinstance(m, (ast.Name, ast.Attribute)):
                        out.append((n.lineno, ast.unparse(m)))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    names_of(a.annotation)
            if node.returns is not None:
                names_of(node.returns)
        elif isinstance(node, ast.AnnAssign):
            names_of(node.annotation)
    return out


def uses(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "super":
                continue
            yield "calls", f
        elif isinstance(node, ast.ClassDef):
            for b in node.bases:
                if isinstance(b, (ast.Name, ast.Attribute)):
                    yield "extends", b
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    for n in annotation_names(a.annotation):
                        yield "uses_type", n
            if node.returns is not None:
                for n in annotation_names(node.returns):
                    yield "uses_type", n
        elif isinstance(node, ast.AnnAssign):
            for n in annotation_names(node.annotation):
                yield "uses_type", n


def main():
    root = os.path.abspath(sys.argv[1])
    project = jedi.Project(root, added_sys_path=[root])
    for rel in sys.argv[2:]:
        path = os.path.join(root, rel)
        try:
            src = open(path, encoding="utf-8").read()
            tree = ast.parse(src)
        except Exception:
            continue
        script = jedi.Script(src, path=path, project=project)
        sites = []
        for kind, node in uses(tree):
            pos = name_position(node)
            if pos is not None:
                sites.append((kind, pos, pos[0], script))
        strings = string_annotations(tree)
        if strings:
            # Each name appended as a module-level expression of its own line.
            base = src.count("\n") + 2
            extra = src + "\n" + "\n".join(name for _, name in strings) + "\n"
            tail = jedi.Script(extra, path=path, project=project)
            for i, (line, name) in enumerate(strings):
                sites.append(("uses_type", (base + i, len(name) - len(name.split(".")[-1])), line, tail))
        for kind, pos, at_line, scr in sites:
            try:
                defs = scr.goto(pos[0], pos[1], follow_imports=True)
            except Exception:
                continue
            for d in defs:
                if d.module_path is None or d.line is None:
                    continue
                target = os.path.relpath(str(d.module_path), root)
                if target.startswith(".."):
                    continue
                print(json.dumps({
                    "kind": kind, "file": rel, "line": at_line,
                    "target_file": target, "target_line": d.line,
                    "target_name": d.name, "target_type": d.type,
                }))


main()
