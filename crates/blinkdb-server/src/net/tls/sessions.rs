//! `tls-session-cache-timeout` over rustls' session cache, which is bounded
//! by size only: each stored session carries the time it was stored, and one
//! older than the timeout is not resumed (OpenSSL's SSL_CTX_set_timeout,
//! which Redis sets). The lifetime a TLS 1.3 ticket advertises stays rustls'
//! own; the server decides here.

use rustls::server::StoresServerSessions;
use std::sync::Arc;

#[derive(Debug)]
pub struct Expiring {
    inner: Arc<dyn StoresServerSessions>,
    timeout_secs: u64,
}

impl Expiring {
    pub fn new(inner: Arc<dyn StoresServerSessions>, timeout_secs: u64) -> Expiring {
        Expiring {
            inner,
            timeout_secs,
        }
    }

    /// The session stored in `v`, if it is still fresh.
    fn fresh(&self, v: Vec<u8>) -> Option<Vec<u8>> {
        let stored = u64::from_be_bytes(v.get(..8)?.try_into().ok()?);
        (now_secs().saturating_sub(stored) < self.timeout_secs).then(|| v[8..].to_vec())
    }
}

fn now_secs() -> u64 {
    blinkdb_engine::now_ms() / 1000
}

impl StoresServerSessions for Expiring {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut v = Vec::with_capacity(8 + value.len());
        v.extend_from_slice(&now_secs().to_be_bytes());
        v.extend_from_slice(&value);
        self.inner.put(key, v)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.fresh(self.inner.get(key)?)
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.fresh(self.inner.take(key)?)
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}
