//! The RDB decoder (engine::rdb) on arbitrary bytes: RESTORE payloads and
//! whole files, as a hostile client or a damaged dump.rdb gives them.
//!
//! Input: a flags byte, then the data. Flag 1 appends a valid DUMP footer
//! (version 10, the right CRC-64) so mutations reach the value decoder
//! instead of stopping at the checksum; flag 2 reads the data as a whole
//! file, with "REDIS0010" put in front and a valid trailer after when flag 1
//! is set too; flag 4 uses tiny encoding limits (every collection converts);
//! flag 16 heads a whole file "REDIS0012" instead (Redis 7.4-8.0's, issue 43).
//!
//! Checks: no panic; the heap stays under 128 bytes per input byte plus
//! 1 MB (LZF's expansion is at most 88x, and no declared length or count is
//! trusted past the bytes left); a value that decodes writes back and decodes
//! again to an equal value, RedisBloom `MBbloom--` module values included.
#![no_main]

use blinkdb_engine::{rdb_format, Limits};
use blinkdb_fuzz::alloc_meter::peak_during;
use libfuzzer_sys::fuzz_target;

fn limits(tiny: bool) -> Limits {
    if !tiny {
        return Limits::default();
    }
    Limits {
        hash_max_listpack_entries: 2,
        hash_max_listpack_value: 4,
        set_max_intset_entries: 2,
        zset_max_listpack_entries: 2,
        zset_max_listpack_value: 4,
        list_max_listpack_size: 2,
        ..Limits::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let limits = limits(flags & 4 != 0);
    let bound = 128 * data.len() + (1 << 20);
    if flags & 2 != 0 {
        let header: &[u8] = if flags & 16 != 0 {
            b"REDIS0012"
        } else {
            b"REDIS0010"
        };
        let mut file = header.to_vec();
        file.extend_from_slice(body);
        if flags & 1 != 0 {
            let crc = rdb_format::CRC64.checksum(&file);
            file.extend_from_slice(&crc.to_le_bytes());
        }
        let (_, peak) = peak_during(|| {
            let mut keys = 0usize;
            rdb_format::load_file(&file, &limits, 16, true, 0, |_| {
                keys += 1;
                Ok(())
            })
        });
        assert!(
            peak <= 128 * file.len() + (1 << 20),
            "{peak} bytes of heap for a {}-byte file",
            file.len()
        );
        return;
    }
    let payload = if flags & 1 != 0 {
        rdb_format::create_payload(body.to_vec())
    } else {
        body.to_vec()
    };
    let (value, peak) = peak_during(|| rdb_format::restore_value(&payload, &limits, true));
    assert!(
        peak <= bound,
        "{peak} bytes of heap for a {}-byte payload",
        payload.len()
    );
    let value = match value {
        Ok(rdb_format::Loaded::Value(value)) => value,
        Ok(rdb_format::Loaded::Bloom(chain)) => {
            // A RedisBloom filter writes back to a payload that reads back equal.
            let again =
                rdb_format::restore_value(&rdb_format::bloom_payload(&chain), &limits, true);
            match again.expect("reads back") {
                rdb_format::Loaded::Bloom(back) => assert_eq!(back, chain),
                _ => panic!("a filter read back as another type"),
            }
            return;
        }
        Ok(rdb_format::Loaded::NativeBloom(..)) => unreachable!("only a whole file carries a dump"),
        // A blinkdbBF dump (MIGRATE between BlinkDB servers): its chunks were
        // checked against its header's plan; building the filter needs a store.
        Ok(rdb_format::Loaded::NativeDump(_)) => return,
        Err(_) => return,
    };
    // Round trip: what BlinkDB writes for the value reads back the same.
    let mut out = vec![rdb_format::object_type(&value).expect("a decoded value has a type")];
    let mut no_blob = |_: &blinkdb_engine::BlobRef| -> Result<bytes::Bytes, rdb_format::RdbError> {
        unreachable!("a decoded value is in memory")
    };
    rdb_format::write_object(&mut out, &value, flags & 8 != 0, &mut no_blob).expect("writes");
    let again = rdb_format::restore_value(&rdb_format::create_payload(out), &limits, true)
        .expect("reads back");
    assert!(matches!(again, rdb_format::Loaded::Value(ref v) if *v == value));
});
