#!/usr/bin/env bash
# Packs the C release from the portable libraries scripts/build-natives.sh wrote: per platform,
#
#   target/release-c/zooid-<version>-linux-<arch>.tar.gz
#     zooid-<version>-linux-<arch>/include/zooid.h
#     zooid-<version>-linux-<arch>/lib/libzooid.so, lib/libzooid.a
#     zooid-<version>-linux-<arch>/lib/pkgconfig/zooid.pc   (relocatable: prefix=${pcfiledir}/../..)
#   target/release-c/zooid-<version>-linux-<arch>-debug.tar.gz
#     zooid-<version>-linux-<arch>/lib/libzooid.so.debug    (unpack over the above for gdb)
#   target/release-c/SHA256SUMS
#
# Use from wherever the tarball was unpacked:
#   PKG_CONFIG_PATH=zooid-<version>-linux-<arch>/lib/pkgconfig cc app.c $(pkg-config --cflags --libs zooid)
#
#   bash scripts/release-c.sh [--natives DIR] [--out DIR]
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
natives="$repo_root/target/natives"
out="$repo_root/target/release-c"
while [ $# -gt 0 ]; do
    case "$1" in
        --natives) natives="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "release-c: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo_root/Cargo.toml" | head -1)"
[ -n "$version" ] || { echo "release-c: cannot read the version from Cargo.toml" >&2; exit 1; }

shopt -s nullglob
platforms=("$natives"/linux-*/)
[ ${#platforms[@]} -gt 0 ] || {
    echo "release-c: no platform in $natives: run bash scripts/build-natives.sh first" >&2
    exit 1
}

mkdir -p "$out"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
tarballs=()
for dir in "${platforms[@]}"; do
    platform="$(basename "$dir")"
    for file in libzooid.so libzooid.a libzooid.so.debug; do
        [ -f "$dir/$file" ] || { echo "release-c: $dir$file is missing" >&2; exit 1; }
    done
    name="zooid-$version-$platform"
    root="$stage/$name"
    mkdir -p "$root/include" "$root/lib/pkgconfig" "$stage/debug/$name/lib"
    cp "$repo_root/include/zooid.h" "$root/include/"
    cp "$dir/libzooid.so" "$dir/libzooid.a" "$root/lib/"
    cp "$dir/libzooid.so.debug" "$stage/debug/$name/lib/"
    # shellcheck disable=SC2016 # ${pcfiledir} is for pkg-config to expand
    bash "$repo_root/scripts/write-pkg-config.sh" --prefix '${pcfiledir}/../..' --out "$root/lib/pkgconfig/zooid.pc"
    tar -C "$stage" --owner=0 --group=0 --sort=name -czf "$out/$name.tar.gz" "$name"
    tar -C "$stage/debug" --owner=0 --group=0 --sort=name -czf "$out/$name-debug.tar.gz" "$name"
    tarballs+=("$name.tar.gz" "$name-debug.tar.gz")
done
(cd "$out" && sha256sum "${tarballs[@]}" >SHA256SUMS)
ls -l "$out"
