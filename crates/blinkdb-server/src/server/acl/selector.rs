//! A selector: which commands (a bit per command table entry), which keys
//! (patterns with read/write rights) and which channels a user may name, and
//! the rules that change it (`+cmd`, `-@cat`, `~pat`, `%R~pat`, `&chan`...),
//! as Redis 7.0's ACLSetSelector.

use super::SetError;
use crate::commands::table::{self, CommandSpec, COMMANDS};

/// A key pattern's rights.
pub const KEY_READ: u8 = 1;
pub const KEY_WRITE: u8 = 2;
pub const KEY_ALL: u8 = KEY_READ | KEY_WRITE;

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Selector {
    /// Every command, those added later included (`+@all`): skips the bits.
    pub all_commands: bool,
    pub all_keys: bool,
    pub all_channels: bool,
    /// A bit per command table entry, then one for commands to come (set
    /// by `+@all` only: how ACL LIST tells `+@all -x` from `-@all +y...`).
    pub bits: Vec<u64>,
    /// First arguments allowed for a command whose bit is clear
    /// (`+select|0`), by table index.
    pub firstargs: Vec<(usize, Vec<Vec<u8>>)>,
    pub keys: Vec<(Vec<u8>, u8)>,
    pub channels: Vec<Vec<u8>>,
}

/// The bit commands to come are given by (after every table entry).
fn future_bit() -> usize {
    COMMANDS.len()
}

fn words() -> usize {
    (COMMANDS.len() + 1).div_ceil(64)
}

impl Selector {
    /// An empty selector; `all_channels`: acl-pubsub-default is allchannels.
    pub fn new(all_channels: bool) -> Self {
        Selector {
            all_commands: false,
            all_keys: false,
            all_channels,
            bits: vec![0; words()],
            firstargs: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    #[inline]
    pub fn bit(&self, i: usize) -> bool {
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    fn set_bit(&mut self, i: usize, on: bool) {
        if on {
            self.bits[i / 64] |= 1 << (i % 64);
        } else {
            self.bits[i / 64] &= !(1 << (i % 64));
            self.all_commands = false;
        }
    }

    pub fn can_run_future_commands(&self) -> bool {
        self.bit(future_bit())
    }

    /// Allows or denies a command (a container with its subcommands); its
    /// allowed first arguments are forgotten.
    fn change(&mut self, spec: &'static CommandSpec, on: bool) {
        let Some(i) = spec.index() else { return };
        self.set_bit(i, on);
        self.firstargs.retain(|(c, _)| *c != i);
        if spec.has(table::CONTAINER) {
            for sub in table::subcommands(spec) {
                if let Some(j) = sub.index() {
                    self.set_bit(j, on);
                }
            }
        }
    }

    /// `+@cat` / `-@cat` (module commands are left alone, as in Redis).
    fn change_category(&mut self, cat: u32, on: bool) {
        for spec in COMMANDS.iter() {
            if !spec.has(table::MODULE) && spec.acl_categories() & cat != 0 {
                self.change(spec, on);
            }
        }
    }

    pub fn set_all(&mut self, on: bool) {
        for w in &mut self.bits {
            *w = if on { u64::MAX } else { 0 };
        }
        self.all_commands = on;
        self.firstargs.clear();
    }

    /// (allowed, denied) commands of a category (ACL LIST's description).
    fn count_category(&self, cat: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for (i, spec) in COMMANDS.iter().enumerate() {
            if spec.acl_categories() & cat != 0 {
                if self.bit(i) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// Applies one rule that a selector takes.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), SetError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            self.add_key_pattern(op)?;
        } else if op[0] == b'&' {
            if self.all_channels {
                return Err(SetError::ChannelsAfterAll);
            }
            let pat = &op[1..];
            if has_spaces(pat) {
                return Err(SetError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pat) {
                self.channels.push(pat.to_vec());
            }
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let cat = category(&op[2..]).ok_or(SetError::UnknownName)?;
            self.change_category(cat, op[0] == b'+');
        } else if op[0] == b'+' {
            self.allow_command(&op[1..])?;
        } else if op[0] == b'-' {
            let spec = table::lookup_full(&op[1..]).ok_or(SetError::UnknownName)?;
            self.change(spec, false);
        } else {
            return Err(SetError::Syntax);
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), SetError> {
        if self.all_keys {
            return Err(SetError::KeysAfterAll);
        }
        let (mut flags, mut at) = (0u8, 1usize);
        if op[0] == b'%' {
            let mut ok = true;
            while at < op.len() {
                match op[at].to_ascii_uppercase() {
                    b'R' if flags & KEY_READ == 0 => flags |= KEY_READ,
                    b'W' if flags & KEY_WRITE == 0 => flags |= KEY_WRITE,
                    b'~' => {
                        at += 1;
                        break;
                    }
                    _ => {
                        ok = false;
                        break;
                    }
                }
                at += 1;
            }
            if flags == 0 || !ok {
                return Err(SetError::Syntax);
            }
        } else {
            flags = KEY_ALL;
        }
        let pat = op.get(at..).unwrap_or_default();
        if has_spaces(pat) {
            return Err(SetError::Syntax);
        }
        match self.keys.iter_mut().find(|(p, _)| p == pat) {
            Some((_, f)) => *f |= flags,
            None => self.keys.push((pat.to_vec(), flags)),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+cmd`, `+container|sub`, or `+cmd|firstarg` (Redis's deprecated
    /// first-argument rule, for commands without subcommands).
    fn allow_command(&mut self, name: &[u8]) -> Result<(), SetError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let spec = table::lookup_full(name).ok_or(SetError::UnknownName)?;
            self.change(spec, true);
            return Ok(());
        };
        let (base, sub) = (&name[..bar], &name[bar + 1..]);
        let spec = table::lookup_full(base).ok_or(SetError::UnknownName)?;
        if spec.is_subcommand() {
            return Err(SetError::FirstArgOfSub);
        }
        if sub.is_empty() {
            return Err(SetError::Syntax);
        }
        if spec.has(table::CONTAINER) {
            let sub = table::lookup_sub(spec, sub).ok_or(SetError::UnknownName)?;
            self.change(sub, true);
            return Ok(());
        }
        tracing::warn!(
            "Deprecation warning: Allowing a first arg of an otherwise blocked command is a misuse of ACL and may get disabled in the future (offender: +{})",
            String::from_utf8_lossy(name)
        );
        let Some(i) = spec.index() else {
            return Ok(());
        };
        let at = match self.firstargs.iter().position(|(c, _)| *c == i) {
            Some(at) => at,
            None => {
                self.firstargs.push((i, Vec::new()));
                self.firstargs.len() - 1
            }
        };
        let list = &mut self.firstargs[at].1;
        if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
            list.push(sub.to_vec());
        }
        Ok(())
    }

    /// The allowed first arguments of a command whose bit is clear.
    pub fn firstargs_of(&self, i: usize) -> Option<&[Vec<u8>]> {
        self.firstargs
            .iter()
            .find(|(c, _)| *c == i)
            .map(|(_, l)| l.as_slice())
    }

    /// The command rules that rebuild this selector's bits, starting from
    /// `+@all` or `-@all`, then the categories that fit best, then single
    /// commands (Redis's ACLDescribeSelectorCommandRules, same greedy choice).
    pub fn describe_commands(&self) -> String {
        let additive = !self.can_run_future_commands();
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(false);
        fake.set_all(!additive);
        let mut temp = self.clone();
        temp.firstargs.clear();
        let mut applied = [false; table::acl::NAMES.len()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0);
            for (j, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (on, off) = temp.count_category(1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            fake.change_category(1 << j, additive);
            temp.change_category(1 << j, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(table::acl::NAMES[j]);
            rules.push(' ');
            applied[j] = true;
        }
        for (i, spec) in COMMANDS.iter().enumerate() {
            let mine = self.bit(i);
            if mine != fake.bit(i) {
                rules.push(if mine { '+' } else { '-' });
                rules.push_str(spec.name);
                rules.push(' ');
                fake.change(spec, mine);
            }
            if !mine {
                for arg in self.firstargs_of(i).unwrap_or_default() {
                    rules.push('+');
                    rules.push_str(spec.name);
                    rules.push('|');
                    rules.push_str(&String::from_utf8_lossy(arg));
                    rules.push(' ');
                }
            }
        }
        rules.pop();
        rules
    }

    /// Key patterns as rules (`~a %R~b`), space separated.
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let pats: Vec<String> = self.keys.iter().map(|(p, f)| key_rule(p, *f)).collect();
        pats.join(" ")
    }

    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let pats: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        pats.join(" ")
    }

    /// The whole selector as rules (ACL LIST).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if self.all_keys {
            s.push_str("~* ");
        } else {
            for (p, f) in &self.keys {
                s.push_str(&key_rule(p, *f));
                s.push(' ');
            }
        }
        if self.all_channels {
            s.push_str("&* ");
        } else {
            s.push_str("resetchannels ");
            for c in &self.channels {
                s.push('&');
                s.push_str(&String::from_utf8_lossy(c));
                s.push(' ');
            }
        }
        s.push_str(&self.describe_commands());
        s
    }
}

fn key_rule(pattern: &[u8], flags: u8) -> String {
    let prefix = match flags {
        KEY_READ => "%R~",
        KEY_WRITE => "%W~",
        _ => "~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(pattern))
}

/// A category's bit by name, ignoring case.
pub fn category(name: &[u8]) -> Option<u32> {
    table::acl::NAMES
        .iter()
        .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|j| 1 << j)
}

/// Spaces and NULs are refused in names and patterns (Redis's
/// ACLStringHasSpaces), so that rules read back as they were written.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c.is_ascii_whitespace() || c == 0 || c == 0x0b)
}
