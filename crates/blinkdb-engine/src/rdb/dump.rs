//! The DUMP payload: a value's type byte and body, then the RDB version
//! (2 bytes LE) and the CRC-64 of everything before it (8 bytes LE).

use super::{RdbError, CRC64, RDB_VERSION, RDB_VERSION_READ};

pub const ERR_PAYLOAD: &str = "DUMP payload version or checksum are wrong";

/// Appends the footer to a serialized value.
pub fn create_payload(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// verifyDumpPayload: the body without its footer when the version is at
/// most 12 (a payload DUMP made on Redis 8.0 restores here) and the checksum
/// matches (or `check_crc` is off).
pub fn verify_payload(payload: &[u8], check_crc: bool) -> Result<&[u8], RdbError> {
    if payload.len() < 10 {
        return Err(RdbError::Payload);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    if u16::from_le_bytes([footer[0], footer[1]]) > RDB_VERSION_READ {
        return Err(RdbError::Payload);
    }
    if check_crc && CRC64.checksum(&payload[..payload.len() - 8]).to_le_bytes() != footer[2..] {
        return Err(RdbError::Payload);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_payload_of_a_string() {
        // redis-server 7.0.15: SET foo bar, DUMP foo.
        let p = create_payload(b"\x00\x03bar".to_vec());
        assert_eq!(
            p,
            b"\x00\x03bar\x0a\x00\xe6\xbe\x49\x60\xee\x66\xfd\x17".to_vec()
        );
        assert_eq!(verify_payload(&p, true).unwrap(), b"\x00\x03bar");
        let mut bad = p.clone();
        bad[2] ^= 1;
        assert_eq!(verify_payload(&bad, true), Err(RdbError::Payload));
        assert!(verify_payload(&bad, false).is_ok());
    }

    #[test]
    fn versions_up_to_12_are_read() {
        // redis-server 8.0.2: SET foo bar, DUMP foo (the same body, version 12).
        let p = b"\x00\x03bar\x0c\x00\x2d\xc8\x7d\xa0\x14\x4c\x63\x5e";
        assert_eq!(verify_payload(p, true).unwrap(), b"\x00\x03bar");
        let mut v13 = b"\x00\x03bar\x0d\x00".to_vec();
        let crc = CRC64.checksum(&v13);
        v13.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(verify_payload(&v13, true), Err(RdbError::Payload));
    }
}
