//! HTTPS: the server certificate (`--cert FILE --key FILE` for PEM, `--cert FILE --pwd PASSWORD`
//! for PFX/PKCS#12, as Azurite). The handshakes run in the connection tasks of
//! `server::connections`, each bounded by [`HANDSHAKE_TIMEOUT`], so a slow or silent client
//! never holds up the accept loop.
//!
//! Depends on [`crate::config`] only.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer,
};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::ServerConfig;

use crate::config::Config;

/// A handshake that has not finished within this time is dropped.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The crypto provider used everywhere in the crate (server, health probe).
pub(crate) fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Which certificate files the configuration names, checked for consistency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CertificateSource<'a> {
    /// `--cert` (certificate chain, PEM) and `--key` (private key, PEM).
    Pem { cert: &'a Path, key: &'a Path },
    /// `--cert` (PKCS#12 archive) and `--pwd` (its password, possibly empty).
    Pfx { cert: &'a Path, password: &'a str },
}

/// The certificate the configuration asks for: `Ok(None)` for plain HTTP, an error message
/// for an incomplete combination. `--key` wins over `--pwd` when both are given (the
/// certificate is then PEM and the password unused, as in Azurite).
pub(crate) fn certificate_source(config: &Config) -> Result<Option<CertificateSource<'_>>, String> {
    match (&config.cert, &config.key, &config.pwd) {
        (None, None, None) => Ok(None),
        (None, Some(_), _) => Err("--key needs --cert (the certificate that goes with it)".into()),
        (None, None, Some(_)) => Err("--pwd needs --cert (the PFX file it opens)".into()),
        (Some(cert), Some(key), _) => Ok(Some(CertificateSource::Pem { cert, key })),
        (Some(cert), None, Some(password)) => Ok(Some(CertificateSource::Pfx { cert, password })),
        (Some(cert), None, None) => Err(format!(
            "--cert {} needs --key FILE (PEM private key) or --pwd PASSWORD (PFX file); \
             HTTPS is not started with a certificate alone",
            cert.display()
        )),
    }
}

/// Builds the TLS configuration for the configured certificate (`Ok(None)`: plain HTTP).
/// Every error names the file and what is wrong with it, for the start-up message.
pub fn server_config(config: &Config) -> Result<Option<Arc<ServerConfig>>, String> {
    let Some(source) = certificate_source(config)? else {
        return Ok(None);
    };
    let (chain, key, key_source) = match source {
        CertificateSource::Pem { cert, key } => (
            read_pem_chain(cert)?,
            read_pem_key(key)?,
            format!("--key {}", key.display()),
        ),
        CertificateSource::Pfx { cert, password } => {
            let (chain, key) = read_pfx(cert, password)?;
            (
                chain,
                key,
                format!("the private key in --cert {}", cert.display()),
            )
        }
    };
    let certified = certified_key(chain, key, &key_source)?;
    let mut tls = ServerConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    // The server speaks HTTP/1.1 only; say so, so clients never try h2 on this connection.
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(tls)))
}

/// The chain and its private key, checked to belong together. rustls's own check
/// (`with_single_cert`) parses the end-entity certificate with webpki, which refuses X.509
/// version 1 (`UnsupportedCertVersion`: what `openssl x509 -req -signkey` makes, and Azurite's
/// test certificate). A server only sends the chain, and the client decides whether to trust
/// it, so the public keys are compared here on the certificate as x509-parser reads it.
fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    key_source: &str,
) -> Result<CertifiedKey, String> {
    let signing_key = crypto_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("{key_source} cannot be used to sign: {e}"))?;
    let end_entity = chain.first().ok_or("the certificate chain is empty")?;
    let (_, cert) = x509_parser::parse_x509_certificate(end_entity)
        .map_err(|e| format!("the certificate cannot be read as X.509: {e}"))?;
    if let Some(spki) = signing_key.public_key() {
        if spki.as_ref() != cert.public_key().raw {
            return Err(format!(
                "{key_source} does not match the certificate (its public key is another one); \
                 give the private key the certificate was made for"
            ));
        }
    }
    Ok(CertifiedKey::new(chain, signing_key))
}

fn read_file(path: &Path, option: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {option} {}: {e}", path.display()))
}

fn read_pem_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let data = read_file(path, "--cert")?;
    let chain = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--cert {} is not a valid PEM file: {e}", path.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "--cert {} holds no PEM certificate (-----BEGIN CERTIFICATE-----); \
             a PFX file needs --pwd instead of --key",
            path.display()
        ));
    }
    Ok(chain)
}

fn read_pem_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let data = read_file(path, "--key")?;
    PrivateKeyDer::from_pem_slice(&data).map_err(|e| {
        format!(
            "--key {} holds no usable PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC; \
             encrypted keys are not supported): {e}",
            path.display()
        )
    })
}

type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn read_pfx(path: &Path, password: &str) -> Result<Chain, String> {
    let data = read_file(path, "--cert")?;
    let store = p12_keystore::KeyStore::from_pkcs12(&data, password).map_err(|e| {
        format!(
            "--cert {} cannot be opened as a PFX (PKCS#12) file with the --pwd password: {e}",
            path.display()
        )
    })?;
    let (_, keychain) = store.private_key_chain().ok_or_else(|| {
        format!(
            "--cert {} is a PFX file without a private key",
            path.display()
        )
    })?;
    let chain: Vec<CertificateDer<'static>> = keychain
        .chain()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    if chain.is_empty() {
        return Err(format!(
            "--cert {} is a PFX file whose private key has no certificate",
            path.display()
        ));
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(keychain.key().to_vec()));
    Ok((chain, key))
}

/// Client side, for the `--healthcheck` probe: a TLS configuration that accepts any server
/// certificate. The probe runs on the server's own machine, sends no credentials and reads
/// only a status line, so there is nothing for a forged certificate to learn.
pub(crate) fn probe_client_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = crypto_provider();
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate { provider }))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    // The handshake signature is still checked: the peer must hold the certificate's key.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    // Checked against the certificate's public key as x509-parser reads it: webpki does not
    // parse X.509 v1 certificates, which the server may be serving (see `certified_key`).
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let (_, parsed) = x509_parser::parse_x509_certificate(cert).map_err(|_| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
        })?;
        let spki = SubjectPublicKeyInfoDer::from(parsed.public_key().raw);
        rustls::crypto::verify_tls13_signature_with_raw_key(
            message,
            &spki,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn config(cert: Option<&str>, key: Option<&str>, pwd: Option<&str>) -> Config {
        let mut c = Config::for_tests();
        c.cert = cert.map(PathBuf::from);
        c.key = key.map(PathBuf::from);
        c.pwd = pwd.map(str::to_string);
        c
    }

    #[test]
    fn certificate_combinations() {
        assert_eq!(certificate_source(&config(None, None, None)), Ok(None));
        let c = config(Some("c.pem"), Some("k.pem"), None);
        assert!(matches!(
            certificate_source(&c),
            Ok(Some(CertificateSource::Pem { .. }))
        ));
        let c = config(Some("c.pem"), Some("k.pem"), Some("x"));
        assert!(matches!(
            certificate_source(&c),
            Ok(Some(CertificateSource::Pem { .. }))
        ));
        let c = config(Some("c.pfx"), None, Some(""));
        assert!(matches!(
            certificate_source(&c),
            Ok(Some(CertificateSource::Pfx { password: "", .. }))
        ));
        for (cert, key, pwd, words) in [
            (Some("c.pem"), None, None, "needs --key"),
            (None, Some("k.pem"), None, "--key needs --cert"),
            (None, None, Some("p"), "--pwd needs --cert"),
        ] {
            let e = certificate_source(&config(cert, key, pwd)).unwrap_err();
            assert!(e.contains(words), "{e}");
        }
    }

    #[test]
    fn unreadable_files_are_named() {
        let e =
            server_config(&config(Some("/nonexistent/c.pem"), Some("k.pem"), None)).unwrap_err();
        assert!(e.contains("cannot read --cert /nonexistent/c.pem"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let not_pem = dir.path().join("c.pem");
        std::fs::write(&not_pem, b"hello").unwrap();
        let e = server_config(&config(not_pem.to_str(), Some("k.pem"), None)).unwrap_err();
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let e = server_config(&config(not_pem.to_str(), None, Some("pw"))).unwrap_err();
        assert!(e.contains("cannot be opened as a PFX"), "{e}");
    }
}
