//! IDs a take handed out that never reached the caller (a binding could not pass them on, such
//! as a failed JNI `long[]`): pushed back, or reported leaked, never lost silently.

use super::IdGeneratorService;
use crate::alloc::core::count_of;
use crate::error::ZooidError;
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::store::Store;

/// What became of IDs a take handed out that the caller never received.
#[derive(Debug)]
pub(crate) enum GivenBack {
    /// Pushed back: free again, nobody holds them.
    Returned,
    /// Not pushed back: never handed out to anyone, counted in `ids_leaked` and logged with their
    /// ranges. `err` says why the push failed (`OutcomeUnknown`: it may have applied).
    Leaked(ZooidError),
}

impl<S: Store> IdGeneratorService<S> {
    /// Pushes back `ids`, which a take handed out but the caller never received; when the push
    /// fails they are reported leaked (see [`GivenBack::Leaked`]).
    pub(crate) async fn give_back_undelivered(&self, mut ids: IdSet) -> GivenBack {
        let category = ids.category().clone();
        let ranges = ids.ranges();
        match self.push_ids(&mut ids).await {
            Ok(()) => GivenBack::Returned,
            // The lost-reply resolution counted them leaked already.
            Err(err @ ZooidError::OutcomeUnknown { .. }) => {
                log_leaked(&category, &ranges, &err);
                GivenBack::Leaked(err)
            }
            Err(err) => self.leaked_undelivered(&category, &ranges, err),
        }
    }

    /// Reports `ranges` of `category`, handed out but never received, leaked because `err`
    /// kept them from being pushed back: counted in `ids_leaked` and logged.
    pub(crate) fn leaked_undelivered(
        &self,
        category: &IdCategory,
        ranges: &[IdRange],
        err: ZooidError,
    ) -> GivenBack {
        self.core.stats.leaked(category.name(), count_of(ranges));
        log_leaked(category, ranges, &err);
        GivenBack::Leaked(err)
    }
}

/// Logs leaked IDs as `leaked=START:END,...`, as every leak report does.
fn log_leaked(category: &IdCategory, ranges: &[IdRange], err: &ZooidError) {
    let leaked = ranges
        .iter()
        .map(IdRange::to_string)
        .collect::<Vec<_>>()
        .join(",");
    tracing::error!(
        category = category.name(),
        %err,
        %leaked,
        "IDs taken but never received by the caller not given back; IDs leaked"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::ServiceOptions;
    use crate::zk::ConnectOptions;

    async fn memory_service(category: &IdCategory) -> IdGeneratorService {
        let service = IdGeneratorService::connect(
            "mem:",
            &ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        service
            .create_category(category, &crate::alloc::CategorySpec::new(1, 100))
            .await
            .unwrap();
        service
    }

    #[tokio::test]
    async fn undelivered_ids_are_pushed_back() {
        let category = IdCategory::new("/undelivered/back").unwrap();
        let service = memory_service(&category).await;
        let ids = service.take_ids(&category, 10).await.unwrap();
        assert_eq!(service.pool_info(&category).await.unwrap().free_count, 90);
        let given = service.give_back_undelivered(ids).await;
        assert!(matches!(given, GivenBack::Returned), "{given:?}");
        assert_eq!(service.pool_info(&category).await.unwrap().free_count, 100);
        assert_eq!(service.stats().ids_leaked, 0);
    }

    /// A push that fails (here: IDs outside the category's bounds) leaves the IDs leaked, and
    /// counted as such.
    #[tokio::test]
    async fn undelivered_ids_that_cannot_go_back_are_reported_leaked() {
        let category = IdCategory::new("/undelivered/leaked").unwrap();
        let service = memory_service(&category).await;
        let stray = IdSet::new(category.clone(), vec![IdRange::new(200, 209).unwrap()]);
        let given = service.give_back_undelivered(stray).await;
        assert!(
            matches!(given, GivenBack::Leaked(ZooidError::OutOfBounds { .. })),
            "{given:?}"
        );
        assert_eq!(service.stats().ids_leaked, 10);
    }
}
