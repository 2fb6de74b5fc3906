//! `cargo bench --bench c_abi`: the cost of taking one ID from a local ID set from C, through
//! `zooid_id_set_take_id` in the shared and the static library, next to the Rust figure
//! (`IdSet::take_id`) measured in the same run, as a ratio. The C side is
//! `benches/c/take_id.c`, compiled here at -O2 against this profile's libraries.

use zooid_test_support::c as harness;

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use harness::Link;
use zooid::{IdCategory, IdRange, IdSet};

const IDS: i64 = 4_000_000;
const ROUNDS: usize = 15;

/// Median ns per ID of `IdSet::take_id` over a set of `IDS` consecutive IDs, as a Rust caller
/// writes the loop.
fn rust_take_id_ns() -> f64 {
    let category = IdCategory::new("/bench/rust").expect("category");
    let range = IdRange::new(1, IDS).expect("range");
    let mut samples: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let mut set = IdSet::new(category.clone(), vec![range]);
            let (mut sum, mut count) = (0i64, 0i64);
            let t = Instant::now();
            while let Some(id) = set.take_id() {
                sum = sum.wrapping_add(id);
                count += 1;
            }
            let ns = t.elapsed().as_nanos() as f64 / count as f64;
            assert_eq!(black_box(sum), IDS * (IDS + 1) / 2);
            ns
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[ROUNDS / 2]
}

/// Runs the C bench linked to `link`; returns ns/ID of (take_id, take_range, plain loop).
fn c_take_id_ns(link: Link) -> (f64, f64, f64) {
    let exe = harness::compile("bench_take_id", &["benches/c/take_id.c"], link, &["-O2"]);
    let out =
        harness::run_ok(Command::new(exe).args(["mem:", &IDS.to_string(), &ROUNDS.to_string()]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = |key: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} in the C bench output:\n{text}"))
    };
    (
        value("take_id_ns"),
        value("take_range_ns"),
        value("plain_loop_ns"),
    )
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs it too, which is fine: it is quick.
    let rust = rust_take_id_ns();
    let (shared, shared_bulk, plain) = c_take_id_ns(Link::Shared);
    let (statik, static_bulk, _) = c_take_id_ns(Link::Static);
    println!();
    println!("take one ID from a local ID set ({IDS} IDs, median of {ROUNDS} rounds)");
    println!(
        "| {:<46} | {:>9} | {:>16} |",
        "measure", "ns/ID", "vs Rust take_id"
    );
    println!("|{:-<48}|{:->11}|{:->18}|", "", "", "");
    let row = |what: &str, ns: f64| {
        println!("| {what:<46} | {ns:>9.3} | {:>15.2}x |", ns / rust);
    };
    row("Rust IdSet::take_id", rust);
    row("C zooid_id_set_take_id, libzooid.so", shared);
    row("C zooid_id_set_take_id, libzooid.a", statik);
    row("C zooid_id_set_take_range(1024) + loop, .so", shared_bulk);
    row("C zooid_id_set_take_range(1024) + loop, .a", static_bulk);
    row("C plain loop over the same range (floor)", plain);
}
