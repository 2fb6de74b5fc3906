//! The native method behind `io.zooid.IDGeneratorService.getStats()`: fills a fresh
//! `io.zooid.ServiceStats` with the service's statistics, field by field.

use jni::objects::{JClass, JObject};
use jni::sys::jlong;
use jni::{native_method, Env, NativeMethod};

use super::convert::Fields;
use super::errors::{Failure, ThrowJava};
use super::service::service;

pub(super) const METHODS: &[NativeMethod] = &[native_method! {
    static fn stats(handle: jlong, into: io.zooid.ServiceStats),
    error_policy = ThrowJava,
}];

fn stats<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    into: JObject<'local>,
) -> Result<(), Failure> {
    let fields = Fields::of(&into, "into")?;
    let s = service(handle)?.stats();
    for (name, value) in [
        ("takes", s.takes),
        ("pushes", s.pushes),
        ("idsTaken", s.ids_taken),
        ("idsPushed", s.ids_pushed),
        ("failedOperations", s.failed_ops),
        ("versionConflicts", s.version_conflicts),
        ("retries", s.retries),
        ("lostReplies", s.lost_replies),
        ("lostRepliesApplied", s.lost_applied),
        ("lostRepliesNotApplied", s.lost_not_applied),
        ("lostRepliesUnknown", s.lost_unknown),
        ("idsLeaked", s.ids_leaked),
        ("sessionLosses", s.session_losses),
        ("sessionGeneration", s.session_generation),
        ("latencyCount", s.latency.count),
        ("latencySumMicros", s.latency.sum_us),
        ("latencyMaxMicros", s.latency.max_us),
    ] {
        fields.set_long(env, name, value)?;
    }
    fields.set_longs(env, "latencyBuckets", &s.latency.counts)
}
