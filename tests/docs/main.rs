//! The reference docs state what is true now; history lives in CHANGELOG.md. This check fails,
//! naming `file:line`, when README.md, java/README.md or a Markdown file under docs/ carries a
//! commit hash, an issue or finding number, or a date. `conventions` checks what the compiler
//! does not in the library's source.

mod conventions;

use std::path::{Path, PathBuf};

/// The repository root (this test's package is the library at the root).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, java/README.md and every `*.md` under docs/, sorted.
fn reference_docs(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut docs = vec![root.join("README.md"), root.join("java/README.md")];
    walk(&root.join("docs"), &mut docs);
    docs.sort();
    docs
}

/// A maximal run of ASCII letters, digits and `_` in `line`, with its start.
fn words(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !(bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        Some((start, &line[start..i]))
    })
}

/// A commit-hash-like word: 7 to 40 lowercase hex digits with at least one digit and one
/// letter. Exempt: `0x` numbers, and exactly 16 digits, the length of the random operation
/// tokens the pool format writes (docs/FORMAT.md), which its examples show.
fn hash_like(line: &str, start: usize, word: &str) -> bool {
    let hex = word.len() >= 7
        && word.len() <= 40
        && word
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| (b'a'..=b'f').contains(&b));
    let after_0x = start >= 2 && line[..start].ends_with("0x");
    hex && !after_0x && word.len() != 16
}

/// `issue 12`, `issues 3`, `finding 4`, `findings 1`, `issue #12` (any case).
fn numbered_reference(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    for key in ["issue", "finding"] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(key) {
            let at = from + pos;
            from = at + key.len();
            let before_ok = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
            let rest = lower[from..].strip_prefix('s').unwrap_or(&lower[from..]);
            let rest = rest.strip_prefix(' ').unwrap_or("");
            let rest = rest.strip_prefix('#').unwrap_or(rest);
            if before_ok && rest.starts_with(|c: char| c.is_ascii_digit()) {
                let end = line.len() - rest.len()
                    + rest
                        .find(|c: char| !c.is_ascii_digit())
                        .unwrap_or(rest.len());
                return Some(line[at..end].to_string());
            }
        }
    }
    None
}

/// `#12` at the start of a word (after a blank, `(` or `[`, or at the line's start).
fn hash_number(line: &str) -> Option<String> {
    let bytes = line.as_bytes();
    (0..bytes.len()).find_map(|i| {
        let starts_word = i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'(' | b'[');
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        (bytes[i] == b'#' && starts_word && digits > 0).then(|| line[i..i + 1 + digits].to_string())
    })
}

/// An ISO date, `2026-11-27`, not part of a longer number; exempt when a time follows
/// (`2026-11-22T04:43:12Z`: a timestamp field of a record format the docs show).
fn iso_date(line: &str) -> Option<String> {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(9)).find_map(|i| {
        let shape = (0..10).all(|k| match k {
            4 | 7 => b[i + k] == b'-',
            _ => b[i + k].is_ascii_digit(),
        });
        let alone_before = i == 0 || !b[i - 1].is_ascii_digit();
        let next = b.get(i + 10).copied();
        let alone_after = next.is_none_or(|c| !c.is_ascii_digit());
        (shape && alone_before && alone_after && next != Some(b'T'))
            .then(|| line[i..i + 10].to_string())
    })
}

/// Every offending token of `text`, as `(line number, what, token)`.
fn problems(text: &str) -> Vec<(usize, &'static str, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (start, word) in words(line) {
            if hash_like(line, start, word) {
                found.push((n + 1, "commit hash", word.to_string()));
            }
        }
        if let Some(r) = numbered_reference(line) {
            found.push((n + 1, "issue or finding number", r));
        }
        if let Some(r) = hash_number(line) {
            found.push((n + 1, "#number", r));
        }
        if let Some(d) = iso_date(line) {
            found.push((n + 1, "date", d));
        }
    }
    found
}

#[test]
fn reference_docs_carry_no_history() {
    let root = repo();
    let mut report = Vec::new();
    for path in reference_docs(&root) {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let name = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (line, what, token) in problems(&text) {
            report.push(format!("{name}:{line}: {what} `{token}`"));
        }
    }
    assert!(
        report.is_empty(),
        "reference docs carry history (move it to CHANGELOG.md, or state the fact without it):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_finds_what_it_should() {
    let bad =
        "at d2baca8 (abc23a0)\nsee issue 22 and finding 1\nfixed in #33\n## 2026-11-26, later\n";
    let found: Vec<_> = problems(bad).into_iter().map(|(l, w, _)| (l, w)).collect();
    assert_eq!(
        found,
        [
            (1, "commit hash"),
            (1, "commit hash"),
            (2, "issue or finding number"),
            (3, "#number"),
            (4, "date")
        ]
    );
    let fine = "#op 3 push 127c51b24da4fc9c 1000\ntoken 0x358381ae00000000\n\
                written 1795322592123 2026-11-22T04:43:12.123Z\n#zooid 4\n\
                version 2147418112, ID 1234567, the word defaced\n[link](#lost-replies)\n";
    assert_eq!(problems(fine), []);
}

/// GitHub's anchor for a heading: lowercase, punctuation dropped, blanks to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// The anchors of a Markdown file: its headings' and its `<a id="...">` tags'.
fn anchors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (_, line) in prose(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes > 0 && line[hashes..].starts_with(' ') {
            found.push(slug(&line[hashes..]));
        }
        let mut rest = line;
        while let Some(at) = rest.find("<a id=\"") {
            rest = &rest[at + 7..];
            if let Some(end) = rest.find('"') {
                found.push(rest[..end].to_string());
            }
        }
    }
    found
}

#[test]
fn links_between_the_docs_resolve() {
    let root = repo();
    let mut broken = Vec::new();
    for path in reference_docs(&root) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let name = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (n, line) in prose(&text) {
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                rest = &rest[at + 2..];
                let Some(end) = rest.find(')') else { break };
                let link = &rest[..end];
                rest = &rest[end..];
                if link.contains("://") || link.starts_with("mailto:") || link.contains(' ') {
                    continue;
                }
                let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
                let target = if file.is_empty() {
                    path.clone()
                } else {
                    path.parent().unwrap_or(&root).join(file)
                };
                if !target.exists() {
                    broken.push(format!("{name}:{n}: {link}: no such file"));
                } else if !anchor.is_empty() && target.extension().is_some_and(|e| e == "md") {
                    let target_text = std::fs::read_to_string(&target).unwrap_or_default();
                    if !anchors(&target_text).iter().any(|a| a == anchor) {
                        broken.push(format!("{name}:{n}: {link}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn readme_names_every_test_group() {
    let root = repo();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let mut lines = manifest.lines();
    let mut missing = Vec::new();
    while let Some(line) = lines.next() {
        if line.trim() != "[[test]]" {
            continue;
        }
        let Some(name) = lines.next().and_then(|l| l.trim().strip_prefix("name = ")) else {
            continue;
        };
        let name = name.trim_matches('"');
        if !readme.contains(&format!("`{name}`")) && !readme.contains(&format!("`tests/{name}`")) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "README.md's list of test groups leaves out {missing:?} (Cargo.toml's [[test]] targets)"
    );
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("Hole nodes (format 4)"), "hole-nodes-format-4");
    assert_eq!(
        slug("Bounds (ZooKeeper's limits, Curator Tech Note 4)"),
        "bounds-zookeepers-limits-curator-tech-note-4"
    );
    assert_eq!(slug("The `zooid` command"), "the-zooid-command");
}
