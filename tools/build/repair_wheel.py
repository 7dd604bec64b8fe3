"""Repairs a freshly built pt2onnx wheel for scripts/build_wheel.sh and prints the repaired wheel's path
(its last line of output).

    python tools/build/repair_wheel.py RAW.whl OUT_DIR TORCH_LIB_DIR --exclude SONAME ... [--library-path DIR]

0. The wheel is tagged with every CPython whose extension module it carries (pt2onnx/_pt2onnx.cpython-3XY-*.so,
   cmake/PythonLayers.cmake): cp311.cp313-cp311.cp313, say. pip picks the wheel for any of them, and
   Python imports the module of its own version.
1. auditwheel repair: copies every shared library the binaries need that is neither the base system's
   (the manylinux policy's) nor excluded, i.e. protobuf, spdlog, fmt, into pt2onnx.libs/ under
   private sonames, and tags the wheel with the lowest manylinux platform its symbol versions allow.
   torch's libraries are excluded (--exclude, one per library in torch/lib): they are the user's torch's.
   --library-path: where auditwheel finds libraries to bundle that are not the system's (the low-glibc
   build's protobuf, from its Debian 11 sysroot).
2. auditwheel keeps only RPATH entries inside the wheel, so it drops $ORIGIN/../torch/lib, where the
   extension finds torch's libraries in site-packages; it is put back here. Without it the extension
   loads only after `import torch` (the console script loads it without: python/pt2onnx_cli).
3. Checks the result (and 4. asks `auditwheel show` whether it agrees with the tag): no RPATH entry outside the installed site-packages, every DT_NEEDED library of
   every binary either in the wheel (libpt2onnx.so, the core the modules share, or pt2onnx.libs/), in
   torch's lib/ directory or in the policy's base system.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

TORCH_RPATH = "$ORIGIN/../torch/lib"


def run(*cmd, **kw):
    result = subprocess.run([str(c) for c in cmd], text=True, capture_output=True, **kw)
    if result.returncode != 0:
        sys.exit(f"{' '.join(str(c) for c in cmd)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def elf_files(root):
    for path in sorted(root.rglob("*")):
        if path.is_file():
            with path.open("rb") as f:
                if f.read(4) == b"\x7fELF":  # the magic only: no need to read whole libraries
                    yield path


def needed(binary):
    return run("patchelf", "--print-needed", binary).split()


def python_tags(wheel):
    """cp311.cp313 for a wheel carrying _pt2onnx.cpython-311-*.so and _pt2onnx.cpython-313-*.so."""
    versions = sorted({int(m.group(1)) for name in zipfile.ZipFile(wheel).namelist()
                       if (m := re.fullmatch(r"pt2onnx/_pt2onnx\.cpython-3(\d+)-[^/]*\.so", name))})
    if not versions:
        sys.exit(f"{wheel.name} carries no pt2onnx/_pt2onnx.cpython-3XY-*.so extension module")
    return ".".join(f"cp3{v}" for v in versions)


def retag(wheel, directory):
    """A copy of the wheel in directory, tagged with the Pythons whose modules it carries."""
    tags = python_tags(wheel)
    directory.mkdir()
    copy = directory / wheel.name
    shutil.copy(wheel, copy)
    run(sys.executable, "-m", "wheel", "tags", "--remove", f"--python-tag={tags}", f"--abi-tag={tags}", copy)
    (tagged,) = directory.glob("*.whl")
    return tagged


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=pathlib.Path)
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("torch_lib", type=pathlib.Path)
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--library-path", action="append", default=[])
    args = parser.parse_args()
    torch_libs = {p.name for p in args.torch_lib.iterdir()}

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        tagged = retag(args.wheel, tmp / "tagged")
        excludes = [a for name in args.exclude for a in ("--exclude", name)]
        env = dict(os.environ)
        if args.library_path:
            env["LD_LIBRARY_PATH"] = ":".join(args.library_path + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
        print(run(sys.executable, "-m", "auditwheel", "repair", *excludes, "-w", tmp / "repaired", tagged, env=env))
        (repaired,) = (tmp / "repaired").glob("*.whl")

        run(sys.executable, "-m", "wheel", "unpack", "-d", tmp / "tree", repaired)
        (tree,) = (tmp / "tree").iterdir()
        bundled = {p.name for d in tree.glob("*.libs") for p in d.iterdir()}
        in_wheel = {p.name for p in elf_files(tree)}
        policy_libs = base_system_libraries(repaired) | {"ld-linux-x86-64.so.2"}  # the dynamic loader: libc's
        problems = []
        for binary in elf_files(tree):
            names = needed(binary)
            if any(n in torch_libs for n in names):
                rpath = [e for e in run("patchelf", "--print-rpath", binary).strip().split(":") if e]
                if TORCH_RPATH not in rpath:
                    run("patchelf", "--set-rpath", ":".join(rpath + [TORCH_RPATH]), binary)
            for entry in run("patchelf", "--print-rpath", binary).strip().split(":"):
                if entry and not entry.startswith("$ORIGIN"):
                    problems.append(f"{binary.relative_to(tree)}: RPATH entry {entry} outside the installed packages")
            for n in names:
                if n not in in_wheel and n not in torch_libs and n not in policy_libs:
                    problems.append(f"{binary.relative_to(tree)} needs {n}: not in the wheel, torch or the base system")
        if problems:
            sys.exit("the repaired wheel is not self-contained:\n  " + "\n  ".join(problems))
        args.out_dir.mkdir(parents=True, exist_ok=True)
        run(sys.executable, "-m", "wheel", "pack", "-d", args.out_dir, tree)
        final = args.out_dir / repaired.name
        assert final.exists(), f"wheel pack wrote no {final}"
        print(f"bundled: {sorted(bundled)}")
        print(check_auditwheel_show(final, torch_libs))
        print(final)


def check_auditwheel_show(wheel, torch_libs):
    """`auditwheel show` agrees with the tag: the platform its symbol versions allow is one of the
    wheel's platform tags, and all it would have to bundle for them are torch's libraries (left out on
    purpose: they are the user's torch's). Returns its verdict in a line."""
    show = json.loads(run(sys.executable, "-m", "auditwheel", "show", "--json", wheel))
    platforms = wheel.name.removesuffix(".whl").rsplit("-", 1)[1].split(".")
    if show["sym_tag"] not in platforms:
        sys.exit(f"auditwheel show puts {wheel.name}'s symbol versions at {show['sym_tag']}, not at its tags {platforms}")
    for platform in platforms:
        outside = set(show["policy_upgrades"].get(platform, {}).get("libs_to_eliminate", [])) - torch_libs
        if outside:
            sys.exit(f"auditwheel show: {wheel.name} would need {sorted(outside)} bundled for {platform}")
    return f"auditwheel show: symbol versions allow {show['sym_tag']}; external libraries only torch's"


def base_system_libraries(wheel):
    """The libraries the manylinux policy of the wheel's platform tag lets it take from the system, as
    the auditwheel that tagged it states them (its policy file)."""
    import auditwheel
    tag = wheel.name.rsplit("-", 1)[1].removesuffix(".whl").split(".")[0]  # manylinux_2_36_x86_64
    policy_file = pathlib.Path(auditwheel.__file__).parent / "policy" / "manylinux-policy.json"
    for policy in json.loads(policy_file.read_text()):
        if tag.removesuffix("_x86_64") in [policy["name"], *policy["aliases"]]:
            return set(policy["lib_whitelist"])
    sys.exit(f"{policy_file} has no policy {tag}")


if __name__ == "__main__":
    main()
