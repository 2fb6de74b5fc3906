//! Builds and runs the C programs of the C ABI tests (and the C benchmark) against the shared
//! and static libraries cargo built for this profile.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// How a C program is linked to zooid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// `libzooid.so`, found at run time through an rpath.
    Shared,
    /// `libzooid.a`, plus the system libraries the Rust standard library needs.
    Static,
}

impl Link {
    pub const BOTH: [Link; 2] = [Link::Shared, Link::Static];

    pub fn name(self) -> &'static str {
        match self {
            Link::Shared => "shared",
            Link::Static => "static",
        }
    }
}

/// The system libraries a static libzooid needs (`rustc --print native-static-libs`).
pub const NATIVE_STATIC_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

pub use crate::repo;

/// Where cargo put this profile's artifacts (`target/<profile>`): the parent of the `deps`
/// directory this test binary runs from, so `CARGO_TARGET_DIR` and `--release` are followed.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe
        .parent()
        .expect("the test binary lives in target/<profile>/deps");
    deps.parent().expect("target/<profile>").to_path_buf()
}

/// The directory holding the libraries cargo built along with this test binary: `cargo test`
/// builds the lib target (crate-type rlib + cdylib + staticlib) into `target/<profile>/deps`,
/// and only `cargo build` copies them up to `target/<profile>`. The copies in `deps` are the
/// ones built from the sources under test.
pub fn lib_dir() -> PathBuf {
    let deps = profile_dir().join("deps");
    if deps.join("libzooid.so").is_file() {
        deps
    } else {
        profile_dir()
    }
}

/// A built library.
pub fn library(link: Link) -> PathBuf {
    let name = match link {
        Link::Shared => "libzooid.so",
        Link::Static => "libzooid.a",
    };
    let path = lib_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: the lib target (crate-type cdylib + staticlib) should have been built \
         by cargo along with this test; run `cargo build --lib` for this profile",
        path.display()
    );
    path
}

/// A scratch directory for compiled C programs, inside the target directory.
pub fn out_dir() -> PathBuf {
    let dir = profile_dir().join("c-tests");
    std::fs::create_dir_all(&dir).expect("create target/<profile>/c-tests");
    dir
}

/// The C compiler: `$CC`, else `cc`.
pub fn cc() -> String {
    std::env::var("CC")
        .ok()
        .filter(|cc| !cc.is_empty())
        .unwrap_or_else(|| "cc".into())
}

/// Runs a command, panicking with its output when it cannot start or fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let output = run(cmd);
    assert!(
        output.status.success(),
        "{cmd:?} failed with {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs a command and returns its output, echoing it for the test log.
pub fn run(cmd: &mut Command) -> Output {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    eprintln!(
        "$ {cmd:?} -> {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Compiles `sources` (relative to the repository) into the executable `name`, against the
/// committed header, linked to the `link` library; extra compiler flags in `flags`.
pub fn compile(name: &str, sources: &[&str], link: Link, flags: &[&str]) -> PathBuf {
    let exe = out_dir().join(format!("{name}-{}", link.name()));
    let mut cmd = Command::new(cc());
    cmd.args([
        "-std=c11",
        "-D_POSIX_C_SOURCE=200809L",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-g",
    ])
    .args(flags)
    .arg("-I")
    .arg(repo().join("include"))
    .arg("-I")
    .arg(repo().join("tests/c"));
    for source in sources {
        cmd.arg(repo().join(source));
    }
    cmd.arg("-o").arg(&exe);
    link_args(&mut cmd, link);
    run_ok(&mut cmd);
    exe
}

/// Adds the linker arguments for zooid's `link` library.
pub fn link_args(cmd: &mut Command, link: Link) {
    let lib = library(link);
    match link {
        Link::Shared => {
            let dir = lib_dir();
            // By name, not path: libzooid.so has no SONAME, so a path would be recorded as is.
            assert!(lib.starts_with(&dir));
            // DT_RPATH (not RUNPATH): searched before LD_LIBRARY_PATH, which `cargo test` sets
            // to target/<profile> ahead of its deps, where the last `cargo build` left a copy
            // of libzooid.so that may be older than the sources under test.
            cmd.arg("-L")
                .arg(&dir)
                .arg("-lzooid")
                .arg(format!("-Wl,-rpath,{}", dir.display()))
                .arg("-Wl,--disable-new-dtags")
                .args(["-lpthread", "-ldl", "-lm"]);
        }
        Link::Static => {
            cmd.arg(&lib).args(NATIVE_STATIC_LIBS);
        }
    }
}

/// Whether `exe` is dynamically linked to libzooid.so (per its dynamic section).
pub fn needs_shared_zooid(exe: &Path) -> bool {
    let bytes = std::fs::read(exe).expect("read the executable");
    bytes
        .windows(b"libzooid.so".len())
        .any(|w| w == b"libzooid.so")
}

/// Whether valgrind can run here. In CI (`CI` set) it must: the test fails instead of skipping;
/// elsewhere the caller skips, and this says so.
pub fn valgrind_available() -> bool {
    let have_valgrind = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_valgrind {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is required in CI (apt-get install valgrind)"
        );
        eprintln!("SKIPPED: valgrind is not installed");
    }
    have_valgrind
}
