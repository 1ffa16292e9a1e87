//! The server and client contexts built from the `tls-*` options, and the
//! checks of the values rustls cannot honour.

use crate::config::TlsSettings;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{CipherSuite, RootCertStore, SupportedProtocolVersion};
use std::sync::Arc;

pub struct Contexts {
    /// For accepted connections.
    pub server: Arc<rustls::ServerConfig>,
    /// For connections this server makes (to a master, to cluster nodes).
    pub client: Arc<rustls::ClientConfig>,
}

/// Registered with config: the values refused as soon as they are given.
pub static CONFIG_CHECKS: &[crate::config::Check] = &[
    check("tls-protocols", |v| protocols(v).map(|_| v.to_string())),
    check("tls-ciphers", |v| tls12_suites(v).map(|_| v.to_string())),
    check("tls-ciphersuites", |v| {
        tls13_suites(v).map(|_| v.to_string())
    }),
];

const fn check(
    option: &'static str,
    check: fn(&str) -> Result<String, String>,
) -> crate::config::Check {
    crate::config::Check { option, check }
}

/// OpenSSL's names of the TLS 1.2 suites rustls has (all ECDHE with an AEAD).
const TLS12: &[(&str, CipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
];

/// The TLS 1.3 suites rustls has, by their standard names (as OpenSSL's).
const TLS13: &[(&str, CipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
];

/// `tls-protocols`: Redis's words; empty is TLS 1.2 and 1.3, its default.
fn protocols(v: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let (mut v12, mut v13) = (false, false);
    for w in v.split_whitespace() {
        match w.to_ascii_lowercase().as_str() {
            "tlsv1.2" => v12 = true,
            "tlsv1.3" => v13 = true,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "{w} is not supported: rustls speaks TLSv1.2 and TLSv1.3 only"
                ))
            }
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if !v12 && !v13 {
        (v12, v13) = (true, true);
    }
    let mut out = vec![];
    if v13 {
        out.push(&rustls::version::TLS13);
    }
    if v12 {
        out.push(&rustls::version::TLS12);
    }
    Ok(out)
}

/// `tls-ciphers`, an OpenSSL cipher list for TLS 1.2: names of the suites
/// rustls has, `DEFAULT`/`HIGH`/`ALL` for all of them, and `!name`/`-name`
/// removing one (a suite rustls lacks is never there to remove). None is
/// every suite (the option's empty default).
fn tls12_suites(v: &str) -> Result<Option<Vec<CipherSuite>>, String> {
    if v.trim().is_empty() {
        return Ok(None);
    }
    let mut out: Vec<CipherSuite> = vec![];
    for w in v.split([':', ',', ' ']).filter(|w| !w.is_empty()) {
        let named = |n: &str| TLS12.iter().find(|(name, _)| name.eq_ignore_ascii_case(n));
        if let Some(name) = w.strip_prefix(['!', '-']) {
            if let Some((_, s)) = named(name) {
                out.retain(|x| x != s);
            }
            continue;
        }
        match w.to_ascii_uppercase().as_str() {
            "DEFAULT" | "HIGH" | "ALL" | "SECURE" => {
                for (_, s) in TLS12 {
                    if !out.contains(s) {
                        out.push(*s);
                    }
                }
            }
            _ => match named(w) {
                Some((_, s)) if !out.contains(s) => out.push(*s),
                Some(_) => {}
                None => {
                    return Err(format!(
                        "cipher '{w}' is not available: rustls offers only ECDHE suites with AES-GCM or ChaCha20-Poly1305 for TLSv1.2 ({})",
                        TLS12.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(":")
                    ))
                }
            },
        }
    }
    if out.is_empty() {
        return Err("no cipher match".into());
    }
    Ok(Some(out))
}

/// `tls-ciphersuites`: TLS 1.3 suite names separated by ':'.
fn tls13_suites(v: &str) -> Result<Option<Vec<CipherSuite>>, String> {
    if v.trim().is_empty() {
        return Ok(None);
    }
    let mut out = vec![];
    for w in v.split(':').map(str::trim).filter(|w| !w.is_empty()) {
        match TLS13.iter().find(|(n, _)| n.eq_ignore_ascii_case(w)) {
            Some((_, s)) => out.push(*s),
            None => {
                return Err(format!(
                    "ciphersuite '{w}' is not available: rustls offers {}",
                    TLS13.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(":")
                ))
            }
        }
    }
    Ok(Some(out))
}

fn load_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("Failed to load certificate: {path}: {e}"))?;
    let certs = rustls_pemfile::certs(&mut std::io::BufReader::new(file))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("Failed to load certificate: {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load certificate: {path}: no PEM certificate in it"
        ));
    }
    Ok(certs)
}

/// A PEM private key; an encrypted PKCS#8 one (what OpenSSL 3 writes with a
/// passphrase) is decrypted with `pass` (`tls-key-file-pass`,
/// `tls-client-key-file-pass`), as OpenSSL's loader does.
fn load_key(path: &str, pass: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let failed = |why: String| format!("Failed to load private key: {path}: {why}");
    let text = std::fs::read(path).map_err(|e| failed(e.to_string()))?;
    let pem = String::from_utf8_lossy(&text);
    if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let Some(pass) = pass.filter(|p| !p.is_empty()) else {
            return Err(failed(
                "the key is encrypted and no passphrase is set".into(),
            ));
        };
        let (_, doc) = pkcs8::der::Document::from_pem(&pem).map_err(|e| failed(e.to_string()))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(doc.as_bytes())
            .map_err(|e| failed(e.to_string()))?;
        let key = info
            .decrypt(pass)
            .map_err(|_| failed("bad decrypt (wrong passphrase?)".into()))?;
        return Ok(PrivateKeyDer::Pkcs8(key.as_bytes().to_vec().into()));
    }
    if pem.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(failed(
            "a legacy encrypted PEM key is not read: convert it to PKCS#8 (openssl pkcs8 -topk8)"
                .into(),
        ));
    }
    match rustls_pemfile::private_key(&mut &text[..]) {
        Ok(Some(k)) => Ok(k),
        Ok(None) => Err(failed("no PEM private key in it".into())),
        Err(e) => Err(failed(e.to_string())),
    }
}

/// The CA certificates of `tls-ca-cert-file` and every PEM file of `tls-ca-cert-dir`.
fn load_roots(s: &TlsSettings) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let mut add = |path: &str| -> Result<(), String> {
        for c in load_certs(path)
            .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?
        {
            roots.add(c).map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {path}: {e}")
            })?;
        }
        Ok(())
    };
    if let Some(f) = &s.ca_cert_file {
        add(f)?;
    }
    if let Some(dir) = &s.ca_cert_dir {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            format!("Failed to configure CA certificate(s) file/directory: {dir}: {e}")
        })?;
        for e in entries.flatten() {
            let p = e.path();
            // Files without certificates (OpenSSL's hash links to them
            // included, read twice harmlessly) are skipped.
            if p.is_file() {
                let _ = add(&p.to_string_lossy());
            }
        }
    }
    Ok(roots)
}

/// A certificate chain with its key, checked to match. A certificate webpki
/// cannot read (X.509 v1, as Redis's gen-test-certs.sh makes redis.crt) is
/// taken unchecked, as OpenSSL takes it: the peer decides whether to trust it.
fn certified(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    provider: &Arc<CryptoProvider>,
    path: &str,
) -> Result<rustls::sign::SingleCertAndKey, String> {
    let failed = |e: rustls::Error| format!("Failed to load certificate: {path}: {e}");
    match rustls::sign::CertifiedKey::from_der(certs.clone(), key.clone_key(), provider) {
        Ok(k) => Ok(k.into()),
        Err(rustls::Error::InvalidCertificate(_)) => {
            let signing = provider
                .key_provider
                .load_private_key(key)
                .map_err(failed)?;
            Ok(rustls::sign::CertifiedKey::new(certs, signing).into())
        }
        Err(e) => Err(failed(e)),
    }
}

/// `tls-dh-params-file`: read and checked as Redis loads it (a PEM "DH
/// PARAMETERS" block), then unused: the suites rustls offers (and
/// `tls-ciphers` accepts) all use ECDHE, so no finite-field DH exchange
/// needs them, as on an OpenSSL server whose cipher list names no DHE suite.
/// Redis's harness names such a file for every TLS server it starts.
fn dh_params(file: &str) -> Result<(), String> {
    let text = std::fs::read(file).map_err(|e| format!("Failed to load {file}: {e}"))?;
    let text = String::from_utf8_lossy(&text);
    let block = |label: &str| {
        let begin = text.find(&format!("-----BEGIN {label}-----"));
        let end = text.find(&format!("-----END {label}-----"));
        matches!((begin, end), (Some(b), Some(e)) if b < e)
    };
    match block("DH PARAMETERS") || block("X9.42 DH PARAMETERS") {
        true => {
            tracing::info!(
                "{file}: DH parameters read, not used: every TLS suite offered uses ECDHE key exchange"
            );
            Ok(())
        }
        false => Err(format!("{file}: failed to read DH params.")),
    }
}

impl Contexts {
    /// What Redis's tlsConfigure checks, with its log texts where it has them.
    pub fn build(s: &TlsSettings) -> Result<Contexts, String> {
        let (Some(cert_file), Some(key_file)) = (&s.cert_file, &s.key_file) else {
            return Err(if s.cert_file.is_none() {
                "No tls-cert-file configured!".into()
            } else {
                "No tls-key-file configured!".into()
            });
        };
        let need_ca = s.auth_clients != "no" || s.cluster || s.replication;
        if need_ca && s.ca_cert_file.is_none() && s.ca_cert_dir.is_none() {
            return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
        }
        if let Some(file) = &s.dh_params_file {
            dh_params(file)?;
        }
        let versions = protocols(s.protocols.as_deref().unwrap_or(""))?;
        let t12 = tls12_suites(s.ciphers.as_deref().unwrap_or(""))?;
        let t13 = tls13_suites(s.ciphersuites.as_deref().unwrap_or(""))?;
        // ring is deprecated in rustls for lacking post-quantum key exchange
        // (which OpenSSL 3.0, Redis 7.0's, lacks too); it builds with a C
        // compiler alone, which keeps the static image simple.
        #[allow(deprecated)]
        let mut provider = rustls::crypto::ring::default_provider();
        provider.cipher_suites.retain(|suite| {
            let id = suite.suite();
            let allowed =
                |list: &Option<Vec<CipherSuite>>| list.as_ref().is_none_or(|l| l.contains(&id));
            match suite {
                rustls::SupportedCipherSuite::Tls12(_) => allowed(&t12),
                rustls::SupportedCipherSuite::Tls13(_) => allowed(&t13),
            }
        });
        let provider = Arc::new(provider);
        let roots = Arc::new(load_roots(s)?);
        let certs = load_certs(cert_file)?;
        let key = load_key(key_file, s.key_file_pass.as_deref())?;

        let verifier = match s.auth_clients.as_str() {
            "no" => rustls::server::WebPkiClientVerifier::no_client_auth(),
            mode => {
                let b = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    roots.clone(),
                    provider.clone(),
                );
                let b = if mode == "optional" {
                    b.allow_unauthenticated()
                } else {
                    b
                };
                let inner = b.build().map_err(|e| {
                    format!("Failed to configure CA certificate(s) file/directory: {e}")
                })?;
                Arc::new(super::v1::WithV1 {
                    inner,
                    roots: roots.clone(),
                    algs: provider.signature_verification_algorithms,
                })
            }
        };
        let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS: {e}"))?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(Arc::new(certified(
                certs.clone(),
                key.clone_key(),
                &provider,
                cert_file,
            )?));
        server.ignore_client_order = s.prefer_server_ciphers;
        if s.session_caching {
            // OpenSSL's 0 is "no limit"; rustls' cache is always bounded.
            let size = if s.session_cache_size == 0 {
                20 * 1024
            } else {
                s.session_cache_size
            };
            server.session_storage = Arc::new(super::sessions::Expiring::new(
                rustls::server::ServerSessionMemoryCache::new(size),
                s.session_cache_timeout,
            ));
        } else {
            server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
            server.send_tls13_tickets = 0;
        }

        // The client side presents tls-client-cert-file if set, else the
        // server's certificate (as Redis).
        let client_cert = match (&s.client_cert_file, &s.client_key_file) {
            (Some(c), Some(k)) => certified(
                load_certs(c)?,
                load_key(k, s.client_key_file_pass.as_deref())?,
                &provider,
                c,
            )?,
            _ => certified(certs, key, &provider, cert_file)?,
        };
        let server_verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            roots.clone(),
            provider.clone(),
        )
        .build();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS: {e}"))?;
        let builder = match server_verifier {
            Ok(v) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(super::verify::ChainOnly {
                    webpki: v,
                    roots: roots.clone(),
                    algs: provider.signature_verification_algorithms,
                })),
            // No CA (only possible with tls-auth-clients no and neither
            // replication nor cluster over TLS): this side never connects.
            Err(_) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoPeer(provider))),
        };
        let client = builder.with_client_cert_resolver(Arc::new(client_cert));
        Ok(Contexts {
            server: Arc::new(server),
            client: Arc::new(client),
        })
    }
}

/// The client side without a CA: every server certificate is refused.
#[derive(Debug)]
struct NoPeer(Arc<CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoPeer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ))
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
