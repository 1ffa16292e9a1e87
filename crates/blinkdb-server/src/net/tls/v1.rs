//! X.509 v1 certificates of clients and masters, which webpki refuses and
//! OpenSSL (Redis's) takes. The gen-test-certs.sh scripts operators copy (Redis's, and
//! redis_exporter's, whose TLS tests present it as the client certificate)
//! make their generic certificate with `openssl x509 -req` and no
//! extensions, so a v1 one. Such a certificate is checked here as OpenSSL
//! checks it when a CA of tls-ca-cert-file signed it directly: the CA's
//! signature over it and its validity period; its key then checks the
//! handshake signature. A v1 certificate has no extensions, so there is no
//! key usage to honour. Anything else (v3, or a chain through an
//! intermediate) stays with webpki.

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, Error, PeerMisbehaved,
    RootCertStore, SignatureScheme,
};
use std::sync::Arc;

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// DER elements one after the other.
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    /// The next element: its tag, its contents and its whole encoding.
    fn next(&mut self) -> Option<(u8, &'a [u8], &'a [u8])> {
        let d = self.0;
        let tag = *d.first()?;
        let first = *d.get(1)?;
        let (len, header) = if first < 0x80 {
            (usize::from(first), 2)
        } else {
            // Long form: at most 4 length bytes (a certificate is far smaller).
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 {
                return None;
            }
            let len = d
                .get(2..2 + n)?
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (len, 2 + n)
        };
        let whole = d.get(..header.checked_add(len)?)?;
        self.0 = &d[whole.len()..];
        Some((tag, &whole[header..], whole))
    }

    /// The next element if it has `tag`: its contents and whole encoding.
    fn expect(&mut self, tag: u8) -> Option<(&'a [u8], &'a [u8])> {
        let (t, contents, whole) = self.next()?;
        (t == tag).then_some((contents, whole))
    }
}

/// A BIT STRING's bits, when they fill whole bytes (keys and signatures do).
fn whole_bytes(bits: &[u8]) -> Option<&[u8]> {
    match bits.split_first()? {
        (0, rest) => Some(rest),
        _ => None,
    }
}

/// Seconds since the epoch of a UTCTime or GeneralizedTime in the only form
/// DER allows for certificates (`...HHMMSSZ`).
fn time(tag: u8, text: &[u8]) -> Option<u64> {
    let digits = |s: &[u8]| -> Option<i64> {
        s.iter().try_fold(0i64, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (year, rest) = match tag {
        UTC_TIME if text.len() == 13 => {
            // RFC 5280: YY below 50 is 20YY.
            let yy = digits(&text[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        GENERALIZED_TIME if text.len() == 15 => (digits(&text[..4])?, &text[4..]),
        _ => return None,
    };
    if rest[10] != b'Z' {
        return None;
    }
    let field = |i: usize| digits(&rest[i..i + 2]);
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()
}

/// The parts of a v1 certificate that are checked.
pub(super) struct V1<'a> {
    tbs: &'a [u8],
    signature_alg: &'a [u8],
    signature: &'a [u8],
    issuer: &'a [u8],
    not_before: u64,
    not_after: u64,
    spki: &'a [u8],
    key_alg: &'a [u8],
    key: &'a [u8],
}

/// A v1 certificate (its TBSCertificate opens with the serial number, not
/// a `[0]` version), or None for any other or malformed input.
pub(super) fn parse(cert: &[u8]) -> Option<V1<'_>> {
    let mut outer = Der(cert);
    let (body, _) = outer.expect(SEQUENCE)?;
    if !outer.0.is_empty() {
        return None;
    }
    let mut c = Der(body);
    let (tbs_body, tbs) = c.expect(SEQUENCE)?;
    let (signature_alg, _) = c.expect(SEQUENCE)?;
    let (signature_bits, _) = c.expect(BIT_STRING)?;
    if !c.0.is_empty() {
        return None;
    }
    let mut t = Der(tbs_body);
    t.expect(INTEGER)?;
    if t.expect(SEQUENCE)?.0 != signature_alg {
        return None;
    }
    let (issuer, _) = t.expect(SEQUENCE)?;
    let (validity, _) = t.expect(SEQUENCE)?;
    t.expect(SEQUENCE)?; // subject
    let (spki_body, spki) = t.expect(SEQUENCE)?;
    // Unique identifiers and extensions exist only from v2 on.
    if !t.0.is_empty() {
        return None;
    }
    let mut v = Der(validity);
    let (tag, text, _) = v.next()?;
    let not_before = time(tag, text)?;
    let (tag, text, _) = v.next()?;
    let not_after = time(tag, text)?;
    let mut k = Der(spki_body);
    let (key_alg, _) = k.expect(SEQUENCE)?;
    let key = whole_bytes(k.expect(BIT_STRING)?.0)?;
    Some(V1 {
        tbs,
        signature_alg,
        signature: whole_bytes(signature_bits)?,
        issuer,
        not_before,
        not_after,
        spki,
        key_alg,
        key,
    })
}

/// Valid now, and signed by a trust anchor whose subject is its issuer.
pub(super) fn verify_issued(
    cert: &V1<'_>,
    roots: &RootCertStore,
    algs: &WebPkiSupportedAlgorithms,
    now: UnixTime,
) -> Result<(), Error> {
    if now.as_secs() < cert.not_before {
        return Err(CertificateError::NotValidYet.into());
    }
    if now.as_secs() > cert.not_after {
        return Err(CertificateError::Expired.into());
    }
    for anchor in roots.roots.iter() {
        // A trust anchor holds its subject and key without their outer tags.
        if anchor.subject.as_ref() != cert.issuer {
            continue;
        }
        let mut k = Der(anchor.subject_public_key_info.as_ref());
        let (Some((ca_alg, _)), Some((bits, _))) = (k.expect(SEQUENCE), k.expect(BIT_STRING))
        else {
            continue;
        };
        let Some(ca_key) = whole_bytes(bits) else {
            continue;
        };
        let signed = algs.all.iter().any(|alg| {
            alg.signature_alg_id().as_ref() == cert.signature_alg
                && alg.public_key_alg_id().as_ref() == ca_alg
                && alg
                    .verify_signature(ca_key, cert.tbs, cert.signature)
                    .is_ok()
        });
        if signed {
            return Ok(());
        }
    }
    Err(CertificateError::UnknownIssuer.into())
}

/// The handshake signature: checked here with a v1 certificate's key, by
/// `webpki` (webpki's own verifier) for any other certificate.
pub(super) fn signature(
    cert: &CertificateDer<'_>,
    message: &[u8],
    dss: &DigitallySignedStruct,
    algs: &WebPkiSupportedAlgorithms,
    tls13: bool,
    webpki: impl FnOnce() -> Result<HandshakeSignatureValid, Error>,
) -> Result<HandshakeSignatureValid, Error> {
    match parse(cert) {
        Some(v1) => verify_signature(&v1, message, dss, algs, tls13),
        None => webpki(),
    }
}

/// The handshake signature, made with the v1 certificate's key.
fn verify_signature(
    cert: &V1<'_>,
    message: &[u8],
    dss: &DigitallySignedStruct,
    algs: &WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    if tls13 {
        let spki = SubjectPublicKeyInfoDer::from(cert.spki);
        return rustls::crypto::verify_tls13_signature_with_raw_key(message, &spki, dss, algs);
    }
    let candidates = algs
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, candidates)| *candidates)
        .ok_or(PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme)?;
    let valid = candidates.iter().any(|alg| {
        alg.public_key_alg_id().as_ref() == cert.key_alg
            && alg
                .verify_signature(cert.key, message, dss.signature())
                .is_ok()
    });
    if valid {
        Ok(HandshakeSignatureValid::assertion())
    } else {
        Err(CertificateError::BadSignature.into())
    }
}

/// webpki's client verifier, with v1 client certificates checked here.
#[derive(Debug)]
pub struct WithV1 {
    pub inner: Arc<dyn ClientCertVerifier>,
    pub roots: Arc<RootCertStore>,
    pub algs: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for WithV1 {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match parse(end_entity) {
            Some(cert) => verify_issued(&cert, &self.roots, &self.algs, now)
                .map(|()| ClientCertVerified::assertion()),
            None => self
                .inner
                .verify_client_cert(end_entity, intermediates, now),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        signature(cert, message, dss, &self.algs, false, || {
            self.inner.verify_tls12_signature(message, cert, dss)
        })
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        signature(cert, message, dss, &self.algs, true, || {
            self.inner.verify_tls13_signature(message, cert, dss)
        })
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_openssl_reads_them() {
        assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(time(UTC_TIME, b"261205171903Z"), Some(1_796_491_143));
        assert_eq!(
            time(GENERALIZED_TIME, b"20361202171903Z"),
            Some(2_111_851_143)
        );
        // 49 is 2049, 50 is 1950 (RFC 5280).
        assert_eq!(time(UTC_TIME, b"490101000000Z"), Some(2_493_072_000));
        assert_eq!(time(UTC_TIME, b"500101000000Z"), None); // before the epoch
        assert_eq!(time(UTC_TIME, b"261205171903+0100"), None);
        assert_eq!(time(UTC_TIME, b"261305171903Z"), None);
        assert_eq!(time(GENERALIZED_TIME, b"261205171903Z"), None);
    }

    #[test]
    fn malformed_input_is_not_v1() {
        assert!(parse(b"").is_none());
        assert!(parse(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_none());
        assert!(parse(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_none());
        assert!(parse(&[0x30, 0x03, 0x02, 0x01, 0x00]).is_none());
        // Every prefix of a nested structure is refused, never a panic.
        let nested = [0x30, 0x08, 0x30, 0x06, 0x02, 0x01, 0x01, 0x30, 0x01, 0x00];
        for end in 0..nested.len() {
            assert!(parse(&nested[..end]).is_none());
        }
    }
}
