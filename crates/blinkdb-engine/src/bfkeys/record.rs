//! The internal log records that bind a key to its filter files.
//!
//! `BLINKDB.BFBIND key id base error_rate capacity expansion nonscaling backend
//! width pin_db pin_name` — one record per filter life (create, COPY, rewrite):
//! reopen filter `id` (or rebuild it empty), `base` items are already counted
//! before this record. `backend` is `user` or `kernel`; `width` is 0 for digest
//! kernel filters and user filters; `pin_db`/`pin_name` are `-` for user filters.
//! Only the replay path accepts these names: clients get "unknown command".

use super::value::{BackendSpec, KeyFilterSpec};
use crate::bloom::BloomConfig;

pub const BIND_COMMAND: &str = "blinkdb.bfbind";
/// `BLINKDB.BFLOADHDR key id header_chunk`: BF.LOADCHUNK's header step.
pub const LOAD_HEADER_COMMAND: &str = "blinkdb.bfloadhdr";
/// `BLINKDB.BFVALUES key value...`: stored kernel values (digests or RAW items),
/// emitted by an AOF rewrite since kernel maps cannot be read back.
pub const VALUES_COMMAND: &str = "blinkdb.bfvalues";

/// A decoded `BLINKDB.BFBIND`.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub id: u64,
    pub base: u64,
    pub spec: KeyFilterSpec,
    /// Kernel filters: the pin's db and file name, fixed when the filter was made.
    pub pin: Option<(u32, String)>,
}

impl Binding {
    pub fn encode(&self, key: &[u8]) -> Vec<Vec<u8>> {
        let c = &self.spec.config;
        let (backend, width) = match self.spec.backend {
            BackendSpec::User => ("user", 0),
            BackendSpec::Kernel { raw_width } => ("kernel", raw_width.unwrap_or(0)),
        };
        let (pin_db, pin_name) = match &self.pin {
            Some((db, name)) => (db.to_string(), name.clone()),
            None => ("-".into(), "-".into()),
        };
        [
            BIND_COMMAND.to_ascii_uppercase().into_bytes(),
            key.to_vec(),
            self.id.to_string().into_bytes(),
            self.base.to_string().into_bytes(),
            format!("{:?}", c.error_rate).into_bytes(),
            c.capacity.to_string().into_bytes(),
            c.expansion.to_string().into_bytes(),
            (c.nonscaling as u8).to_string().into_bytes(),
            backend.as_bytes().to_vec(),
            width.to_string().into_bytes(),
            pin_db.into_bytes(),
            pin_name.into_bytes(),
        ]
        .into()
    }

    /// The command RedisBloom would replicate for a filter created with this
    /// binding: `BF.RESERVE key error_rate capacity [EXPANSION n | NONSCALING]`.
    /// The replication stream sends it in place of the binding record, which
    /// only BlinkDB's own replay knows. `None` for a binding that does not
    /// create an empty filter (`base > 0`: COPY, a rewrite), whose items no
    /// command can carry. Kernel filters reach replicas as plain filters, as
    /// they do in an RDB file.
    pub fn redisbloom_form(&self, key: &[u8]) -> Option<Vec<Vec<u8>>> {
        if self.base != 0 {
            return None;
        }
        let c = &self.spec.config;
        let mut cmd = vec![
            b"BF.RESERVE".to_vec(),
            key.to_vec(),
            format!("{:?}", c.error_rate).into_bytes(),
            c.capacity.to_string().into_bytes(),
        ];
        if c.nonscaling {
            cmd.push(b"NONSCALING".to_vec());
        } else {
            cmd.push(b"EXPANSION".to_vec());
            cmd.push(c.expansion.to_string().into_bytes());
        }
        Some(cmd)
    }

    /// Decodes the arguments after the key.
    pub fn decode(args: &[&[u8]]) -> Option<Binding> {
        let text = |i: usize| std::str::from_utf8(args.get(i)?).ok();
        if args.len() != 10 {
            return None;
        }
        let config = BloomConfig {
            error_rate: text(2)?.parse().ok()?,
            capacity: text(3)?.parse().ok()?,
            expansion: text(4)?.parse().ok()?,
            nonscaling: text(5)? == "1",
        };
        let width: u32 = text(7)?.parse().ok()?;
        let backend = match text(6)? {
            "user" => BackendSpec::User,
            "kernel" => BackendSpec::Kernel {
                raw_width: (width != 0).then_some(width),
            },
            _ => return None,
        };
        let pin = match backend {
            BackendSpec::User => None,
            BackendSpec::Kernel { .. } => Some((text(8)?.parse().ok()?, text(9)?.to_string())),
        };
        config.validate().ok()?;
        Some(Binding {
            id: text(0)?.parse().ok()?,
            base: text(1)?.parse().ok()?,
            spec: KeyFilterSpec { config, backend },
            pin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_round_trips() {
        let b = Binding {
            id: 42,
            base: 7,
            spec: KeyFilterSpec {
                config: BloomConfig {
                    error_rate: 0.001,
                    capacity: 1000,
                    expansion: 4,
                    nonscaling: false,
                },
                backend: BackendSpec::Kernel { raw_width: Some(4) },
            },
            pin: Some((3, "k6b".into())),
        };
        let rec = b.encode(b"key");
        assert_eq!(rec[0], b"BLINKDB.BFBIND");
        assert_eq!(rec[1], b"key");
        let rest: Vec<&[u8]> = rec[2..].iter().map(|a| &a[..]).collect();
        assert_eq!(b.redisbloom_form(b"key"), None, "base > 0: no command form");
        assert_eq!(Binding::decode(&rest), Some(b));
        assert_eq!(Binding::decode(&rest[..9]), None);
    }

    #[test]
    fn a_new_filter_replicates_as_bf_reserve() {
        let mut b = Binding {
            id: 1,
            base: 0,
            spec: KeyFilterSpec {
                config: BloomConfig {
                    error_rate: 0.00001,
                    capacity: 100,
                    expansion: 2,
                    nonscaling: false,
                },
                backend: BackendSpec::User,
            },
            pin: None,
        };
        let form = |b: &Binding| -> Vec<String> {
            let cmd = b.redisbloom_form(b"k").unwrap();
            cmd.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        };
        assert_eq!(
            form(&b),
            ["BF.RESERVE", "k", "1e-5", "100", "EXPANSION", "2"]
        );
        b.spec.config.nonscaling = true;
        assert_eq!(form(&b), ["BF.RESERVE", "k", "1e-5", "100", "NONSCALING"]);
    }
}
