//! May this user run this command line: the command's bit, then its keys
//! (by the key specs' access/insert/delete/update flags), then its channels,
//! for each selector until one allows it (Redis 7.0's
//! ACLCheckAllUserCommandPerm, with its choice of the error to report).

use super::selector::{Selector, KEY_READ, KEY_WRITE};
use super::user::User;
use crate::commands::spec;
use crate::commands::table::{self, props, CommandSpec};
use blinkdb_engine::glob_match;

/// Why a command was refused, ordered as Redis picks the one to report
/// (command < key < channel); key and channel carry the argument's position.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

const KEY_ACCESS: u16 = spec::KEY_ACCESS;
const KEY_UPDATE: u16 = spec::KEY_UPDATE;
const KEY_INSERT: u16 = 1 << 6;
const KEY_DELETE: u16 = 1 << 7;

/// The rights a key spec's flags need.
fn needed(flags: u16) -> u8 {
    let mut n = 0;
    if flags & KEY_ACCESS != 0 {
        n |= KEY_READ;
    }
    if flags & (KEY_INSERT | KEY_DELETE | KEY_UPDATE) != 0 {
        n |= KEY_WRITE;
    }
    n
}

/// Checks a command line against every selector of the user.
#[inline]
pub fn check(user: &User, cmd: &'static CommandSpec, args: &[&[u8]]) -> Result<(), Denied> {
    if user.unrestricted {
        return Ok(());
    }
    let mut keys: Option<spec::KeyPositions> = None;
    let mut worst = Denied::Command;
    for s in &user.selectors {
        match check_selector(s, cmd, args, &mut keys) {
            Ok(()) => return Ok(()),
            Err(d) if d.rank() > worst.rank() => worst = d,
            Err(_) => {}
        }
    }
    Err(worst)
}

fn check_selector(
    s: &Selector,
    cmd: &'static CommandSpec,
    args: &[&[u8]],
    keys: &mut Option<spec::KeyPositions>,
) -> Result<(), Denied> {
    if !s.all_commands && !cmd.has(table::NO_AUTH) {
        let i = cmd.index().ok_or(Denied::Command)?;
        if !s.bit(i) {
            let at = if cmd.is_subcommand() { 2 } else { 1 };
            let allowed = match (s.firstargs_of(i), args.get(at)) {
                (Some(list), Some(arg)) => list.iter().any(|a| a.eq_ignore_ascii_case(arg)),
                _ => false,
            };
            if !allowed {
                return Err(Denied::Command);
            }
        }
    }
    if !s.all_keys && !cmd.has_prop(props::SHARD_CHANNELS) && spec::has_keys(cmd) {
        let keys = keys.get_or_insert_with(|| spec::command_keys(cmd, args).unwrap_or_default());
        for &(pos, flags) in keys.iter() {
            if !key_ok(s, args[pos], flags) {
                return Err(Denied::Key(pos));
            }
        }
    }
    if !s.all_channels {
        if let Some((first, last, pattern)) = channel_args(cmd, args.len()) {
            for (pos, arg) in args.iter().enumerate().take(last).skip(first) {
                if !channel_ok(&s.channels, arg, pattern) {
                    return Err(Denied::Channel(pos));
                }
            }
        }
    }
    Ok(())
}

/// Whether a selector may touch a key with a key spec's flags.
pub fn key_ok(s: &Selector, key: &[u8], flags: u16) -> bool {
    if s.all_keys {
        return true;
    }
    let need = needed(flags);
    s.keys
        .iter()
        .any(|(p, f)| f & need == need && glob_match(p, key, false))
}

/// The arguments that name channels the ACL checks (publish or subscribe;
/// unsubscribing is always allowed): (first, end, they are patterns).
fn channel_args(cmd: &CommandSpec, argc: usize) -> Option<(usize, usize, bool)> {
    if cmd.has_prop(props::PUBLISHES) {
        Some((1, 2.min(argc), false))
    } else if cmd.has_prop(props::SUBSCRIBES) {
        Some((1, argc, cmd.has_prop(props::PATTERN_CHANNELS)))
    } else {
        None
    }
}

/// A channel against a list of channel rules: a name matches them as glob
/// patterns, a PSUBSCRIBE pattern only literally.
pub fn channel_ok(list: &[Vec<u8>], channel: &[u8], pattern: bool) -> bool {
    list.iter().any(|p| {
        if pattern {
            p.as_slice() == channel
        } else {
            glob_match(p, channel, false)
        }
    })
}

/// Whether the user may use a channel (its Pub/Sub clients keep it).
pub fn user_channel_ok(user: &User, channel: &[u8], pattern: bool) -> bool {
    user.selectors
        .iter()
        .any(|s| s.all_channels || channel_ok(&s.channels, channel, pattern))
}

/// Whether a selector that allows this command line may also read every
/// key (`~*`, `%R~*`, allkeys): SORT's BY and GET patterns need it (Redis's
/// ACLUserCheckCmdWithUnrestrictedKeyAccess with read access).
pub fn unrestricted_read(user: &User, cmd: &'static CommandSpec, args: &[&[u8]]) -> bool {
    if user.unrestricted {
        return true;
    }
    let mut keys = None;
    user.selectors.iter().any(|s| {
        check_selector(s, cmd, args, &mut keys).is_ok()
            && (s.all_keys
                || s.keys
                    .iter()
                    .any(|(p, f)| f & KEY_READ != 0 && p.as_slice() == b"*"))
    })
}
