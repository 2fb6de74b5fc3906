#!/usr/bin/env bash
# The whole test suite, from a fresh clone on a machine with only the Rust toolchain (and a
# Debian-style system): installs what the tests need (scripts/setup.sh: JDK, Maven, C compilers,
# valgrind, Kerberos, moto), fetches the ZooKeeper server jars, then runs the Rust tests of the
# workspace (unit, property, embedded stores, real ZooKeeper, recipes, load, C ABI incl. valgrind,
# the fault suite on a 3-server ensemble, the CLI, the keeper and durable records) and the Java
# tests (JUnit on a real ZooKeeper, the Hadoop local-runner job).
#
#   bash scripts/test-all.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> [%d s] %s\n' "$SECONDS" "$*"; }

step "Set-up: system packages and moto (scripts/setup.sh)"
# moto_server may land in the user's Python bin directory (scripts/setup.sh).
PATH="$PATH:$(python3 -m site --user-base 2>/dev/null || echo "$HOME/.local")/bin"
export PATH
bash scripts/setup.sh

step "ZooKeeper server jars (the suite's 3.9 server, and 3.4 to 3.9 for tests/compat)"
bash scripts/fetch-zookeeper.sh
bash scripts/fetch-zookeeper.sh matrix

step "Rust: build (workspace: library, CLI, test support)"
cargo build --workspace --all-targets --locked
# The fault suite's keeper rows run this `zooid` (built above with the workspace's features).
export ZOOID_CLI="$PWD/target/debug/zooid"

step "Rust: tests (one binary per group: unit, embedded, zookeeper, recipes, load, c, faults, compat, cli, keeper, durable)"
# Test binaries run one after another; tests inside a binary in parallel (2 threads). The
# deterministic simulation (tests/sim) runs as many seeds as fit in 3 minutes (a longer run:
# scripts/sim-soak.sh).
ZOOID_SIM_SECONDS="${ZOOID_SIM_SECONDS:-180}" cargo test --workspace --locked -- --test-threads=2

step "Rust: the library alone (no S3): its unit tests"
cargo test -p zooid --lib --locked -- --test-threads=2

step "Rust: Kerberos (GSSAPI) against a KDC on loopback (feature kerberos)"
cargo test -p zooid-cli --locked --features kerberos --test kerberos

# Portable natives (issue 21): the libraries the jar bundles and the C release ships.
step "Natives: linux x86_64 + aarch64 for glibc 2.17 (zig); symbol versions; C tests on aarch64 under qemu"
bash scripts/build-natives.sh
cargo test --locked --test natives -- --ignored --test-threads=1

if [ -f java/pom.xml ]; then
    step "Java: the jar (bundling target/natives), JUnit, the Hadoop local runner and the YARN job"
    mvn -B -ntp -f java/pom.xml verify
    cat java/zooid/target/take-id-benchmark.txt
fi

step "all tests passed in $SECONDS s"
