//! The Java binding: the native half of the `io.zooid` classes (JNI).
//!
//! Thin by design: each native method converts its arguments, calls
//! [`crate::blocking::IdGeneratorService`] (or the recipes' blocking facades, such as
//! [`crate::blocking::WorkQueue`]) and converts the result back; the Java classes hold the API
//! (`IDGeneratorService`, `IDSet`, `IDRange`, `WorkQueue`, the exceptions). `java/zooid/` is the
//! Java side.
//!
//! - **Registration.** `JNI_OnLoad` binds every native method of `io.zooid.ZooidNative` with
//!   `RegisterNatives` (no `Java_...` symbols are exported), so a signature mismatch between the
//!   jar and the library fails at load time with a clear `UnsatisfiedLinkError`. The class name
//!   is fixed: the `io.zooid` package must not be relocated when shading.
//! - **Class references.** `JNI_OnLoad` also caches a global reference to `io.zooid.NativeErrors`
//!   and its factory method; errors are turned into exceptions through it, so no native method
//!   ever calls `FindClass`. Nothing runs Java code on zooid's runtime threads.
//! - **Panics.** Every native method body runs inside [`jni::EnvUnowned::with_env`], which
//!   catches unwinding; the [`errors::ThrowJava`] policy turns a panic into an
//!   `IDGeneratorException` (code `PANIC`) instead of letting it abort the JVM.
//! - **IDs in bulk.** A take returns its ranges as one `long[]` of start/end pairs and Java
//!   iterates them: no JNI call per ID.

mod arrays;
mod convert;
mod counter;
mod diagnostics;
mod election;
mod errors;
mod handle;
mod options;
mod prefetch;
mod queue;
mod service;
mod stats;
mod undelivered;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use jni::errors::Error as JniError;
use jni::objects::JClass;
use jni::sys::{jint, JNI_ERR, JNI_VERSION_1_8};
use jni::{jni_str, Env, JavaVM, NativeMethod};

/// What `JNI_OnLoad` looked up once, for the native methods to use.
struct Cached {
    errors: errors::Factory,
}

static CACHED: OnceLock<Cached> = OnceLock::new();

/// Called by the JVM when `System.load` loads this library: registers the native methods of
/// `io.zooid.ZooidNative` and caches the class references the methods need.
///
/// On failure it leaves an `UnsatisfiedLinkError` pending, which the JVM throws from
/// `System.load`, and returns `JNI_ERR`.
///
/// # Safety
///
/// Called by the JVM with a valid `JavaVM` pointer, on a thread attached to it.
#[no_mangle]
pub unsafe extern "system" fn JNI_OnLoad(
    vm: *mut jni::sys::JavaVM,
    _reserved: *mut c_void,
) -> jint {
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        if vm.is_null() {
            return JNI_ERR;
        }
        // SAFETY: the JVM passes a valid JavaVM pointer to JNI_OnLoad.
        let vm = unsafe { JavaVM::from_raw(vm) };
        // The loading thread is attached and inside System.load: use its current frame, which
        // does not clear a pending exception, so the UnsatisfiedLinkError below reaches Java.
        let outcome = vm.with_top_local_frame(|env| -> Result<jint, JniError> {
            match on_load(env) {
                Ok(()) => Ok(JNI_VERSION_1_8),
                Err(err) => {
                    if !env.exception_check() {
                        let message = format!("zooid: cannot initialize the native library: {err}");
                        // Throwing returns Err(JavaException) once the exception is pending.
                        let _ = env.throw_new(
                            jni_str!("java/lang/UnsatisfiedLinkError"),
                            jni::strings::JNIString::new(message),
                        );
                    }
                    Ok(JNI_ERR)
                }
            }
        });
        outcome.unwrap_or(JNI_ERR)
    }));
    loaded.unwrap_or(JNI_ERR)
}

fn on_load(env: &mut Env<'_>) -> Result<(), JniError> {
    let errors = errors::Factory::look_up(env)?;
    // Cached before any native method can run. A second JNI_OnLoad of this same copy of the
    // library cannot happen (the JVM loads a file in one class loader only); if it did, the
    // first cache would stay, still valid since global references never move.
    let _ = CACHED.set(Cached { errors });
    let class: JClass = env.find_class(jni_str!("io/zooid/ZooidNative"))?;
    let methods: Vec<NativeMethod> = service::METHODS
        .iter()
        .chain(diagnostics::METHODS.iter())
        .chain(queue::METHODS.iter())
        .chain(election::METHODS.iter())
        .chain(prefetch::METHODS.iter())
        .chain(stats::METHODS.iter())
        .chain(counter::METHODS.iter())
        .copied()
        .collect();
    // SAFETY: every method is declared with `native_method!`, which checks at compile time that
    // the Rust function matches the JNI signature it is registered under.
    unsafe { env.register_native_methods(&class, &methods) }
}
