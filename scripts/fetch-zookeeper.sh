#!/usr/bin/env bash
# Puts Apache ZooKeeper server jars (plus runtime dependencies and a logging backend) under
# target/zookeeper/ so that the integration tests can run real ZooKeeper servers without
# touching the network. Idempotent: does nothing for a version whose jars are already there.
#
#   bash scripts/fetch-zookeeper.sh                 # the suite's server -> target/zookeeper/lib
#   bash scripts/fetch-zookeeper.sh 3.4.14 3.6.4    # given versions -> target/zookeeper/<v>/lib
#   bash scripts/fetch-zookeeper.sh matrix          # every version of tests/compat/versions.txt
#   FORCE=1 bash scripts/fetch-zookeeper.sh ...     # fetch again (e.g. after changing a pom)
#
# The suite's version is pinned in tests/zookeeper/pom.xml; tests look for its jars in
# $ZOOID_ZK_LIB if set, else <repo>/target/zookeeper/lib. The compatibility tests (tests/compat)
# look for version V in $ZOOID_ZK_ROOT/V/lib, else <repo>/target/zookeeper/V/lib; their jars come
# from tests/compat/pom.xml with the version given on the command line.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

need_tools() {
    command -v mvn >/dev/null 2>&1 || { echo "fetch-zookeeper: mvn (Apache Maven) is required" >&2; exit 1; }
    command -v java >/dev/null 2>&1 || { echo "fetch-zookeeper: java is required to run the tests" >&2; exit 1; }
}

# mvn_copy POM OUTDIR [-Dprop=value...]: the runtime dependencies of POM into OUTDIR.
mvn_copy() {
    local pom="$1" out="$2"
    shift 2
    local log="$out/mvn.log"
    if ! mvn -q -B -f "$pom" "$@" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$out" >"$log" 2>&1; then
        cat "$log" >&2
        echo "fetch-zookeeper: Maven failed (see above)" >&2
        return 1
    fi
    rm -f "$log"
}

# Logging configuration for the servers whose backend is log4j 1.2 / reload4j (3.4) or logback
# (3.8): the harness puts lib/ itself on the class path and sets -Dzooid.zk.log.level.
write_logging_config() {
    local out="$1"
    cat >"$out/log4j.properties" <<'LOG4J'
# Written by scripts/fetch-zookeeper.sh: server log to stderr (the harness's log file).
log4j.rootLogger=${zooid.zk.log.level}, STDERR
log4j.appender.STDERR=org.apache.log4j.ConsoleAppender
log4j.appender.STDERR.Target=System.err
log4j.appender.STDERR.layout=org.apache.log4j.PatternLayout
log4j.appender.STDERR.layout.ConversionPattern=%d{HH:mm:ss,SSS} [%t] %-5p %c{1} - %m%n
LOG4J
    cat >"$out/logback.xml" <<'LOGBACK'
<!-- Written by scripts/fetch-zookeeper.sh: server log to stderr (the harness's log file). -->
<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} [%thread] %-5level %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="${zooid.zk.log.level:-info}"><appender-ref ref="STDERR"/></root>
</configuration>
LOGBACK
}

# install TMP LIB: swaps the filled scratch directory in, so an interrupted run never leaves a
# half-filled lib/ that looks complete.
install_dir() {
    local tmp="$1" lib="$2"
    rm -rf "$lib"
    mkdir -p "$(dirname "$lib")"
    mv "$tmp" "$lib"
}

# The suite's server, pinned in tests/zookeeper/pom.xml, into target/zookeeper/lib.
fetch_default() {
    local pom="$repo_root/tests/zookeeper/pom.xml"
    local lib="$repo_root/target/zookeeper/lib"
    local stamp="$lib/.complete"
    # The stamp records the pom's checksum, so editing the pom (e.g. a version bump) refetches.
    local pom_sum version
    pom_sum="$(sha256sum "$pom" | cut -d' ' -f1)"
    version="$(sed -n 's:.*<zookeeper.version>\(.*\)</zookeeper.version>.*:\1:p' "$pom")"
    if [ -z "$version" ]; then
        echo "fetch-zookeeper: cannot read <zookeeper.version> from $pom" >&2
        exit 1
    fi
    if [ -z "${FORCE:-}" ] && [ -f "$stamp" ] &&
        [ "$(cat "$stamp")" = "$pom_sum" ] &&
        [ -f "$lib/zookeeper-$version.jar" ] &&
        [ -f "$lib/zookeeper-jute-$version.jar" ] &&
        compgen -G "$lib/slf4j-simple-*.jar" >/dev/null &&
        compgen -G "$lib/metrics-core-*.jar" >/dev/null &&
        compgen -G "$lib/snappy-java-*.jar" >/dev/null; then
        echo "fetch-zookeeper: ZooKeeper $version jars already in ${lib#"$repo_root"/}"
        return 0
    fi
    need_tools
    echo "fetch-zookeeper: fetching ZooKeeper $version jars into ${lib#"$repo_root"/} ..."
    local tmp="$lib.tmp.$$"
    rm -rf "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp"
    mvn_copy "$pom" "$tmp"
    echo "$pom_sum" >"$tmp/.complete"
    install_dir "$tmp" "$lib"
    trap - EXIT
    echo "fetch-zookeeper: $(ls "$lib"/*.jar | wc -l) jars in ${lib#"$repo_root"/}"
}

# One server version from tests/compat/pom.xml into target/zookeeper/<version>/lib.
fetch_version() {
    local version="$1"
    case "$version" in
    3.[0-9]*.[0-9]*) ;;
    *)
        echo "fetch-zookeeper: '$version' is not a ZooKeeper version such as 3.4.14 (or 'matrix')" >&2
        exit 2
        ;;
    esac
    local pom="$repo_root/tests/compat/pom.xml"
    local lib="$repo_root/target/zookeeper/$version/lib"
    local stamp="$lib/.complete"
    local pom_sum
    pom_sum="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [ -z "${FORCE:-}" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pom_sum" ] &&
        [ -f "$lib/zookeeper-$version.jar" ]; then
        echo "fetch-zookeeper: ZooKeeper $version jars already in ${lib#"$repo_root"/}"
        return 0
    fi
    need_tools
    echo "fetch-zookeeper: fetching ZooKeeper $version jars into ${lib#"$repo_root"/} ..."
    local tmp="$lib.tmp.$$"
    rm -rf "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp"
    mvn_copy "$pom" "$tmp" "-Dzookeeper.version=$version"
    # No slf4j backend came with the server (3.5 to 3.7 declare log4j optional): add
    # slf4j-simple of the same version as the slf4j-api the server resolved to.
    if ! compgen -G "$tmp/slf4j-log4j12-*.jar" >/dev/null &&
        ! compgen -G "$tmp/slf4j-reload4j-*.jar" >/dev/null &&
        ! compgen -G "$tmp/logback-classic-*.jar" >/dev/null; then
        local api
        api="$(cd "$tmp" && ls slf4j-api-*.jar | sed -n 's/^slf4j-api-\(.*\)\.jar$/\1/p' | head -n1)"
        if [ -z "$api" ]; then
            echo "fetch-zookeeper: ZooKeeper $version resolved no slf4j-api jar" >&2
            exit 1
        fi
        mvn_copy "$pom" "$tmp" "-Dzookeeper.version=$version" "-Dslf4j.simple.version=$api"
    fi
    write_logging_config "$tmp"
    echo "$pom_sum" >"$tmp/.complete"
    install_dir "$tmp" "$lib"
    trap - EXIT
    echo "fetch-zookeeper: $(ls "$lib"/*.jar | wc -l) jars in ${lib#"$repo_root"/}"
}

if [ "$#" -eq 0 ]; then
    fetch_default
    exit 0
fi
for arg in "$@"; do
    if [ "$arg" = matrix ]; then
        while read -r version; do
            fetch_version "$version"
        done < <(grep -v '^\s*\(#\|$\)' "$repo_root/tests/compat/versions.txt")
    else
        fetch_version "$arg"
    fi
done
