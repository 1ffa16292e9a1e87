//! The cluster bus message codec (Redis 7.0's `clusterMsg`, docs/cluster-bus.md).
//! Every integer is big-endian. Decoding checks every length against the
//! bytes there are: a malformed message is an error, never a panic.

use super::nodes::Name;
use super::slots::BITMAP_BYTES;

pub const SIG: &[u8; 4] = b"RCmb";
pub const VERSION: u16 = 1;
/// Bytes of the header, before the type's data (Redis's CLUSTERMSG_MIN_LEN).
pub const HEADER_LEN: usize = 2256;
/// Bytes of one gossip entry (clusterMsgDataGossip).
pub const GOSSIP_LEN: usize = 104;
/// NET_IP_STR_LEN.
const IP_LEN: usize = 46;
/// The largest message read (Redis has no limit but memory; a PUBLISH
/// carries a whole message).
pub const MAX_LEN: usize = 512 << 20;

pub const PING: u16 = 0;
pub const PONG: u16 = 1;
pub const MEET: u16 = 2;
pub const FAIL: u16 = 3;
pub const PUBLISH: u16 = 4;
pub const FAILOVER_AUTH_REQUEST: u16 = 5;
pub const FAILOVER_AUTH_ACK: u16 = 6;
pub const UPDATE: u16 = 7;
pub const MFSTART: u16 = 8;
pub const PUBLISHSHARD: u16 = 10;

/// mflags[0]: the message carries ping extensions.
pub const FLAG0_EXT_DATA: u8 = 1 << 2;
const EXT_HOSTNAME: u16 = 0;

/// Field offsets in the header.
mod off {
    pub const TOTLEN: usize = 4;
    pub const VER: usize = 8;
    pub const PORT: usize = 10;
    pub const TYPE: usize = 12;
    pub const COUNT: usize = 14;
    pub const CURRENT_EPOCH: usize = 16;
    pub const CONFIG_EPOCH: usize = 24;
    pub const OFFSET: usize = 32;
    pub const SENDER: usize = 40;
    pub const MYSLOTS: usize = 80;
    pub const SLAVEOF: usize = 2128;
    pub const MYIP: usize = 2168;
    pub const EXTENSIONS: usize = 2214;
    pub const PPORT: usize = 2246;
    pub const CPORT: usize = 2248;
    pub const FLAGS: usize = 2250;
    pub const STATE: usize = 2252;
    pub const MFLAGS: usize = 2253;
}

#[derive(Clone, Debug)]
pub struct Gossip {
    pub name: Name,
    pub ping_sent: u32,
    pub pong_received: u32,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

#[derive(Clone, Debug)]
pub enum Body {
    Ping {
        gossip: Vec<Gossip>,
        hostname: Option<String>,
    },
    Fail {
        about: Name,
    },
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
    },
    Update {
        config_epoch: u64,
        name: Name,
        slots: Box<[u8; BITMAP_BYTES]>,
    },
    /// A type this node does not act on (failover votes, module messages):
    /// counted and ignored.
    Other,
}

#[derive(Clone, Debug)]
pub struct Message {
    pub kind: u16,
    pub port: u16,
    pub current_epoch: u64,
    pub config_epoch: u64,
    pub offset: u64,
    pub sender: Name,
    pub myslots: Box<[u8; BITMAP_BYTES]>,
    /// None: the sender is a master.
    pub slaveof: Option<Name>,
    /// The sender's announced IP (empty: use the socket's peer address).
    pub myip: String,
    pub pport: u16,
    pub cport: u16,
    pub flags: u16,
    pub state_ok: bool,
    pub mflags: [u8; 3],
    pub body: Body,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn name_at(b: &[u8], at: usize) -> Name {
    b[at..at + 40].try_into().expect("40 bytes")
}

/// A NUL-terminated string in a fixed field.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Checks the first 8 bytes of a message: signature and total length.
pub fn check_prefix(b: &[u8; 8]) -> Result<usize, String> {
    if &b[..4] != SIG {
        return Err("Bad message length or signature received from Cluster bus.".into());
    }
    let totlen = u32::from_be_bytes(b[4..8].try_into().expect("4 bytes")) as usize;
    if !(HEADER_LEN..=MAX_LEN).contains(&totlen) {
        return Err("Bad message length or signature received from Cluster bus.".into());
    }
    Ok(totlen)
}

/// Decodes one whole message (`b.len()` is its totlen).
pub fn decode(b: &[u8]) -> Result<Message, String> {
    if b.len() < HEADER_LEN || &b[..4] != SIG || u32_at(b, off::TOTLEN) as usize != b.len() {
        return Err("Bad message length or signature received from Cluster bus.".into());
    }
    let kind = u16_at(b, off::TYPE);
    let ver = u16_at(b, off::VER);
    if ver != VERSION {
        return Err(format!("Received a message of protocol version {ver}"));
    }
    let count = u16_at(b, off::COUNT) as usize;
    let mflags = [b[off::MFLAGS], b[off::MFLAGS + 1], b[off::MFLAGS + 2]];
    let data = &b[HEADER_LEN..];
    let bad_len = || {
        format!(
            "Received invalid message of type {kind} and length {}",
            b.len()
        )
    };
    let body = match kind {
        PING | PONG | MEET => {
            let glen = count * GOSSIP_LEN;
            if data.len() < glen {
                return Err(bad_len());
            }
            let gossip = data[..glen]
                .chunks(GOSSIP_LEN)
                .map(|g| Gossip {
                    name: name_at(g, 0),
                    ping_sent: u32_at(g, 40),
                    pong_received: u32_at(g, 44),
                    ip: cstr(&g[48..48 + IP_LEN]),
                    port: u16_at(g, 94),
                    cport: u16_at(g, 96),
                    flags: u16_at(g, 98),
                    pport: u16_at(g, 100),
                })
                .collect();
            let mut rest = &data[glen..];
            let mut hostname = None;
            if mflags[0] & FLAG0_EXT_DATA != 0 {
                for _ in 0..u16_at(b, off::EXTENSIONS) {
                    if rest.len() < 8 {
                        return Err(bad_len());
                    }
                    let len = u32_at(rest, 0) as usize;
                    if !len.is_multiple_of(8) || len < 8 || len > rest.len() {
                        return Err(bad_len());
                    }
                    match u16_at(rest, 4) {
                        EXT_HOSTNAME => hostname = Some(cstr(&rest[8..len])),
                        t => tracing::warn!("Received unknown extension type {t}"),
                    }
                    rest = &rest[len..];
                }
            }
            if !rest.is_empty() {
                return Err(bad_len());
            }
            Body::Ping { gossip, hostname }
        }
        FAIL => {
            if data.len() != 40 {
                return Err(bad_len());
            }
            Body::Fail {
                about: name_at(data, 0),
            }
        }
        PUBLISH | PUBLISHSHARD => {
            if data.len() < 8 {
                return Err(bad_len());
            }
            let clen = u32_at(data, 0) as usize;
            let mlen = u32_at(data, 4) as usize;
            let payload = clen.checked_add(mlen).ok_or_else(bad_len)?;
            if data.len() != 8 + payload {
                return Err(bad_len());
            }
            Body::Publish {
                channel: data[8..8 + clen].to_vec(),
                message: data[8 + clen..8 + payload].to_vec(),
            }
        }
        UPDATE => {
            if data.len() != 8 + 40 + BITMAP_BYTES {
                return Err(bad_len());
            }
            Body::Update {
                config_epoch: u64_at(data, 0),
                name: name_at(data, 8),
                slots: Box::new(data[48..48 + BITMAP_BYTES].try_into().expect("bitmap")),
            }
        }
        _ => Body::Other,
    };
    let slaveof = name_at(b, off::SLAVEOF);
    Ok(Message {
        kind,
        port: u16_at(b, off::PORT),
        current_epoch: u64_at(b, off::CURRENT_EPOCH),
        config_epoch: u64_at(b, off::CONFIG_EPOCH),
        offset: u64_at(b, off::OFFSET),
        sender: name_at(b, off::SENDER),
        myslots: Box::new(
            b[off::MYSLOTS..off::MYSLOTS + BITMAP_BYTES]
                .try_into()
                .expect("bitmap"),
        ),
        slaveof: (slaveof != [0; 40]).then_some(slaveof),
        myip: cstr(&b[off::MYIP..off::MYIP + IP_LEN]),
        pport: u16_at(b, off::PPORT),
        cport: u16_at(b, off::CPORT),
        flags: u16_at(b, off::FLAGS),
        state_ok: b[off::STATE] == 0,
        mflags,
        body,
    })
}

/// Encodes a message (totlen, count and extensions follow from the body).
pub fn encode(m: &Message) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_LEN];
    b[..4].copy_from_slice(SIG);
    b[off::VER..off::VER + 2].copy_from_slice(&VERSION.to_be_bytes());
    b[off::PORT..off::PORT + 2].copy_from_slice(&m.port.to_be_bytes());
    b[off::TYPE..off::TYPE + 2].copy_from_slice(&m.kind.to_be_bytes());
    b[off::CURRENT_EPOCH..off::CURRENT_EPOCH + 8].copy_from_slice(&m.current_epoch.to_be_bytes());
    b[off::CONFIG_EPOCH..off::CONFIG_EPOCH + 8].copy_from_slice(&m.config_epoch.to_be_bytes());
    b[off::OFFSET..off::OFFSET + 8].copy_from_slice(&m.offset.to_be_bytes());
    b[off::SENDER..off::SENDER + 40].copy_from_slice(&m.sender);
    b[off::MYSLOTS..off::MYSLOTS + BITMAP_BYTES].copy_from_slice(&m.myslots[..]);
    if let Some(s) = &m.slaveof {
        b[off::SLAVEOF..off::SLAVEOF + 40].copy_from_slice(s);
    }
    let ip = m.myip.as_bytes();
    let n = ip.len().min(IP_LEN - 1);
    b[off::MYIP..off::MYIP + n].copy_from_slice(&ip[..n]);
    b[off::PPORT..off::PPORT + 2].copy_from_slice(&m.pport.to_be_bytes());
    b[off::CPORT..off::CPORT + 2].copy_from_slice(&m.cport.to_be_bytes());
    b[off::FLAGS..off::FLAGS + 2].copy_from_slice(&m.flags.to_be_bytes());
    b[off::STATE] = if m.state_ok { 0 } else { 1 };
    b[off::MFLAGS..off::MFLAGS + 3].copy_from_slice(&m.mflags);
    match &m.body {
        Body::Ping { gossip, hostname } => {
            b[off::COUNT..off::COUNT + 2].copy_from_slice(&(gossip.len() as u16).to_be_bytes());
            for g in gossip {
                let mut e = [0u8; GOSSIP_LEN];
                e[..40].copy_from_slice(&g.name);
                e[40..44].copy_from_slice(&g.ping_sent.to_be_bytes());
                e[44..48].copy_from_slice(&g.pong_received.to_be_bytes());
                let ip = g.ip.as_bytes();
                let n = ip.len().min(IP_LEN - 1);
                e[48..48 + n].copy_from_slice(&ip[..n]);
                e[94..96].copy_from_slice(&g.port.to_be_bytes());
                e[96..98].copy_from_slice(&g.cport.to_be_bytes());
                e[98..100].copy_from_slice(&g.flags.to_be_bytes());
                e[100..102].copy_from_slice(&g.pport.to_be_bytes());
                b.extend_from_slice(&e);
            }
            if let Some(h) = hostname.as_ref().filter(|h| !h.is_empty()) {
                let padded = (h.len() + 1).div_ceil(8) * 8;
                let len = 8 + padded;
                b.extend_from_slice(&(len as u32).to_be_bytes());
                b.extend_from_slice(&EXT_HOSTNAME.to_be_bytes());
                b.extend_from_slice(&[0, 0]);
                b.extend_from_slice(h.as_bytes());
                b.resize(b.len() + padded - h.len(), 0);
                b[off::EXTENSIONS..off::EXTENSIONS + 2].copy_from_slice(&1u16.to_be_bytes());
                b[off::MFLAGS] |= FLAG0_EXT_DATA;
            }
        }
        Body::Fail { about } => b.extend_from_slice(about),
        Body::Publish { channel, message } => {
            b.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            b.extend_from_slice(&(message.len() as u32).to_be_bytes());
            b.extend_from_slice(channel);
            b.extend_from_slice(message);
        }
        Body::Update {
            config_epoch,
            name,
            slots,
        } => {
            b.extend_from_slice(&config_epoch.to_be_bytes());
            b.extend_from_slice(name);
            b.extend_from_slice(&slots[..]);
        }
        Body::Other => {}
    }
    let len = b.len() as u32;
    b[off::TOTLEN..off::TOTLEN + 4].copy_from_slice(&len.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping() -> Message {
        Message {
            kind: PING,
            port: 7000,
            current_epoch: 5,
            config_epoch: 3,
            offset: 9,
            sender: [b'a'; 40],
            myslots: Box::new([0xff; BITMAP_BYTES]),
            slaveof: None,
            myip: "10.0.0.1".into(),
            pport: 0,
            cport: 17000,
            flags: 1,
            state_ok: true,
            mflags: [0; 3],
            body: Body::Ping {
                gossip: vec![Gossip {
                    name: [b'b'; 40],
                    ping_sent: 0,
                    pong_received: 0,
                    ip: "1.2.3.4".into(),
                    port: 1,
                    cport: 2,
                    flags: 1,
                    pport: 0,
                }],
                hostname: Some("host-x".into()),
            },
        }
    }

    #[test]
    fn round_trip_and_layout() {
        let b = encode(&ping());
        assert_eq!(&b[..4], b"RCmb");
        assert_eq!(b.len(), HEADER_LEN + GOSSIP_LEN + 16);
        let m = decode(&b).unwrap();
        assert_eq!(m.cport, 17000);
        assert_eq!(m.myip, "10.0.0.1");
        match m.body {
            Body::Ping { gossip, hostname } => {
                assert_eq!(gossip[0].ip, "1.2.3.4");
                assert_eq!(hostname.as_deref(), Some("host-x"));
            }
            _ => panic!("not a ping"),
        }
    }

    #[test]
    fn malformed_messages_are_errors() {
        let b = encode(&ping());
        for cut in [0, 8, HEADER_LEN - 1, HEADER_LEN, b.len() - 1] {
            assert!(decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut wrong = b.clone();
        wrong[0] = b'X';
        assert!(decode(&wrong).is_err());
        let mut ver = b.clone();
        ver[9] = 2;
        assert!(decode(&ver).is_err());
        let mut count = b.clone();
        count[15] = 200;
        assert!(decode(&count).is_err());
        assert!(check_prefix(b"RCmb\0\0\0\x01").is_err());
        assert!(check_prefix(&b[..8].try_into().unwrap()).is_ok());
    }
}
