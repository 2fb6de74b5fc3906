use std::borrow::Cow;

use rsasl::callback::{Context, Request, SessionCallback, SessionData};
use rsasl::prelude::*;
use rsasl::property::{AuthId, Password, Realm};

use super::{Result, SaslInitiator, SaslInnerOptions, SaslOptions, SaslSession};

/// DIGEST-MD5 SASL options.
///
/// Uses [SaslOptions::digest_md5] to construct one.
#[derive(Clone, Debug)]
pub struct DigestMd5SaslOptions {
    realm: Option<Cow<'static, str>>,
    username: Cow<'static, str>,
    password: Cow<'static, str>,
}

impl DigestMd5SaslOptions {
    fn realm(&self) -> Option<&str> {
        self.realm.as_ref().map(|s| s.as_ref())
    }

    pub(crate) fn new(username: impl Into<Cow<'static, str>>, password: impl Into<Cow<'static, str>>) -> Self {
        Self { realm: None, username: username.into(), password: password.into() }
    }

    /// Specifies the client chosen realm.
    #[cfg(test)]
    pub fn with_realm(self, realm: impl Into<Cow<'static, str>>) -> Self {
        Self { realm: Some(realm.into()), ..self }
    }
}

impl From<DigestMd5SaslOptions> for SaslOptions {
    fn from(options: DigestMd5SaslOptions) -> Self {
        Self(SaslInnerOptions::DigestMd5(options))
    }
}

struct DigestSessionCallback {
    options: DigestMd5SaslOptions,
}

impl SessionCallback for DigestSessionCallback {
    fn callback(
        &self,
        _session_data: &SessionData,
        _context: &Context,
        request: &mut Request<'_>,
    ) -> Result<(), SessionError> {
        if request.is::<Realm>() {
            if let Some(realm) = self.options.realm() {
                request.satisfy::<Realm>(realm)?;
            }
        } else if request.is::<AuthId>() {
            request.satisfy::<AuthId>(&self.options.username)?;
        } else if request.is::<Password>() {
            request.satisfy::<Password>(self.options.password.as_bytes())?;
        }
        Ok(())
    }
}

impl SaslInitiator for DigestMd5SaslOptions {
    fn new_session(&self, _hostname: &str) -> Result<SaslSession> {
        let callback = DigestSessionCallback { options: self.clone() };
        // zooid patch: the mechanism named directly, not found through its linkme registration,
        // which a static library's link may leave out (the session then never authenticated),
        // and no `unwrap` on what the registry answers (vendor/README.md).
        let mechanisms = std::slice::from_ref(&super::mechanisms::digest_md5::DIGEST_MD5);
        let config = SASLConfig::builder()
            .with_registry(rsasl::registry::Registry::with_mechanisms(mechanisms))
            .with_callback(callback)
            .map_err(|err| crate::error::Error::with_other("DIGEST-MD5 configuration", err))?;
        let client = SASLClient::new(config);
        let mechanism = Mechname::parse(b"DIGEST-MD5")
            .map_err(|err| crate::error::Error::with_other("DIGEST-MD5 mechanism name", err))?;
        let session = client
            .start_suggested(&[mechanism])
            .map_err(|err| crate::error::Error::with_other("DIGEST-MD5 session", err))?;
        SaslSession::new(session)
    }
}
