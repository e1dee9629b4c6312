//! Turning off TX checksum offload on a veth: with the userspace (`netdev`) datapath OVS
//! reads the host end through AF_PACKET, which does not complete offloaded (CHECKSUM_PARTIAL)
//! checksums, so without this ICMP works and TCP silently does not. Doing it on the pod end
//! is enough.
//!
//! What `ethtool -K <if> tx off` does, as one ethtool-netlink `FEATURES_SET` request over a
//! generic netlink socket (no child process per ADD: the process cost ~3 ms of every ADD).
//! No Rust ethtool crate can set features (rust-netlink's `ethtool` only reads them), so the
//! few attributes are written here by hand ([`features_off_request`], pure and tested). A
//! netlink socket acts in the netns of the thread that opens it: call this from a worker of
//! [`in_netns`](super::in_netns).

use std::sync::OnceLock;

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};

use super::error::NetlinkError;

/// The features `ethtool`'s `tx` switch covers (its `tx-checksum-*` pattern), by the
/// kernel's names; those the device cannot change are ignored by the kernel.
pub const TX_CHECKSUM_FEATURES: [&str; 5] = [
    "tx-checksum-ipv4",
    "tx-checksum-ip-generic",
    "tx-checksum-ipv6",
    "tx-checksum-fcoe-crc",
    "tx-checksum-sctp",
];

// Netlink and generic netlink (linux/netlink.h, linux/genetlink.h).
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLA_F_NESTED: u16 = 1 << 15;
const GENL_ID_CTRL: u16 = 16;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
// ethtool netlink (linux/ethtool_netlink.h).
const ETHTOOL_GENL_NAME: &str = "ethtool";
const ETHTOOL_GENL_VERSION: u8 = 1;
const ETHTOOL_MSG_FEATURES_SET: u8 = 12;
const ETHTOOL_A_FEATURES_HEADER: u16 = 1;
const ETHTOOL_A_FEATURES_WANTED: u16 = 3;
const ETHTOOL_A_HEADER_DEV_NAME: u16 = 2;
const ETHTOOL_A_HEADER_FLAGS: u16 = 3;
const ETHTOOL_FLAG_OMIT_REPLY: u32 = 1 << 1;
const ETHTOOL_A_BITSET_BITS: u16 = 3;
const ETHTOOL_A_BITSET_BITS_BIT: u16 = 1;
const ETHTOOL_A_BITSET_BIT_NAME: u16 = 2;

/// `ethtool -K <ifname> tx off` in the calling thread's netns (`netns` names it in errors).
/// Blocking: call it from a netns worker thread.
pub fn disable_tx_checksum_offload(netns: &str, ifname: &str) -> Result<(), NetlinkError> {
    let error = |detail: String| NetlinkError::Ethtool {
        netns: netns.to_owned(),
        ifname: ifname.to_owned(),
        features: "tx off".to_owned(),
        detail,
    };
    let socket = GenlSocket::open().map_err(|e| error(format!("generic netlink socket: {e}")))?;
    let family = ethtool_family(&socket).map_err(error)?;
    socket
        .request(&features_off_request(
            family,
            2,
            ifname,
            &TX_CHECKSUM_FEATURES,
        ))
        .map_err(|e| error(format!("ethtool FEATURES_SET: {e}")))?;
    Ok(())
}

/// The ethtool family's id: global (the same in every netns), so resolved once.
fn ethtool_family(socket: &GenlSocket) -> Result<u16, String> {
    static FAMILY: OnceLock<u16> = OnceLock::new();
    if let Some(id) = FAMILY.get() {
        return Ok(*id);
    }
    let replies = socket
        .request(&get_family_request(1, ETHTOOL_GENL_NAME))
        .map_err(|e| format!("resolving the ethtool netlink family (kernel >= 5.6): {e}"))?;
    let id = replies
        .iter()
        .find_map(|payload| family_id(payload))
        .ok_or("the kernel's answer for the ethtool family has no id")?;
    Ok(*FAMILY.get_or_init(|| id))
}

/// A connected generic netlink socket.
struct GenlSocket(Socket);

impl GenlSocket {
    fn open() -> std::io::Result<Self> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Self(socket))
    }

    /// Sends `message` (asking for an ack) and returns the payloads of the answers before
    /// the ack, or the kernel's error.
    fn request(&self, message: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let seq = message
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes)
            .unwrap_or_default();
        self.0.send(message, 0).map_err(|e| e.to_string())?;
        let mut replies = Vec::new();
        loop {
            let (datagram, _) = self.0.recv_from_full().map_err(|e| e.to_string())?;
            for (kind, msg_seq, payload) in messages(&datagram) {
                if msg_seq != seq {
                    continue;
                }
                if kind == NLMSG_ERROR {
                    return match ack_errno(payload) {
                        Some(0) => Ok(replies),
                        Some(errno) => Err(std::io::Error::from_raw_os_error(-errno).to_string()),
                        None => Err("truncated netlink error message".to_owned()),
                    };
                }
                replies.push(payload.to_vec());
            }
        }
    }
}

/// A netlink message being written: header, generic netlink header, attributes.
struct MessageWriter {
    buf: Vec<u8>,
    open: Vec<usize>,
}

impl MessageWriter {
    fn new(kind: u16, seq: u32, cmd: u8, version: u8) -> Self {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&[cmd, version, 0, 0]);
        Self {
            buf,
            open: Vec::new(),
        }
    }

    fn attr(&mut self, kind: u16, payload: &[u8]) -> &mut Self {
        let len = u16::try_from(4 + payload.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(payload);
        self.pad();
        self
    }

    fn string(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut payload = value.as_bytes().to_vec();
        payload.push(0);
        self.attr(kind, &payload)
    }

    fn begin(&mut self, kind: u16) -> &mut Self {
        self.open.push(self.buf.len());
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf
            .extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        self
    }

    fn end(&mut self) -> &mut Self {
        if let Some(start) = self.open.pop() {
            let len = u16::try_from(self.buf.len() - start).unwrap_or(u16::MAX);
            self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        }
        self
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf
    }
}

/// `CTRL_CMD_GETFAMILY` for `name`.
fn get_family_request(seq: u32, name: &str) -> Vec<u8> {
    let mut message = MessageWriter::new(GENL_ID_CTRL, seq, CTRL_CMD_GETFAMILY, 1);
    message.string(CTRL_ATTR_FAMILY_NAME, name);
    message.finish()
}

/// `ETHTOOL_MSG_FEATURES_SET` turning `features` off on `ifname`: the wanted bitset lists
/// them by name without a value (off) and without `NOMASK`, so every other feature stays
/// as it is; the kernel's reply is omitted (the ack is enough).
pub fn features_off_request(family: u16, seq: u32, ifname: &str, features: &[&str]) -> Vec<u8> {
    let mut message =
        MessageWriter::new(family, seq, ETHTOOL_MSG_FEATURES_SET, ETHTOOL_GENL_VERSION);
    message
        .begin(ETHTOOL_A_FEATURES_HEADER)
        .string(ETHTOOL_A_HEADER_DEV_NAME, ifname)
        .attr(
            ETHTOOL_A_HEADER_FLAGS,
            &ETHTOOL_FLAG_OMIT_REPLY.to_ne_bytes(),
        )
        .end()
        .begin(ETHTOOL_A_FEATURES_WANTED)
        .begin(ETHTOOL_A_BITSET_BITS);
    for feature in features {
        message
            .begin(ETHTOOL_A_BITSET_BITS_BIT)
            .string(ETHTOOL_A_BITSET_BIT_NAME, feature)
            .end();
    }
    message.end().end();
    message.finish()
}

/// The messages of a datagram: (type, sequence number, payload after the header).
fn messages(datagram: &[u8]) -> Vec<(u16, u32, &[u8])> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while rest.len() >= 16 {
        let len = u32_at(rest, 0)
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0);
        if len < 16 || len > rest.len() {
            break;
        }
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        let seq = u32_at(rest, 8).unwrap_or_default();
        out.push((kind, seq, &rest[16..len]));
        rest = &rest[len.next_multiple_of(4).min(rest.len())..];
    }
    out
}

/// The errno of an `NLMSG_ERROR` payload (0 for an ack).
fn ack_errno(payload: &[u8]) -> Option<i32> {
    payload.get(0..4)?.try_into().ok().map(i32::from_ne_bytes)
}

/// `CTRL_ATTR_FAMILY_ID` of a `GETFAMILY` answer's payload.
fn family_id(payload: &[u8]) -> Option<u16> {
    let mut attrs = payload.get(4..)?;
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]) & !NLA_F_NESTED;
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == CTRL_ATTR_FAMILY_ID {
            return attrs.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
        }
        attrs = &attrs[len.next_multiple_of(4).min(attrs.len())..];
    }
    None
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)?
        .try_into()
        .ok()
        .map(u32::from_ne_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr_bytes(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&u16::try_from(4 + payload.len()).unwrap().to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(payload);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out
    }

    fn nested(kind: u16, inner: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&u16::try_from(4 + inner.len()).unwrap().to_ne_bytes());
        out.extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        out.extend_from_slice(inner);
        out
    }

    #[test]
    fn features_request_lists_each_feature_by_name_without_value() {
        let message = features_off_request(27, 9, "eth0", &["tx-checksum-ipv4"]);
        let header = [
            attr_bytes(ETHTOOL_A_HEADER_DEV_NAME, b"eth0\0"),
            attr_bytes(ETHTOOL_A_HEADER_FLAGS, &2u32.to_ne_bytes()),
        ]
        .concat();
        let bit = nested(
            ETHTOOL_A_BITSET_BITS_BIT,
            &attr_bytes(ETHTOOL_A_BITSET_BIT_NAME, b"tx-checksum-ipv4\0"),
        );
        let wanted = nested(
            ETHTOOL_A_FEATURES_WANTED,
            &nested(ETHTOOL_A_BITSET_BITS, &bit),
        );
        let attrs = [nested(ETHTOOL_A_FEATURES_HEADER, &header), wanted].concat();
        let mut expected = Vec::new();
        expected.extend_from_slice(&u32::try_from(20 + attrs.len()).unwrap().to_ne_bytes());
        expected.extend_from_slice(&27u16.to_ne_bytes());
        expected.extend_from_slice(&5u16.to_ne_bytes());
        expected.extend_from_slice(&9u32.to_ne_bytes());
        expected.extend_from_slice(&0u32.to_ne_bytes());
        expected.extend_from_slice(&[12, 1, 0, 0]);
        expected.extend_from_slice(&attrs);
        assert_eq!(message, expected);
    }

    #[test]
    fn family_request_names_the_family() {
        let message = get_family_request(1, "ethtool");
        assert_eq!(
            u32_at(&message, 0),
            Some(u32::try_from(message.len()).unwrap())
        );
        assert_eq!(&message[16..20], &[CTRL_CMD_GETFAMILY, 1, 0, 0]);
        assert_eq!(
            &message[20..],
            attr_bytes(CTRL_ATTR_FAMILY_NAME, b"ethtool\0").as_slice()
        );
    }

    #[test]
    fn answers_are_split_and_read() {
        let mut reply = Vec::new();
        let payload = [
            vec![1, 2, 0, 0],
            attr_bytes(CTRL_ATTR_FAMILY_NAME, b"ethtool\0"),
            attr_bytes(CTRL_ATTR_FAMILY_ID, &21u16.to_ne_bytes()),
        ]
        .concat();
        for (kind, body) in [(GENL_ID_CTRL, payload), (NLMSG_ERROR, vec![0; 20])] {
            reply.extend_from_slice(&u32::try_from(16 + body.len()).unwrap().to_ne_bytes());
            reply.extend_from_slice(&kind.to_ne_bytes());
            reply.extend_from_slice(&0u16.to_ne_bytes());
            reply.extend_from_slice(&7u32.to_ne_bytes());
            reply.extend_from_slice(&0u32.to_ne_bytes());
            reply.extend_from_slice(&body);
        }
        let parsed = messages(&reply);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].0, GENL_ID_CTRL);
        assert_eq!(family_id(parsed[0].2), Some(21));
        assert_eq!((parsed[1].0, parsed[1].1), (NLMSG_ERROR, 7));
        assert_eq!(ack_errno(parsed[1].2), Some(0));
        assert_eq!(ack_errno(&(-19i32).to_ne_bytes()), Some(-19));
        assert!(messages(&reply[..10]).is_empty());
    }
}
