//! The library's one source of randomness: op tokens, retry jitter, the choice of holes, the
//! recipes' markers. Each thread draws from its own generator, seeded from the operating system,
//! unless [`seed_thread`] seeded it: the deterministic simulation (tests/sim) seeds the thread
//! its single-threaded runtime runs on, so one seed gives one run.

use std::cell::RefCell;

use rand::distr::uniform::{SampleRange, SampleUniform};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

thread_local! {
    static SEEDED: RefCell<Option<StdRng>> = const { RefCell::new(None) };
}

/// Makes every draw on this thread come from a generator seeded with `seed`, until
/// [`unseed_thread`]. For the simulation; a library user never needs it.
pub fn seed_thread(seed: u64) {
    SEEDED.with(|rng| *rng.borrow_mut() = Some(StdRng::seed_from_u64(seed)));
}

/// Returns this thread to the operating system's randomness.
pub fn unseed_thread() {
    SEEDED.with(|rng| *rng.borrow_mut() = None);
}

fn with_rng<T>(draw: impl FnOnce(&mut dyn rand::RngCore) -> T) -> T {
    SEEDED.with(|seeded| match seeded.borrow_mut().as_mut() {
        Some(rng) => draw(rng),
        None => draw(&mut rand::rng()),
    })
}

/// A random value of `T`.
pub(crate) fn random<T>() -> T
where
    StandardUniform: Distribution<T>,
{
    with_rng(|rng| rng.random())
}

/// A random value in `range`.
pub(crate) fn random_range<T: SampleUniform, R: SampleRange<T>>(range: R) -> T {
    with_rng(|rng| rng.random_range(range))
}
