#!/usr/bin/env bash
# Puts the Apache ZooKeeper server jars (plus runtime dependencies and a logging backend)
# into target/zookeeper/lib/ so that the integration tests can run a real ZooKeeper
# without touching the network. Idempotent: does nothing if the jars are already there.
#
#   bash scripts/fetch-zookeeper.sh          # fetch if missing
#   FORCE=1 bash scripts/fetch-zookeeper.sh  # fetch again (e.g. after changing the pom)
#
# The version is pinned in tests/zookeeper/pom.xml. Tests look for the jars in
# $ZOOID_ZK_LIB if set, else <repo>/target/zookeeper/lib.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$repo_root/tests/zookeeper/pom.xml"
lib="$repo_root/target/zookeeper/lib"
stamp="$lib/.complete"

# The stamp records the pom's checksum, so editing the pom (e.g. a version bump) refetches.
pom_sum="$(sha256sum "$pom" | cut -d' ' -f1)"
version="$(sed -n 's:.*<zookeeper.version>\(.*\)</zookeeper.version>.*:\1:p' "$pom")"
if [ -z "$version" ]; then
    echo "fetch-zookeeper: cannot read <zookeeper.version> from $pom" >&2
    exit 1
fi

have_jars() {
    [ -f "$stamp" ] &&
        [ "$(cat "$stamp")" = "$pom_sum" ] &&
        [ -f "$lib/zookeeper-$version.jar" ] &&
        [ -f "$lib/zookeeper-jute-$version.jar" ] &&
        compgen -G "$lib/slf4j-simple-*.jar" >/dev/null &&
        compgen -G "$lib/metrics-core-*.jar" >/dev/null &&
        compgen -G "$lib/snappy-java-*.jar" >/dev/null
}

if [ -z "${FORCE:-}" ] && have_jars; then
    echo "fetch-zookeeper: ZooKeeper $version jars already in ${lib#"$repo_root"/}"
    exit 0
fi

command -v mvn >/dev/null 2>&1 || { echo "fetch-zookeeper: mvn (Apache Maven) is required" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "fetch-zookeeper: java is required to run the tests" >&2; exit 1; }

echo "fetch-zookeeper: fetching ZooKeeper $version jars into ${lib#"$repo_root"/} ..."
# Fetch into a scratch directory and swap it in, so an interrupted run never leaves a
# half-filled lib/ that looks complete.
tmp="$lib.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
mvn_log="$tmp/mvn.log"
if ! mvn -q -B -f "$pom" dependency:copy-dependencies \
    -DincludeScope=runtime \
    -DoutputDirectory="$tmp" >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    echo "fetch-zookeeper: Maven failed (see above)" >&2
    exit 1
fi
rm -f "$mvn_log"
echo "$pom_sum" >"$tmp/.complete"
rm -rf "$lib"
mkdir -p "$(dirname "$lib")"
mv "$tmp" "$lib"
trap - EXIT
echo "fetch-zookeeper: $(ls "$lib"/*.jar | wc -l) jars in ${lib#"$repo_root"/}"
