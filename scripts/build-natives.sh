#!/usr/bin/env bash
# Builds the portable zooid libraries: the library crate (cdylib + staticlib, cargo profile
# `natives`: release with fat LTO and one codegen unit; default features: no Kerberos) for Linux
# x86_64 and aarch64 against glibc 2.17, with cargo-zigbuild (zig as the cross linker and C
# compiler, glibc 2.17 stubs from zig). For each platform:
#
#   target/natives/linux-<arch>/libzooid.so        stripped; .gnu_debuglink names the file below
#   target/natives/linux-<arch>/libzooid.so.debug  its debug info (objcopy --only-keep-debug)
#   target/natives/linux-<arch>/libzooid.a         static library: one object, no debug info or bitcode
#
# The Java build bundles every linux-<arch>/libzooid.so of that directory (java/zooid/pom.xml);
# scripts/release-c.sh packs the C release from it; tests/natives.rs checks it.
#
#   bash scripts/build-natives.sh                  # both platforms
#   bash scripts/build-natives.sh aarch64          # one
#   bash scripts/build-natives.sh --out DIR x86_64
#
# Needs: rustup, pip (installs ziglang and cargo-zigbuild when missing), binutils (objcopy, ld)
# for each architecture: the host's for its own, the cross ones for the other (Debian:
# binutils-aarch64-linux-gnu, which gcc-aarch64-linux-gnu pulls in).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

glibc=2.17
out="$repo_root/target/natives"
arches=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
        x86_64|aarch64) arches+=("$1"); shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "build-natives: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#arches[@]} -gt 0 ] || arches=(x86_64 aarch64)
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"

say() { printf 'build-natives: %s\n' "$*"; }

# The tools: zig and cargo-zigbuild both come as wheels from PyPI.
if ! command -v cargo-zigbuild >/dev/null || ! python3 -c 'import ziglang' 2>/dev/null; then
    say "installing ziglang and cargo-zigbuild (pip)"
    python3 -m pip install -q ziglang cargo-zigbuild
fi
installed_targets="$(rustup target list --installed)"
for arch in "${arches[@]}"; do
    grep -qx "$arch-unknown-linux-gnu" <<<"$installed_targets" || rustup target add "$arch-unknown-linux-gnu"
done

# A binutils tool (objcopy, ld) for `arch` ELF files: the cross one if installed, else the
# host's when the host is that architecture.
binutil() {
    local tool="$1" arch="$2"
    if command -v "$arch-linux-gnu-$tool" >/dev/null; then
        echo "$arch-linux-gnu-$tool"
    elif [ "$arch" = "$(uname -m)" ] && command -v "$tool" >/dev/null; then
        echo "$tool"
    else
        echo "build-natives: no $tool for $arch ELF files: install binutils-$arch-linux-gnu" >&2
        return 1
    fi
}

started=$SECONDS
for arch in "${arches[@]}"; do
    triple="$arch-unknown-linux-gnu"
    objcopy="$(binutil objcopy "$arch")"
    ld="$(binutil ld "$arch")"
    say "$triple, glibc $glibc"
    arch_started=$SECONDS
    cargo zigbuild --locked --profile natives --lib -p zooid --target "$triple.$glibc"
    built="$target_dir/$triple/natives"
    dest="$out/linux-$arch"
    mkdir -p "$dest"
    rm -f "$dest/libzooid.so" "$dest/libzooid.so.debug" "$dest/libzooid.a"
    # Debug info to its own file, then a stripped library that names it (gdb and perf find the
    # .debug file next to the library, or under /usr/lib/debug).
    "$objcopy" --only-keep-debug "$built/libzooid.so" "$dest/libzooid.so.debug"
    "$objcopy" --strip-all "$built/libzooid.so" "$dest/libzooid.so.stripped"
    (cd "$dest" && "$objcopy" --add-gnu-debuglink=libzooid.so.debug libzooid.so.stripped libzooid.so)
    rm "$dest/libzooid.so.stripped"
    # The static library as one relocatable object: a C program's link then takes all of zooid,
    # never only the archive members it references, so a link-time registration no code names
    # cannot be left out. zooid relies on none (it names the tokio spawner and the SASL
    # mechanisms; tests/c/static_link.rs links against an archive without them); this keeps a
    # future dependency's registration from depending on the link.
    work="$(mktemp -d)"
    "$ld" -r --whole-archive "$built/libzooid.a" -o "$work/zooid.o"
    # No debug info, and no LLVM bitcode (.llvmbc, .llvmcmd: what the Rust standard library's
    # objects carry for LTO; a C linker does not read it, and it was most of the archive).
    "$objcopy" --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd "$work/zooid.o"
    # zig's llvm-ar: GNU ar hands objects to its LTO plugins (LLVMgold of an older LLVM where
    # libclang-dev is installed), which abort on rustc's object.
    python3 -m ziglang ar rcsD "$dest/libzooid.a" "$work/zooid.o"
    rm -rf "$work"
    say "linux-$arch done in $((SECONDS - arch_started)) s:"
    ls -l "$dest" | sed 's/^/    /'
done
say "all done in $((SECONDS - started)) s, in $out"
