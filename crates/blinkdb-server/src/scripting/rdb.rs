//! FUNCTION DUMP's payload, as Redis writes it (rdbSaveFunctions plus the
//! DUMP footer): per library RDB_OPCODE_FUNCTION2 and the code as an RDB
//! string (LZF-compressed past 20 bytes when that saves room, as with
//! Redis's default rdbcompression), then the RDB version (2 bytes, little
//! endian) and the CRC-64 of everything before (Jones, reflected: Redis's
//! crc64.c), little endian.

use blinkdb_engine::rdb_format::{self, opcode, Reader};

pub const ERR_PAYLOAD: &str = rdb_format::ERR_PAYLOAD;

pub fn dump_payload(codes: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(opcode::FUNCTION2);
        rdb_format::write_string(&mut out, code, true);
    }
    rdb_format::create_payload(out)
}

/// The library codes of a FUNCTION RESTORE payload, or the error text
/// (without its ERR code).
pub fn parse_payload(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let body = rdb_format::verify_payload(data, true).map_err(|_| ERR_PAYLOAD.to_string())?;
    let mut r = Reader::new(body);
    let mut codes = Vec::new();
    while r.remaining() > 0 {
        let kind = r.byte().map_err(|_| "can not read data type")?;
        match kind {
            opcode::FUNCTION2 => {
                let code = r.string().map_err(|_| "Failed loading library payload")?;
                codes.push(code.into_owned());
            }
            // 7.0 release candidates: name, engine, description, code.
            opcode::FUNCTION => {
                codes.push(
                    rdb_format::read_old_function(&mut r).map_err(|_| "Failed loading library")?,
                );
            }
            _ => return Err("given type is not a function".into()),
        }
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trip() {
        let long = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
        let short = b"#!lua name=a\nx";
        let p = dump_payload(&[long, short]);
        assert_eq!(
            parse_payload(&p).unwrap(),
            vec![long.to_vec(), short.to_vec()]
        );
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert_eq!(parse_payload(&bad).unwrap_err(), ERR_PAYLOAD);
    }
}
