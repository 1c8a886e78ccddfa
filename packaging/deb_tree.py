#!/usr/bin/env python3
"""Lays out the Debian package tree of vramscope from the crate's metadata, as cargo-deb would.

Reads `cargo metadata --no-deps --format-version 1` on stdin: the package's name, version,
description and licence, and its [package.metadata.deb] table (cargo-deb's format: maintainer,
copyright, license-file, extended-description, section, priority, depends with `$auto`, assets).
Writes ROOT/DEBIAN/{control,md5sums}, the assets and usr/share/doc/NAME/copyright, and prints the
.deb's file name (NAME_VERSION-1_ARCH.deb). Usage: deb_tree.py ROOT ARCH AUTO_DEPENDS < metadata.
Bad metadata exits 2 with one line naming the key.
"""

import hashlib
import json
import os
import shutil
import sys


def fail(msg):
    print(f"packaging/deb_tree.py: {msg}", file=sys.stderr)
    sys.exit(2)


def need(table, key, where):
    value = table.get(key)
    if not isinstance(value, str) or not value:
        fail(f"{where} has no {key}")
    return value


def has_copyright_metadata(text):
    """cargo-deb's test: a licence file already in Debian's copyright format is used as it is."""
    heads = ("Copyright: ", "License: ", "Source: ", "Upstream-Name: ", "Format: ")
    return any(line.startswith(heads) for line in text.splitlines()[:10])


def check_mit_text(crate_dir, text):
    """The crate's LICENSE's MIT text must be in the package's copyright, word for word."""
    with open(os.path.join(crate_dir, "LICENSE"), encoding="utf-8") as f:
        licence = f.read()
    start = licence.find("Permission is hereby granted")
    words = lambda t: " ".join(w for w in t.split() if w != ".")
    if start < 0 or words(licence[start:]) not in words(text):
        fail("the copyright file's Expat text differs from LICENSE's MIT text")


def copyright_text(pkg, deb, crate_dir):
    """cargo-deb's copyright: the licence file, after a DEP-5 header unless it has one."""
    path, skip = deb.get("license-file", [None, "0"])
    body = []
    if path:
        with open(os.path.join(crate_dir, path), encoding="utf-8") as f:
            text = f.read()
        if has_copyright_metadata(text):
            check_mit_text(crate_dir, text)
            return text
        body = [" ." if line == " " else line for line in text.splitlines()[int(skip) :]]
    lines = [
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
        f"Upstream-Name: {pkg['name']}",
    ]
    source = pkg.get("repository") or pkg.get("homepage")
    if source:
        lines.append(f"Source: {source}")
    lines.append(f"Copyright: {need(deb, 'copyright', '[package.metadata.deb]')}")
    lines.append(f"License: {need(pkg, 'license', '[package]')}")
    return "\n".join(lines + body) + "\n"


def description(pkg, deb):
    """The control file's Description: the summary, then the extended text, wrapped at 78."""
    out = [f"Description: {need(pkg, 'description', '[package]')}"]
    for para in deb.get("extended-description", "").split("\n\n"):
        words, line = para.split(), ""
        for w in words:
            if line and len(line) + 1 + len(w) > 78:
                out.append(f" {line}")
                line = w
            else:
                line = f"{line} {w}" if line else w
        if line:
            out.append(f" {line}")
        out.append(" .")
    return "\n".join(out[:-1] if out[-1] == " ." else out)


def copy_assets(deb, root, crate_dir, target_dir):
    """Copies each [source, dest, mode]; `target/release/` means cargo's real target folder."""
    for asset in deb.get("assets", []):
        if not (isinstance(asset, list) and len(asset) == 3):
            fail(f"asset {asset!r} is not [source, dest, mode]")
        source, dest, mode = asset
        if source.startswith("target/release/"):
            source = os.path.join(target_dir, source[len("target/") :])
        else:
            source = os.path.join(crate_dir, source)
        if not os.path.isfile(source):
            fail(f"asset {source} does not exist (build it first)")
        if dest.endswith("/"):
            dest += os.path.basename(source)
        out = os.path.join(root, dest)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copyfile(source, out)
        os.chmod(out, int(mode, 8))


def main():
    root, arch, auto = sys.argv[1:4]
    meta = json.load(sys.stdin)
    crate_dir, target_dir = meta["workspace_root"], meta["target_directory"]
    pkg = meta["packages"][0]
    deb = (pkg.get("metadata") or {}).get("deb")
    if not isinstance(deb, dict):
        fail("Cargo.toml has no [package.metadata.deb] table")
    name, version = pkg["name"], f"{pkg['version']}-{deb.get('revision', '1')}"

    copy_assets(deb, root, crate_dir, target_dir)
    doc = os.path.join(root, "usr/share/doc", name)
    os.makedirs(doc, exist_ok=True)
    with open(os.path.join(doc, "copyright"), "w", encoding="utf-8") as f:
        f.write(copyright_text(pkg, deb, crate_dir))

    files, size_kib = [], 0
    for d, _, names in sorted(os.walk(root)):
        for n in sorted(names):
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                files.append((hashlib.md5(f.read()).hexdigest(), os.path.relpath(p, root)))
            size_kib += (os.path.getsize(p) + 1023) // 1024
    depends = [d.strip() for d in need(deb, "depends", "[package.metadata.deb]").split(",")]
    depends = ", ".join(auto if d == "$auto" else d for d in depends if d != "$auto" or auto)
    control = [
        f"Package: {name}",
        f"Version: {version}",
        f"Architecture: {arch}",
        f"Section: {need(deb, 'section', '[package.metadata.deb]')}",
        f"Priority: {need(deb, 'priority', '[package.metadata.deb]')}",
        f"Maintainer: {need(deb, 'maintainer', '[package.metadata.deb]')}",
        f"Installed-Size: {size_kib}",
        f"Depends: {depends}",
    ]
    if pkg.get("homepage") or pkg.get("repository"):
        control.append(f"Homepage: {pkg.get('homepage') or pkg.get('repository')}")
    control.append(description(pkg, deb))
    os.makedirs(os.path.join(root, "DEBIAN"), exist_ok=True)
    with open(os.path.join(root, "DEBIAN/control"), "w", encoding="utf-8") as f:
        f.write("\n".join(control) + "\n")
    with open(os.path.join(root, "DEBIAN/md5sums"), "w", encoding="utf-8") as f:
        f.write("".join(f"{h}  {p}\n" for h, p in files))
    print(f"{name}_{version}_{arch}.deb")


if __name__ == "__main__":
    main()
