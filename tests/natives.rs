//! The portable native libraries that `scripts/build-natives.sh` writes (to `target/natives`, or
//! `$ZOOID_NATIVES_DIR`) and the Java build bundles: each needs glibc 2.17 at most, is stripped
//! with its debug info beside it and within a size budget, and works: the aarch64 library runs the
//! C test programs under qemu-user against a real ZooKeeper, linked from the C release tarball as
//! a user would.
//!
//! These tests need the cross-built libraries, `readelf`, `qemu-aarch64` and
//! `aarch64-linux-gnu-gcc`, so a plain `cargo test` skips them (`#[ignore]`); the test command
//! runs them after building the libraries:
//!
//! ```text
//! bash scripts/build-natives.sh
//! cargo test --test natives -- --ignored
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use zooid_test_support::c::{self as harness, run_ok, NATIVE_STATIC_LIBS};
use zooid_test_support::ZkServer;

/// The newest glibc symbol version the libraries may need: CentOS/RHEL 7's.
const GLIBC_FLOOR: (u32, u32) = (2, 17);

/// The platforms the build must produce, with `readelf -h`'s name for their machine.
const PLATFORMS: [(&str, &str); 2] = [
    ("linux-x86_64", "Advanced Micro Devices X86-64"),
    ("linux-aarch64", "AArch64"),
];

/// Where the QEMU user-mode emulator finds the aarch64 loader and C library (Debian's
/// libc6-arm64-cross, installed with gcc-aarch64-linux-gnu).
const AARCH64_SYSROOT: &str = "/usr/aarch64-linux-gnu";

fn natives_dir() -> PathBuf {
    std::env::var_os("ZOOID_NATIVES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| harness::repo().join("target/natives"))
}

/// `DIR/<platform>/<file>`, which must exist.
fn native_file(platform: &str, file: &str) -> PathBuf {
    let path = natives_dir().join(platform).join(file);
    assert!(
        path.is_file(),
        "{} is missing: run `bash scripts/build-natives.sh` first",
        path.display()
    );
    path
}

fn readelf(args: &[&str], file: &Path) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run readelf (binutils): {e}"));
    assert!(
        out.status.success(),
        "readelf {args:?} {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `GLIBC_*` versions `lib` needs, from its version-needs section (`readelf -V`).
fn glibc_versions(lib: &Path) -> Vec<String> {
    let text = readelf(&["-V", "--wide"], lib);
    let mut versions: Vec<String> = text
        .split_whitespace()
        .filter(|word| word.starts_with("GLIBC_"))
        .map(|word| word.trim_matches(|c| c == '(' || c == ')').to_string())
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// `GLIBC_2.17` as (2, 17); None for anything else (`GLIBC_PRIVATE`).
fn parse_glibc(version: &str) -> Option<(u32, u32)> {
    let rest = version.strip_prefix("GLIBC_")?;
    let mut parts = rest.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn section_names(file: &Path) -> String {
    readelf(&["-S", "--wide"], file)
}

#[test]
#[ignore = "needs scripts/build-natives.sh's libraries; run with --ignored"]
fn portable_libraries_need_glibc_2_17_at_most() {
    let mut failures = Vec::new();
    for (platform, machine) in PLATFORMS {
        let lib = native_file(platform, "libzooid.so");
        let header = readelf(&["-h"], &lib);
        if !header.contains(machine) {
            failures.push(format!("{} is not for {machine}:\n{header}", lib.display()));
        }
        let versions = glibc_versions(&lib);
        if versions.is_empty() {
            failures.push(format!(
                "{} names no GLIBC symbol version: is it a glibc library at all?",
                lib.display()
            ));
            continue;
        }
        let newest = versions
            .iter()
            .map(|v| parse_glibc(v).ok_or(v))
            .collect::<Result<Vec<_>, _>>();
        match newest {
            Ok(parsed) => {
                let max = parsed.into_iter().max().expect("not empty");
                eprintln!(
                    "FIGURES {platform}: needs GLIBC_{}.{} at most ({} versions: {})",
                    max.0,
                    max.1,
                    versions.len(),
                    versions.join(" ")
                );
                if max > GLIBC_FLOOR {
                    failures.push(format!(
                        "{} needs GLIBC_{}.{}, above the floor GLIBC_{}.{} (all: {})",
                        lib.display(),
                        max.0,
                        max.1,
                        GLIBC_FLOOR.0,
                        GLIBC_FLOOR.1,
                        versions.join(" ")
                    ));
                }
            }
            Err(odd) => failures.push(format!("{} needs {odd}", lib.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs scripts/build-natives.sh's libraries; run with --ignored"]
fn portable_libraries_are_stripped_and_name_their_debug_info() {
    for (platform, _) in PLATFORMS {
        let lib = native_file(platform, "libzooid.so");
        let sections = section_names(&lib);
        assert!(
            !sections.contains(".debug_info") && !sections.contains(".symtab"),
            "{} is not stripped:\n{sections}",
            lib.display()
        );
        assert!(sections.contains(".gnu_debuglink"), "{sections}");
        let debuglink = readelf(&["-p", ".gnu_debuglink"], &lib);
        assert!(debuglink.contains("libzooid.so.debug"), "{debuglink}");
        let debug = native_file(platform, "libzooid.so.debug");
        assert!(section_names(&debug).contains(".debug_info"));
        // The JNI and C entry points are exported.
        let symbols = readelf(&["--dyn-syms", "--wide"], &lib);
        assert!(symbols.contains("JNI_OnLoad"), "{platform}: no JNI_OnLoad");
        assert!(
            symbols.contains("zooid_service_open"),
            "{platform}: no zooid_service_open"
        );
        // What every JVM task extracts and maps: the `natives` profile (fat LTO, one codegen unit)
        // keeps it well under the 8.6 MB of the release profile (x86_64: 6.7 MB, aarch64: 5.3 MB).
        assert!(
            size(&lib) < SHIPPED_LIBRARY_BUDGET,
            "{}: {} bytes, over the budget of {SHIPPED_LIBRARY_BUDGET}: built with the release profile?",
            lib.display(),
            size(&lib)
        );
        // The static library carries no LLVM bitcode (a C linker has no use for it).
        let archive = native_file(platform, "libzooid.a");
        let archive_sections = section_names(&archive);
        assert!(
            !archive_sections.contains(".llvmbc"),
            "{} carries LLVM bitcode",
            archive.display()
        );
        eprintln!(
            "FIGURES {platform}: libzooid.so {} bytes, libzooid.so.debug {} bytes, libzooid.a {} bytes",
            size(&lib),
            size(&debug),
            size(&archive)
        );
    }
}

/// The most a shipped (stripped) `libzooid.so` may weigh, in bytes.
const SHIPPED_LIBRARY_BUDGET: u64 = 7_500_000;

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The C release of `platform` (scripts/release-c.sh), unpacked into `dir`: its root.
fn unpacked_release(platform: &str, dir: &Path) -> PathBuf {
    let out = dir.join("release");
    run_ok(
        Command::new("bash")
            .arg(harness::repo().join("scripts/release-c.sh"))
            .arg("--natives")
            .arg(natives_dir())
            .arg("--out")
            .arg(&out),
    );
    let tarball = std::fs::read_dir(&out)
        .expect("the release directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(&format!("-{platform}.tar.gz"))
        })
        .unwrap_or_else(|| panic!("no {platform} tarball in {}", out.display()));
    run_ok(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(dir),
    );
    let name = tarball
        .file_name()
        .expect("a file name")
        .to_string_lossy()
        .trim_end_matches(".tar.gz")
        .to_string();
    let root = dir.join(name);
    for file in [
        "include/zooid.h",
        "lib/libzooid.so",
        "lib/libzooid.a",
        "lib/pkgconfig/zooid.pc",
    ] {
        assert!(root.join(file).is_file(), "the release lacks {file}");
    }
    root
}

/// `pkg-config ARGS zooid` against the unpacked release at `root`, split into words.
fn pkg_config(root: &Path, args: &[&str]) -> Vec<String> {
    let out = run_ok(
        Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", root.join("lib/pkgconfig"))
            .env_remove("PKG_CONFIG_SYSROOT_DIR")
            .args(args)
            .arg("zooid"),
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Compiles `tests/c/NAME.c` with `cc` against the unpacked release at `root`, linked to its
/// shared library (through pkg-config, with an rpath) or its static one.
fn compile_against_release(
    cc: &str,
    root: &Path,
    name: &str,
    link: harness::Link,
    out: &Path,
) -> PathBuf {
    let exe = out.join(format!("{name}-{}", link.name()));
    let mut cmd = Command::new(cc);
    cmd.args([
        "-std=c11",
        "-D_POSIX_C_SOURCE=200809L",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-g",
        "-pthread",
    ])
    .args(pkg_config(root, &["--cflags"]))
    .arg("-I")
    .arg(harness::repo().join("tests/c"))
    .arg(harness::repo().join(format!("tests/c/{name}.c")))
    .arg("-o")
    .arg(&exe);
    match link {
        harness::Link::Shared => {
            let lib_dir = root.join("lib");
            cmd.args(pkg_config(root, &["--libs"]))
                .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
                .args(["-lpthread", "-ldl", "-lm"]);
        }
        harness::Link::Static => {
            let private = pkg_config(root, &["--static", "--libs-only-l"]);
            assert!(private.iter().any(|l| l == "-lpthread"), "{private:?}");
            cmd.arg(root.join("lib/libzooid.a"))
                .args(private.iter().filter(|l| *l != "-lzooid"));
            // What the harness links natively must be a subset of what the .pc declares.
            for lib in NATIVE_STATIC_LIBS {
                assert!(private.iter().any(|l| l == lib), "zooid.pc lacks {lib}");
            }
        }
    }
    run_ok(&mut cmd);
    exe
}

/// Runs an aarch64 program under qemu-user and returns its stdout.
fn run_aarch64(exe: &Path, args: &[&str]) -> String {
    let out = run_ok(
        Command::new("qemu-aarch64")
            .arg("-L")
            .arg(AARCH64_SYSROOT)
            .arg(exe)
            .args(args),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "needs scripts/build-natives.sh's libraries, qemu-user and gcc-aarch64-linux-gnu; run with --ignored"]
fn aarch64_library_runs_the_c_tests_under_qemu() {
    zooid_test_support::init_tracing();
    let dir = tempfile::Builder::new()
        .prefix("zooid-natives-")
        .tempdir()
        .expect("a temp dir");
    let root = unpacked_release("linux-aarch64", dir.path());
    let cc = "aarch64-linux-gnu-gcc";
    let build = |name: &str, link| compile_against_release(cc, &root, name, link, dir.path());
    let file = run_ok(Command::new("file").arg(build("worked_example", harness::Link::Shared)));
    assert!(
        String::from_utf8_lossy(&file.stdout).contains("ARM aarch64"),
        "{}",
        String::from_utf8_lossy(&file.stdout)
    );

    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let started = std::time::Instant::now();
    for link in harness::Link::BOTH {
        let prefix = format!("/qemu/{}", link.name());
        let out = run_aarch64(&build("worked_example", link), &[&connect, &prefix]);
        assert!(out.contains("worked example OK"), "{out}");
        run_aarch64(&build("errors", link), &[&connect, &prefix]);
        let out = run_aarch64(&build("worked_example", link), &["mem:"]);
        assert!(out.contains("worked example OK"), "{out}");
    }
    let threads = build("threads", harness::Link::Shared);
    let out = run_aarch64(&threads, &[&connect, "/qemu/threads", "8", "25"]);
    assert!(out.contains("threads OK"), "{out}");
    let out = run_aarch64(
        &threads,
        &[&connect, "/qemu/threads-blocks", "8", "25", "100"],
    );
    assert!(out.contains("threads OK"), "{out}");
    let out = run_aarch64(
        &build("queue", harness::Link::Shared),
        &[&connect, "/qemu/queue"],
    );
    assert!(out.contains("queue OK"), "{out}");
    let out = run_aarch64(
        &build("election", harness::Link::Static),
        &["basic", &connect, "/qemu/election/group"],
    );
    assert!(out.contains("basic OK"), "{out}");
    eprintln!(
        "FIGURES aarch64 C programs under qemu: {:?}",
        started.elapsed()
    );
}

/// The x86_64 library of the C release, natively: the same programs need no emulator.
#[test]
#[ignore = "needs scripts/build-natives.sh's libraries; run with --ignored"]
fn x86_64_release_runs_the_c_worked_example() {
    let dir = tempfile::Builder::new()
        .prefix("zooid-natives-")
        .tempdir()
        .expect("a temp dir");
    let root = unpacked_release("linux-x86_64", dir.path());
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    for link in harness::Link::BOTH {
        let exe =
            compile_against_release(&harness::cc(), &root, "worked_example", link, dir.path());
        let prefix = format!("/x86_64/{}", link.name());
        let out = run_ok(Command::new(&exe).args([&connect, &prefix]));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("worked example OK"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
