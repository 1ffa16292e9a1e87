//! How a replica or a cluster node checks the server it connects to: the
//! chain up to the configured CA, as OpenSSL's SSL_VERIFY_PEER does for Redis,
//! but not the name (Redis sets no host name to match; peers are reached by
//! address and their certificates rarely name it). An X.509 v1 certificate,
//! which webpki refuses and OpenSSL takes, is checked by v1.rs.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::sync::Arc;

#[derive(Debug)]
pub struct ChainOnly {
    pub webpki: Arc<WebPkiServerVerifier>,
    pub roots: Arc<RootCertStore>,
    pub algs: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if let Some(cert) = super::v1::parse(end_entity) {
            return super::v1::verify_issued(&cert, &self.roots, &self.algs, now)
                .map(|()| ServerCertVerified::assertion());
        }
        // webpki checks the chain before the name: a name mismatch means
        // the chain was good.
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        super::v1::signature(cert, message, dss, &self.algs, false, || {
            self.webpki.verify_tls12_signature(message, cert, dss)
        })
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        super::v1::signature(cert, message, dss, &self.algs, true, || {
            self.webpki.verify_tls13_signature(message, cert, dss)
        })
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
