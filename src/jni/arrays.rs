//! Results going out to Java as arrays: `long[]` values and ranges as `long[]` start/end pairs.
//! Infallible but for JNI itself, so the error path ([`super::errors`]) can use them too.

use jni::objects::JLongArray;
use jni::Env;

use crate::range::IdRange;

/// A new `long[]` holding `values`.
pub(super) fn long_array<'local>(
    env: &mut Env<'local>,
    values: &[i64],
) -> Result<JLongArray<'local>, jni::errors::Error> {
    let array = JLongArray::new(env, values.len())?;
    array.set_region(env, 0, values)?;
    Ok(array)
}

/// A count for Java, which has no unsigned `long`: saturates at `i64::MAX`.
pub(super) fn long(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Ranges as a `long[]` of start/end pairs.
pub(super) fn ranges_to_java<'local>(
    env: &mut Env<'local>,
    ranges: &[IdRange],
) -> Result<JLongArray<'local>, jni::errors::Error> {
    let values: Vec<i64> = ranges.iter().flat_map(|r| [r.start(), r.end()]).collect();
    long_array(env, &values)
}
