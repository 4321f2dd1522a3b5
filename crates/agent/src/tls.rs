//! TLS for QUIC and for TCP (`--tls`): a self-signed certificate generated at start-up and
//! a client that accepts any server certificate.
//!
//! Authentication is outside what the lab measures; the handshake's cost is not, so the
//! client still checks the server's handshake signature with the certificate's key (a full
//! TLS 1.3 handshake with real public-key operations), it only skips the chain of trust.

use std::sync::Arc;

use anyhow::Context;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// ALPN protocol name both ends offer.
pub const ALPN: &[u8] = b"tlab";
/// Server name the client asks for (and the certificate's subject alternative name).
pub const SERVER_NAME: &str = "tlab";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.3 server configuration with a fresh self-signed certificate (ECDSA P-256).
pub fn server_config() -> anyhow::Result<rustls::ServerConfig> {
    let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
        .context("cannot generate a self-signed certificate")?;
    server_config_with(ck.cert.der().to_vec(), ck.key_pair.serialize_der())
}

/// TLS 1.3 server configuration with certificate `cert_der` and PKCS#8 key `key_der`.
pub fn server_config_with(cert_der: Vec<u8>, key_der: Vec<u8>) -> anyhow::Result<rustls::ServerConfig> {
    let cert = CertificateDer::from(cert_der);
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_der));
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 not supported by the crypto provider")?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .context("cannot use the certificate")?;
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    Ok(cfg)
}

/// TLS 1.3 client configuration that accepts any server certificate (see module docs).
pub fn client_config() -> anyhow::Result<rustls::ClientConfig> {
    let p = provider();
    let verifier = Arc::new(AnyServerCert {
        algorithms: p.signature_verification_algorithms,
    });
    let mut cfg = rustls::ClientConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 not supported by the crypto provider")?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    Ok(cfg)
}

pub fn server_name() -> ServerName<'static> {
    ServerName::try_from(SERVER_NAME).expect("valid DNS name")
}

/// Trusts every certificate but verifies handshake signatures.
#[derive(Debug)]
struct AnyServerCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
