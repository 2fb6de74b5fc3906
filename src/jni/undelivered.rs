//! A take or a counter's `next` that succeeded in Rust but whose result Java could not receive
//! (building the `long[]` failed, such as an `OutOfMemoryError`): a take's IDs are pushed back
//! through the same service, or reported leaked when that fails; a counter's values are skipped
//! (the counter moved past them) and counted so. Java gets an exception saying which; they never
//! vanish silently.

use jni::errors::Error as JniError;
use jni::Env;

use crate::alloc::GivenBack;
use crate::blocking::{Counter, IdGeneratorService};
use crate::idset::IdSet;
use crate::range::IdRange;

/// What a take or a `next` handed out that Java never received, and what became of it.
#[derive(Debug)]
pub(crate) struct Undelivered {
    /// The category taken from, or the counter's path.
    pub(crate) category: String,
    /// What was handed out: "take of 10 IDs", "counter next of 1..=10".
    pub(crate) what: String,
    /// Why Java could not receive them: the failed JNI call and the Java exception it left.
    pub(crate) cause: String,
    /// Where they are now.
    pub(crate) fate: Fate,
}

/// Where undelivered IDs or values are.
#[derive(Debug)]
pub(crate) enum Fate {
    /// A take's IDs: pushed back, or leaked.
    Take(GivenBack),
    /// A counter's values: skipped (counted in the counter's `skipped`, the range logged).
    Skipped,
}

impl Undelivered {
    /// The exception's message: what succeeded, why Java did not get it, and where it is.
    pub(crate) fn message(&self) -> String {
        let Self {
            category,
            what,
            cause,
            ..
        } = self;
        let head = format!("{what} of {category} succeeded but Java could not receive it ({cause})");
        match &self.fate {
            Fate::Take(GivenBack::Returned) => format!("{head}; the IDs were pushed back"),
            Fate::Take(GivenBack::Leaked(err)) => format!(
                "{head}; pushing the IDs back failed ({err}): they are leaked (never handed out; counted in idsLeaked, ranges in the log)"
            ),
            Fate::Skipped => format!(
                "{head}; the counter moved past the values: they are skipped (never handed out; counted as skipped, the range in the log)"
            ),
        }
    }
}

/// Gives back `ids`, which `service` handed out but Java never received because `err` (a JNI
/// call) failed, and says what became of them. Clears the Java exception the call left pending,
/// so that the caller's failure replaces it.
pub(super) fn give_back(
    env: &mut Env<'_>,
    service: &IdGeneratorService,
    ids: IdSet,
    err: JniError,
) -> Undelivered {
    let cause = cause(env, err);
    let category = ids.category().name().to_string();
    let what = format!("take of {} IDs", ids.count_ids());
    let fate = Fate::Take(service.give_back_undelivered(ids));
    Undelivered {
        category,
        what,
        cause,
        fate,
    }
}

/// Skips `range`, which `counter`'s `next` handed out but Java never received because `err` (a
/// JNI call) failed: counted as skipped and logged. Clears the Java exception the call left
/// pending, so that the caller's failure replaces it.
pub(super) fn skip(
    env: &mut Env<'_>,
    counter: &Counter,
    range: IdRange,
    err: JniError,
) -> Undelivered {
    let cause = cause(env, err);
    counter.skip_undelivered(range);
    Undelivered {
        category: counter.path().to_string(),
        what: format!("counter next of {range}"),
        cause,
        fate: Fate::Skipped,
    }
}

/// What made a JNI call fail: its error and the Java exception it left pending (cleared).
fn cause(env: &mut Env<'_>, err: JniError) -> String {
    let cause = match std::error::Error::source(&err) {
        Some(why) => format!("{err}: {why}"),
        None => err.to_string(),
    };
    match pending_exception(env) {
        Some(thrown) => format!("{cause}; {thrown}"),
        None => cause,
    }
}

/// The class name of the pending Java exception, which is cleared; `None` when there is none.
/// Best effort: in a full heap even the name may not be available.
fn pending_exception(env: &mut Env<'_>) -> Option<String> {
    let thrown = env.exception_occurred()?;
    env.exception_clear();
    let name = env
        .get_object_class(&thrown)
        .and_then(|class| class.get_name(env))
        .map(|name| name.to_string());
    env.exception_clear();
    Some(name.unwrap_or_else(|_| "a Java exception".to_string()))
}
