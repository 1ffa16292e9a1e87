//! The two small languages the command table writes key specs and argument
//! docs in, parsed into what COMMAND INFO/DOCS/GETKEYS reply with.
//!
//! Key specs, `;`-separated, each `FLAGS BEGIN FIND [| notes]`:
//! - FLAGS: comma-separated key flags as Redis names them (`RW,access,update`);
//! - BEGIN: `index:POS`, `keyword:WORD:STARTFROM` or `unknown`;
//! - FIND: `range:LASTKEY:STEP:LIMIT`, `keynum:IDX:FIRST:STEP` or `unknown`.
//!
//! Arguments, space-separated, each `name:TYPE` followed by modifiers and, for
//! `oneof` and `block`, its arguments in parentheses. A TYPE that is not one of
//! Redis's argument types is a pure token (`nx:NX`, or one modifier character
//! alone: `equal:=`, without modifiers). Modifiers: `=TOKEN`,
//! `#N` (key spec index; a key defaults to 0), `?` optional, `*` multiple,
//! `+` multiple token, `^VERSION` since, `~VERSION` deprecated since.

use super::table::{CommandSpec, WRITE};
use smallvec::SmallVec;
use std::sync::OnceLock;

/// A command's key positions in its argv, with their flags (inline up to four:
/// the common case costs no allocation, which matters per request in cluster
/// mode).
pub type KeyPositions = SmallVec<[(usize, u16); 4]>;

/// Key flags, in the order Redis lists them.
pub const KEY_FLAG_NAMES: &[&str] = &[
    "RO",
    "RW",
    "OW",
    "RM",
    "access",
    "update",
    "insert",
    "delete",
    "not_key",
    "incomplete",
    "variable_flags",
];

pub const KEY_RO: u16 = 1;
pub const KEY_RW: u16 = 1 << 1;
pub const KEY_OW: u16 = 1 << 2;
pub const KEY_ACCESS: u16 = 1 << 4;
pub const KEY_UPDATE: u16 = 1 << 5;
pub const KEY_NOT_KEY: u16 = 1 << 8;
pub const KEY_INCOMPLETE: u16 = 1 << 9;
pub const KEY_VARIABLE_FLAGS: u16 = 1 << 10;

#[derive(Debug, Clone, PartialEq)]
pub enum BeginSearch {
    Index(i32),
    Keyword(String, i32),
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FindKeys {
    Range { lastkey: i32, step: i32, limit: i32 },
    Keynum { idx: i32, first: i32, step: i32 },
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    pub notes: Option<String>,
    pub flags: u16,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

/// Names of the flags set in `flags`, in Redis's order.
pub fn key_flag_names(flags: u16) -> impl Iterator<Item = &'static str> {
    KEY_FLAG_NAMES
        .iter()
        .enumerate()
        .filter(move |(i, _)| flags & (1 << i) != 0)
        .map(|(_, n)| *n)
}

fn num(s: &str) -> Result<i32, String> {
    s.parse().map_err(|_| format!("not a number: {s:?}"))
}

pub fn parse_key_specs(text: &str) -> Result<Vec<KeySpec>, String> {
    let mut specs = Vec::new();
    for one in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (body, notes) = match one.split_once(" | ") {
            Some((b, n)) => (b, Some(n.to_string())),
            None => (one, None),
        };
        let words: Vec<&str> = body.split_whitespace().collect();
        let [flags, begin, find] = words[..] else {
            return Err(format!("key spec needs FLAGS BEGIN FIND: {one:?}"));
        };
        let mut bits = 0;
        for f in flags.split(',') {
            let i = KEY_FLAG_NAMES
                .iter()
                .position(|n| *n == f)
                .ok_or_else(|| format!("unknown key flag {f:?}"))?;
            bits |= 1 << i;
        }
        let b: Vec<&str> = begin.split(':').collect();
        let begin = match b[..] {
            ["index", pos] => BeginSearch::Index(num(pos)?),
            ["keyword", word, from] => BeginSearch::Keyword(word.to_string(), num(from)?),
            ["unknown"] => BeginSearch::Unknown,
            _ => return Err(format!("bad begin_search {begin:?}")),
        };
        let f: Vec<&str> = find.split(':').collect();
        let find = match f[..] {
            ["range", last, step, limit] => FindKeys::Range {
                lastkey: num(last)?,
                step: num(step)?,
                limit: num(limit)?,
            },
            ["keynum", idx, first, step] => FindKeys::Keynum {
                idx: num(idx)?,
                first: num(first)?,
                step: num(step)?,
            },
            ["unknown"] => FindKeys::Unknown,
            _ => return Err(format!("bad find_keys {find:?}")),
        };
        specs.push(KeySpec {
            notes,
            flags: bits,
            begin,
            find,
        });
    }
    Ok(specs)
}

/// Redis's argument types, in the order of its table.
const ARG_TYPES: &[&str] = &[
    "string",
    "integer",
    "double",
    "key",
    "pattern",
    "unix-time",
    "pure-token",
    "oneof",
    "block",
];

pub const ARG_OPTIONAL: u8 = 1;
pub const ARG_MULTIPLE: u8 = 2;
pub const ARG_MULTIPLE_TOKEN: u8 = 4;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArgDoc {
    pub name: String,
    pub kind: &'static str,
    pub key_spec_index: Option<i32>,
    pub token: Option<String>,
    pub since: Option<String>,
    pub deprecated_since: Option<String>,
    pub flags: u8,
    /// Set for `oneof` and `block`.
    pub args: Option<Vec<ArgDoc>>,
}

const MODIFIERS: &[char] = &['=', '#', '?', '*', '+', '^', '~'];

pub fn parse_args(text: &str) -> Result<Vec<ArgDoc>, String> {
    let mut rest = text.trim_start();
    let args = parse_list(&mut rest)?;
    if !rest.is_empty() {
        return Err(format!("unexpected {rest:?}"));
    }
    Ok(args)
}

fn parse_list(rest: &mut &str) -> Result<Vec<ArgDoc>, String> {
    let mut out = Vec::new();
    loop {
        *rest = rest.trim_start();
        if rest.is_empty() || rest.starts_with(')') {
            return Ok(out);
        }
        out.push(parse_one(rest)?);
    }
}

fn parse_one(rest: &mut &str) -> Result<ArgDoc, String> {
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .unwrap_or(rest.len());
    let head = &rest[..end];
    *rest = &rest[end..];
    // A pure token that is one modifier character (XADD's `=` and `~`).
    if let Some((name, token)) = head.rsplit_once(':') {
        if token.len() == 1 && token.starts_with(MODIFIERS) {
            return Ok(ArgDoc {
                name: name.to_string(),
                kind: "pure-token",
                token: Some(token.to_string()),
                ..Default::default()
            });
        }
    }
    // The name may hold ':' itself (ip:port): the type follows the last ':'
    // before the modifiers.
    let core_end = head
        .rfind(':')
        .and_then(|colon| head[colon..].find(MODIFIERS).map(|m| colon + m))
        .unwrap_or(head.len());
    let (name, kind) = head[..core_end]
        .rsplit_once(':')
        .ok_or_else(|| format!("argument without a type: {head:?}"))?;
    let mut arg = ArgDoc {
        name: name.to_string(),
        ..Default::default()
    };
    match ARG_TYPES.iter().find(|t| **t == kind) {
        Some(t) => arg.kind = t,
        None => {
            arg.kind = "pure-token";
            arg.token = Some(kind.to_string());
        }
    }
    let mut mods = &head[core_end..];
    while let Some(c) = mods.chars().next() {
        mods = &mods[1..];
        let value_end = mods.find(MODIFIERS).unwrap_or(mods.len());
        let value = &mods[..value_end];
        match c {
            '=' => arg.token = Some(value.to_string()),
            '#' => arg.key_spec_index = Some(num(value)?),
            '^' => arg.since = Some(value.to_string()),
            '~' => arg.deprecated_since = Some(value.to_string()),
            '?' => arg.flags |= ARG_OPTIONAL,
            '*' => arg.flags |= ARG_MULTIPLE,
            '+' => arg.flags |= ARG_MULTIPLE_TOKEN,
            _ => unreachable!("MODIFIERS lists every case"),
        }
        if matches!(c, '=' | '#' | '^' | '~') {
            if value.is_empty() {
                return Err(format!("modifier {c} without a value in {head:?}"));
            }
            mods = &mods[value_end..];
        }
    }
    if arg.kind == "key" && arg.key_spec_index.is_none() {
        arg.key_spec_index = Some(0);
    }
    if rest.starts_with('(') {
        *rest = &rest[1..];
        let children = parse_list(rest)?;
        *rest = rest
            .strip_prefix(')')
            .ok_or_else(|| format!("unclosed '(' after {head:?}"))?;
        arg.args = Some(children);
    }
    if matches!(arg.kind, "oneof" | "block") != arg.args.is_some() {
        return Err(format!(
            "{head:?}: oneof and block, and only they, take arguments"
        ));
    }
    Ok(arg)
}

/// Positions (in `argv`, the command name at 0) and flags of the keys the
/// specs find, as Redis's getKeysUsingKeySpecs; None when an argument list
/// does not fit the specs (a syntax error the command reports itself).
pub fn keys_by_specs(specs: &[KeySpec], argv: &[&[u8]]) -> Option<KeyPositions> {
    let argc = argv.len() as i64;
    let mut keys = KeyPositions::new();
    for spec in specs {
        if spec.flags & KEY_NOT_KEY != 0 {
            continue;
        }
        let first: i64 = match &spec.begin {
            BeginSearch::Index(pos) => *pos as i64,
            BeginSearch::Keyword(word, from) => {
                let from = *from as i64;
                let (start, end) = if from > 0 {
                    (from, argc - 1)
                } else {
                    (argc + from, 1)
                };
                let mut found = 0;
                let mut i = start;
                while i != end && (1..argc).contains(&i) {
                    if argv[i as usize].eq_ignore_ascii_case(word.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            BeginSearch::Unknown => return None,
        };
        let (first, last, step) = match &spec.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                let (lastkey, limit) = (*lastkey as i64, *limit as i64);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, *step as i64)
            }
            FindKeys::Keynum {
                idx,
                first: f,
                step,
            } => {
                let at = first + *idx as i64;
                if at >= argc {
                    return None;
                }
                let n = super::args::parse_i64(argv[at as usize]).filter(|n| *n >= 0)?;
                let first = first + *f as i64;
                (first, first + n - 1, *step as i64)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, spec.flags));
            i += step.max(1);
        }
        if spec.flags & KEY_INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// A table entry's key specs and argument docs, parsed once.
pub struct Parsed {
    pub key_specs: Vec<KeySpec>,
    pub args: Vec<ArgDoc>,
}

/// The parsed specs and docs of a [`COMMANDS`](super::table::COMMANDS) entry.
pub fn parsed(c: &CommandSpec) -> &'static Parsed {
    static ALL: OnceLock<Vec<Parsed>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        super::table::COMMANDS
            .iter()
            .map(|c| Parsed {
                key_specs: key_specs_of(c),
                // A table that does not parse fails the table's unit test.
                args: parse_args(c.args).unwrap_or_default(),
            })
            .collect()
    });
    static NONE: Parsed = Parsed {
        key_specs: Vec::new(),
        args: Vec::new(),
    };
    c.index().map_or(&NONE, |i| &all[i])
}

/// The entry's key specs; without any written, the one its key range and
/// flags imply (RW/access/update for a write, RO/access for a read).
fn key_specs_of(c: &CommandSpec) -> Vec<KeySpec> {
    if !c.keys.is_empty() {
        return parse_key_specs(c.keys).unwrap_or_default();
    }
    if c.first_key == 0 {
        return Vec::new();
    }
    let flags = if c.has(WRITE) {
        KEY_RW | KEY_ACCESS | KEY_UPDATE
    } else {
        KEY_RO | KEY_ACCESS
    };
    let lastkey = if c.last_key < 0 {
        c.last_key
    } else {
        c.last_key - c.first_key
    };
    vec![KeySpec {
        notes: None,
        flags,
        begin: BeginSearch::Index(c.first_key),
        find: FindKeys::Range {
            lastkey,
            step: c.step,
            limit: 0,
        },
    }]
}

/// Whether Redis marks the command `movablekeys`: its keys are not all found
/// by plain index+range specs.
pub fn movable_keys(c: &CommandSpec) -> bool {
    let specs = &parsed(c).key_specs;
    let simple = |s: &KeySpec| {
        matches!(s.begin, BeginSearch::Index(_)) && matches!(s.find, FindKeys::Range { .. })
    };
    if specs.len() == 1 {
        return simple(&specs[0]) && specs[0].flags & KEY_INCOMPLETE != 0 || !simple(&specs[0]);
    }
    let mut prev_last = 0;
    for s in specs {
        let (BeginSearch::Index(pos), FindKeys::Range { lastkey, step, .. }) = (&s.begin, &s.find)
        else {
            return true;
        };
        if *step != 1 || (prev_last != 0 && prev_last != pos - 1) || s.flags & KEY_INCOMPLETE != 0 {
            return true;
        }
        prev_last = if *lastkey >= 0 {
            pos + lastkey
        } else {
            *lastkey
        };
    }
    false
}

/// The keys of a command line and their flags (COMMAND GETKEYS[ANDFLAGS]):
/// the entry's own key finder where it has one (Redis's getkeys_proc), else
/// its key specs.
pub fn command_keys(c: &CommandSpec, argv: &[&[u8]]) -> Option<KeyPositions> {
    match c.getkeys {
        Some(find) => find(argv),
        None => keys_by_specs(&parsed(c).key_specs, argv),
    }
}

/// Whether the command takes keys at all (a spec that is not `not_key`).
pub fn has_keys(c: &CommandSpec) -> bool {
    parsed(c)
        .key_specs
        .iter()
        .any(|s| s.flags & KEY_NOT_KEY == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_specs_parse() {
        let specs = parse_key_specs(
            "RW,access,delete index:1 range:0:1:0; OW,update keyword:STORE:-1 keynum:0:1:1 | a note",
        )
        .unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(
            key_flag_names(specs[0].flags).collect::<Vec<_>>(),
            ["RW", "access", "delete"]
        );
        assert_eq!(specs[1].begin, BeginSearch::Keyword("STORE".into(), -1));
        assert_eq!(specs[1].notes.as_deref(), Some("a note"));
        assert!(parse_key_specs("RW index:1").is_err());
        assert!(parse_key_specs("XX index:1 range:0:1:0").is_err());
    }

    #[test]
    fn args_parse() {
        let args = parse_args(
            "key:key value:string condition:oneof?^2.6.12(nx:NX xx:XX) ip:port:string=ADDR? k2:key#1* f:block+(a:integer b:double)",
        )
        .unwrap();
        assert_eq!(args[0].key_spec_index, Some(0));
        assert_eq!(args[2].kind, "oneof");
        assert_eq!(args[2].flags, ARG_OPTIONAL);
        assert_eq!(args[2].since.as_deref(), Some("2.6.12"));
        let nx = &args[2].args.as_ref().unwrap()[0];
        assert_eq!((nx.kind, nx.token.as_deref()), ("pure-token", Some("NX")));
        assert_eq!(args[3].name, "ip:port");
        assert_eq!(args[3].token.as_deref(), Some("ADDR"));
        assert_eq!(args[4].key_spec_index, Some(1));
        assert_eq!(args[4].flags, ARG_MULTIPLE);
        assert_eq!(args[5].flags, ARG_MULTIPLE_TOKEN);
        assert_eq!(args[5].args.as_ref().unwrap().len(), 2);
        assert!(parse_args("a:oneof").is_err());
        assert!(parse_args("a:oneof(b:B").is_err());
        assert!(parse_args("a").is_err());
    }

    #[test]
    fn keys_found_by_specs() {
        let argv: Vec<&[u8]> = vec![b"mset", b"a", b"1", b"b", b"2"];
        let specs = parse_key_specs("OW,update index:1 range:-1:2:0").unwrap();
        let keys = keys_by_specs(&specs, &argv).unwrap();
        assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), [1, 3]);
        let argv: Vec<&[u8]> = vec![b"eval", b"s", b"2", b"k1", b"k2", b"a"];
        let specs = parse_key_specs("RW,access,update index:2 keynum:0:1:1").unwrap();
        let keys = keys_by_specs(&specs, &argv).unwrap();
        assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), [3, 4]);
        let argv: Vec<&[u8]> = vec![b"eval", b"s", b"9", b"k1"];
        assert!(keys_by_specs(&specs, &argv).is_none());
    }
}
