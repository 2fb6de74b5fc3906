//! What the C and JNI bindings share when moving values across: durations given in
//! milliseconds. (Handles and ranges have a shape of their own in each binding: see
//! `ffi::convert` and `jni::convert`.)

use std::time::Duration;

use crate::error::{Result, ZooidError};

/// A duration given in milliseconds; a negative number is `None`, which each call documents
/// ("wait for ever", "the default").
pub(crate) fn millis(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// A setting in milliseconds that must be at least 1; `what` names it in the error.
pub(crate) fn positive_millis(ms: u64, what: &str) -> Result<Duration> {
    if ms == 0 {
        return Err(ZooidError::InvalidArgument(format!(
            "{what} must be at least 1 ms"
        )));
    }
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_is_none_and_zero_is_refused_as_a_setting() {
        assert_eq!(millis(-1), None);
        assert_eq!(millis(0), Some(Duration::ZERO));
        assert_eq!(millis(1500), Some(Duration::from_millis(1500)));
        assert_eq!(positive_millis(7, "x").unwrap(), Duration::from_millis(7));
        let err = positive_millis(0, "the session timeout").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument: the session timeout must be at least 1 ms"
        );
    }
}
