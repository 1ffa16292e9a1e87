//! The server's request parser (multibulk and inline) on arbitrary bytes.
//!
//! Checks: no panic; every call consumes at most the bytes it was given, and a
//! call that returns a command consumes some; the heap held stays within a
//! constant factor of the input (a `$1099511627776` header reserves nothing);
//! and bytes arriving in many reads parse exactly as the same bytes in one read.
#![no_main]

use blinkdb_fuzz::alloc_meter::peak_during;
use blinkdb_fuzz::Cursor;
use blinkdb_server::protocol::{RequestLimits, RequestParser};
use libfuzzer_sys::fuzz_target;

/// The parser's longest header or inline line (PROTO_INLINE_MAX_SIZE): inputs
/// this long may fail in one read and not in several.
const INLINE_MAX: usize = 64 * 1024;

#[derive(Debug, PartialEq)]
struct Outcome {
    commands: Vec<Vec<Vec<u8>>>,
    error: Option<String>,
    /// Bytes left unconsumed at the end (an unfinished request); 0 after an error.
    left: usize,
}

fn parse(input: &[u8], chunks: &[usize], limits: RequestLimits) -> Outcome {
    let mut parser = RequestParser::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut next_chunk = chunks.iter();
    let mut out = Outcome {
        commands: Vec::new(),
        error: None,
        left: 0,
    };
    loop {
        let step = parser.parse(&buf, limits).map(|p| {
            assert!(
                p.consumed <= buf.len(),
                "consumed {} of {} bytes",
                p.consumed,
                buf.len()
            );
            let args: Option<Vec<Vec<u8>>> = p.args.map(|a| a.iter().map(|x| x.to_vec()).collect());
            (args, p.consumed)
        });
        match step {
            Ok((Some(args), consumed)) => {
                assert!(consumed > 0, "a command that consumed no bytes");
                assert!(!args.is_empty(), "a command without a name");
                out.commands.push(args);
                buf.drain(..consumed);
            }
            Ok((None, consumed)) => {
                buf.drain(..consumed);
                if fed == input.len() {
                    break;
                }
                let n = next_chunk
                    .next()
                    .copied()
                    .unwrap_or(input.len())
                    .clamp(1, input.len() - fed);
                buf.extend_from_slice(&input[fed..fed + n]);
                fed += n;
            }
            Err(e) => {
                out.error = Some(e.0);
                break;
            }
        }
    }
    // After an error the connection closes: what is left does not matter.
    if out.error.is_none() {
        out.left = buf.len() + (input.len() - fed);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let flags = c.u8();
    let limits = RequestLimits {
        // Beyond proto-max-bulk-len's range too: a 2^40 header must pass the
        // limit check and still allocate nothing.
        max_bulk_len: if flags & 1 == 0 { 512 << 20 } else { i64::MAX },
        authenticated: flags & 2 == 0,
    };
    let chunks: Vec<usize> = (0..(flags >> 2) as usize % 48)
        .map(|_| c.u8() as usize + 1)
        .collect();
    let input = c.rest();
    let (whole, peak) = peak_during(|| parse(input, &[input.len()], limits));
    let bound = 64 * input.len() + (256 << 10);
    assert!(
        peak <= bound,
        "{peak} bytes of heap for {} bytes of input",
        input.len()
    );
    if input.len() < INLINE_MAX {
        let pieces = parse(input, &chunks, limits);
        assert_eq!(whole, pieces, "one read and reads of {chunks:?} differ");
    }
});
