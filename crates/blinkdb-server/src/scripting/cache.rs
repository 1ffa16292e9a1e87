//! Script identity: SHA1 digests as Redis spells them, and the `#!lua`
//! shebang line with its flags.

pub type Sha = [u8; 40];

/// The lowercase hex SHA1 of `body` (Redis's sha1hex).
pub fn sha1hex(body: &[u8]) -> Sha {
    let hex = sha1_smol::Sha1::from(body).digest().to_string();
    let mut sha = [0u8; 40];
    sha.copy_from_slice(hex.as_bytes());
    sha
}

/// A 40-character name as EVALSHA gives it, lowercased; None otherwise.
pub fn parse_sha(name: &[u8]) -> Option<Sha> {
    if name.len() != 40 {
        return None;
    }
    let mut sha = [0u8; 40];
    for (d, s) in sha.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    Some(sha)
}

/// Flags from a `#!lua flags=...` line. A script without a shebang runs in
/// compatibility mode: none of these apply and any command may run.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct ScriptFlags {
    pub shebang: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot: bool,
}

/// Reads the shebang; returns the flags and the length of the line to skip
/// (without its newline, which stays so that line numbers hold), or Redis's
/// error text.
pub fn shebang(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    let mut flags = ScriptFlags::default();
    if !body.starts_with(b"#!") {
        return Ok((flags, 0));
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let line = &body[..end];
    let parts = blinkdb_engine::split_args(line)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| "Invalid engine in script shebang".to_string())?;
    if parts[0] != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    flags.shebang = true;
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        // `flags=` alone names none (Redis splits an empty string into no parts).
        for flag in list.split(|&c| c == b',').filter(|_| !list.is_empty()) {
            match flag {
                b"no-writes" => flags.no_writes = true,
                b"allow-oom" => flags.allow_oom = true,
                b"allow-stale" => flags.allow_stale = true,
                b"no-cluster" => flags.no_cluster = true,
                b"allow-cross-slot-keys" => flags.allow_cross_slot = true,
                other => {
                    return Err(format!(
                        "Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(other)
                    ))
                }
            }
        }
    }
    Ok((flags, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_empty_and_known_text() {
        assert_eq!(
            &sha1hex(b"")[..],
            b"da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
        assert_eq!(
            &sha1hex(b"Pizza & Mandolino")[..],
            b"74822d82031af7493c20eefa13bd07ec4fada82f"
        );
    }

    #[test]
    fn shebang_flags_and_errors() {
        assert_eq!(shebang(b"return 1").unwrap().1, 0);
        let (f, len) = shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.shebang && f.no_writes && f.allow_oom && !f.allow_stale);
        assert_eq!(len, 31);
        assert_eq!(shebang(b"#!lua").unwrap_err(), "Invalid script shebang");
        assert_eq!(
            shebang(b"#!python\n").unwrap_err(),
            "Unexpected engine in script shebang: #!python"
        );
        assert_eq!(
            shebang(b"#!lua flags=bad\n").unwrap_err(),
            "Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            shebang(b"#!lua foo=bar\n").unwrap_err(),
            "Unknown lua shebang option: foo=bar"
        );
    }
}
