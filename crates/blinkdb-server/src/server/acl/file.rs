//! The ACL file (`aclfile`): `user <name> <rules...>` lines, read all or
//! none (ACL LOAD, startup) with Redis's errors naming file and line, and
//! written atomically (ACL SAVE: a temporary file renamed over it).

use super::user::{merge_selectors, valid_name, User};
use super::{Acl, Users};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Reads users from `text` (the file `name`); Err: every problem found,
/// as Redis lists them.
pub fn parse(name: &str, text: &str, pubsub_all: bool) -> Result<Users, String> {
    let mut users = Users::new();
    let mut errors = String::new();
    for (i, line) in text.split('\n').enumerate() {
        let n = i + 1;
        let line = line.trim_matches([' ', '\t', '\r', '\n']);
        if line.is_empty() {
            continue;
        }
        let argv: Vec<&str> = line.split(' ').collect();
        if argv[0] != "user" || argv.len() < 2 {
            errors.push_str(&format!(
                "{name}:{n} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let uname = argv[1].as_bytes();
        if !valid_name(uname) {
            errors.push_str(&format!(
                "'{name}:{n}: username '{}' contains invalid characters. ",
                argv[1]
            ));
            continue;
        }
        if users.contains_key(uname) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {n}. ",
                argv[1]
            ));
            continue;
        }
        let rules: Vec<Vec<u8>> = argv[2..].iter().map(|a| a.as_bytes().to_vec()).collect();
        let mut u = User::new(uname, pubsub_all);
        match merge_selectors(&rules) {
            Err(_) => errors.push_str(&format!(
                "{name}:{n}: Unmatched parenthesis in selector definition."
            )),
            Ok(rules) => {
                let mut syntax_error = false;
                for op in rules {
                    let op = trim_bytes(&op);
                    if let Err(e) = u.apply(op, pubsub_all) {
                        if e == super::SetError::UnknownName {
                            errors.push_str(&format!(
                                "{name}:{n}: Error in applying operation '{}': {}. ",
                                String::from_utf8_lossy(op),
                                e.message()
                            ));
                        } else if !syntax_error {
                            errors.push_str(&format!("{name}:{n}: {}. ", e.message()));
                            syntax_error = true;
                        }
                    }
                }
            }
        }
        u.refresh();
        users.insert(uname.to_vec(), Arc::new(u));
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        Err(errors)
    }
}

fn trim_bytes(op: &[u8]) -> &[u8] {
    let is_ws = |c: &u8| matches!(c, b'\t' | b'\r' | b'\n');
    let start = op.iter().position(|c| !is_ws(c)).unwrap_or(op.len());
    let end = op.iter().rposition(|c| !is_ws(c)).map_or(start, |e| e + 1);
    &op[start..end]
}

/// Reads the file at `path`, named `name` (as configured) in errors; Err
/// as ACL LOAD answers it.
pub fn load_named(path: &str, name: &str, pubsub_all: bool) -> Result<Users, String> {
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{name}': {}",
            strerror(&e)
        )
    })?;
    parse(name, &String::from_utf8_lossy(&text), pubsub_all)
}

/// The users as lines of the file (and of ACL LIST).
pub fn lines(acl: &Acl) -> Vec<String> {
    acl.users()
        .iter()
        .map(|u| format!("user {} {}", String::from_utf8_lossy(&u.name), u.describe()))
        .collect()
}

/// ACL SAVE: written to a temporary file, then renamed over the old one.
pub fn save(acl: &Acl, path: &str) -> std::io::Result<()> {
    let mut text = String::new();
    for l in lines(acl) {
        text.push_str(&l);
        text.push('\n');
    }
    let tmp = format!(
        "{path}.tmp-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, Path::new(path))
    })();
    if let Err(e) = &result {
        tracing::warn!("Writing ACL file for ACL SAVE: {e}");
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// An I/O error as C's strerror words it (Redis's replies use it).
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
