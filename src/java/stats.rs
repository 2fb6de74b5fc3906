//! The native method behind `io.zooid.IDGeneratorService.getStats()`: the service's statistics
//! as one `long[]` (layout below, read by `io.zooid.ServiceStats`).

use jni::objects::{JClass, JLongArray};
use jni::sys::jlong;
use jni::{native_method, Env, NativeMethod};

use super::errors::{Failure, ThrowJava};
use super::service::{long_array, service};

pub(super) const METHODS: &[NativeMethod] = &[native_method! {
    static fn stats(handle: jlong) -> jlong[],
    error_policy = ThrowJava,
}];

/// The service's figures, in this order (io.zooid.ServiceStats reads them by position): takes,
/// pushes, IDs taken, IDs pushed, failed operations, version conflicts, retries, lost replies,
/// lost applied, lost not applied, lost unknown, IDs leaked, session losses, session generation,
/// latency count, latency sum (µs), latency max (µs), then one count per latency bucket.
fn stats<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let s = service(handle)?.stats();
    let long = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut values: Vec<i64> = [
        s.takes,
        s.pushes,
        s.ids_taken,
        s.ids_pushed,
        s.failed_ops,
        s.version_conflicts,
        s.retries,
        s.lost_replies,
        s.lost_applied,
        s.lost_not_applied,
        s.lost_unknown,
        s.ids_leaked,
        s.session_losses,
        s.session_generation,
        s.latency.count,
        s.latency.sum_us,
        s.latency.max_us,
    ]
    .into_iter()
    .map(long)
    .collect();
    values.extend(s.latency.counts.iter().copied().map(long));
    Ok(long_array(env, &values)?)
}
