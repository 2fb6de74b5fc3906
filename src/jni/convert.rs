//! Arguments across the JNI boundary, checked: strings, bytes, ranges given as `long[]`
//! start/end pairs, and the fields of the Java objects that cross whole (options in, statistics
//! out), read and written by name on the object's own class, so no class is ever looked up.
//! Results going out are built by [`super::arrays`].

use jni::objects::{JByteArray, JLongArray, JObject, JString};
use jni::signature::FieldSignature;
use jni::strings::JNIString;
use jni::{jni_sig, Env, JValue};

use super::arrays::{long, long_array};
use super::errors::Failure;
use crate::error::ZooidError;
use crate::range::IdRange;

/// The Rust string of a Java string argument; `NullPointerException` when it is null.
pub(super) fn string_arg(
    env: &Env<'_>,
    value: &JString<'_>,
    name: &str,
) -> Result<String, Failure> {
    optional_string_arg(env, value)?.ok_or_else(|| Failure::NullArgument(name.to_string()))
}

/// The optional Rust string of a Java string argument: null is `None`. A string that is not
/// valid Unicode (a lone UTF-16 surrogate, which the JNI conversion would turn into U+FFFD
/// silently) is `IllegalArgumentException`.
pub(super) fn optional_string_arg(
    env: &Env<'_>,
    value: &JString<'_>,
) -> Result<Option<String>, Failure> {
    if value.is_null() {
        return Ok(None);
    }
    let chars = value.mutf8_chars(env)?;
    let text = chars.to_str().into_owned();
    // A U+FFFD the Java string held is in its modified UTF-8 as in UTF-8; any other one the
    // conversion made stands for an unpaired surrogate.
    let replaced = text.matches('\u{FFFD}').count();
    if replaced > 0 && replaced != occurrences(chars.to_bytes(), "\u{FFFD}".as_bytes()) {
        return Err(invalid(format!(
            "string argument {text:?} is not valid Unicode: it holds an unpaired UTF-16 surrogate"
        )));
    }
    Ok(Some(text))
}

/// How many times `needle` occurs in `haystack` (without overlaps).
fn occurrences(haystack: &[u8], needle: &[u8]) -> usize {
    let mut count = 0;
    let mut rest = haystack;
    while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
        count += 1;
        rest = &rest[at + needle.len()..];
    }
    count
}

/// The bytes of a `byte[]` argument; null is empty.
pub(super) fn bytes_arg(env: &Env<'_>, array: &JByteArray<'_>) -> Result<Vec<u8>, Failure> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    Ok(env.convert_byte_array(array)?)
}

/// Ranges from a `long[]` of start/end pairs, which must be ascending and disjoint.
pub(super) fn ranges_from_java(
    env: &Env<'_>,
    array: &JLongArray<'_>,
) -> Result<Vec<IdRange>, Failure> {
    if array.is_null() {
        return Err(Failure::NullArgument("ranges".into()));
    }
    let len = array.len(env)?;
    if len % 2 != 0 {
        return Err(invalid(format!(
            "ranges must be start/end pairs, got {len} values"
        )));
    }
    let mut values = vec![0i64; len];
    array.get_region(env, 0, &mut values)?;
    let mut ranges: Vec<IdRange> = Vec::with_capacity(len / 2);
    for pair in values.chunks_exact(2) {
        let range = IdRange::new(pair[0], pair[1]).ok_or_else(|| {
            invalid(format!(
                "range {}:{} ends before it starts",
                pair[0], pair[1]
            ))
        })?;
        if let Some(previous) = ranges.last() {
            if previous.end() >= range.start() {
                return Err(invalid(format!(
                    "ranges must be ascending and disjoint: {previous} then {range}"
                )));
            }
        }
        ranges.push(range);
    }
    Ok(ranges)
}

/// An `InvalidArgument` failure (`IllegalArgumentException` in Java).
pub(super) fn invalid(message: String) -> Failure {
    Failure::Zooid(ZooidError::InvalidArgument(message))
}

/// The fields of one Java object that crosses whole (an options object, a statistics snapshot),
/// by name. `NullPointerException` when the object itself is null.
pub(super) struct Fields<'o, 'local> {
    object: &'o JObject<'local>,
}

impl<'o, 'local> Fields<'o, 'local> {
    /// The fields of `object`, named `name` in errors.
    pub(super) fn of(object: &'o JObject<'local>, name: &str) -> Result<Self, Failure> {
        if object.is_null() {
            return Err(Failure::NullArgument(name.to_string()));
        }
        Ok(Self { object })
    }

    /// A `long` field.
    pub(super) fn long(&self, env: &mut Env<'_>, name: &str) -> Result<i64, Failure> {
        let sig: FieldSignature = jni_sig!(jlong);
        Ok(env.get_field(self.object, JNIString::new(name), sig)?.j()?)
    }

    /// An `int` field.
    pub(super) fn int(&self, env: &mut Env<'_>, name: &str) -> Result<i32, Failure> {
        let sig: FieldSignature = jni_sig!(jint);
        Ok(env.get_field(self.object, JNIString::new(name), sig)?.i()?)
    }

    /// A `double` field.
    pub(super) fn double(&self, env: &mut Env<'_>, name: &str) -> Result<f64, Failure> {
        let sig: FieldSignature = jni_sig!(jdouble);
        Ok(env.get_field(self.object, JNIString::new(name), sig)?.d()?)
    }

    /// A `String` field; null is `None`.
    pub(super) fn string(&self, env: &mut Env<'_>, name: &str) -> Result<Option<String>, Failure> {
        let sig: FieldSignature = jni_sig!(java.lang.String);
        let value = env.get_field(self.object, JNIString::new(name), sig)?.l()?;
        let value = env.cast_local::<JString>(value)?;
        optional_string_arg(env, &value)
    }

    /// Sets a `long` field.
    pub(super) fn set_long(
        &self,
        env: &mut Env<'_>,
        name: &str,
        value: u64,
    ) -> Result<(), Failure> {
        let sig: FieldSignature = jni_sig!(jlong);
        Ok(env.set_field(
            self.object,
            JNIString::new(name),
            sig,
            JValue::Long(long(value)),
        )?)
    }

    /// Sets a `long[]` field to a new array of `values`.
    pub(super) fn set_longs(
        &self,
        env: &mut Env<'_>,
        name: &str,
        values: &[u64],
    ) -> Result<(), Failure> {
        let values: Vec<i64> = values.iter().copied().map(long).collect();
        let array = long_array(env, &values)?;
        let class = env.get_object_class(self.object)?;
        let sig: FieldSignature = jni_sig!(jlong[]);
        let field = env.get_field_id(&class, JNIString::new(name), sig)?;
        // SAFETY: the object is not null (`Fields::of`), the field was looked up on its own
        // class, and its type (`long[]`, checked by the lookup's signature) is the value's.
        // (`Env::set_field` refuses every array value: it compares with the field's type only
        // as "object".)
        Ok(unsafe { env.set_field_unchecked(self.object, field, JValue::Object(&array)) }?)
    }
}
