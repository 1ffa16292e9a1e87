//! A user: on/off, its passwords (SHA-256, hex), and its selectors (the
//! root one first), changed by the rules of ACL SETUSER (Redis 7.0's
//! ACLSetUser); a change is made on a copy, applied whole or not at all.

use super::selector::{has_spaces, Selector};
use super::SetError;
use sha2::{Digest, Sha256};

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    /// `skip-sanitize-payload` (Some(true)), `sanitize-payload` (Some(false)).
    pub skip_sanitize: Option<bool>,
    pub passwords: Vec<String>,
    /// The root selector, then those of `(...)` rules.
    pub selectors: Vec<Selector>,
    /// One selector that may run anything on any key and channel: the
    /// check is skipped (most users, `default` included).
    pub unrestricted: bool,
}

/// SHA-256 of a password, as 64 lowercase hex digits.
pub fn hash_password(pass: &[u8]) -> String {
    let digest = Sha256::digest(pass);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        hex.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    hex
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

impl User {
    /// A new user: off, no password, no rights (channels as
    /// acl-pubsub-default says).
    pub fn new(name: &[u8], pubsub_all: bool) -> Self {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            skip_sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(pubsub_all)],
            unrestricted: false,
        }
    }

    /// The `default` user: on, nopass, every command, key and channel.
    pub fn default_user() -> Self {
        let mut u = User::new(b"default", false);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = u.apply(op.as_bytes(), false);
        }
        u.refresh();
        u
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    /// Recomputes what is derived from the rules.
    pub fn refresh(&mut self) {
        let r = &self.selectors[0];
        self.unrestricted = r.all_commands && r.all_keys && r.all_channels;
    }

    /// Applies one rule; `pubsub_all`: acl-pubsub-default is allchannels.
    pub fn apply(&mut self, op: &[u8], pubsub_all: bool) -> Result<(), SetError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.skip_sanitize = Some(true);
        } else if is("sanitize-payload") {
            self.skip_sanitize = Some(false);
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else if valid_hash(&op[1..]) {
                String::from_utf8_lossy(&op[1..]).into_owned()
            } else {
                return Err(SetError::BadHash);
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else if valid_hash(&op[1..]) {
                String::from_utf8_lossy(&op[1..]).into_owned()
            } else {
                return Err(SetError::BadHash);
            };
            let at = self
                .passwords
                .iter()
                .position(|p| *p == hash)
                .ok_or(SetError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let inner = &op[1..op.len() - 1];
            let mut s = Selector::new(pubsub_all);
            for rule in split_args(inner).ok_or(SetError::Syntax)? {
                if !rule.is_empty() {
                    s.apply(&rule)?;
                }
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            for op in ["resetpass", "resetkeys", "resetchannels"] {
                self.apply(op.as_bytes(), pubsub_all)?;
            }
            if pubsub_all {
                self.apply(b"allchannels", pubsub_all)?;
            }
            for op in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                self.apply(op.as_bytes(), pubsub_all)?;
            }
        } else {
            self.selectors[0].apply(op)?;
        }
        Ok(())
    }

    /// Applies rules to a copy and returns it, or the first error with the
    /// rule that caused it (nothing changes then).
    pub fn with_rules(&self, rules: &[Vec<u8>], pubsub_all: bool) -> Result<User, String> {
        let mut u = self.clone();
        for op in rules {
            if let Err(e) = u.apply(op, pubsub_all) {
                return Err(format!(
                    "Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.message()
                ));
            }
        }
        u.refresh();
        Ok(u)
    }

    /// The flags GETUSER and ACL LIST show, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.skip_sanitize {
            Some(true) => f.push("skip-sanitize-payload"),
            Some(false) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// The user as rules (ACL LIST, ACL SAVE, CONFIG REWRITE), without the
    /// `user <name>` prefix.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for f in self.flag_names() {
            s.push_str(f);
            s.push(' ');
        }
        for p in &self.passwords {
            s.push('#');
            s.push_str(p);
            s.push(' ');
        }
        s.push_str(&self.selectors[0].describe());
        for sel in &self.selectors[1..] {
            s.push_str(" (");
            s.push_str(&sel.describe());
            s.push(')');
        }
        s
    }

    /// Whether the password opens this user (it must be on).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = hash_password(pass);
        // Every stored hash is compared in full: the time does not tell
        // which one (or how much of it) matched.
        self.passwords.iter().fold(false, |found, p| {
            found | constant_eq(p.as_bytes(), hash.as_bytes())
        })
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Rules given apart whose selector spans several arguments (`(+get`,
/// `~key)`) are joined with spaces, as Redis's ACLMergeSelectorArguments;
/// Err: the argument where an unclosed selector starts.
pub fn merge_selectors(args: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut out = Vec::with_capacity(args.len());
    let mut open: Option<(Vec<u8>, usize)> = None;
    for (j, op) in args.iter().enumerate() {
        if open.is_none() && op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((op.clone(), j));
            continue;
        }
        if let Some((sel, _)) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(open.take().unwrap().0);
            }
            continue;
        }
        out.push(op.clone());
    }
    match open {
        Some((_, j)) => Err(args[j].clone()),
        None => Ok(out),
    }
}

/// A user name may not hold spaces or NULs.
pub fn valid_name(name: &[u8]) -> bool {
    !has_spaces(name)
}

/// Splits a line into arguments as redis-cli and config files do (quotes,
/// escapes); None on unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    blinkdb_engine::split_args(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::table;
    use crate::server::acl::check::{check, Denied};

    fn user(rules: &[&str]) -> Result<User, String> {
        let rules: Vec<Vec<u8>> = rules.iter().map(|r| r.as_bytes().to_vec()).collect();
        let rules = merge_selectors(&rules).map_err(|_| "unmatched".to_string())?;
        User::new(b"u", false).with_rules(&rules, false)
    }

    fn run(u: &User, line: &[&str]) -> Result<(), Denied> {
        let args: Vec<&[u8]> = line.iter().map(|a| a.as_bytes()).collect();
        let Some(Ok(spec)) = table::resolve(&args) else {
            panic!("unknown {line:?}")
        };
        check(u, spec, &args)
    }

    #[test]
    fn rules_describe_back_to_the_same_user() {
        let u = user(&[
            "on",
            ">pw",
            "~a*",
            "%R~r*",
            "%W~w*",
            "&ch",
            "+@hash",
            "-hdel",
            "+config|get",
            "(+get",
            "~x*)",
        ])
        .unwrap();
        let text = u.describe();
        assert_eq!(
            text,
            format!(
                "on #{} ~a* %R~r* %W~w* resetchannels &ch -@all +@hash -hdel +config|get (~x* resetchannels -@all +get)",
                hash_password(b"pw")
            )
        );
        let words: Vec<Vec<u8>> = text.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        let again = User::new(b"u", false)
            .with_rules(&merge_selectors(&words).unwrap(), false)
            .unwrap();
        assert_eq!(again, u);
    }

    #[test]
    fn a_bad_rule_is_refused_with_redis_text() {
        let e = user(&["on", "+nosuch"]).unwrap_err();
        assert_eq!(
            e,
            "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        );
        assert!(user(&["allkeys", "~x"])
            .unwrap_err()
            .contains("'allkeys' flag"));
        assert!(user(&["#abc"])
            .unwrap_err()
            .contains("exactly 64 characters"));
        assert!(user(&["+config|get|x"]).is_err());
        assert!(user(&["(+get"]).is_err());
    }

    #[test]
    fn commands_keys_and_channels_are_checked() {
        let u = user(&[
            "on",
            "nopass",
            "%R~r*",
            "~k*",
            "&news",
            "+get",
            "+set",
            "+publish",
            "+select|0",
        ])
        .unwrap();
        assert_eq!(run(&u, &["get", "r1"]), Ok(()));
        assert_eq!(run(&u, &["set", "r1", "v"]), Err(Denied::Key(1)));
        assert_eq!(run(&u, &["set", "k1", "v"]), Ok(()));
        assert_eq!(run(&u, &["del", "k1"]), Err(Denied::Command));
        assert_eq!(run(&u, &["publish", "news", "m"]), Ok(()));
        assert_eq!(run(&u, &["publish", "sport", "m"]), Err(Denied::Channel(1)));
        assert_eq!(run(&u, &["select", "0"]), Ok(()));
        assert_eq!(run(&u, &["select", "1"]), Err(Denied::Command));
        // No-auth commands run for everyone.
        assert_eq!(run(&u, &["auth", "x"]), Ok(()));
        assert!(User::default_user().unrestricted);
    }
}
