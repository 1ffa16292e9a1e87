//! ACL users as Redis 7.0 has them: the users (`user.rs`) and their
//! selectors (`selector.rs`), the check of a command line against a user
//! (`check.rs`), ACL LOG (`log.rs`), and the ACL file (`file.rs`).
//!
//! A user is replaced whole when it changes (ACL SETUSER applies the rules
//! to a copy); a connection keeps an `Arc` of its user and takes the new one
//! when `version` moved, so the check costs one atomic load and, for most
//! users, one flag test.

pub mod check;
pub mod file;
pub mod log;
pub mod selector;
pub mod user;

use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
pub use user::User;

/// Why a rule was refused (Redis's errno values for ACLSetUser).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SetError {
    UnknownName,
    Syntax,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSub,
}

impl SetError {
    pub fn message(self) -> &'static str {
        match self {
            SetError::UnknownName => "Unknown command or category name in ACL",
            SetError::Syntax => "Syntax error",
            SetError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            SetError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            SetError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            SetError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            SetError::FirstArgOfSub => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

pub type Users = BTreeMap<Vec<u8>, Arc<User>>;

pub struct Acl {
    users: RwLock<Users>,
    /// Bumped whenever a user changes: connections then fetch theirs again.
    version: AtomicU64,
    pub log: Mutex<log::Log>,
    pub denied_auth: AtomicU64,
    pub denied_cmd: AtomicU64,
    pub denied_key: AtomicU64,
    pub denied_channel: AtomicU64,
}

impl Default for Acl {
    fn default() -> Self {
        Self::new()
    }
}

impl Acl {
    pub fn new() -> Self {
        let mut users = Users::new();
        users.insert(b"default".to_vec(), Arc::new(User::default_user()));
        Acl {
            users: RwLock::new(users),
            version: AtomicU64::new(0),
            log: Mutex::new(log::Log::default()),
            denied_auth: AtomicU64::new(0),
            denied_cmd: AtomicU64::new(0),
            denied_key: AtomicU64::new(0),
            denied_channel: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    fn bump(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        self.get(b"default")
            .expect("the default user always exists")
    }

    /// Whether a new connection must authenticate (the default user has a
    /// password or is off).
    pub fn auth_required(&self) -> bool {
        let d = self.default_user();
        !d.nopass || !d.enabled
    }

    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// ACL SETUSER: applies `rules` to the user (a new one when missing),
    /// all or none. Returns the user before and after.
    pub fn set_user(
        &self,
        name: &[u8],
        rules: &[Vec<u8>],
        pubsub_all: bool,
    ) -> Result<(Option<Arc<User>>, Arc<User>), String> {
        let rules = user::merge_selectors(rules).map_err(|at| {
            format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(&at)
            )
        })?;
        let mut users = self.users.write();
        let old = users.get(name).cloned();
        let base = match &old {
            Some(u) => (**u).clone(),
            None => User::new(name, pubsub_all),
        };
        let new = Arc::new(base.with_rules(&rules, pubsub_all)?);
        users.insert(name.to_vec(), new.clone());
        drop(users);
        self.bump();
        Ok((old, new))
    }

    /// Replaces a user already checked (the default user's password from
    /// `requirepass`).
    pub fn put(&self, user: User) {
        self.users.write().insert(user.name.clone(), Arc::new(user));
        self.bump();
    }

    /// ACL DELUSER: the users removed.
    pub fn delete(&self, names: &[&[u8]]) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        let gone: Vec<_> = names.iter().filter_map(|n| users.remove(*n)).collect();
        drop(users);
        self.bump();
        gone
    }

    /// ACL LOAD: every user replaced at once; the default user is kept
    /// when the file does not name it. Returns the users before.
    pub fn replace_all(&self, mut new: Users) -> Users {
        let mut users = self.users.write();
        if !new.contains_key(b"default".as_slice()) {
            new.insert(b"default".to_vec(), users[b"default".as_slice()].clone());
        }
        let old = std::mem::replace(&mut *users, new);
        drop(users);
        self.bump();
        old
    }

    /// CONFIG SET requirepass: the default user's passwords become this
    /// one (none: nopass), as Redis's ACLUpdateDefaultUserPassword.
    pub fn set_default_password(&self, pass: Option<&str>) {
        let mut d = (*self.default_user()).clone();
        let _ = d.apply(b"resetpass", false);
        match pass {
            Some(p) => {
                let mut op = b">".to_vec();
                op.extend_from_slice(p.as_bytes());
                let _ = d.apply(&op, false);
            }
            None => {
                let _ = d.apply(b"nopass", false);
            }
        }
        d.refresh();
        self.put(d);
    }

    pub fn count_denied(&self, reason: log::Reason) {
        let c = match reason {
            log::Reason::Auth => &self.denied_auth,
            log::Reason::Command => &self.denied_cmd,
            log::Reason::Key => &self.denied_key,
            log::Reason::Channel => &self.denied_channel,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}
