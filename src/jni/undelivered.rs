//! A take that succeeded in Rust whose IDs Java could not receive (building the `long[]` failed,
//! such as an `OutOfMemoryError`): the IDs are pushed back through the same service, or reported
//! leaked when that fails, and Java gets an exception saying which; they never vanish silently.

use jni::errors::Error as JniError;
use jni::Env;

use crate::alloc::GivenBack;
use crate::blocking::IdGeneratorService;
use crate::idset::IdSet;

/// What a take handed out that Java never received, and what became of it.
#[derive(Debug)]
pub(crate) struct Undelivered {
    /// The category taken from.
    pub(crate) category: String,
    /// How many IDs the take handed out.
    pub(crate) count: u64,
    /// Why Java could not receive them: the failed JNI call and the Java exception it left.
    pub(crate) cause: String,
    /// Pushed back, or leaked.
    pub(crate) fate: GivenBack,
}

impl Undelivered {
    /// The exception's message: the take, why Java did not get it, and where the IDs are.
    pub(crate) fn message(&self) -> String {
        let Self {
            category,
            count,
            cause,
            ..
        } = self;
        let head = format!(
            "take of {count} IDs of {category} succeeded but Java could not receive them ({cause})"
        );
        match &self.fate {
            GivenBack::Returned => format!("{head}; they were pushed back"),
            GivenBack::Leaked(err) => format!(
                "{head}; pushing them back failed ({err}): they are leaked (never handed out; counted in idsLeaked, ranges in the log)"
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
    let mut cause = match std::error::Error::source(&err) {
        Some(why) => format!("{err}: {why}"),
        None => err.to_string(),
    };
    if let Some(thrown) = pending_exception(env) {
        cause = format!("{cause}; {thrown}");
    }
    let category = ids.category().name().to_string();
    let count = ids.count_ids();
    let fate = service.give_back_undelivered(ids);
    Undelivered {
        category,
        count,
        cause,
        fate,
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
