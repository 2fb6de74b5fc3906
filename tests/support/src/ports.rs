//! Loopback ports for servers the tests start.
//!
//! A port a server will listen on is picked *outside* the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`). A port from inside it can be taken, while its
//! server is down or not yet listening, by an outgoing connection to that very port: Linux then
//! connects the socket to itself (a TCP simultaneous open), and the server's later `bind` fails
//! with "Address already in use". A follower retrying its connection to a leader-elect does
//! exactly that; a three-server ensemble then never re-forms its quorum.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};

/// The lowest port handed out: clear of the well-known and registered service ports most
/// machines listen on.
const LOWEST: u16 = 10_000;

/// `n` distinct ports, free on 127.0.0.1 a moment ago and outside the ephemeral range, so no
/// outgoing connection of this machine takes one while its server is not listening.
pub fn free_loopback_ports(n: usize) -> Vec<u16> {
    let (low, high) = ephemeral_range();
    let ranges = outside(low, high);
    let span: u64 = ranges.iter().map(|(a, b)| u64::from(b - a) + 1).sum();
    assert!(
        span >= 64,
        "no room for test ports outside the ephemeral range {low}-{high}"
    );
    // Every bind is kept until all `n` are chosen, so the ports are distinct.
    let mut held: Vec<TcpListener> = Vec::with_capacity(n);
    let mut tried = HashSet::new();
    while held.len() < n {
        assert!(
            (tried.len() as u64) < span,
            "every port outside the ephemeral range {low}-{high} is in use"
        );
        let port = nth_port(&ranges, random() % span);
        if !tried.insert(port) {
            continue;
        }
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            held.push(listener);
        }
    }
    held.iter()
        .map(|l| {
            l.local_addr()
                .expect("a bound listener has an address")
                .port()
        })
        .collect()
}

/// The kernel's ephemeral range, or Linux's default when it cannot be read.
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut fields = text.split_whitespace().map(str::parse::<u16>);
            match (fields.next(), fields.next()) {
                (Some(Ok(low)), Some(Ok(high))) if low <= high => Some((low, high)),
                _ => None,
            }
        })
        .unwrap_or((32_768, 60_999))
}

/// The inclusive port ranges at or above [`LOWEST`] that lie outside `low..=high`.
fn outside(low: u16, high: u16) -> Vec<(u16, u16)> {
    let mut ranges = Vec::new();
    if low > LOWEST {
        ranges.push((LOWEST, low - 1));
    }
    if high < u16::MAX {
        ranges.push((high.max(LOWEST - 1) + 1, u16::MAX));
    }
    ranges
}

fn nth_port(ranges: &[(u16, u16)], mut index: u64) -> u16 {
    for &(a, b) in ranges {
        let len = u64::from(b - a) + 1;
        if index < len {
            return a + index as u16;
        }
        index -= len;
    }
    unreachable!("index below the ranges' total span")
}

/// A random number, different in every test process and every call.
fn random() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one((std::process::id(), CALLS.fetch_add(1, Ordering::Relaxed)))
}
