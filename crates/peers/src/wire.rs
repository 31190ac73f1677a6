//! The peers protocol's wire format (HAProxy "HAProxyS 2.1").
//!
//! * integers use HAProxy's encoding: a value below 240 is one byte;
//!   otherwise the first byte is `0xF0 | low 4 bits`, followed by 7-bit
//!   groups where a byte of 128 or more announces another one
//!   ([`put_uint`], [`get_uint`]);
//! * a message is `class:u8 type:u8`, followed for types of 128 and more
//!   by an encoded length and that many bytes ([`decode`]);
//! * stick-table updates carry a key and the stored values in data-type
//!   order ([`encode_update`], [`decode_update`]).
//!
//! Everything here is pure and never panics on input.

use fairlead_stick::spec::{DataType, KeyType, StdType};
use fairlead_stick::PeerVal;
use std::sync::Arc;

/// Largest message body accepted (HAProxy's buffers are 16 KiB).
pub const MAX_BODY: usize = 64 * 1024;

/// Message classes and types.
pub mod code {
    pub const CLASS_CONTROL: u8 = 0;
    pub const CLASS_ERROR: u8 = 1;
    pub const CLASS_TABLE: u8 = 10;
    pub const CTRL_RESYNC_REQ: u8 = 0;
    pub const CTRL_RESYNC_FINISHED: u8 = 1;
    pub const CTRL_RESYNC_PARTIAL: u8 = 2;
    pub const CTRL_RESYNC_CONFIRM: u8 = 3;
    pub const CTRL_HEARTBEAT: u8 = 4;
    pub const ERR_PROTO: u8 = 0;
    pub const ERR_SIZE: u8 = 1;
    pub const UPDATE: u8 = 0x80;
    pub const INC_UPDATE: u8 = 0x81;
    pub const DEFINE: u8 = 0x82;
    pub const SWITCH: u8 = 0x83;
    pub const ACK: u8 = 0x84;
    pub const UPDATE_TIMED: u8 = 0x85;
    pub const INC_UPDATE_TIMED: u8 = 0x86;
}

/// Key types on the wire (HAProxy's sample types).
pub mod keytype {
    pub const SINT: u64 = 2;
    pub const IPV4: u64 = 4;
    pub const IPV6: u64 = 5;
    pub const STR: u64 = 6;
    pub const BIN: u64 = 7;
}

/// The input is not a valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Malformed bytes.
    Proto,
    /// A body longer than [`MAX_BODY`].
    Size,
}

/// Appends `v` in HAProxy's integer encoding.
pub fn put_uint(out: &mut Vec<u8>, v: u64) {
    if v < 240 {
        out.push(v as u8);
        return;
    }
    out.push((v as u8) | 0xF0);
    let mut rest = (v - 240) >> 4;
    while rest >= 128 {
        out.push((rest as u8) | 0x80);
        rest = (rest - 128) >> 7;
    }
    out.push(rest as u8);
}

/// Reads an encoded integer at `*pos`, advancing it. `None` when the input
/// ends first or the value overflows 64 bits.
pub fn get_uint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *buf.get(*pos)?;
    *pos += 1;
    let mut v = u64::from(first);
    if first < 240 {
        return Some(v);
    }
    let mut shift = 4u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift >= 64 {
            return None;
        }
        v = v.checked_add(u64::from(b).checked_shl(shift)?)?;
        if b < 128 {
            return Some(v);
        }
        shift += 7;
    }
}

fn get_u32(buf: &[u8], pos: &mut usize) -> Option<u32> {
    let b = buf.get(*pos..pos.checked_add(4)?)?;
    *pos += 4;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn get_bytes<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
    let b = buf.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(b)
}

/// A table definition (`0x82`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Define {
    /// The sender's id for the table.
    pub id: u64,
    /// The table's wire name.
    pub name: Vec<u8>,
    /// Key type ([`keytype`]).
    pub key_type: u64,
    /// Key size (string tables: length + 1).
    pub key_len: u64,
    /// Bit `n` set when data type `n` is stored.
    pub data: u64,
    /// The table's `expire` in milliseconds (0: none).
    pub expire: u64,
    /// Per stored type with parameters: `(type, nbelem, period)`.
    pub params: Vec<(u64, u64, u64)>,
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Control messages (class 0).
    Control(u8),
    /// Error messages (class 1).
    Error(u8),
    /// Table definition.
    Define(Define),
    /// Table switch.
    Switch(u64),
    /// Acknowledgement of updates up to `update` for the receiver's
    /// table `id`.
    Ack { id: u64, update: u32 },
    /// An entry update; `id` absent for incremental updates, `expire`
    /// present for timed ones. `body` is the key and values.
    Update {
        id: Option<u32>,
        expire: Option<u32>,
        body: Vec<u8>,
    },
    /// A message of a class or type this implementation ignores.
    Other { class: u8, kind: u8 },
}

/// Decodes one message from the start of `buf`. `Ok(None)` when more
/// bytes are needed; otherwise the message and the bytes it used.
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, WireError> {
    let (Some(&class), Some(&kind)) = (buf.first(), buf.get(1)) else {
        return Ok(None);
    };
    if kind < 128 {
        let m = match class {
            code::CLASS_CONTROL => Message::Control(kind),
            code::CLASS_ERROR => Message::Error(kind),
            _ => Message::Other { class, kind },
        };
        return Ok(Some((m, 2)));
    }
    let mut pos = 2;
    let Some(len) = get_uint(buf, &mut pos) else {
        // Incomplete length unless it already overflowed.
        return if buf.len() > 12 {
            Err(WireError::Proto)
        } else {
            Ok(None)
        };
    };
    let len = usize::try_from(len).map_err(|_| WireError::Size)?;
    if len > MAX_BODY {
        return Err(WireError::Size);
    }
    let Some(body) = buf.get(pos..pos + len) else {
        return Ok(None);
    };
    let m = if class == code::CLASS_TABLE {
        decode_table(kind, body).ok_or(WireError::Proto)?
    } else {
        Message::Other { class, kind }
    };
    Ok(Some((m, pos + len)))
}

fn decode_table(kind: u8, b: &[u8]) -> Option<Message> {
    let mut p = 0;
    Some(match kind {
        code::DEFINE => {
            let id = get_uint(b, &mut p)?;
            let n = usize::try_from(get_uint(b, &mut p)?).ok()?;
            let name = get_bytes(b, &mut p, n)?.to_vec();
            let key_type = get_uint(b, &mut p)?;
            let key_len = get_uint(b, &mut p)?;
            let data = get_uint(b, &mut p)?;
            let expire = get_uint(b, &mut p)?;
            let params = decode_params(data, b, &mut p)?;
            Message::Define(Define {
                id,
                name,
                key_type,
                key_len,
                data,
                expire,
                params,
            })
        }
        code::SWITCH => Message::Switch(get_uint(b, &mut p)?),
        code::ACK => {
            let id = get_uint(b, &mut p)?;
            Message::Ack {
                id,
                update: get_u32(b, &mut p)?,
            }
        }
        code::UPDATE | code::INC_UPDATE | code::UPDATE_TIMED | code::INC_UPDATE_TIMED => {
            let with_id = matches!(kind, code::UPDATE | code::UPDATE_TIMED);
            let timed = matches!(kind, code::UPDATE_TIMED | code::INC_UPDATE_TIMED);
            let id = if with_id {
                Some(get_u32(b, &mut p)?)
            } else {
                None
            };
            let expire = if timed {
                Some(get_u32(b, &mut p)?)
            } else {
                None
            };
            Message::Update {
                id,
                expire,
                body: b.get(p..)?.to_vec(),
            }
        }
        _ => Message::Other {
            class: code::CLASS_TABLE,
            kind,
        },
    })
}

/// The parameters that follow a definition: for each stored array type
/// `(type, nbelem[, period])`, for each other rate `(type, period)`.
fn decode_params(data: u64, b: &[u8], p: &mut usize) -> Option<Vec<(u64, u64, u64)>> {
    let mut out = Vec::new();
    while *p < b.len() {
        let t = get_uint(b, p)?;
        let dt = usize::try_from(t)
            .ok()
            .and_then(|i| DataType::ALL.get(i).copied());
        let Some(dt) = dt.filter(|_| t < 64 && data & (1 << t) != 0) else {
            // Unknown parameters: ignore the rest, as HAProxy does.
            *p = b.len();
            break;
        };
        let (mut n, mut period) = (1, 0);
        if dt.is_array() {
            n = get_uint(b, p)?;
        }
        if dt.std_type() == StdType::Freq {
            period = get_uint(b, p)?;
        }
        out.push((t, n, period));
    }
    Some(out)
}

/// The layout of a table as the peers protocol sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Key type ([`keytype`]).
    pub key_type: u64,
    /// Key size on the wire (string tables: length + 1).
    pub key_len: usize,
    /// Stored types and element counts, in data-type order.
    pub types: Vec<(DataType, u32)>,
}

impl Schema {
    /// The schema of a local table: `(key type, key size)` from its spec.
    pub fn local(spec: &fairlead_stick::TableSpec) -> Schema {
        let (key_type, key_len) = match spec.key_type {
            KeyType::Ip => (keytype::IPV4, 4),
            KeyType::Ipv6 => (keytype::IPV6, 16),
            KeyType::Integer => (keytype::SINT, 4),
            KeyType::String => (keytype::STR, spec.key_len + 1),
            KeyType::Binary => (keytype::BIN, spec.key_len),
        };
        let types = DataType::ALL
            .iter()
            .filter_map(|dt| spec.stored(*dt).map(|s| (*dt, s.nbelem.max(1))))
            .collect();
        Schema {
            key_type,
            key_len,
            types,
        }
    }

    /// The schema a peer's definition announces; `None` when it stores a
    /// type this implementation does not know.
    pub fn remote(d: &Define) -> Option<Schema> {
        let mut types = Vec::new();
        for bit in 0..64u32 {
            if d.data & (1u64 << bit) == 0 {
                continue;
            }
            let dt = *DataType::ALL.get(bit as usize)?;
            let mut n = 1;
            if dt.is_array() {
                let p = d.params.iter().find(|p| p.0 == u64::from(bit))?;
                n = u32::try_from(p.1).ok().filter(|n| (1..=100).contains(n))?;
            }
            types.push((dt, n));
        }
        Some(Schema {
            key_type: d.key_type,
            key_len: usize::try_from(d.key_len).ok()?,
            types,
        })
    }

    fn data_bits(&self) -> u64 {
        self.types.iter().fold(0, |a, (dt, _)| a | 1 << dt.index())
    }
}

/// Encodes a table definition for the local table `id`.
pub fn encode_define(
    out: &mut Vec<u8>,
    id: u64,
    name: &str,
    s: &Schema,
    spec: &fairlead_stick::TableSpec,
) {
    let mut b = Vec::with_capacity(32 + name.len());
    put_uint(&mut b, id);
    put_uint(&mut b, name.len() as u64);
    b.extend_from_slice(name.as_bytes());
    put_uint(&mut b, s.key_type);
    put_uint(&mut b, s.key_len as u64);
    put_uint(&mut b, s.data_bits());
    put_uint(&mut b, u64::from(spec.expire_ms.unwrap_or(0)));
    for (dt, n) in &s.types {
        let period = spec.stored(*dt).map_or(0, |st| st.period_ms);
        if dt.is_array() {
            put_uint(&mut b, dt.index() as u64);
            put_uint(&mut b, u64::from(*n));
            if dt.std_type() == StdType::Freq {
                put_uint(&mut b, u64::from(period));
            }
        } else if dt.std_type() == StdType::Freq {
            put_uint(&mut b, dt.index() as u64);
            put_uint(&mut b, u64::from(period));
        }
    }
    frame(out, code::DEFINE, &b);
}

fn frame(out: &mut Vec<u8>, kind: u8, body: &[u8]) {
    out.push(code::CLASS_TABLE);
    out.push(kind);
    put_uint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// Encodes an acknowledgement.
pub fn encode_ack(out: &mut Vec<u8>, id: u64, update: u32) {
    let mut b = Vec::with_capacity(8);
    put_uint(&mut b, id);
    b.extend_from_slice(&update.to_be_bytes());
    frame(out, code::ACK, &b);
}

/// Encodes a control message.
pub fn encode_control(out: &mut Vec<u8>, kind: u8) {
    out.extend_from_slice(&[code::CLASS_CONTROL, kind]);
}

/// Encodes an update of the entry with local key `key` (the table's
/// storage form) and `vals` in wire order. `id` is always sent; `expire`
/// (remaining ms) makes it a timed update. Dictionary values are sent in
/// full under cache id 1.
pub fn encode_update(
    out: &mut Vec<u8>,
    s: &Schema,
    id: u32,
    expire: Option<u32>,
    key: &[u8],
    vals: &[(DataType, PeerVal)],
) {
    let mut b = Vec::with_capacity(16 + key.len() + 4 * vals.len());
    b.extend_from_slice(&id.to_be_bytes());
    if let Some(e) = expire {
        b.extend_from_slice(&e.min(i32::MAX as u32).to_be_bytes());
    }
    match s.key_type {
        keytype::STR => {
            put_uint(&mut b, key.len() as u64);
            b.extend_from_slice(key);
        }
        keytype::SINT => {
            let mut le = [0u8; 4];
            for (d, k) in le.iter_mut().zip(key) {
                *d = *k;
            }
            b.extend_from_slice(&u32::from_le_bytes(le).to_be_bytes());
        }
        _ => {
            let mut k = key.to_vec();
            k.resize(s.key_len, 0);
            b.extend_from_slice(&k);
        }
    }
    for (_, v) in vals {
        match v {
            PeerVal::Int(n) => put_uint(&mut b, *n),
            PeerVal::Freq { age, curr, prev } => {
                put_uint(&mut b, u64::from(*age));
                put_uint(&mut b, u64::from(*curr));
                put_uint(&mut b, u64::from(*prev));
            }
            PeerVal::Dict(None) => put_uint(&mut b, 0),
            PeerVal::Dict(Some(name)) => {
                let mut d = Vec::with_capacity(name.len() + 4);
                put_uint(&mut d, 1);
                put_uint(&mut d, name.len() as u64);
                d.extend_from_slice(name.as_bytes());
                put_uint(&mut b, d.len() as u64);
                b.extend_from_slice(&d);
            }
        }
    }
    let kind = if expire.is_some() {
        code::UPDATE_TIMED
    } else {
        code::UPDATE
    };
    frame(out, kind, &b);
}

/// A receiver's dictionary cache for `server_key` values, indexed by the
/// sender's cache id.
#[derive(Debug, Default)]
pub struct DictCache {
    slots: Vec<Option<Arc<str>>>,
}

impl DictCache {
    fn set(&mut self, id: u64, v: Arc<str>) {
        let Ok(i) = usize::try_from(id) else { return };
        if i > 4096 {
            return;
        }
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
        }
        if let Some(s) = self.slots.get_mut(i) {
            *s = Some(v);
        }
    }

    fn get(&self, id: u64) -> Option<Arc<str>> {
        self.slots.get(usize::try_from(id).ok()?)?.clone()
    }
}

/// A decoded update: the key in table storage form and the values.
pub type Decoded = (Vec<u8>, Vec<(DataType, PeerVal)>);

/// Decodes an update body (key then values) with the sender's schema
/// into the local key form of a table with key type `local`.
pub fn decode_update(
    s: &Schema,
    local_key_len: usize,
    body: &[u8],
    dict: &mut DictCache,
) -> Option<Decoded> {
    let mut p = 0;
    let key = match s.key_type {
        keytype::STR => {
            let n = usize::try_from(get_uint(body, &mut p)?).ok()?;
            let k = get_bytes(body, &mut p, n)?;
            k.get(..n.min(local_key_len))?.to_vec()
        }
        keytype::SINT => get_u32(body, &mut p)?.to_le_bytes().to_vec(),
        _ => get_bytes(body, &mut p, s.key_len)?.to_vec(),
    };
    let mut vals = Vec::new();
    for (dt, n) in &s.types {
        for _ in 0..*n {
            let v = match dt.std_type() {
                StdType::Freq => {
                    let age = get_uint(body, &mut p)?;
                    let curr = get_uint(body, &mut p)?;
                    let prev = get_uint(body, &mut p)?;
                    PeerVal::Freq {
                        age: age as u32,
                        curr: curr as u32,
                        prev: prev as u32,
                    }
                }
                StdType::Dict => PeerVal::Dict(decode_dict(body, &mut p, dict)?),
                _ => PeerVal::Int(get_uint(body, &mut p)?),
            };
            vals.push((*dt, v));
        }
    }
    Some((key, vals))
}

fn decode_dict(body: &[u8], p: &mut usize, dict: &mut DictCache) -> Option<Option<Arc<str>>> {
    let len = usize::try_from(get_uint(body, p)?).ok()?;
    if len == 0 {
        return Some(None);
    }
    let d = get_bytes(body, p, len)?;
    let mut q = 0;
    let id = get_uint(d, &mut q)?;
    if q == d.len() {
        return Some(dict.get(id));
    }
    let n = usize::try_from(get_uint(d, &mut q)?).ok()?;
    let v = get_bytes(d, &mut q, n)?;
    let s: Arc<str> = String::from_utf8_lossy(v).into();
    dict.set(id, s.clone());
    Some(Some(s))
}

/// Handshake status codes.
pub mod status {
    pub const OK: u16 = 200;
    pub const TRY_AGAIN: u16 = 300;
    pub const ERR_PROTO: u16 = 501;
    pub const ERR_VERSION: u16 = 502;
    pub const ERR_HOST: u16 = 503;
    pub const ERR_PEER: u16 = 504;
}

/// The hello a connecting peer sends.
pub fn hello(remote: &str, local: &str, pid: u32) -> String {
    format!("HAProxyS 2.1\n{remote}\n{local} {pid} 1\n")
}

/// A parsed hello: `(remote name, sender's name)`, or the status code to
/// answer with. `local` is our own name.
pub fn check_hello(lines: &[&str], local: &str) -> Result<String, u16> {
    let [proto, host, peer] = lines else {
        return Err(status::ERR_PROTO);
    };
    let Some(ver) = proto.strip_prefix("HAProxyS ") else {
        return Err(status::ERR_PROTO);
    };
    let (maj, min) = ver.split_once('.').ok_or(status::ERR_PROTO)?;
    if maj != "2" || min.parse::<u32>().map_or(true, |m| m > 1) {
        return Err(status::ERR_VERSION);
    }
    if *host != local {
        return Err(status::ERR_HOST);
    }
    let name = peer.split(' ').next().unwrap_or("");
    if name.is_empty() {
        return Err(status::ERR_PROTO);
    }
    Ok(name.to_string())
}
