#!/usr/bin/env python3
"""No internal (impl::) type in a public signature: in every public header, outside the
impl namespaces, template parameter lists, base-class lists and the parameter lists of
namespace-scope functions must name public types only (bodies may use impl:: freely).

    check_public_signatures.py SRC_DIR HEADER...
"""
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def check(path):
    text = strip_comments(open(path).read())
    problems = []
    ns = []          # (name, depth at which it opened)
    depth = 0
    decl = ""        # text since the last ';', '{' or '}' at namespace scope
    line = 1
    in_impl = lambda: any(n == "impl" or n.startswith("impl") for n, _ in ns)
    i = 0
    while i < len(text):
        m = re.match(r"namespace\s+([A-Za-z_][\w:]*)?\s*\{", text[i:])
        at_ns_scope = depth == (ns[-1][1] if ns else 0)
        if m and at_ns_scope:
            depth += 1
            ns.append((m.group(1) or "", depth))
            line += m.group(0).count("\n")
            i += len(m.group(0))
            decl = ""
            continue
        c = text[i]
        if c == "\n":
            line += 1
        if at_ns_scope and not in_impl():
            if c in "{;":
                d = re.sub(r"\s+", " ", decl)
                # template <...> parameters, ': base' lists, function parameters
                for t in re.findall(r"template\s*<([^{}]*?)>\s*(?:struct|class|[\w:<>,\s&*]+\()", d):
                    if "impl::" in t:
                        problems.append((line, "template parameters: " + t.strip()))
                b = re.search(r"(?:struct|class)\s+\w+[^:{]*:\s*([^{]*)$", d)
                if b and "impl::" in b.group(1):
                    problems.append((line, "base: " + b.group(1).strip()))
                f = re.search(r"\b(\w+)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*(?:const\s*)?$", d)
                if f and c == "{" and "impl::" in f.group(2) and not d.lstrip().startswith(("if", "for", "while", "switch")):
                    problems.append((line, "parameters of " + f.group(1) + ": " + f.group(2).strip()))
            if c in "{;}":
                decl = ""
            else:
                decl += c
        if c == "{":
            depth += 1
        elif c == "}":
            if ns and depth == ns[-1][1]:
                ns.pop()
            depth -= 1
        i += 1
    return problems


def main():
    src, headers = sys.argv[1], sys.argv[2:]
    bad = 0
    for h in headers:
        for line, what in check(src + "/" + h):
            print(f"{h}:{line}: impl:: in a public signature: {what}")
            bad += 1
    print(f"{len(headers)} public headers checked, {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
