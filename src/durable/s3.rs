//! The durable record in S3-compatible object storage (`s3://BUCKET/PREFIX`), through the
//! `object_store` crate: one object per category, replaced only by conditional writes
//! (`If-None-Match: *` to create, `If-Match: <ETag>` to update), so two writers cannot both
//! pass the read-check-write of [`Record::check_succeeds`].
//!
//! Credentials, region and endpoint come from the usual `AWS_*` environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`,
//! `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint).

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

use super::record::Record;
use super::{file_name, Listing, SUFFIX};
use crate::error::{Result, ZooidError};

/// How many times a conditional write is retried after losing a race.
const MAX_RACES: u32 = 64;

/// Records in an S3 bucket under a prefix.
#[derive(Debug)]
pub struct S3Records {
    store: AmazonS3,
    bucket: String,
    prefix: String,
}

impl S3Records {
    /// Opens `s3://BUCKET/PREFIX` with settings from the environment.
    pub fn open(location: &str) -> Result<Self> {
        let rest = location.strip_prefix("s3://").ok_or_else(|| {
            ZooidError::InvalidArgument(format!("{location}: expected s3://BUCKET/PREFIX"))
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(ZooidError::InvalidArgument(format!(
                "{location}: no bucket"
            )));
        }
        let store = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| ZooidError::InvalidArgument(format!("{location}: {e}")))?;
        Ok(Self {
            store,
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
        })
    }

    fn object(&self, category: &str) -> ObjectPath {
        let name = file_name(category);
        if self.prefix.is_empty() {
            ObjectPath::from(name)
        } else {
            ObjectPath::from(format!("{}/{name}", self.prefix))
        }
    }

    fn error(&self, what: &ObjectPath, err: object_store::Error) -> ZooidError {
        ZooidError::Store {
            path: format!("s3://{}/{what}", self.bucket),
            reason: format!("durable record: {err}"),
        }
    }

    /// The record of `category` and its ETag, if there is one.
    async fn read_tagged(&self, category: &str) -> Result<Option<(Record, UpdateVersion)>> {
        let object = self.object(category);
        let got = match self.store.get(&object).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.error(&object, e)),
        };
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        let bytes = got.bytes().await.map_err(|e| self.error(&object, e))?;
        let record = Record::parse_of(category, &format!("s3://{}/{object}", self.bucket), &bytes)?;
        Ok(Some((record, version)))
    }

    /// The record of `category`, if there is one.
    pub async fn read(&self, category: &str) -> Result<Option<Record>> {
        Ok(self.read_tagged(category).await?.map(|(r, _)| r))
    }

    /// Every object under the prefix whose key ends in `.record`, read as a record
    /// ([`Listing`]): one that cannot be read or parsed is listed as unreadable, naming it, and
    /// left as it is. An error only when the listing itself fails.
    pub async fn list(&self) -> Result<Listing> {
        use futures_util::TryStreamExt as _;
        let prefix = (!self.prefix.is_empty()).then(|| ObjectPath::from(self.prefix.as_str()));
        let mut metas: Vec<_> = self
            .store
            .list(prefix.as_ref())
            .try_collect()
            .await
            .map_err(|e| self.error(&ObjectPath::from(self.prefix.as_str()), e))?;
        metas.sort_by(|a, b| a.location.cmp(&b.location));
        let mut listing = Listing::default();
        for meta in metas {
            if !meta.location.as_ref().ends_with(SUFFIX) {
                continue;
            }
            let bytes = match self.store.get(&meta.location).await {
                Ok(got) => got.bytes().await,
                Err(e) => Err(e),
            };
            match bytes {
                Ok(bytes) => listing.push(Record::parse(
                    &format!("s3://{}/{}", self.bucket, meta.location),
                    &bytes,
                )),
                // Deleted since the listing.
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => listing.push(Err(self.error(&meta.location, e))),
            }
        }
        Ok(listing.sorted())
    }

    /// Writes `record` if it moves nothing backwards, with a conditional write against the
    /// version just checked; a lost race re-reads and checks again.
    pub async fn write(&self, record: &Record) -> Result<()> {
        let object = self.object(&record.category);
        for _ in 0..MAX_RACES {
            let mode = match self.read_tagged(&record.category).await? {
                Some((old, version)) => {
                    record.check_succeeds(&old)?;
                    PutMode::Update(version)
                }
                None => PutMode::Create,
            };
            let options = PutOptions {
                mode,
                ..PutOptions::default()
            };
            let payload = PutPayload::from(record.render().into_bytes());
            match self.store.put_opts(&object, payload, options).await {
                Ok(_) => return Ok(()),
                Err(
                    object_store::Error::Precondition { .. }
                    | object_store::Error::AlreadyExists { .. },
                ) => continue,
                Err(e) => return Err(self.error(&object, e)),
            }
        }
        Err(ZooidError::Contention {
            category: record.category.clone(),
            attempts: MAX_RACES,
            elapsed: std::time::Duration::ZERO,
        })
    }

    /// Writes raw bytes with a conditional write on `version` (for tests of the server's
    /// conditional-write support).
    #[doc(hidden)]
    pub async fn put_if(
        &self,
        category: &str,
        data: Vec<u8>,
        e_tag: Option<String>,
    ) -> std::result::Result<Option<String>, String> {
        let mode = match e_tag {
            Some(tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(tag),
                version: None,
            }),
            None => PutMode::Create,
        };
        let options = PutOptions {
            mode,
            ..PutOptions::default()
        };
        self.store
            .put_opts(&self.object(category), PutPayload::from(data), options)
            .await
            .map(|r| r.e_tag)
            .map_err(|e| e.to_string())
    }
}
