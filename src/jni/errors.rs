//! Rust errors and panics as Java exceptions.
//!
//! Every failure becomes one call of `io.zooid.NativeErrors.create(code, message, category,
//! operation, ranges)`, which picks the exception class (the `IDGeneratorException` subclass for
//! the code, or a standard runtime exception for misuse); the native method then throws what it
//! returns. The class and method are looked up once, in `JNI_OnLoad`.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::errors::{Error as JniError, ErrorPolicy};
use jni::objects::{JClass, JObject, JString, JThrowable};
use jni::refs::Global;
use jni::signature::ReturnType;
use jni::sys::jvalue;
use jni::{ids::JStaticMethodID, jni_sig, jni_str, Env};

use super::undelivered::Undelivered;
use crate::error::ZooidError;
use crate::range::IdRange;

/// Error codes understood by `io.zooid.NativeErrors` beyond the kinds' numbers
/// ([`ErrorKind::number`], which are `io.zooid.ErrorCode`'s): the C ABI's numbers for a panic
/// and an unclassified failure, and two negative ones for misuse.
pub(crate) mod code {
    /// zooid panicked (a bug): `ErrorCode.PANIC`.
    pub const PANIC: i32 = 17;
    /// A failure of the binding itself (a JNI call): `ErrorCode.OTHER`.
    pub const OTHER: i32 = 18;
    /// A null argument: `NullPointerException`.
    pub const NULL_ARGUMENT: i32 = -1;
    /// An object used in the wrong state: `IllegalStateException`.
    pub const ILLEGAL_STATE: i32 = -2;
}

/// Why a native method failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// An operation of the core failed.
    Zooid(ZooidError),
    /// A required argument was null (the Java side checks first; this is the backstop).
    NullArgument(String),
    /// A handle that does not (or no longer) name a live object.
    IllegalState(String),
    /// A JNI call failed; it may have left a Java exception pending, which then propagates.
    Jni(JniError),
    /// Rust code panicked (a bug); the panic was caught at the boundary.
    Panic(String),
    /// A take succeeded but Java could not receive its IDs; they were pushed back or leaked.
    Undelivered(Box<Undelivered>),
}

impl From<ZooidError> for Failure {
    fn from(err: ZooidError) -> Self {
        Failure::Zooid(err)
    }
}

impl From<JniError> for Failure {
    fn from(err: JniError) -> Self {
        Failure::Jni(err)
    }
}

/// What `NativeErrors.create` needs to build the exception.
struct Described {
    code: i32,
    message: String,
    category: Option<String>,
    operation: Option<&'static str>,
    ranges: Vec<IdRange>,
}

impl Described {
    fn plain(code: i32, message: String) -> Self {
        Self {
            code,
            message,
            category: None,
            operation: None,
            ranges: Vec::new(),
        }
    }

    /// The exception for an error of the library: the code is the error's kind's number; the
    /// category, operation and IDs are the error's own.
    fn of_zooid(err: &ZooidError) -> Self {
        let (operation, ranges) = match err {
            ZooidError::OutcomeUnknown { op, ids, .. } => (Some(op.as_str()), ids.clone()),
            ZooidError::OutOfBounds { range, bounds, .. } => (None, vec![*range, *bounds]),
            ZooidError::AlreadyFree { range, .. } => (None, vec![*range]),
            _ => (None, Vec::new()),
        };
        Self {
            code: err.kind().number() as i32,
            message: err.to_string(),
            category: err.subject().map(str::to_string),
            operation,
            ranges,
        }
    }

    fn of_failure(failure: &Failure) -> Self {
        match failure {
            Failure::Zooid(err) => Self::of_zooid(err),
            Failure::NullArgument(name) => {
                Self::plain(code::NULL_ARGUMENT, format!("{name} must not be null"))
            }
            Failure::IllegalState(why) => Self::plain(code::ILLEGAL_STATE, why.clone()),
            Failure::Jni(err) => Self::plain(code::OTHER, format!("JNI call failed: {err}")),
            Failure::Panic(why) => Self::plain(code::PANIC, why.clone()),
            Failure::Undelivered(undelivered) => Self {
                category: Some(undelivered.category.clone()),
                ..Self::plain(code::OTHER, undelivered.message())
            },
        }
    }
}

/// `io.zooid.NativeErrors` and its `create` method, looked up in `JNI_OnLoad`.
pub(crate) struct Factory {
    class: Global<JClass<'static>>,
    create: JStaticMethodID,
}

impl Factory {
    pub(crate) fn look_up(env: &mut Env<'_>) -> Result<Self, JniError> {
        let class = env.find_class(jni_str!("io/zooid/NativeErrors"))?;
        let create = env.get_static_method_id(
            &class,
            jni_str!("create"),
            jni_sig!(
                (
                    int,
                    java.lang.String,
                    java.lang.String,
                    java.lang.String,
                    long[]
                ) -> java.lang.Throwable
            ),
        )?;
        let class = env.new_global_ref(class)?;
        Ok(Self { class, create })
    }

    /// Builds the exception for `what` and makes it pending.
    fn throw(&self, env: &mut Env<'_>, what: &Described) -> Result<(), JniError> {
        let message = JString::from_str(env, &what.message)?;
        let category: JObject = match &what.category {
            Some(category) => JString::from_str(env, category)?.into(),
            None => JObject::null(),
        };
        let operation: JObject = match what.operation {
            Some(op) => JString::from_str(env, op)?.into(),
            None => JObject::null(),
        };
        let ranges: JObject = if what.ranges.is_empty() {
            JObject::null()
        } else {
            super::arrays::ranges_to_java(env, &what.ranges)?.into()
        };
        let args = [
            jvalue { i: what.code },
            jvalue {
                l: message.as_raw(),
            },
            jvalue {
                l: category.as_raw(),
            },
            jvalue {
                l: operation.as_raw(),
            },
            jvalue { l: ranges.as_raw() },
        ];
        // SAFETY: `create` was looked up on `class` with exactly this signature:
        // (int, String, String, String, long[]) -> Throwable.
        let made = unsafe {
            env.call_static_method_unchecked(&self.class, self.create, ReturnType::Object, &args)
        }?;
        let throwable = env.cast_local::<JThrowable>(made.l()?)?;
        if throwable.is_null() {
            return Err(JniError::NullPtr("NativeErrors.create returned null"));
        }
        match env.throw(&throwable) {
            // Throw reports the now pending exception as JavaException: that is the success case.
            Ok(()) | Err(JniError::JavaException) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

/// Throws the Java exception for `failure`, unless a Java exception is already pending (it then
/// propagates as it is: it is the more precise account of what went wrong).
fn throw_failure(env: &mut Env<'_>, failure: &Failure) -> Result<(), JniError> {
    if env.exception_check() {
        return Ok(());
    }
    let described = Described::of_failure(failure);
    match super::CACHED.get() {
        Some(cached) => cached.errors.throw(env, &described),
        // Unreachable in practice: the native methods are registered after the cache is filled.
        None => match env.throw_new(
            jni_str!("java/lang/IllegalStateException"),
            jni::strings::JNIString::new(&described.message),
        ) {
            Ok(()) | Err(JniError::JavaException) => Ok(()),
            Err(other) => Err(other),
        },
    }
}

/// The text of a panic payload; the payload is dropped without letting a panic escape.
fn panic_message(payload: Box<dyn Any + Send + 'static>) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    };
    if let Err(drop_panic) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
        std::mem::forget(drop_panic);
    }
    text
}

/// The error policy of the native methods Java declares with `throws IDGeneratorException`: a
/// [`Failure`] becomes the matching Java exception, a panic an `IDGeneratorException` with code
/// `PANIC`.
#[derive(Debug, Default)]
pub(crate) struct ThrowJava;

/// The error policy of the native methods Java declares without `throws IDGeneratorException`
/// (frees, closes, status reads): a failure or a panic becomes an unchecked exception,
/// `NullPointerException` for a null argument and `IllegalStateException` otherwise, so no
/// checked exception reaches a caller that was told none comes.
#[derive(Debug, Default)]
pub(crate) struct ThrowUnchecked;

/// Throws the unchecked exception for `failure` (see [`ThrowUnchecked`]), unless one is pending.
fn throw_unchecked(env: &mut Env<'_>, failure: &Failure) -> Result<(), JniError> {
    if env.exception_check() {
        return Ok(());
    }
    let described = Described::of_failure(failure);
    let class = if described.code == code::NULL_ARGUMENT {
        jni_str!("java/lang/NullPointerException")
    } else {
        jni_str!("java/lang/IllegalStateException")
    };
    match env.throw_new(class, jni::strings::JNIString::new(&described.message)) {
        Ok(()) | Err(JniError::JavaException) => Ok(()),
        Err(other) => Err(other),
    }
}

/// Implements [`ErrorPolicy`] for `$policy`: a [`Failure`] thrown by `$throw`, a panic as
/// [`Failure::Panic`]; the method then returns the default value (0, null), which Java never
/// sees since an exception is pending.
macro_rules! throwing_policy {
    ($policy:ty, $throw:path) => {
        impl<T: Default> ErrorPolicy<T, Failure> for $policy {
            type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

            fn on_error<'unowned_env_local: 'native_method, 'native_method>(
                env: &mut Env<'unowned_env_local>,
                _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
                err: Failure,
            ) -> jni::errors::Result<T> {
                $throw(env, &err)?;
                Ok(T::default())
            }

            fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
                env: &mut Env<'unowned_env_local>,
                _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
                payload: Box<dyn Any + Send + 'static>,
            ) -> jni::errors::Result<T> {
                let message = format!("zooid native code panicked: {}", panic_message(payload));
                $throw(env, &Failure::Panic(message))?;
                Ok(T::default())
            }
        }
    };
}

throwing_policy!(ThrowJava, throw_failure);
throwing_policy!(ThrowUnchecked, throw_unchecked);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::ffi::zooid_status;

    fn range(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    /// The Java codes are the C ABI's status numbers, variant for variant.
    #[test]
    fn codes_match_the_c_status_numbers() {
        for err in crate::error::samples() {
            let described = Described::of_zooid(&err);
            assert_eq!(described.code, zooid_status::of(&err) as i32, "{err:?}");
            assert_eq!(described.message, err.to_string());
            assert_eq!(described.category.as_deref(), err.subject());
        }
        assert_eq!(code::PANIC, zooid_status::ZOOID_STATUS_PANIC as i32);
        assert_eq!(code::OTHER, zooid_status::ZOOID_STATUS_OTHER as i32);
        let kinds: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.number() as i32).collect();
        for own in [
            code::PANIC,
            code::OTHER,
            code::NULL_ARGUMENT,
            code::ILLEGAL_STATE,
        ] {
            assert!(!kinds.contains(&own), "{own} is a kind's number");
        }
    }

    /// Every native method's error policy matches its Java declaration: `ThrowJava` (which can
    /// throw a checked `IDGeneratorException`) exactly where `ZooidNative` declares `throws`,
    /// `ThrowUnchecked` elsewhere.
    #[test]
    fn every_native_method_throws_only_what_java_declares() {
        let java = include_str!("../../java/zooid/src/main/java/io/zooid/ZooidNative.java");
        let mut declared = std::collections::HashMap::new();
        for decl in java.split("static native").skip(1) {
            let decl = decl.split(';').next().unwrap_or_default();
            let name = decl.split('(').next().unwrap_or_default();
            let name = name
                .split_whitespace()
                .last()
                .unwrap_or_default()
                .to_string();
            declared.insert(name, decl.contains("throws"));
        }
        let sources = [
            include_str!("counter.rs"),
            include_str!("diagnostics.rs"),
            include_str!("election.rs"),
            include_str!("prefetch.rs"),
            include_str!("queue.rs"),
            include_str!("service.rs"),
            include_str!("stats.rs"),
        ];
        let mut seen = 0;
        for source in sources {
            for method in source.split("static fn ").skip(1) {
                let rust_name = method.split('(').next().unwrap_or_default();
                let Some(policy) = method.split("error_policy = ").nth(1) else {
                    continue;
                };
                let policy = policy.split(',').next().unwrap_or_default().trim();
                let mut java_name = String::new();
                let mut upper = false;
                for c in rust_name.chars() {
                    match c {
                        '_' => upper = true,
                        c if upper => {
                            java_name.extend(c.to_uppercase());
                            upper = false;
                        }
                        c => java_name.push(c),
                    }
                }
                let Some(&throws) = declared.get(&java_name) else {
                    panic!("{rust_name}: no ZooidNative.{java_name}");
                };
                let expected = if throws {
                    "ThrowJava"
                } else {
                    "ThrowUnchecked"
                };
                assert_eq!(
                    policy, expected,
                    "{rust_name} (Java {java_name}, throws: {throws})"
                );
                seen += 1;
            }
        }
        assert_eq!(seen, declared.len(), "every Java native has a Rust method");
    }

    #[test]
    fn errors_that_name_ids_carry_them() {
        let lost = Described::of_zooid(&ZooidError::OutcomeUnknown {
            category: "/c".into(),
            op: crate::error::WriteOp::Push,
            ids: vec![range(1, 10), range(20, 29)],
            leaked_within: None,
        });
        assert_eq!(lost.operation, Some("push"));
        assert_eq!(lost.ranges, vec![range(1, 10), range(20, 29)]);
        assert_eq!(lost.category.as_deref(), Some("/c"));
        let out = Described::of_zooid(&ZooidError::OutOfBounds {
            category: "/c".into(),
            range: range(5, 6),
            bounds: range(1, 4),
        });
        assert_eq!(out.ranges, vec![range(5, 6), range(1, 4)]);
        let thread = Described::of_zooid(&ZooidError::RuntimeThread);
        assert_eq!(thread.category, None);
    }
}
