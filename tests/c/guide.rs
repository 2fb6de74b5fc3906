//! The C guide's programs (docs/guides/c.md): every ```c block is extracted, compiled with
//! warnings as errors against the header build.rs generated, linked to the shared library, and
//! run with `mem:`; a block marked `c no_run` (it needs ZooKeeper) is compiled only. When the C
//! API changes, this test says which example to update.

use std::path::{Path, PathBuf};
use std::process::Command;

use zooid_test_support::c as harness;

use harness::{run_ok, Link};

/// The fenced blocks of `doc` whose info string starts with the word `c`, as (line of the
/// opening fence, whether it runs, source).
fn c_blocks(doc: &str) -> Vec<(usize, bool, String)> {
    let mut blocks = Vec::new();
    // Inside a fence: its line, and for a C block whether it runs and its text so far.
    let mut open: Option<(usize, Option<(bool, String)>)> = None;
    for (n, line) in doc.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (fence, open.take()) {
            (Some(info), None) => {
                let mut words = info.split_whitespace();
                let c = (words.next() == Some("c"))
                    .then(|| (!words.any(|w| w == "no_run"), String::new()));
                open = Some((n + 1, c));
            }
            (Some(_), Some((at, c))) => blocks.extend(c.map(|(runs, text)| (at, runs, text))),
            (None, Some((at, mut c))) => {
                if let Some((_, text)) = c.as_mut() {
                    text.push_str(line);
                    text.push('\n');
                }
                open = Some((at, c));
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The directory of the header build.rs generated (`OUT_DIR/zooid.h`).
fn generated_include_dir() -> PathBuf {
    let header = Path::new(env!("ZOOID_GENERATED_HEADER"));
    assert_eq!(header.file_name().and_then(|n| n.to_str()), Some("zooid.h"));
    header
        .parent()
        .expect("the header's directory")
        .to_path_buf()
}

#[test]
fn guide_programs_compile_and_run() {
    let include = generated_include_dir();
    let mut count = 0;
    for doc_name in ["docs/guides/c.md", "README.md"] {
        let doc = std::fs::read_to_string(harness::repo().join(doc_name))
            .unwrap_or_else(|e| panic!("read {doc_name}: {e}"));
        for (line, runs, source) in c_blocks(&doc) {
            build_and_run(&include, doc_name, line, runs, &source);
            count += 1;
        }
    }
    assert!(count >= 5, "the C guide and README show {count} C programs");
}

/// Compiles the program found at `doc_name:line`, and runs it with `mem:` when `runs`.
fn build_and_run(include: &Path, doc_name: &str, line: usize, runs: bool, source: &str) {
    let name = format!("guide-{}-{line}", doc_name.replace(['/', '.'], "-"));
    let src = harness::out_dir().join(format!("{name}.c"));
    std::fs::write(&src, source).expect("write the extracted program");
    let exe = harness::out_dir().join(&name);
    let mut cc = Command::new(harness::cc());
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-I"])
        .arg(include)
        .arg(&src)
        .arg("-o")
        .arg(&exe);
    harness::link_args(&mut cc, Link::Shared);
    let built = harness::run(&mut cc);
    assert!(
        built.status.success(),
        "the program at {doc_name}:{line} does not compile:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    if runs {
        run_ok(Command::new(&exe).arg("mem:"));
    }
}

#[test]
fn blocks_are_found() {
    let doc =
        "```sh\ncc x.c\n```\n```c\nint main(void) { return 0; }\n```\n```c no_run\nint x;\n```\n";
    let found = c_blocks(doc);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].0, found[0].1), (4, true));
    assert_eq!((found[1].0, found[1].1), (7, false));
}
