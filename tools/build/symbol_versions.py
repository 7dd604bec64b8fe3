"""The symbol versions (GLIBC_*, GLIBCXX_*, CXXABI_*, GCC_*) each shared object of a wheel needs, and
a check of them against maxima (scripts/build_wheel.sh: the manylinux_2_31 floor).

    python tools/build/symbol_versions.py WHEEL_OR_SO... [--also SO...] [--max GLIBC=2.31 GLIBCXX=3.4.28 ...]

Prints one line per binary: the highest version of each family and every version it needs (what
`objdump -T x.so | grep -oE '(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+' | sort -uV` lists). --also names
binaries measured for comparison only (torch's libtorch_cpu.so). With --max, exits 1 when a binary
of the wheel needs a higher version, naming the symbols (demangled) that do.
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

VERSION = re.compile(r"\b(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9][0-9.]*[0-9]|[0-9])\b")


def key(version):
    return tuple(int(p) for p in version.split("."))


def needed_versions(binary):
    """{family: {version: [symbol, ...]}} from the dynamic symbol table."""
    out = subprocess.run(["objdump", "-T", str(binary)], check=True, text=True, capture_output=True).stdout
    found = {}
    for line in out.splitlines():
        for family, version in VERSION.findall(line):
            found.setdefault(family, {}).setdefault(version, []).append(line.split()[-1])
    return found


def describe(name, found):
    highest = " ".join(f"{f}_{max(v, key=key)}" for f, v in sorted(found.items()))
    every = " ".join(f"{f}_{v}" for f, vs in sorted(found.items()) for v in sorted(vs, key=key))
    return f"{name}: highest {highest or 'none'}\n    all: {every}"


def demangle(names):
    return subprocess.run(["c++filt"], input="\n".join(names), text=True, capture_output=True).stdout.split("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=pathlib.Path, help="wheels or shared objects")
    parser.add_argument("--also", nargs="*", default=[], type=pathlib.Path, help="measured, not checked")
    parser.add_argument("--max", nargs="*", default=[], help="FAMILY=VERSION, e.g. GLIBC=2.31")
    args = parser.parse_args()
    limits = dict(m.split("=", 1) for m in args.max)

    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        binaries = []
        for path in args.inputs:
            if path.suffix == ".whl":
                root = pathlib.Path(tmp) / path.name
                zipfile.ZipFile(path).extractall(root)
                binaries += [(str(p.relative_to(root)), p) for p in sorted(root.rglob("*"))
                             if p.is_file() and p.open("rb").read(4) == b"\x7fELF"]
            else:
                binaries.append((str(path), path))
        for name, binary in binaries:
            found = needed_versions(binary)
            print(describe(name, found))
            for family, limit in limits.items():
                for version, symbols in found.get(family, {}).items():
                    if key(version) > key(limit):
                        culprits = sorted(set(demangle(symbols)) - {""})
                        problems.append(f"{name} needs {family}_{version} (> {limit}): {', '.join(culprits[:8])}")
        for path in args.also:
            print(describe(f"(for comparison) {path.name}", needed_versions(path)))
    if problems:
        print("too-recent symbol versions:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
