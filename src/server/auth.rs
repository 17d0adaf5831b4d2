//! Who may connect, and how: a password checked by SCRAM-SHA-256 (as PostgreSQL asks for
//! one), and TLS.
//!
//! Invariants:
//! - With a password, a client runs nothing until it has proved, by SCRAM-SHA-256, that it
//!   knows it: the password never crosses the wire, and the server keeps only its salted
//!   hash (salted afresh at each start). Any user name is taken; the password is the
//!   server's one.
//! - With TLS, every client must start it before it says anything else: one that does
//!   not is refused (28000) before it authenticates, so nothing, a password's proof
//!   included, crosses the wire in clear. SCRAM is bound to the server's certificate
//!   (SCRAM-SHA-256-PLUS) for the clients that ask.
//! - Files of keys and certificates that cannot be read or are not PEM stop the server
//!   from starting, with the file named.

use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::sasl::scram::{ScramAuth, gen_salted_password};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::PgWireResult;
use pgwire::messages::startup::SecretKey;
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::ServerError;

/// The iterations of the password's hash, as PostgreSQL's default.
const ITERATIONS: usize = 4096;

/// The files of a server's TLS: its certificate chain and its private key, PEM.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate (chain), PEM.
    pub cert: PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The password, salted and hashed as SCRAM keeps it.
#[derive(Debug)]
pub(super) struct Secret {
    salt: Vec<u8>,
    salted: Vec<u8>,
}

impl Secret {
    pub(super) fn new(password: &str) -> Secret {
        // A salt need only differ between servers and starts: 16 bytes of the process's
        // random hash keys and the time.
        let random = std::collections::hash_map::RandomState::new();
        let mut salt = Vec::with_capacity(16);
        for part in 0..2u8 {
            let mut hasher = random.build_hasher();
            hasher.write_u8(part);
            hasher.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            salt.extend(hasher.finish().to_be_bytes());
        }
        let salted = gen_salted_password(password, &salt, ITERATIONS);
        Secret { salt, salted }
    }
}

#[async_trait]
impl AuthSource for Secret {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        Ok(Password::new(Some(self.salt.clone()), self.salted.clone()))
    }
}

/// SCRAM for one client, checked against `secret` (bound to `cert`, PEM, when given).
pub(super) fn scram(secret: &Arc<Secret>, cert: Option<&[u8]>) -> ScramAuth {
    let mut scram = ScramAuth::new(Arc::clone(secret) as Arc<dyn AuthSource>);
    scram.set_iterations(ITERATIONS);
    if let Some(cert) = cert {
        // The certificate was read as PEM when the server started.
        let _ = scram.configure_certificate(cert);
    }
    scram
}

/// The process id and secret a client was given (`cancel.rs`), for pgwire's SCRAM
/// handler to tell it.
pub(super) struct KeyOf(pub(super) i32, pub(super) i32);

impl PidSecretKeyGenerator for KeyOf {
    fn generate(&self, _client: &dyn ClientInfo) -> (i32, SecretKey) {
        (self.0, SecretKey::I32(self.1))
    }
}

/// The TLS acceptor of `files`, and the certificate's PEM (for SCRAM's channel binding).
pub(super) fn tls(files: &TlsFiles) -> Result<(TlsAcceptor, Vec<u8>), ServerError> {
    let unreadable = |path: &Path, why: String| ServerError::Tls {
        path: path.to_owned(),
        why,
    };
    let pem = std::fs::read(&files.cert).map_err(|e| unreadable(&files.cert, e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(&files.cert, format!("not a PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(unreadable(&files.cert, "no certificate in it".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| unreadable(&files.key, format!("not a PEM private key: {e}")))?;
    // ring, as for SCRAM: its key exchanges are the classical ones (X25519, P-256, P-384).
    // rustls 0.23.48 deprecates ring's provider for offering no post-quantum one; the one
    // that does (aws-lc-rs) would add a C build of aws-lc to every build with the server.
    #[allow(deprecated)]
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
            .map_err(|e| unreadable(&files.key, format!("the key does not fit the certificate: {e}")))?;
    Ok((TlsAcceptor::from(Arc::new(config)), pem))
}
