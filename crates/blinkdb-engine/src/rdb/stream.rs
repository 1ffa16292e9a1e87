//! Streams in RDB (`RDB_TYPE_STREAM_LISTPACKS_2`, 19; 15 and 21 read too), as
//! Redis 7.0's rdbSaveObject and rdbLoadObject lay them out:
//!
//! ```text
//! nodes(len)  ( key: string of 16 bytes, master ID as two u64 BE
//!               listpack: string )*
//! length(len) last_id.ms(len) last_id.seq(len)
//! type 19:    first_id.ms first_id.seq max_deleted.ms max_deleted.seq entries_added (all len)
//! groups(len) ( name: string, last_id.ms(len) last_id.seq(len),
//!               type 19: entries_read(len; 2^64-1 when unknown)
//!               pel(len) ( id: 16 bytes BE, delivery_time: i64 LE ms, delivery_count(len) )*
//!               consumers(len) ( name: string, seen_time: i64 LE ms,
//!                                type 21: active_time: i64 LE ms,
//!                                pel(len) ( id: 16 bytes BE )* )* )*
//!
//! node listpack (t_stream.c): the master entry, then every entry, deleted
//! ones included:
//!   live count, deleted count, master field count, master field names..., 0
//!   entry: flags (1 deleted, 2 same fields), ms - master.ms, seq - master.seq
//!          (both as i64, wrapping), [field count, field names + values | values],
//!          lp-count (the entry's listpack items besides itself)
//! ```
//!
//! A BlinkDB node is written as one Redis node with the same entries,
//! tombstones and master fields, so a stream built by XADD under the same
//! stream-node-max-entries dumps to Redis's bytes (when no node is cut by
//! stream-node-max-bytes, whose size measure is Redis's own listpack's).

use super::listpack::{self, Item, ListpackWriter};
use super::read::Reader;
use super::write::{write_len, write_string};
use super::RdbError;
use crate::types::stream::{Block, Consumer, Group, Nack, StreamId, StreamValue};
use std::collections::BTreeMap;

const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

fn raw_id(id: StreamId) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&id.ms.to_be_bytes());
    b[8..].copy_from_slice(&id.seq.to_be_bytes());
    b
}

fn id_of_raw(b: &[u8]) -> StreamId {
    StreamId::new(
        u64::from_be_bytes(b[..8].try_into().expect("8")),
        u64::from_be_bytes(b[8..16].try_into().expect("8")),
    )
}

/// One node's listpack, as Redis's streamAppendItem builds it.
pub fn node_listpack(master: StreamId, b: &Block) -> Vec<u8> {
    let mut lp = ListpackWriter::new();
    lp.push_int(b.live as i64);
    lp.push_int(b.deleted as i64);
    let names: Vec<&[u8]> = b.master_fields().collect();
    lp.push_int(names.len() as i64);
    for n in &names {
        lp.push(n);
    }
    lp.push_int(0);
    for slot in b.slots(master) {
        let mut flags = 0;
        if slot.deleted {
            flags |= FLAG_DELETED;
        }
        if slot.same {
            flags |= FLAG_SAME_FIELDS;
        }
        lp.push_int(flags);
        lp.push_int(slot.id.ms.wrapping_sub(master.ms) as i64);
        lp.push_int(slot.id.seq.wrapping_sub(master.seq) as i64);
        let fields = b.fields(&slot);
        let n = fields.len() as i64;
        if !slot.same {
            lp.push_int(n);
        }
        for (f, v) in fields {
            if !slot.same {
                lp.push(f);
            }
            lp.push(v);
        }
        lp.push_int(if slot.same { n + 3 } else { 2 * n + 4 });
    }
    lp.finish()
}

/// The stream's body after its type byte (type 19).
pub fn write(out: &mut Vec<u8>, s: &StreamValue, compress: bool) {
    write_len(out, s.nodes() as u64);
    for (master, b) in s.node_list() {
        write_string(out, &raw_id(master), compress);
        write_string(out, &node_listpack(master, b), compress);
    }
    write_len(out, s.len());
    for id in [s.last_id, s.first_id, s.max_deleted_id] {
        write_len(out, id.ms);
        write_len(out, id.seq);
    }
    write_len(out, s.entries_added);
    write_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        write_string(out, name, compress);
        write_len(out, g.last_id.ms);
        write_len(out, g.last_id.seq);
        write_len(out, g.entries_read.unwrap_or(u64::MAX));
        write_len(out, g.pel.len() as u64);
        for (id, nack) in &g.pel {
            out.extend_from_slice(&raw_id(*id));
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            write_len(out, nack.delivery_count);
        }
        write_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            write_string(out, cname, compress);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            write_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&raw_id(*id));
            }
        }
    }
}

const BAD_NODE: RdbError = RdbError::Corrupt("Stream listpack integrity check failed.");

/// Walks a node listpack's items.
struct Items<'a> {
    items: std::vec::IntoIter<Item<'a>>,
}

impl<'a> Items<'a> {
    fn next(&mut self) -> Result<Item<'a>, RdbError> {
        self.items.next().ok_or(BAD_NODE)
    }

    /// lpGetIntegerIfValid: an integer entry, or a string that is one.
    fn int(&mut self) -> Result<i64, RdbError> {
        match self.next()? {
            Item::Int(v) => Ok(v),
            Item::Str(s) => listpack::as_int(s).ok_or(BAD_NODE),
        }
    }

    fn count(&mut self) -> Result<usize, RdbError> {
        let n = self.int()?;
        // Every counted item takes at least one listpack entry.
        if n < 0 || n as usize > self.items.len() {
            return Err(BAD_NODE);
        }
        Ok(n as usize)
    }
}

/// Reads one node (streamValidateListpackIntegrity, deep) into a Block.
/// `after` is the last ID of the previous node: every entry must follow it.
fn read_node(master: StreamId, lp: &[u8], after: Option<StreamId>) -> Result<Block, RdbError> {
    let items = listpack::decode(lp)?;
    if items.is_empty() {
        return Err(RdbError::Corrupt("Empty listpack inside stream"));
    }
    let mut it = Items {
        items: items.into_iter(),
    };
    let live = it.count()?;
    let deleted = it.count()?;
    let nmaster = it.count()?;
    let names: Vec<Vec<u8>> = (0..nmaster)
        .map(|_| it.next().map(Item::to_bytes))
        .collect::<Result<_, _>>()?;
    if it.int()? != 0 {
        return Err(BAD_NODE);
    }
    let name_refs: Vec<&[u8]> = names.iter().map(|n| &n[..]).collect();
    let mut block = Block::with_master(&name_refs, master);
    let mut prev = after;
    let total = live.checked_add(deleted).ok_or(BAD_NODE)?;
    let (mut seen_live, mut seen_deleted) = (0usize, 0usize);
    for _ in 0..total {
        let flags = it.int()?;
        let ms = master.ms.wrapping_add(it.int()? as u64);
        let seq = master.seq.wrapping_add(it.int()? as u64);
        let id = StreamId::new(ms, seq);
        if id < master || prev.is_some_and(|p| id <= p) {
            return Err(RdbError::Corrupt("stream entry IDs out of order"));
        }
        prev = Some(id);
        let same = flags & FLAG_SAME_FIELDS != 0;
        let mut fields: Vec<Vec<u8>> = Vec::new();
        let n = if same {
            for name in &names {
                fields.push(name.clone());
                fields.push(it.next()?.to_bytes());
            }
            nmaster
        } else {
            let n = it.count()?;
            for _ in 0..2 * n {
                fields.push(it.next()?.to_bytes());
            }
            n
        };
        let lp_count = it.int()?;
        let want = if same { n + 3 } else { 2 * n + 4 };
        if lp_count != want as i64 {
            return Err(BAD_NODE);
        }
        if n == 0 {
            return Err(RdbError::Corrupt("stream entry without fields"));
        }
        let refs: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
        if flags & FLAG_DELETED != 0 {
            block.push_deleted(master, id, &refs);
            seen_deleted += 1;
        } else {
            block.push(master, id, &refs);
            seen_live += 1;
        }
    }
    if it.items.len() != 0 || seen_live != live || seen_deleted != deleted {
        return Err(BAD_NODE);
    }
    Ok(block)
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(r.len()?, r.len()?))
}

/// A stream of RDB type 15, 19 or 21 (`version` 1, 2 or 3), after its type
/// byte. Version 3 (Redis 7.2) adds each consumer's active time after its
/// seen time; BlinkDB's consumers keep Redis 7.0's seen time only (XINFO
/// answers as 7.0 does), so it is read and dropped.
pub fn read(r: &mut Reader<'_>, version: u8) -> Result<StreamValue, RdbError> {
    let v2 = version >= 2;
    let mut s = StreamValue::default();
    let nodes = r.count(2)?;
    let mut last_entry: Option<StreamId> = None;
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return Err(RdbError::Corrupt(
                "Stream node key entry is not the size of a stream ID",
            ));
        }
        let master = id_of_raw(&key);
        let lp = r.string()?;
        let block = read_node(master, &lp, last_entry)?;
        last_entry = Some(block.last);
        s.push_node(master, block).map_err(RdbError::Corrupt)?;
    }
    let length = r.len()?;
    if length != s.len() {
        return Err(RdbError::Corrupt(
            "Stream length inconsistent with its entries",
        ));
    }
    s.last_id = read_id(r)?;
    if last_entry.is_some_and(|l| l > s.last_id) {
        return Err(RdbError::Corrupt(
            "Stream last ID precedes one of its entries",
        ));
    }
    if v2 {
        s.first_id = read_id(r)?;
        s.max_deleted_id = read_id(r)?;
        s.entries_added = r.len()?;
    } else {
        s.entries_added = s.len();
        let first = s
            .range(StreamId::MIN, StreamId::MAX, false)
            .next()
            .map_or(StreamId::MIN, |(id, _)| id);
        s.first_id = first;
    }
    let groups = r.count(3)?;
    for _ in 0..groups {
        let name: Box<[u8]> = r.string()?.into();
        let last_id = read_id(r)?;
        let entries_read = if v2 {
            match r.len()? {
                u64::MAX => None,
                n => Some(n),
            }
        } else {
            s.estimate_distance(last_id)
        };
        let mut g = Group::new(last_id, entries_read);
        let pel = r.count(16 + 8 + 1)?;
        let mut owners: BTreeMap<StreamId, Option<Box<[u8]>>> = BTreeMap::new();
        let mut times = Vec::with_capacity(pel);
        for _ in 0..pel {
            let id = id_of_raw(r.take(16)?);
            let time = r.millis()?;
            let count = r.len()?;
            if owners.insert(id, None).is_some() {
                return Err(RdbError::Corrupt(
                    "Duplicated global PEL entry loading stream consumer group",
                ));
            }
            times.push((id, time, count));
        }
        let consumers = r.count(1 + 8 + 1)?;
        for _ in 0..consumers {
            let cname: Box<[u8]> = r.string()?.into();
            let seen_time = r.millis()?;
            if version >= 3 {
                r.millis()?;
            }
            let mut c = Consumer {
                seen_time,
                pel: Default::default(),
            };
            let n = r.count(16)?;
            for _ in 0..n {
                let id = id_of_raw(r.take(16)?);
                match owners.get_mut(&id) {
                    None => {
                        return Err(RdbError::Corrupt(
                            "Consumer entry not found in group global PEL",
                        ))
                    }
                    Some(Some(_)) => {
                        return Err(RdbError::Corrupt(
                            "Stream consumer PEL entry already has a consumer assigned",
                        ))
                    }
                    Some(owner) => *owner = Some(cname.clone()),
                }
                c.pel.insert(id);
            }
            if g.consumers.insert(cname, c).is_some() {
                return Err(RdbError::Corrupt("Duplicate stream consumer detected."));
            }
        }
        for (id, delivery_time, delivery_count) in times {
            let consumer = owners
                .remove(&id)
                .flatten()
                .ok_or(RdbError::Corrupt("Stream CG PEL entry without consumer"))?;
            g.pel.insert(
                id,
                Nack {
                    consumer,
                    delivery_time,
                    delivery_count,
                },
            );
        }
        if s.groups.insert(name, g).is_some() {
            return Err(RdbError::Corrupt("Duplicated consumer group name"));
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::stream::NodeLimits;

    #[test]
    fn round_trip_with_tombstones_and_groups() {
        let mut s = StreamValue::default();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 3,
        };
        for i in 1..=8u64 {
            let v = i.to_string();
            if i % 3 == 0 {
                s.append(StreamId::new(i, i), &[b"other", v.as_bytes()], limits);
            } else {
                s.append(
                    StreamId::new(i, 0),
                    &[b"f", v.as_bytes(), b"g", b"x"],
                    limits,
                );
            }
        }
        assert!(s.delete(StreamId::new(2, 0)));
        let mut g = Group::new(StreamId::new(5, 0), Some(5));
        g.create_consumer(b"alice", 1000);
        g.create_consumer(b"bob", 2000);
        g.deliver(StreamId::new(4, 0), b"alice", 3000);
        g.deliver(StreamId::new(5, 0), b"bob", 4000);
        s.groups.insert(b"g1"[..].into(), g);
        s.groups
            .insert(b"g0"[..].into(), Group::new(StreamId::MIN, None));
        let mut out = Vec::new();
        write(&mut out, &s, true);
        let back = read(&mut Reader::new(&out), 2).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.nodes(), s.nodes());
        assert_eq!(back.first_id, s.first_id);
        let mut again = Vec::new();
        write(&mut again, &back, true);
        assert_eq!(again, out);
        // Truncations are errors, never panics.
        for n in 0..out.len() {
            assert!(read(&mut Reader::new(&out[..n]), 2).is_err());
        }
    }

    #[test]
    fn node_bytes_as_redis_writes_them() {
        // redis-server 7.0.15: XADD s 1-1 a 1, XADD s 1-2 a 2, XADD s 2-0 b x,
        // XDEL s 1-2; the node's listpack in DUMP s.
        let mut s = StreamValue::default();
        let l = NodeLimits::default();
        s.append(StreamId::new(1, 1), &[b"a", b"1"], l);
        s.append(StreamId::new(1, 2), &[b"a", b"2"], l);
        s.append(StreamId::new(2, 0), &[b"b", b"x"], l);
        s.delete(StreamId::new(1, 2));
        let (m, b) = s.node_list().next().unwrap();
        let lp = node_listpack(m, b);
        let want: &[u8] = b"\x37\x00\x00\x00\x16\x00\x02\x01\x01\x01\x01\x01\x81a\x02\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x04\x01\x03\x01\x00\x01\x01\x01\x02\x01\x04\x01\x00\x01\x01\x01\xdf\xff\x02\x01\x01\x81b\x02\x81x\x02\x06\x01\xff";
        assert_eq!(lp, want);
    }
}
