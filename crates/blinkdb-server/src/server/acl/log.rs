//! ACL LOG: the latest refusals, newest first; a refusal like one of the
//! last ten (same reason, context, object and user, within 60 s) bumps that
//! entry's count instead of adding one (Redis's addACLLogEntry).

use std::collections::VecDeque;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reason {
    Command,
    Key,
    Auth,
    Channel,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Auth => "auth",
            Reason::Channel => "channel",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub ctime_ms: u64,
    pub client_info: String,
}

/// Entries closer in time than this are grouped.
const GROUPING_MS: u64 = 60_000;
/// How many of the newest entries are looked at for grouping.
const GROUPING_SCAN: usize = 10;

#[derive(Default)]
pub struct Log {
    entries: VecDeque<Entry>,
}

impl Log {
    pub fn add(&mut self, e: Entry, max_len: usize) {
        let found = self.entries.iter().take(GROUPING_SCAN).position(|c| {
            c.reason == e.reason
                && c.context == e.context
                && c.ctime_ms.abs_diff(e.ctime_ms) <= GROUPING_MS
                && c.object == e.object
                && c.username == e.username
        });
        if let Some(at) = found {
            let mut cur = self.entries.remove(at).expect("found above");
            cur.count += 1;
            cur.ctime_ms = e.ctime_ms;
            cur.client_info = e.client_info;
            self.entries.push_front(cur);
            return;
        }
        self.entries.push_front(e);
        self.entries.truncate(max_len);
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
