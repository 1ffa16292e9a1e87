//! nodes.conf in Redis's format: one CLUSTER NODES line per known node
//! (nodes still in handshake are left out), then
//! `vars currentEpoch N lastVoteEpoch N`. How a save survives a crash:
//! `write`.

use super::nodes::{self, Node};
use super::State;
use std::io::Write;
use std::path::Path;

pub fn render(st: &State) -> String {
    let mut text = st.describe_all(nodes::HANDSHAKE, false);
    text.push_str(&format!(
        "vars currentEpoch {} lastVoteEpoch {}\n",
        st.current_epoch, st.last_vote_epoch
    ));
    text
}

/// Writes nodes.conf. With `fsync` (elections, votes, epochs: what must
/// survive a power loss), to a temporary file that is fsynced and renamed
/// over the old one, so a crash leaves the old or the new file. Without it
/// (a slot or flag change after a command), in place as Redis 7.0 does: one
/// write(2) of the new text, padded with newlines to the old length and then
/// truncated, so a process killed in between leaves a file that still loads.
/// The rename costs ~230 us on ext4 (it starts the new file's writeback),
/// the write in place ~16 us, and `redis-cli --cluster reshard` sends five
/// CLUSTER SETSLOT per slot.
pub fn write(path: &Path, text: &str, fsync: bool) -> std::io::Result<()> {
    if !fsync {
        return write_in_place(path, text);
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn write_in_place(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let old = f.metadata()?.len() as usize;
    let mut bytes = text.as_bytes().to_vec();
    // Blank lines are skipped on load.
    bytes.resize(old.max(text.len()), b'\n');
    f.write_all(&bytes)?;
    if bytes.len() > text.len() {
        f.set_len(text.len() as u64)?;
    }
    Ok(())
}

/// Reads nodes.conf; None when it does not exist or is empty (a new node).
pub fn load(path: &Path, now: u64) -> Result<Option<State>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "Loading the cluster node config from {}: {e}",
                path.display()
            ))
        }
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    parse(&text, now).map(Some).map_err(|line| {
        format!(
            "Unrecoverable error: corrupted cluster config file \"{}\": {line}",
            path.display()
        )
    })
}

/// Parses the file; the error is the offending line.
pub fn parse(text: &str, now: u64) -> Result<State, String> {
    let mut myself = None;
    let mut parsed: Vec<Node> = Vec::new();
    let mut owners: Vec<(usize, usize, nodes::Name)> = Vec::new();
    let mut migrating = Vec::new();
    let mut importing = Vec::new();
    let (mut current_epoch, mut last_vote_epoch) = (0, 0);
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').filter(|s| !s.is_empty()).collect();
        if f.is_empty() {
            continue;
        }
        let bad = || line.to_string();
        if f[0] == "vars" {
            let mut i = 1;
            while i + 1 < f.len() {
                let v: u64 = f[i + 1].parse().map_err(|_| bad())?;
                match f[i] {
                    "currentEpoch" => current_epoch = v,
                    "lastVoteEpoch" => last_vote_epoch = v,
                    _ => return Err(bad()),
                }
                i += 2;
            }
            continue;
        }
        if f.len() < 8 {
            return Err(bad());
        }
        let name = nodes::parse_name(f[0].as_bytes()).ok_or_else(bad)?;
        let (ip, port, cport, hostname) = nodes::parse_addr(f[1]).ok_or_else(bad)?;
        let mut n = Node::new(name, nodes::parse_flags(f[2]), now);
        n.ip = ip;
        n.port = port;
        n.cport = cport;
        n.hostname = hostname;
        if n.flags & nodes::MYSELF != 0 {
            myself = Some(name);
        }
        if f[3] != "-" {
            n.slaveof = Some(nodes::parse_name(f[3].as_bytes()).ok_or_else(bad)?);
        }
        // Redis restores ping_sent/pong_received as "now" when non-zero.
        n.ping_sent = 0;
        n.pong_received = if f[5] != "0" { now } else { 0 };
        n.config_epoch = f[6].parse().map_err(|_| bad())?;
        for s in &f[8..] {
            if let Some(open) = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                let (slot, dir, other) = if let Some((a, b)) = open.split_once("->-") {
                    (a, true, b)
                } else if let Some((a, b)) = open.split_once("-<-") {
                    (a, false, b)
                } else {
                    return Err(bad());
                };
                let slot: u16 = slot
                    .parse()
                    .ok()
                    .filter(|s| (*s as usize) < super::SLOTS)
                    .ok_or_else(bad)?;
                let other = nodes::parse_name(other.as_bytes()).ok_or_else(bad)?;
                if dir {
                    migrating.push((slot, other));
                } else {
                    importing.push((slot, other));
                }
                continue;
            }
            let (a, b) = s.split_once('-').unwrap_or((s, s));
            let a: usize = a.parse().map_err(|_| bad())?;
            let b: usize = b.parse().map_err(|_| bad())?;
            if a > b || b >= super::SLOTS {
                return Err(bad());
            }
            owners.push((a, b, name));
        }
        parsed.push(n);
    }
    let myself = myself.ok_or_else(|| "no node is flagged myself".to_string())?;
    let mut st = State::new(myself, now);
    st.nodes.clear();
    for n in parsed {
        st.nodes.insert(n.name, n);
    }
    let with_replicas: Vec<nodes::Name> = st
        .nodes
        .values()
        .filter(|n| n.is_slave())
        .filter_map(|n| n.slaveof)
        .collect();
    for m in with_replicas {
        if let Some(m) = st.nodes.get_mut(&m) {
            m.flags |= nodes::MIGRATE_TO;
        }
    }
    for (a, b, owner) in owners {
        for s in a..=b {
            st.add_slot(s, owner);
        }
    }
    // A slot may only be open towards a node the file names.
    for (s, n) in migrating {
        if st.nodes.contains_key(&n) {
            st.migrating.insert(s, n);
        }
    }
    for (s, n) in importing {
        if st.nodes.contains_key(&n) {
            st.importing.insert(s, n);
        }
    }
    st.current_epoch =
        current_epoch.max(st.nodes.values().map(|n| n.config_epoch).max().unwrap_or(0));
    st.last_vote_epoch = last_vote_epoch;
    // Links come back through the bus.
    for n in st.nodes.values_mut() {
        n.link = None;
    }
    st.dirty = false;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_file_round_trips() {
        let text = "36b518a36f1993727661815fcd375d78263dfb4c :25009@35009 myself,master - 0 0 3 connected 0-100 200 [5->-ab6518a36f1993727661815fcd375d78263dfb4c]\n\
ab6518a36f1993727661815fcd375d78263dfb4c 127.0.0.1:7001@17001,h master - 0 1 2 connected 101-199\n\
vars currentEpoch 5 lastVoteEpoch 1\n";
        let st = parse(text, 7).unwrap();
        assert_eq!(st.current_epoch, 5);
        assert_eq!(st.me().numslots(), 102);
        assert_eq!(st.migrating.len(), 1);
        let again = parse(&render(&st), 7).unwrap();
        assert_eq!(render(&again), render(&st));
        assert!(render(&st).contains(" myself,master - 0 0 3 connected 0-100 200 [5->-ab6"));
        assert!(parse("garbage\n", 0).is_err());
        assert!(parse("36b518a36f1993727661815fcd375d78263dfb4c :1@2 myself,master - 0 0 0 connected 0-99999\n", 0).is_err());
    }

    #[test]
    fn saves_in_place_and_through_a_temporary_file_read_back() {
        let long = "36b518a36f1993727661815fcd375d78263dfb4c :25009@35009 myself,master - 0 0 3 connected 0-100 200 [5->-ab6518a36f1993727661815fcd375d78263dfb4c]\n\
ab6518a36f1993727661815fcd375d78263dfb4c 127.0.0.1:7001@17001,h master - 0 1 2 connected 101-199\n\
vars currentEpoch 5 lastVoteEpoch 1\n";
        let short = "36b518a36f1993727661815fcd375d78263dfb4c :25009@35009 myself,master - 0 0 3 connected 0-16383\n\
vars currentEpoch 6 lastVoteEpoch 1\n";
        let dir = std::env::temp_dir().join(format!("blinkdb-nodes-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nodes.conf");
        for (text, fsync) in [(long, false), (short, false), (long, true), (short, true)] {
            write(&path, text, fsync).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        write(&path, long, false).unwrap();
        // A process killed between the padded write and the truncation.
        let mut padded = short.as_bytes().to_vec();
        padded.resize(long.len(), b'\n');
        std::fs::write(&path, &padded).unwrap();
        let st = load(&path, 7).unwrap().expect("a state");
        assert_eq!((st.current_epoch, st.me().numslots()), (6, 16384));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
