//! A cluster node as this node knows it, and its one-line description: the
//! line of CLUSTER NODES, which is also the line of nodes.conf.

use super::slots::SlotBits;

/// A node's name: 40 hex characters (Redis's CLUSTER_NAMELEN).
pub type Name = [u8; 40];

// Node flags, with Redis's values: they travel in the bus header.
pub const MASTER: u16 = 1;
pub const SLAVE: u16 = 2;
pub const PFAIL: u16 = 4;
pub const FAIL: u16 = 8;
pub const MYSELF: u16 = 16;
pub const HANDSHAKE: u16 = 32;
pub const NOADDR: u16 = 64;
pub const MEET: u16 = 128;
pub const MIGRATE_TO: u16 = 256;
pub const NOFAILOVER: u16 = 512;

/// Flag names in the order Redis prints them.
const FLAG_NAMES: &[(u16, &str)] = &[
    (MYSELF, "myself"),
    (MASTER, "master"),
    (SLAVE, "slave"),
    (PFAIL, "fail?"),
    (FAIL, "fail"),
    (HANDSHAKE, "handshake"),
    (NOADDR, "noaddr"),
    (NOFAILOVER, "nofailover"),
];

pub fn random_name() -> Name {
    let mut n = [0u8; 40];
    for c in n.iter_mut() {
        *c = b"0123456789abcdef"[rand::random::<u8>() as usize % 16];
    }
    n
}

/// A name given by a client or a file: exactly 40 bytes.
pub fn parse_name(s: &[u8]) -> Option<Name> {
    s.try_into().ok()
}

pub fn name_str(n: &Name) -> &str {
    std::str::from_utf8(n).unwrap_or("")
}

#[derive(Clone)]
pub struct Node {
    pub name: Name,
    pub ip: String,
    pub port: u16,
    /// The plaintext data port of a node whose `port` is its TLS port
    /// (tls-cluster yes), 0 if none: gossiped, not kept in nodes.conf.
    pub pport: u16,
    pub cport: u16,
    pub hostname: String,
    pub flags: u16,
    pub slaveof: Option<Name>,
    /// When the last PING went out unanswered (0: none pending), ms.
    pub ping_sent: u64,
    pub pong_received: u64,
    pub data_received: u64,
    pub config_epoch: u64,
    pub slots: SlotBits,
    pub repl_offset: u64,
    /// Our outbound bus link (its id in the bus), while it exists.
    pub link: Option<u64>,
    /// The bus link this node opened to us.
    pub inbound_link: Option<u64>,
    /// When the outbound and the inbound bus links were made (CLUSTER LINKS).
    pub link_ctime: Option<u64>,
    pub inbound_ctime: Option<u64>,
    /// Nodes that reported this one failing, and when.
    pub fail_reports: Vec<(Name, u64)>,
    pub fail_time: u64,
    /// When we last voted for a replica of this master (failover).
    pub voted_time: u64,
    /// Since when this master has been orphaned: serving slots with no
    /// working replica left (replica migration), 0 while it is not.
    pub orphaned_time: u64,
    pub ctime: u64,
}

impl Node {
    pub fn new(name: Name, flags: u16, now: u64) -> Node {
        Node {
            name,
            ip: String::new(),
            port: 0,
            pport: 0,
            cport: 0,
            hostname: String::new(),
            flags,
            slaveof: None,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            config_epoch: 0,
            slots: SlotBits::default(),
            repl_offset: 0,
            link: None,
            inbound_link: None,
            link_ctime: None,
            inbound_ctime: None,
            fail_reports: Vec::new(),
            fail_time: 0,
            voted_time: 0,
            orphaned_time: 0,
            ctime: now,
        }
    }

    pub fn is_master(&self) -> bool {
        self.flags & MASTER != 0
    }

    pub fn is_slave(&self) -> bool {
        self.flags & SLAVE != 0
    }

    pub fn failed(&self) -> bool {
        self.flags & FAIL != 0
    }

    pub fn numslots(&self) -> usize {
        self.slots.count()
    }

    pub fn flags_text(&self) -> String {
        let names: Vec<&str> = FLAG_NAMES
            .iter()
            .filter(|(f, _)| self.flags & f != 0)
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            "noflags".into()
        } else {
            names.join(",")
        }
    }

    /// The data port a client is sent to: with `plaintext` (a plain client
    /// of a TLS cluster) the plaintext port the node gossips, where it has
    /// one, as Redis's use_pport.
    pub fn client_port(&self, plaintext: bool) -> u16 {
        if plaintext && self.pport != 0 {
            self.pport
        } else {
            self.port
        }
    }

    /// `ip:port@cport[,hostname]`.
    pub fn addr_text(&self, plaintext: bool) -> String {
        let mut s = format!("{}:{}@{}", self.ip, self.client_port(plaintext), self.cport);
        if !self.hostname.is_empty() {
            s.push(',');
            s.push_str(&self.hostname);
        }
        s
    }

    /// The CLUSTER NODES line up to the link state; the caller appends slots
    /// (`epoch`: a replica shows its master's config epoch).
    pub fn describe_head(&self, epoch: u64, plaintext: bool) -> String {
        let master = self.slaveof.as_ref().map_or("-", name_str);
        let connected = if self.link.is_some() || self.flags & MYSELF != 0 {
            "connected"
        } else {
            "disconnected"
        };
        format!(
            "{} {} {} {} {} {} {} {}",
            name_str(&self.name),
            self.addr_text(plaintext),
            self.flags_text(),
            master,
            self.ping_sent,
            self.pong_received,
            epoch,
            connected
        )
    }
}

/// Parses flag names back (nodes.conf).
pub fn parse_flags(text: &str) -> u16 {
    let mut flags = 0;
    for f in text.split(',') {
        flags |= FLAG_NAMES
            .iter()
            .find(|(_, n)| *n == f)
            .map_or(0, |(v, _)| *v);
    }
    flags
}

/// Parses `ip:port@cport[,hostname]` (Redis 7.0 also reads `ip:port`, with
/// the bus port then port + 10000).
pub fn parse_addr(text: &str) -> Option<(String, u16, u16, String)> {
    let (addr, hostname) = match text.split_once(',') {
        Some((a, h)) => (a, h.to_string()),
        None => (text, String::new()),
    };
    let (hostport, cport) = match addr.split_once('@') {
        Some((hp, c)) => (hp, Some(c.parse::<u16>().ok()?)),
        None => (addr, None),
    };
    let (ip, port) = hostport.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let cport = cport.unwrap_or(port.wrapping_add(10000));
    Some((ip.to_string(), port, cport, hostname))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip() {
        let mut n = Node::new([b'a'; 40], MYSELF | MASTER, 0);
        assert_eq!(n.flags_text(), "myself,master");
        assert_eq!(parse_flags("myself,master"), MYSELF | MASTER);
        n.flags = 0;
        assert_eq!(n.flags_text(), "noflags");
        assert_eq!(parse_flags("noflags"), 0);
    }

    #[test]
    fn addresses_parse() {
        assert_eq!(
            parse_addr("127.0.0.1:7000@17000,host").unwrap(),
            ("127.0.0.1".into(), 7000, 17000, "host".into())
        );
        assert_eq!(parse_addr(":7000@17000").unwrap().0, "");
        assert_eq!(
            parse_addr("::1:7000").unwrap(),
            ("::1".into(), 7000, 17000, String::new())
        );
        assert!(parse_addr("x").is_none());
    }
}
