//! zooid depends on no link-time registration: C programs linked to a copy of `libzooid.a` whose
//! registrations were all taken out open sessions on a real ZooKeeper (plain, and TLS with SASL
//! DIGEST-MD5), create a category, take and push IDs.
//!
//! Crates register things in linkme distributed slices (a section the linker gathers): the tokio
//! spawner zookeeper-client finds through `asyncs::spawn`, rsasl's mechanisms. A C program's link
//! takes from `libzooid.a` only the members it needs, so a registration in a member nothing
//! references is left out, and whether its member comes along depends on which member first
//! defines some unrelated symbol (a `core::panicking::assert_failed` instantiation pulled in
//! spawns-compat's in one release build): the outcome changes from build to build. This test
//! takes the worst case for certain. Every registration in the archive, except the slices'
//! own definitions, is moved into a section the slice does not gather; the code and data stay,
//! so what names them directly still links. Before zooid named the spawner
//! (`Connector::with_runtime`, vendor/README.md), such a program failed on open with
//! `ZOOID_STATUS_PANIC`: "no spawner".

use zooid_test_support as support;
use zooid_test_support::c as harness;
use zooid_test_support::security::servers::TlsServer;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use harness::{run_ok, Link};
use support::ZkServer;

/// A binutils tool's stdout, the tool run in `dir` (not echoed: listings of ~1,400 members).
fn tool(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} (binutils): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed with {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The members of the archive `lib` named in `readelf`'s "File: LIB(MEMBER)" headers, each with
/// the lines that follow its header.
fn per_member(listing: &str) -> Vec<(&str, Vec<&str>)> {
    let mut members: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in listing.lines() {
        let header = line
            .strip_prefix("File: ")
            .and_then(|file| file.strip_suffix(')'))
            .and_then(|file| file.rsplit_once('('));
        match (header, members.last_mut()) {
            (Some((_, member)), _) => members.push((member, Vec::new())),
            (None, Some((_, lines))) => lines.push(line),
            (None, None) => {}
        }
    }
    members
}

/// `libzooid.a` (the test build's) with its linkme registrations taken out of their slices:
/// `target/<profile>/c-tests/unregistered/libzooid.a`, made once per test binary.
fn unregistered_archive() -> &'static Path {
    static ARCHIVE: OnceLock<PathBuf> = OnceLock::new();
    ARCHIVE.get_or_init(|| {
        let lib = harness::library(Link::Static);
        let dir = harness::out_dir().join("unregistered");
        let members_dir = dir.join("members");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&members_dir).expect("create the members directory");
        let lib_arg = lib.to_str().expect("a UTF-8 path to libzooid.a");
        let members: Vec<String> = tool(&members_dir, "ar", &["t", lib_arg])
            .lines()
            .map(str::to_string)
            .collect();
        let mut unique = members.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            members.len(),
            "libzooid.a has members of the same name: `ar x` would keep only one"
        );
        tool(&members_dir, "ar", &["x", lib_arg]);

        // A slice's definition refers to its section's bounds; it stays.
        let defines_slice: Vec<String> = tool(&members_dir, "nm", &["-u", "-A", lib_arg])
            .lines()
            .filter(|line| line.contains("__start_linkme_"))
            .filter_map(|line| line.split(':').nth(1).map(str::to_string))
            .collect();
        let sections = tool(&members_dir, "readelf", &["-SW", lib_arg]);
        let mut unregistered = Vec::new();
        for (member, lines) in per_member(&sections) {
            let registrations: Vec<&str> = lines
                .iter()
                .flat_map(|line| line.split_whitespace())
                .filter(|word| word.starts_with("linkme_"))
                .collect();
            if registrations.is_empty() || defines_slice.iter().any(|m| m == member) {
                continue;
            }
            let mut objcopy = Command::new("objcopy");
            for section in &registrations {
                let slice = section.trim_start_matches("linkme_");
                objcopy
                    .arg("--rename-section")
                    .arg(format!("{section}=unregistered_{slice}"));
            }
            run_ok(objcopy.arg(member).current_dir(&members_dir));
            unregistered.push(format!("{member}: {}", registrations.join(" ")));
        }
        eprintln!(
            "registrations taken out of their slices:\n  {}",
            unregistered.join("\n  ")
        );
        assert!(
            unregistered
                .iter()
                .any(|m| m.starts_with("spawns_compat") && m.contains("linkme_COMPATS")),
            "the tokio spawner's registration (spawns-compat, slice COMPATS) was not found: \
             {unregistered:?}"
        );

        // GNU ar told the object format: otherwise it hands rustc's objects (which carry
        // bitcode) to an installed LLVM LTO plugin, which fails on them and leaves their
        // symbols out of the archive's index.
        let format = tool(&members_dir, "objdump", &["-f", &members[0]])
            .split("file format")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .expect("objdump names the object format");
        let archive = dir.join("libzooid.a");
        let target = format!("--target={format}");
        let archive_arg = archive
            .to_str()
            .expect("a UTF-8 path to the target directory");
        let mut ar_args = vec![target.as_str(), "rcsD", archive_arg];
        ar_args.extend(members.iter().map(String::as_str));
        tool(&members_dir, "ar", &ar_args);
        std::fs::remove_dir_all(&members_dir).expect("remove the extracted members");
        archive
    })
}

/// `tests/c/NAME.c` linked to the unregistered archive (and the system libraries a static
/// libzooid needs).
fn program(name: &str) -> PathBuf {
    let archive = unregistered_archive();
    let exe = harness::out_dir().join(format!("{name}-unregistered"));
    run_ok(
        Command::new(harness::cc())
            .args([
                "-std=c11",
                "-D_POSIX_C_SOURCE=200809L",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-g",
                "-pthread",
            ])
            .arg("-I")
            .arg(harness::repo().join("include"))
            .arg("-I")
            .arg(harness::repo().join("tests/c"))
            .arg(harness::repo().join(format!("tests/c/{name}.c")))
            .arg("-o")
            .arg(&exe)
            .arg(archive)
            .args(harness::NATIVE_STATIC_LIBS),
    );
    assert!(!harness::needs_shared_zooid(&exe));
    exe
}

#[test]
fn a_static_link_without_registrations_connects_takes_and_pushes() {
    support::init_tracing();
    let zk = ZkServer::start();
    let out = run_ok(
        Command::new(program("worked_example"))
            .arg(zk.connect_string())
            .arg("/c-static/unregistered"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("worked example OK"), "{stdout}");
}

/// The same over TLS with SASL DIGEST-MD5, whose mechanism rsasl would otherwise find through
/// its registration (zookeeper-client names it).
#[test]
fn a_static_link_without_registrations_authenticates_with_sasl() {
    support::init_tracing();
    let server =
        TlsServer::start_with_sasl("need", &[("alice", "alice-pw-1"), ("bob", "bob-pw-2")]);
    let client = server.ca.issue("c-client");
    let category = "/c-static/unregistered-sasl";
    let out = run_ok(
        Command::new(program("security"))
            .arg(server.secure_connect_string())
            .arg(&server.ca.cert)
            .arg(&client.cert)
            .arg(&client.key)
            .arg(category),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("security OK"), "{stdout}");
    assert!(
        stdout.contains(&format!("not authorized on {category} as sasl:bob")),
        "{stdout}"
    );
}
