#!/usr/bin/env bash
# The whole test suite, from a fresh clone: fetches what the tests need (ZooKeeper server jars,
# crates, Maven artifacts), then runs the Rust tests (unit, property, embedded stores, real
# ZooKeeper, C ABI incl. valgrind, fault suite on a 3-server ensemble) and the Java tests
# (JUnit on a real ZooKeeper, the Hadoop local-runner job).
#
#   bash scripts/test-all.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

step "ZooKeeper server jars"
bash scripts/fetch-zookeeper.sh

step "S3-compatible test server (moto) for the durable-record tests"
command -v moto_server >/dev/null || python3 -m pip install -q 'moto[server]>=5.1'

step "Rust: build"
cargo build --all-targets --locked

step "Rust: tests (unit, property, stores, ZooKeeper, C ABI, faults)"
# Test binaries run one after another; tests inside a binary in parallel (2 threads).
cargo test --locked -- --test-threads=2

step "Rust: Kerberos (GSSAPI) against a KDC on loopback (feature kerberos)"
cargo test --locked --features kerberos --test kerberos

# Portable natives (issue 21): the libraries the jar bundles and the C release ships.
step "Natives: linux x86_64 + aarch64 for glibc 2.17 (zig); symbol versions; C tests on aarch64 under qemu"
bash scripts/build-natives.sh
cargo test --locked --test natives -- --ignored --test-threads=1

if [ -f java/pom.xml ]; then
    step "Java: native library (release) and jar, JUnit + Hadoop local runner"
    cargo build --release --lib --locked
    mvn -B -ntp -f java/pom.xml verify
    cat java/zooid/target/take-id-benchmark.txt
fi

step "all tests passed"
