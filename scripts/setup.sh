#!/usr/bin/env bash
# Installs what the test suite needs besides the Rust toolchain: a JDK 17 and Maven (ZooKeeper
# servers, the jar), a C and C++ compiler, valgrind and pkg-config (C ABI tests), openssl (TLS
# tests), an MIT Kerberos KDC with the GSSAPI headers and libclang (the `kerberos` feature and its
# test), and the S3-compatible test server moto (durable records). Called by scripts/test-all.sh
# and .ci/run; idempotent: installs only what is missing.
#
#   bash scripts/setup.sh           # install what is missing (apt-get as root, or through sudo -n)
#   bash scripts/setup.sh --check   # only say what is missing; exit 1 if anything is
#
# Debian / Ubuntu packages through apt-get. Without root (and without password-less sudo), or
# without apt-get, it prints exactly what to install and fails.
set -euo pipefail

check_only=0
case "${1:-}" in
    --check) check_only=1 ;;
    "") ;;
    *)
        echo "usage: bash scripts/setup.sh [--check]" >&2
        exit 2
        ;;
esac

if ! command -v cargo >/dev/null; then
    echo "setup: cargo (Rust) is required: https://rustup.rs" >&2
    exit 1
fi

# Debian package per missing command or file.
need=()
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v cc >/dev/null || need+=(gcc)
command -v c++ >/dev/null || need+=(g++)
command -v valgrind >/dev/null || need+=(valgrind)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v openssl >/dev/null || need+=(openssl)
# Kerberos test: a KDC on loopback, and the GSSAPI headers + libclang for the kerberos feature.
command -v krb5kdc >/dev/null || need+=(krb5-kdc)
command -v kadmin.local >/dev/null || need+=(krb5-admin-server)
command -v kinit >/dev/null || need+=(krb5-user)
[ -f /usr/include/gssapi/gssapi.h ] || need+=(libkrb5-dev)
# bindgen loads libclang itself (libclang.so or libclang-N.so); libclang-cpp (the C++ interface,
# often installed alone) is not it.
any_exists() {
    local f
    for f in "$@"; do [ -e "$f" ] && return 0; done
    return 1
}
any_exists /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
    /usr/lib/*-linux-gnu/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so* ||
    need+=(libclang-dev)
# Portable natives (scripts/build-natives.sh, tests/natives.rs): aarch64 cross gcc and qemu-user.
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v file >/dev/null || need+=(file)
command -v readelf >/dev/null || need+=(binutils)
# moto comes from PyPI, through pip.
command -v moto_server >/dev/null || python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)

if [ ${#need[@]} -gt 0 ]; then
    if [ "$check_only" = 1 ]; then
        echo "setup: missing Debian packages: ${need[*]}"
    else
        if [ "$(id -u)" = 0 ]; then
            as_root=()
        elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            as_root=(sudo -n)
        else
            as_root=(none)
        fi
        if ! command -v apt-get >/dev/null || [ "${as_root[*]}" = none ]; then
            echo "setup: missing Debian packages: ${need[*]}" >&2
            echo "setup: install them as root, then run this again:" >&2
            echo "  apt-get update && apt-get install -y ${need[*]}" >&2
            exit 1
        fi
        echo "setup: installing ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        "${as_root[@]}" apt-get update -qq
        "${as_root[@]}" apt-get install -y -qq "${need[@]}"
    fi
fi

# An S3-compatible server for the durable-record tests (cli/tests/durable), which honours
# conditional writes (If-Match / If-None-Match); the tests verify that it does.
moto='moto[server]>=5.1'
if ! command -v moto_server >/dev/null; then
    if [ "$check_only" = 1 ]; then
        echo "setup: missing moto_server: python3 -m pip install '$moto'"
        need+=(moto)
    else
        echo "setup: installing $moto"
        # A system Python (PEP 668) refuses a global install: fall back to the user's site.
        python3 -m pip install -q "$moto" 2>/dev/null ||
            python3 -m pip install -q --user --break-system-packages "$moto"
        if ! command -v moto_server >/dev/null; then
            # scripts/test-all.sh puts the user's bin directory on PATH.
            user_bin="$(python3 -m site --user-base)/bin"
            echo "setup: moto_server is in $user_bin; add it to PATH to run the tests by hand" >&2
        fi
    fi
fi

if [ "$check_only" = 1 ] && [ ${#need[@]} -gt 0 ]; then
    exit 1
fi
echo "setup: everything the tests need is installed"
