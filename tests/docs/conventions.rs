//! Conventions of the library's source that the compiler does not check.

use std::path::Path;

/// Every `*.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The lines of `text` that open a `select!` whose first item is not `biased;` (comments
/// between them allowed), as `line: text`.
fn unbiased_selects(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.contains("select! {") || line.trim_start().starts_with("//") {
            continue;
        }
        let first = lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.starts_with("//"));
        if first != Some("biased;") {
            found.push(format!("{}: {}", i + 1, line.trim()));
        }
    }
    found
}

/// The simulation replays a seed only if the library's `select!`s poll their branches in a fixed
/// order: unbiased, tokio draws the order from a per-runtime seed the simulation cannot set
/// (tests/sim/README.md, "Determinism").
#[test]
fn every_select_in_the_library_is_biased() {
    let src = super::repo().join("src");
    let mut unbiased = Vec::new();
    for file in sources(&src) {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        for hit in unbiased_selects(&text) {
            unbiased.push(format!("{}:{hit}", file.display()));
        }
    }
    assert!(
        unbiased.is_empty(),
        "tokio::select! without `biased;` (a seed of the simulation would not replay): {unbiased:#?}"
    );
}

#[test]
fn the_select_check_finds_an_unbiased_one() {
    let text = "a\n    tokio::select! {\n        _ = x => {}\n    }\n  tokio::select! {\n // why\n  biased;\n";
    assert_eq!(
        unbiased_selects(text),
        vec!["2: tokio::select! {".to_string()]
    );
}
