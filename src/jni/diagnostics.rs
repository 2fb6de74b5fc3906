//! Native methods that check the library itself rather than hand out IDs: its version, the
//! panic boundary, and the Rust side of the Java benchmark.

use std::hint::black_box;
use std::time::Instant;

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::jlong;
use jni::{native_method, Env, NativeMethod};

use super::arrays::long_array;
use super::convert::ranges_from_java;
use super::errors::{Failure, ThrowJava, ThrowUnchecked};
use crate::idset::{IdCategory, IdSet};

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn version() -> JString,
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn panic_for_test(),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn unchecked_panic_for_test(),
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn bench_take_ids(ranges: jlong[], count: jlong) -> jlong[],
        error_policy = ThrowUnchecked,
    },
];

/// The crate version the library was built from.
fn version<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
) -> Result<JString<'local>, Failure> {
    Ok(JString::from_str(env, env!("CARGO_PKG_VERSION"))?)
}

/// Panics on purpose, so that tests can check that a panic becomes an exception rather than
/// aborting the JVM.
fn panic_for_test<'local>(_env: &mut Env<'local>, _class: JClass<'local>) -> Result<(), Failure> {
    panic!("panic_for_test: deliberate panic to test the native boundary")
}

/// Panics on purpose under the policy of the methods Java declares without checked exceptions.
fn unchecked_panic_for_test<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
) -> Result<(), Failure> {
    panic!("unchecked_panic_for_test: deliberate panic to test the native boundary")
}

/// Takes up to `count` IDs one by one with [`IdSet::take_id`] from a set over `ranges` and
/// returns `[elapsed nanoseconds, IDs taken, wrapping sum of the IDs]`; the sum lets the caller
/// check that the loop did the work it timed.
fn bench_take_ids<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    ranges: JLongArray<'local>,
    count: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let ranges = ranges_from_java(env, &ranges)?;
    let category = IdCategory::new("/zooid/benchmark")?;
    let mut set = black_box(IdSet::new(category, ranges));
    let mut taken: i64 = 0;
    let mut sum: i64 = 0;
    let start = Instant::now();
    while taken < count {
        match set.take_id() {
            Some(id) => {
                sum = sum.wrapping_add(black_box(id));
                taken += 1;
            }
            None => break,
        }
    }
    let nanos = i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
    Ok(long_array(env, &[nanos, taken, sum])?)
}
