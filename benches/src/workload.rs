//! What each operation sends: a SET/GET mix over a keyspace, or weighted command templates.
//!
//! Requests are written straight into the send buffer as RESP arrays of bulk strings,
//! because building a frame object per command would cost more than the server under test;
//! replies are decoded with redis-protocol (see `connection.rs`).

use std::io::Write;

use bytes::{BufMut, BytesMut};
use rand::rngs::SmallRng;
use rand::Rng;

use crate::options::Options;

/// What a reply to the operation's final command means for hit/miss accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Get,
    Other,
}

/// One operation written to the send buffer.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    pub kind: OpKind,
    /// Commands in the operation, hence replies to wait for.
    pub commands: usize,
    /// Items carried (for items/s of multi-item commands).
    pub items: usize,
}

#[derive(Debug, Clone)]
enum Piece {
    Literal(Vec<u8>),
    RandInt,
    RandFilter,
    Seq,
    /// Nanoseconds since the process started (consumers.rs measures push-to-pop with it).
    Ts,
}

#[derive(Debug, Clone)]
enum Arg {
    Pieces(Vec<Piece>),
    Items,
}

#[derive(Debug, Clone)]
struct Template {
    weight: u32,
    commands: Vec<Vec<Arg>>,
    items_per_op: usize,
}

#[derive(Debug, Clone)]
enum Mix {
    SetGet {
        set_ratio: f64,
        miss_ratio: f64,
        value: Vec<u8>,
    },
    Templates {
        templates: Vec<Template>,
        total_weight: u32,
        items: usize,
        filters: u64,
    },
}

/// Generates operations for one connection.
#[derive(Debug, Clone)]
pub struct Workload {
    mix: Mix,
    keys: u64,
    client_id: usize,
    seq: u64,
    scratch: Vec<u8>,
}

const PLACEHOLDERS: [(&str, Piece); 4] = [
    ("__rand_int__", Piece::RandInt),
    ("__rand_filter__", Piece::RandFilter),
    ("__seq__", Piece::Seq),
    ("__ts__", Piece::Ts),
];

fn parse_arg(word: &str) -> Arg {
    if word == "__items__" {
        return Arg::Items;
    }
    let mut pieces = Vec::new();
    let mut rest = word;
    'outer: while !rest.is_empty() {
        let earliest = PLACEHOLDERS
            .iter()
            .filter_map(|(name, piece)| rest.find(name).map(|at| (at, *name, piece)))
            .min_by_key(|(at, _, _)| *at);
        match earliest {
            Some((at, name, piece)) => {
                if at > 0 {
                    pieces.push(Piece::Literal(rest.as_bytes()[..at].to_vec()));
                }
                pieces.push(piece.clone());
                rest = &rest[at + name.len()..];
            }
            None => {
                pieces.push(Piece::Literal(rest.as_bytes().to_vec()));
                break 'outer;
            }
        }
    }
    Arg::Pieces(pieces)
}

fn parse_template(text: &str, items: usize) -> Result<Template, String> {
    let (weight, body) = match text.trim().strip_prefix('@') {
        Some(rest) => {
            let (w, body) = rest
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("template '{text}': weight without command"))?;
            let w = w
                .parse::<u32>()
                .map_err(|_| format!("template '{text}': bad weight '{w}'"))?;
            (w, body)
        }
        None => (1, text),
    };
    let commands: Vec<Vec<Arg>> = body
        .split(" ; ")
        .map(|c| c.split_whitespace().map(parse_arg).collect::<Vec<_>>())
        .filter(|c| !c.is_empty())
        .collect();
    if commands.is_empty() || weight == 0 {
        return Err(format!("template '{text}' has no command or a zero weight"));
    }
    let items_per_op = commands
        .iter()
        .flatten()
        .map(|a| match a {
            Arg::Items => items,
            Arg::Pieces(_) => 0,
        })
        .sum::<usize>()
        .max(1);
    Ok(Template {
        weight,
        commands,
        items_per_op,
    })
}

/// The value SET writes: a fixed printable pattern, so replies can be checked by length.
pub fn value_of_size(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

/// Writes a key in redis-benchmark's shape (`key:` + 12 zero-padded digits).
pub fn write_key(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(b"key:");
    write_padded12(out, n);
}

/// `{n:012}` without `core::fmt`, which was a quarter of the load generator's
/// time on 128-item commands (and so capped what it could measure).
fn write_padded12(out: &mut Vec<u8>, n: u64) {
    if n >= 1_000_000_000_000 {
        let _ = write!(out, "{n:012}");
        return;
    }
    let mut digits = [b'0'; 12];
    let mut n = n;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits);
}

/// `put_bulk` of `write_key(n)` as one 23-byte copy: per item, five small copies
/// were the load generator's largest cost on 128-item commands.
fn put_key_bulk(buf: &mut BytesMut, scratch: &mut Vec<u8>, n: u64) {
    if n >= 1_000_000_000_000 {
        scratch.clear();
        write_key(scratch, n);
        put_bulk(buf, scratch);
        return;
    }
    let mut frame = *b"$16\r\nkey:000000000000\r\n";
    let mut n = n;
    for d in frame[9..21].iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    buf.extend_from_slice(&frame);
}

pub fn put_bulk(buf: &mut BytesMut, bytes: &[u8]) {
    buf.put_u8(b'$');
    put_decimal(buf, bytes.len() as u64);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
}

pub fn put_array_header(buf: &mut BytesMut, len: usize) {
    buf.put_u8(b'*');
    put_decimal(buf, len as u64);
    buf.extend_from_slice(b"\r\n");
}

fn put_decimal(buf: &mut BytesMut, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[at..]);
}

impl Workload {
    pub fn new(options: &Options, client_id: usize) -> Result<Workload, String> {
        let mix = if options.commands.is_empty() {
            Mix::SetGet {
                set_ratio: options.set_ratio,
                miss_ratio: options.miss_ratio,
                value: value_of_size(options.value_size),
            }
        } else {
            let templates = options
                .commands
                .iter()
                .map(|t| parse_template(t, options.items))
                .collect::<Result<Vec<_>, _>>()?;
            let total_weight = templates.iter().map(|t| t.weight).sum();
            Mix::Templates {
                templates,
                total_weight,
                items: options.items,
                filters: options.filters,
            }
        };
        Ok(Workload {
            mix,
            keys: options.keys,
            client_id,
            seq: 0,
            scratch: Vec::with_capacity(64),
        })
    }

    /// Appends one operation to `buf`.
    pub fn write_op(&mut self, rng: &mut SmallRng, buf: &mut BytesMut) -> Op {
        match &self.mix {
            Mix::SetGet {
                set_ratio,
                miss_ratio,
                value,
            } => {
                self.scratch.clear();
                if rng.gen::<f64>() < *set_ratio {
                    write_key(&mut self.scratch, rng.gen_range(0..self.keys));
                    put_array_header(buf, 3);
                    put_bulk(buf, b"SET");
                    put_bulk(buf, &self.scratch);
                    put_bulk(buf, value);
                    Op {
                        kind: OpKind::Other,
                        commands: 1,
                        items: 1,
                    }
                } else {
                    let n = if rng.gen::<f64>() < *miss_ratio {
                        self.keys + rng.gen_range(0..self.keys)
                    } else {
                        rng.gen_range(0..self.keys)
                    };
                    write_key(&mut self.scratch, n);
                    put_array_header(buf, 2);
                    put_bulk(buf, b"GET");
                    put_bulk(buf, &self.scratch);
                    Op {
                        kind: OpKind::Get,
                        commands: 1,
                        items: 1,
                    }
                }
            }
            Mix::Templates {
                templates,
                total_weight,
                items,
                filters,
            } => {
                let mut pick = rng.gen_range(0..*total_weight);
                let template = templates
                    .iter()
                    .find(|t| {
                        if pick < t.weight {
                            true
                        } else {
                            pick -= t.weight;
                            false
                        }
                    })
                    .unwrap_or(&templates[0]);
                self.seq += 1;
                for command in &template.commands {
                    let argc: usize = command
                        .iter()
                        .map(|a| match a {
                            Arg::Items => *items,
                            Arg::Pieces(_) => 1,
                        })
                        .sum();
                    put_array_header(buf, argc);
                    for arg in command {
                        match arg {
                            Arg::Items => {
                                buf.reserve(*items * 23);
                                for _ in 0..*items {
                                    let n = rng.gen_range(0..self.keys);
                                    put_key_bulk(buf, &mut self.scratch, n);
                                }
                            }
                            Arg::Pieces(pieces) => {
                                self.scratch.clear();
                                for piece in pieces {
                                    match piece {
                                        Piece::Literal(bytes) => {
                                            self.scratch.extend_from_slice(bytes)
                                        }
                                        Piece::RandInt => {
                                            let n = rng.gen_range(0..self.keys);
                                            write_padded12(&mut self.scratch, n);
                                        }
                                        Piece::RandFilter => {
                                            let n = rng.gen_range(0..*filters);
                                            let _ = write!(self.scratch, "{n}");
                                        }
                                        Piece::Ts => {
                                            let _ = write!(
                                                self.scratch,
                                                "{}",
                                                crate::consumers::now_ns()
                                            );
                                        }
                                        Piece::Seq => {
                                            let _ = write!(
                                                self.scratch,
                                                "{}-{}",
                                                self.client_id, self.seq
                                            );
                                        }
                                    }
                                }
                                put_bulk(buf, &self.scratch);
                            }
                        }
                    }
                }
                Op {
                    kind: OpKind::Other,
                    commands: template.commands.len(),
                    items: template.items_per_op,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn options_with(commands: &[&str], items: usize) -> Options {
        Options {
            host: "127.0.0.1".into(),
            port: 1,
            clients: 1,
            pipeline: 1,
            stop: crate::options::StopAfter::Requests(1),
            rate: None,
            keys: 10,
            value_size: 3,
            set_ratio: 0.0,
            miss_ratio: 0.0,
            preload: false,
            seed: 1,
            json: false,
            threads: 1,
            commands: commands.iter().map(|s| s.to_string()).collect(),
            items,
            filters: 4,
            subscribers: 0,
            subscribe_channel: String::new(),
            consumers: 0,
            consume: None,
        }
    }

    fn decode_all(buf: &[u8]) -> Vec<redis_protocol::resp2::types::OwnedFrame> {
        let mut frames = Vec::new();
        let mut at = 0;
        while at < buf.len() {
            let (frame, used) = redis_protocol::resp2::decode::decode(&buf[at..])
                .expect("valid RESP")
                .expect("complete frame");
            frames.push(frame);
            at += used;
        }
        frames
    }

    #[test]
    fn keys_are_zero_padded_to_twelve_digits() {
        for n in [
            0u64,
            7,
            123_456,
            999_999_999_999,
            1_000_000_000_000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write_key(&mut out, n);
            assert_eq!(out, format!("key:{n:012}").into_bytes());
        }
    }

    #[test]
    fn key_bulk_frames_equal_put_bulk_of_write_key() {
        for n in [
            0u64,
            9,
            10,
            123_456,
            999_999_999_999,
            1_000_000_000_000,
            u64::MAX,
        ] {
            let (mut fast, mut slow, mut key) = (BytesMut::new(), BytesMut::new(), Vec::new());
            put_key_bulk(&mut fast, &mut Vec::new(), n);
            write_key(&mut key, n);
            put_bulk(&mut slow, &key);
            assert_eq!(fast, slow, "{n}");
        }
    }

    #[test]
    fn items_template_expands_to_n_arguments_and_counts_items() {
        let options = options_with(&["BF.MADD bf:__rand_filter__ __items__"], 8);
        let mut workload = Workload::new(&options, 0).unwrap();
        let mut buf = BytesMut::new();
        let op = workload.write_op(&mut SmallRng::seed_from_u64(1), &mut buf);
        assert_eq!((op.commands, op.items), (1, 8));
        let frames = decode_all(&buf);
        use redis_protocol::resp2::types::OwnedFrame;
        let OwnedFrame::Array(args) = &frames[0] else {
            panic!("not an array: {frames:?}")
        };
        assert_eq!(args.len(), 2 + 8);
        let OwnedFrame::BulkString(name) = &args[1] else {
            panic!()
        };
        let name = String::from_utf8(name.clone()).unwrap();
        assert!(name.starts_with("bf:") && name[3..].parse::<u64>().unwrap() < 4);
    }

    #[test]
    fn chained_template_is_one_op_of_several_commands() {
        let options = options_with(&["BF.RESERVE c:__seq__ 0.01 100 ; DEL c:__seq__"], 1);
        let mut workload = Workload::new(&options, 7).unwrap();
        let mut buf = BytesMut::new();
        let op = workload.write_op(&mut SmallRng::seed_from_u64(1), &mut buf);
        assert_eq!(op.commands, 2);
        let text = String::from_utf8(buf.to_vec()).unwrap();
        assert_eq!(text.matches("c:7-1").count(), 2, "{text}");
    }

    #[test]
    fn weights_split_operations_between_templates() {
        let options = options_with(&["@9 GET a", "@1 SET a b"], 1);
        let mut workload = Workload::new(&options, 0).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        let mut buf = BytesMut::new();
        for _ in 0..10_000 {
            workload.write_op(&mut rng, &mut buf);
        }
        let sets = String::from_utf8(buf.to_vec())
            .unwrap()
            .matches("$3\r\nSET")
            .count();
        assert!((800..1200).contains(&sets), "sets = {sets}");
    }

    #[test]
    fn misses_fall_outside_the_loaded_keyspace() {
        let mut options = options_with(&[], 1);
        options.miss_ratio = 1.0;
        let mut workload = Workload::new(&options, 0).unwrap();
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..100 {
            let mut buf = BytesMut::new();
            workload.write_op(&mut rng, &mut buf);
            let text = String::from_utf8(buf.to_vec()).unwrap();
            let key: u64 = text.split("key:").nth(1).unwrap()[..12].parse().unwrap();
            assert!((10..20).contains(&key), "{key}");
        }
    }
}
