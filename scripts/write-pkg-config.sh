#!/usr/bin/env bash
# Writes zooid.pc, the pkg-config file that lets a C or C++ build find zooid's header and its
# shared or static library:
#
#   bash scripts/write-pkg-config.sh --prefix /usr/local > /usr/local/lib/pkgconfig/zooid.pc
#   # or, straight from a build tree (no install step):
#   bash scripts/write-pkg-config.sh --libdir "$PWD/target/release" \
#       --includedir "$PWD/include" --out target/release/pkgconfig/zooid.pc
#   PKG_CONFIG_PATH=target/release/pkgconfig cc app.c $(pkg-config --cflags --libs zooid)
#   # or relocatable, for a tarball (scripts/release-c.sh): paths relative to the .pc file
#   bash scripts/write-pkg-config.sh --prefix '${pcfiledir}/../..' --out lib/pkgconfig/zooid.pc
#
# Options: --prefix DIR (default /usr/local), --libdir DIR (default PREFIX/lib),
# --includedir DIR (default PREFIX/include), --out FILE (default: standard output).
#
# `pkg-config --libs zooid` links the shared library (libzooid.so) when both are in libdir;
# for the static one, link libdir/libzooid.a by path and add `pkg-config --static --libs-only-l
# zooid` without -lzooid: Libs.private lists the system libraries the Rust standard library
# needs (rustc --print native-static-libs, on Linux with glibc).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix=/usr/local
libdir=
includedir=
out=
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --libdir) libdir="$2"; shift 2 ;;
        --includedir) includedir="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "write-pkg-config: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
# pkg-config variables are expanded by pkg-config itself: keep ${prefix} symbolic by default.
[ -n "$libdir" ] || libdir='${prefix}/lib'
[ -n "$includedir" ] || includedir='${prefix}/include'

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo_root/Cargo.toml" | head -1)"
if [ -z "$version" ]; then
    echo "write-pkg-config: cannot read the version from Cargo.toml" >&2
    exit 1
fi

pc="prefix=$prefix
libdir=$libdir
includedir=$includedir

Name: zooid
Description: Unique integer IDs for distributed workers through Apache ZooKeeper (C API)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lzooid
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
"
if [ -n "$out" ]; then
    mkdir -p "$(dirname "$out")"
    printf '%s' "$pc" >"$out"
else
    printf '%s' "$pc"
fi
