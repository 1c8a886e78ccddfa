#!/usr/bin/env bash
# Builds target/debian/vramscope_<version>-1_<arch>.deb from Cargo.toml's [package.metadata.deb]
# (cargo-deb's format) without cargo-deb: the release build (a no-op when it is current), the
# tree laid out by deb_tree.py, dpkg-deb. Needs cargo, python3, dpkg-deb and dpkg-shlibdeps
# (Debian: dpkg-dev). Prints the package's path; `--no-build` packages the binary as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022

for tool in cargo python3 dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "packaging/deb.sh: $tool not found (Debian: apt-get install dpkg-dev python3)" >&2; exit 2; }
done
case "${1:-}" in
  --no-build) ;;
  "") cargo build --release --locked ;;
  *) echo "packaging/deb.sh: unknown argument $1 (only --no-build)" >&2; exit 2 ;;
esac

meta="$(cargo metadata --no-deps --format-version 1 --locked)"
target="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta")"
bin="$target/release/vramscope"
[ -x "$bin" ] || { echo "packaging/deb.sh: $bin not built (run without --no-build)" >&2; exit 2; }

# $auto, as cargo-deb computes it: dpkg-shlibdeps over the binary (it wants a debian/control)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/shlibs/debian" && touch "$work/shlibs/debian/control"
auto="$(cd "$work/shlibs" && dpkg-shlibdeps -O "$bin" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
[ -n "$auto" ] || { echo "packaging/deb.sh: dpkg-shlibdeps found no dependencies for $bin" >&2; exit 2; }

arch="$(dpkg --print-architecture)"
name="$(python3 packaging/deb_tree.py "$work/root" "$arch" "$auto" <<<"$meta")"
mkdir -p "$target/debian"
out="$target/debian/$name"
dpkg-deb --build --root-owner-group "$work/root" "$out" >/dev/null
echo "$out"
