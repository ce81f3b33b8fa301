"""Oracle of `evident-bench fidelity-semantic` for Java: the classes javac compiled from the
corpus, read back with `javap -v -p`. Prints one JSON object per fact:
- calls: every invokevirtual/static/special/interface of a method declared in the corpus (the
  declaring class found by walking the invoked owner's superclasses and interfaces), with the
  call's source file and line (LineNumberTable);
- extends / implements: from class headers;
- uses_type: per member, the corpus types of its descriptor, generic signature and
  annotations; per class, those of its fields, its signature and its annotations.
Usage: python3 javap_oracle.py CLASSES_DIR"""
import json
import os
import re
import subprocess
import sys

INVOKE = re.compile(r"^\s+\d+: (invoke(?:virtual|static|special|interface))\s+#\d+(?:,\s+\d+)?\s+// (?:Method|InterfaceMethod) (.+)$")
LINE = re.compile(r"^\s+line (\d+): (\d+)$")
TYPE_IN_SIG = re.compile(r"L([\w/$]+)[;<]")


def strip_generics(s):
    out, depth = [], 0
    for c in s:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def arity(desc):
    inner = desc[1:desc.index(")")]
    n, i = 0, 0
    while i < len(inner):
        c = inner[i]
        while c == "[":
            i += 1
            c = inner[i]
        if c == "L":
            i = inner.index(";", i)
        n += 1
        i += 1
    return n


def parse(text):
    classes = []
    cls = None
    member = None
    pending_annotation = None
    for raw in text.split("\n"):
        line = raw.rstrip()
        if line.startswith("Classfile "):
            cls = {"source": None, "name": None, "super": None, "interfaces": [], "interface": False,
                   "members": [], "annotations": [], "signature": None}
            classes.append(cls)
            member = None
            continue
        if cls is None:
            continue
        if line.startswith("  Compiled from "):
            cls["source"] = line.split('"')[1]
            continue
        if cls["name"] is None and re.match(r"^([a-z]+ )*(class|interface|enum) ", line):
            head = strip_generics(line)
            m = re.search(r"\b(class|interface|enum) ([\w.$]+)(.*)$", head)
            cls["name"] = m.group(2)
            cls["interface"] = m.group(1) == "interface"
            rest = m.group(3)
            ext = re.search(r" extends ([\w.$, ]+?)(?: implements |$)", rest)
            imp = re.search(r" implements ([\w.$, ]+)$", rest)
            names = lambda g: [x.strip() for x in g.split(",") if x.strip()]
            if cls["interface"]:
                cls["interfaces"] = names(ext.group(1)) if ext else []
            else:
                cls["super"] = names(ext.group(1))[0] if ext else None
                cls["interfaces"] = names(imp.group(1)) if imp else []
            continue
        if re.match(r"^  [^ #].*;$", line) and not line.startswith("  Compiled"):
            decl = line.strip()
            if "(" in decl:
                name = decl[: decl.index("(")].split()[-1]
                if name == cls["name"]:
                    name = "<init>"
            elif decl.startswith("static {}"):
                name = "<clinit>"
            else:
                name = decl[:-1].split()[-1]
            member = {"name": name, "method": "(" in decl, "desc": None, "flags": "",
                      "signature": None, "annotations": [], "lines": [], "invokes": []}
            cls["members"].append(member)
            continue
        s = line.strip()
        if member is not None and line.startswith("    descriptor: "):
            member["desc"] = s.split(" ", 1)[1]
        elif member is not None and line.startswith("    flags: "):
            member["flags"] = s
        elif line.startswith("    Signature: #") and member is not None:
            member["signature"] = s.split("// ", 1)[-1]
        elif line.startswith("Signature: #"):
            cls["signature"] = s.split("// ", 1)[-1]
        elif member is not None and (m := INVOKE.match(line)):
            member["invokes"].append((int(line.split(":")[0]), m.group(1), m.group(2)))
        elif member is not None and (m := LINE.match(line)):
            member["lines"].append((int(m.group(2)), int(m.group(1))))
        elif "Annotations:" in s and s.startswith("Runtime"):
            pending_annotation = member if line.startswith("    ") else "class"
        elif pending_annotation is not None and re.match(r"^\s+\d+: #\d+", line):
            continue
        elif pending_annotation is not None and re.match(r"^\s+[\w.$]+$", line) and "." in s:
            target = cls["annotations"] if pending_annotation == "class" else pending_annotation["annotations"]
            target.append(s)
        elif s == "}" and not line.startswith(" "):
            member = None
    return classes


def main():
    root = sys.argv[1]
    files = []
    for d, _, names in os.walk(root):
        files += [os.path.join(d, n) for n in names if n.endswith(".class")]
    files.sort()
    text = ""
    for i in range(0, len(files), 200):
        text += subprocess.run(["javap", "-v", "-p"] + files[i:i + 200], capture_output=True,
                               text=True, check=True).stdout
    classes = parse(text)
    by_name = {c["name"]: c for c in classes if c["name"]}
    dotted = lambda binary: binary.replace("/", ".")

    def declares(c, name, desc):
        return any(m["name"] == name and m["desc"] == desc and "ACC_BRIDGE" not in m["flags"]
                   for m in c["members"])

    def declaring(owner, name, desc, seen):
        c = by_name.get(owner)
        if c is None or owner in seen:
            return None
        seen.add(owner)
        if declares(c, name, desc):
            return owner
        if name == "<init>":
            return None
        for s in ([c["super"]] if c["super"] else []) + c["interfaces"]:
            r = declaring(s, name, desc, seen)
            if r:
                return r
        return None

    def source_of(c):
        pkg = c["name"].rsplit(".", 1)[0].replace(".", "/") if "." in c["name"] else ""
        return (pkg + "/" if pkg else "") + (c["source"] or "")

    def types_in(*sigs):
        out = set()
        for s in sigs:
            for m in TYPE_IN_SIG.finditer(s or ""):
                t = dotted(m.group(1))
                if t in by_name:
                    out.add(t)
        return out

    emit = lambda o: print(json.dumps(o))
    for c in classes:
        if not c["name"]:
            continue
        bases = ([("extends", c["super"])] if c["super"] else []) + \
                [("extends" if c["interface"] else "implements", i) for i in c["interfaces"]]
        for kind, b in bases:
            if b in by_name:
                emit({"kind": kind, "from_class": c["name"], "to_class": b})
        class_types = types_in(c["signature"]) | {a for a in c["annotations"] if a in by_name}
        for m in c["members"]:
            if "ACC_SYNTHETIC" in m["flags"] or "ACC_BRIDGE" in m["flags"]:
                continue
            used = types_in(m["desc"], m["signature"]) | {a for a in m["annotations"] if a in by_name}
            if not m["method"]:
                class_types |= used
            elif m["name"] != "<clinit>":
                for t in used:
                    emit({"kind": "uses_type", "from_class": c["name"], "from_name": m["name"],
                          "from_arity": arity(m["desc"]), "from_desc": m["desc"], "to_class": t})
        for t in class_types:
            emit({"kind": "uses_type", "from_class": c["name"], "from_name": None,
                  "from_arity": None, "to_class": t})
        for m in c["members"]:
            lines = sorted(m["lines"])
            for pc, _op, target in m["invokes"]:
                ref, desc = target.split(":", 1)
                if "." in ref.replace('"<init>"', ""):
                    owner, name = ref.rsplit(".", 1)
                    owner = dotted(owner)
                else:
                    owner, name = c["name"], ref
                name = name.strip('"')
                decl = declaring(owner, name, desc, set())
                if decl is None:
                    continue
                line = None
                for start, l in lines:
                    if start <= pc:
                        line = l
                if line is None:
                    continue
                emit({"kind": "calls", "file": source_of(c), "line": line, "to_class": decl,
                      "to_name": name, "to_arity": arity(desc), "to_desc": desc})


main()
