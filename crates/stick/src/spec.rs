//! The declaration of a table: the arguments of a `stick-table` line
//! (HAProxy 2.6 `parse_stick_table`), its key type and its stored data.
//!
//! [`TableSpec::parse`] takes the words after `stick-table` and returns
//! the spec plus any warnings; errors and warnings are HAProxy's messages
//! without the `parsing [file:line] : ` prefix, which the config layer adds.

use std::fmt;

/// The type of a table's keys (`type ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `ip`: IPv4 addresses, 4 bytes.
    Ip,
    /// `ipv6`: IPv6 addresses, 16 bytes (IPv4 samples are mapped).
    Ipv6,
    /// `integer`: 32-bit unsigned integers.
    Integer,
    /// `string [len N]`: strings truncated to N characters (default 32).
    String,
    /// `binary [len N]`: byte strings padded with zeroes or truncated to
    /// N bytes (default 32).
    Binary,
}

impl KeyType {
    /// The keyword used in `stick-table type` and `show table`.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::Ip => "ip",
            KeyType::Ipv6 => "ipv6",
            KeyType::Integer => "integer",
            KeyType::String => "string",
            KeyType::Binary => "binary",
        }
    }

    fn from_name(s: &str) -> Option<KeyType> {
        Some(match s {
            "ip" => KeyType::Ip,
            "ipv6" => KeyType::Ipv6,
            "integer" => KeyType::Integer,
            "string" => KeyType::String,
            "binary" => KeyType::Binary,
            _ => return None,
        })
    }
}

/// How a value is stored (HAProxy's `std_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdType {
    /// Signed 32 bits (`server_id`).
    Sint,
    /// Unsigned 32 bits, wrapping (counters, `gpt`).
    Uint,
    /// Unsigned 64 bits (byte counters).
    Ull,
    /// A frequency counter over a period ([`crate::freq::FreqCtr`]).
    Freq,
    /// A shared string (`server_key`).
    Dict,
}

/// One storable data type, in HAProxy's order (which is also the order of
/// `show table` columns and the peers protocol bit numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    ServerId = 0,
    Gpt0,
    Gpc0,
    Gpc0Rate,
    ConnCnt,
    ConnRate,
    ConnCur,
    SessCnt,
    SessRate,
    HttpReqCnt,
    HttpReqRate,
    HttpErrCnt,
    HttpErrRate,
    BytesInCnt,
    BytesInRate,
    BytesOutCnt,
    BytesOutRate,
    Gpc1,
    Gpc1Rate,
    ServerKey,
    HttpFailCnt,
    HttpFailRate,
    Gpt,
    Gpc,
    GpcRate,
}

/// Number of data types.
pub const DATA_TYPES: usize = 25;

/// Largest element count of the array types (`gpc(N)`, `gpt(N)`,
/// `gpc_rate(N,P)`), as HAProxy's `STKTABLE_MAX_DT_ARRAY_SIZE`.
pub const MAX_ARRAY_SIZE: u32 = 100;

impl DataType {
    /// All data types in HAProxy's order.
    pub const ALL: [DataType; DATA_TYPES] = [
        DataType::ServerId,
        DataType::Gpt0,
        DataType::Gpc0,
        DataType::Gpc0Rate,
        DataType::ConnCnt,
        DataType::ConnRate,
        DataType::ConnCur,
        DataType::SessCnt,
        DataType::SessRate,
        DataType::HttpReqCnt,
        DataType::HttpReqRate,
        DataType::HttpErrCnt,
        DataType::HttpErrRate,
        DataType::BytesInCnt,
        DataType::BytesInRate,
        DataType::BytesOutCnt,
        DataType::BytesOutRate,
        DataType::Gpc1,
        DataType::Gpc1Rate,
        DataType::ServerKey,
        DataType::HttpFailCnt,
        DataType::HttpFailRate,
        DataType::Gpt,
        DataType::Gpc,
        DataType::GpcRate,
    ];

    /// HAProxy's name (`store` keyword, `data.<name>` on the CLI).
    pub fn name(self) -> &'static str {
        match self {
            DataType::ServerId => "server_id",
            DataType::Gpt0 => "gpt0",
            DataType::Gpc0 => "gpc0",
            DataType::Gpc0Rate => "gpc0_rate",
            DataType::ConnCnt => "conn_cnt",
            DataType::ConnRate => "conn_rate",
            DataType::ConnCur => "conn_cur",
            DataType::SessCnt => "sess_cnt",
            DataType::SessRate => "sess_rate",
            DataType::HttpReqCnt => "http_req_cnt",
            DataType::HttpReqRate => "http_req_rate",
            DataType::HttpErrCnt => "http_err_cnt",
            DataType::HttpErrRate => "http_err_rate",
            DataType::BytesInCnt => "bytes_in_cnt",
            DataType::BytesInRate => "bytes_in_rate",
            DataType::BytesOutCnt => "bytes_out_cnt",
            DataType::BytesOutRate => "bytes_out_rate",
            DataType::Gpc1 => "gpc1",
            DataType::Gpc1Rate => "gpc1_rate",
            DataType::ServerKey => "server_key",
            DataType::HttpFailCnt => "http_fail_cnt",
            DataType::HttpFailRate => "http_fail_rate",
            DataType::Gpt => "gpt",
            DataType::Gpc => "gpc",
            DataType::GpcRate => "gpc_rate",
        }
    }

    /// The type for a name; `server_name` is accepted for `server_key` as
    /// in HAProxy.
    pub fn from_name(s: &str) -> Option<DataType> {
        if s == "server_name" {
            return Some(DataType::ServerKey);
        }
        DataType::ALL.iter().copied().find(|d| d.name() == s)
    }

    /// How values of this type are stored.
    pub fn std_type(self) -> StdType {
        match self {
            DataType::ServerId => StdType::Sint,
            DataType::BytesInCnt | DataType::BytesOutCnt => StdType::Ull,
            DataType::ServerKey => StdType::Dict,
            DataType::Gpc0Rate
            | DataType::ConnRate
            | DataType::SessRate
            | DataType::HttpReqRate
            | DataType::HttpErrRate
            | DataType::BytesInRate
            | DataType::BytesOutRate
            | DataType::Gpc1Rate
            | DataType::HttpFailRate
            | DataType::GpcRate => StdType::Freq,
            _ => StdType::Uint,
        }
    }

    /// Whether the type takes a period argument (`conn_rate(10s)`).
    pub fn has_period(self) -> bool {
        self.std_type() == StdType::Freq
    }

    /// Whether the type is an array (`gpc(N)`, `gpt(N)`, `gpc_rate(N,P)`).
    pub fn is_array(self) -> bool {
        matches!(self, DataType::Gpt | DataType::Gpc | DataType::GpcRate)
    }

    /// The index in [`DataType::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What `srvkey` selects for `server_key` (stick persistence across peers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SrvKey {
    /// `srvkey name`: the server's name. Default.
    #[default]
    Name,
    /// `srvkey addr`: the server's address.
    Addr,
}

/// One stored data type and its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Element count: 1 except for the array types.
    pub nbelem: u32,
    /// The period in milliseconds for rate types, 0 otherwise.
    pub period_ms: u32,
}

/// A parsed `stick-table` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSpec {
    /// The table's name (the proxy's name, or `peers/name` for tables
    /// declared in a `peers` section).
    pub name: String,
    /// The key type.
    pub key_type: KeyType,
    /// Key length in bytes: 4 (ip, integer), 16 (ipv6), `len` for string
    /// and binary (default 32). A string key stores at most `key_len`
    /// characters.
    pub key_len: usize,
    /// Maximum number of entries (`size`, with k/m/g suffixes as powers of
    /// 1024). No default: the line is refused without it.
    pub size: u32,
    /// `expire` in milliseconds. Default is none: entries live until purged
    /// to make room.
    pub expire_ms: Option<u32>,
    /// `nopurge`: refuse new keys when full instead of evicting. Default is
    /// off.
    pub nopurge: bool,
    /// `peers NAME`. Default is none.
    pub peers: Option<String>,
    /// `write-to NAME` (HAProxy 3.x; 2.6 refuses the word). Default is none.
    pub write_to: Option<String>,
    /// `srvkey name|addr`. Default is `name`.
    pub srvkey: SrvKey,
    /// Stored data, indexed by [`DataType::index`].
    pub store: [Option<Stored>; DATA_TYPES],
}

/// Name used as `args[0]` in messages.
const KW: &str = "stick-table";

impl TableSpec {
    /// Parses the words following `stick-table` for the table `name`.
    /// `in_peers` is true for `table` lines of a `peers` section, where
    /// the `peers` keyword does not exist. Returns the spec and warnings.
    pub fn parse(
        name: &str,
        args: &[&str],
        in_peers: bool,
    ) -> Result<(TableSpec, Vec<String>), String> {
        if name.is_empty() {
            return Err(format!("{KW}: ID not provided."));
        }
        let mut spec = TableSpec {
            name: name.to_string(),
            key_type: KeyType::Ip,
            key_len: 4,
            size: 0,
            expire_ms: None,
            nopurge: false,
            peers: None,
            write_to: None,
            srvkey: SrvKey::Name,
            store: [None; DATA_TYPES],
        };
        let mut warnings = Vec::new();
        let mut have_type = false;
        let mut i = 0;
        let arg = |i: usize| args.get(i).copied().unwrap_or("");
        while i < args.len() {
            let word = args[i];
            match word {
                "size" => {
                    let v = arg(i + 1);
                    if v.is_empty() {
                        return Err(format!("{KW}: missing argument after '{word}'."));
                    }
                    spec.size = parse_size(v).map_err(|c| {
                        format!("{KW}: unexpected character '{c}' in argument of '{word}'.")
                    })?;
                    i += 2;
                }
                "peers" | "write-to" if !in_peers || word == "write-to" => {
                    let v = arg(i + 1);
                    if v.is_empty() {
                        return Err(format!("{KW}: missing argument after '{word}'."));
                    }
                    if word == "peers" {
                        spec.peers = Some(v.to_string());
                    } else {
                        spec.write_to = Some(v.to_string());
                    }
                    i += 2;
                }
                "expire" => {
                    let v = arg(i + 1);
                    if v.is_empty() {
                        return Err(format!("{KW}: missing argument after '{word}'."));
                    }
                    let (ms, warn) = parse_time_ms(v).map_err(|e| match e {
                        TimeErr::Over => format!("{KW}: timer overflow in argument <{v}> to <{word}>, maximum value is 2147483647 ms (~24.8 days)."),
                        TimeErr::Under => format!("{KW}: timer underflow in argument <{v}> to <{word}>, minimum non-null value is 1 ms."),
                        TimeErr::Char(c) => format!("{KW}: unexpected character '{c}' in argument of '{word}'."),
                    })?;
                    warnings.extend(warn);
                    // HAProxy stores 0 as "no expiry" (TICK_ETERNITY).
                    spec.expire_ms = (ms != 0).then_some(ms);
                    i += 2;
                }
                "nopurge" => {
                    spec.nopurge = true;
                    i += 1;
                }
                "type" => {
                    i += 1;
                    i = spec.parse_type(args, i)?;
                    have_type = true;
                }
                "store" => {
                    spec.parse_store(arg(i + 1), &mut warnings)?;
                    i += 2;
                }
                "srvkey" => {
                    spec.srvkey = match arg(i + 1) {
                        "name" => SrvKey::Name,
                        "addr" => SrvKey::Addr,
                        other => return Err(format!("{KW} : unknown server key type '{other}'.")),
                    };
                    i += 2;
                }
                _ => return Err(format!("{KW}: unknown argument '{word}'.")),
            }
        }
        if spec.size == 0 {
            return Err(format!("{KW}: missing size."));
        }
        if !have_type {
            return Err(format!("{KW}: missing type."));
        }
        Ok((spec, warnings))
    }

    /// `type <t> [len N]`, from `args[i]`; returns the next index.
    fn parse_type(&mut self, args: &[&str], i: usize) -> Result<usize, String> {
        let word = args.get(i).copied().unwrap_or("");
        let unknown = |w: &str| format!("{KW}: unknown type '{w}'.");
        let kt = KeyType::from_name(word).ok_or_else(|| unknown(word))?;
        self.key_type = kt;
        let mut i = i + 1;
        self.key_len = match kt {
            KeyType::Ip | KeyType::Integer => 4,
            KeyType::Ipv6 => 16,
            KeyType::String | KeyType::Binary => 32,
        };
        if matches!(kt, KeyType::String | KeyType::Binary) && args.get(i) == Some(&"len") {
            i += 1;
            let v = args.get(i).copied().unwrap_or("");
            // atol(): leading digits, 0 when none; 0 is refused.
            let n = leading_number(v);
            if n == 0 {
                return Err(unknown(v));
            }
            self.key_len = usize::try_from(n).unwrap_or(usize::MAX);
            i += 1;
        }
        Ok(i)
    }

    /// The comma-separated list of a `store` keyword.
    fn parse_store(&mut self, list: &str, warnings: &mut Vec<String>) -> Result<(), String> {
        for item in split_store_list(list)? {
            let (name, a1, a2) = item;
            let dt = DataType::from_name(name)
                .ok_or_else(|| format!("{KW}: unknown store option '{name}'."))?;
            if self.store[dt.index()].is_some() {
                warnings.push(format!(
                    "{KW}: store option '{name}' already enabled, ignored."
                ));
                continue;
            }
            self.store[dt.index()] = Some(alloc_data_type(dt, name, a1, a2)?);
        }
        let has = |d: DataType| self.store[d.index()].is_some();
        if has(DataType::Gpt) && has(DataType::Gpt0) {
            return Err(format!("{KW}: simultaneous usage of 'gpt' and 'gpt0' in a same table is not permitted as 'gpt' overrides 'gpt0'."));
        }
        if has(DataType::Gpc) && (has(DataType::Gpc0) || has(DataType::Gpc1)) {
            return Err(format!("{KW}: simultaneous usage of 'gpc' and 'gpc[0/1]' in a same table is not permitted as 'gpc' overrides 'gpc[0/1]'."));
        }
        if has(DataType::GpcRate) && (has(DataType::Gpc0Rate) || has(DataType::Gpc1Rate)) {
            return Err(format!("{KW}: simultaneous usage of 'gpc_rate' and 'gpc[0/1]_rate' in a same table is not permitted as 'gpc_rate' overrides 'gpc[0/1]_rate'."));
        }
        Ok(())
    }

    /// Whether `dt` is stored.
    pub fn stores(&self, dt: DataType) -> bool {
        self.store[dt.index()].is_some()
    }

    /// The stored arguments of `dt`, if stored.
    pub fn stored(&self, dt: DataType) -> Option<Stored> {
        self.store[dt.index()]
    }

    /// The period of a stored rate type, in milliseconds.
    pub fn period(&self, dt: DataType) -> Option<u32> {
        self.stored(dt)
            .filter(|_| dt.has_period())
            .map(|s| s.period_ms)
    }

    /// A spec built in code (tests, tables created by the integrator).
    /// Stores nothing; use [`TableSpec::with`] to add data types.
    pub fn new(name: &str, key_type: KeyType, size: u32) -> TableSpec {
        let key_len = match key_type {
            KeyType::Ip | KeyType::Integer => 4,
            KeyType::Ipv6 => 16,
            KeyType::String | KeyType::Binary => 32,
        };
        TableSpec {
            name: name.to_string(),
            key_type,
            key_len,
            size,
            expire_ms: None,
            nopurge: false,
            peers: None,
            write_to: None,
            srvkey: SrvKey::Name,
            store: [None; DATA_TYPES],
        }
    }

    /// Adds a stored type with `nbelem` elements and `period_ms` (0 for
    /// non-rate types).
    pub fn with(mut self, dt: DataType, nbelem: u32, period_ms: u32) -> TableSpec {
        self.store[dt.index()] = Some(Stored { nbelem, period_ms });
        self
    }
}

/// HAProxy's `stktable_alloc_data_type` argument checks.
fn alloc_data_type(
    dt: DataType,
    name: &str,
    a1: Option<&str>,
    a2: Option<&str>,
) -> Result<Stored, String> {
    let missing = || format!("{KW}: missing argument to store option '{name}'.");
    let mut sa = a1;
    let mut nbelem = 1;
    if dt.is_array() {
        let n = sa.ok_or_else(missing)?;
        let v = leading_number(n);
        if v == 0 || v > u64::from(MAX_ARRAY_SIZE) {
            return Err(format!("{KW}: array size is out of allowed range (1-{MAX_ARRAY_SIZE}) for store option '{name}'."));
        }
        nbelem = v as u32;
        sa = a2;
    }
    let mut period_ms = 0;
    if dt.has_period() {
        let p = sa.ok_or_else(missing)?;
        period_ms = match parse_time_ms(p) {
            Ok((ms, _)) => ms,
            Err(_) => {
                return Err(format!(
                    "{KW}: error when processing store option '{name}'."
                ))
            }
        };
    } else if sa.is_some() {
        return Err(format!(
            "{KW}: unexpected argument to store option '{name}'."
        ));
    }
    Ok(Stored { nbelem, period_ms })
}

type StoreItem<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// Splits `a,b(1),c(2,10s)` into names and up to two arguments. A comma
/// inside parentheses separates arguments (HAProxy's loop).
fn split_store_list(list: &str) -> Result<Vec<StoreItem<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = list;
    while !rest.is_empty() {
        let end_name = rest.find([',', '(']).unwrap_or(rest.len());
        let name = &rest[..end_name];
        let after = &rest[end_name..];
        if let Some(inner) = after.strip_prefix('(') {
            let close = inner.find(')').ok_or_else(|| {
                format!("{KW}: missing closing parenthesis after store option '{name}'.")
            })?;
            let args = &inner[..close];
            let (a1, a2) = match args.split_once(',') {
                Some((x, y)) => (x, Some(y)),
                None => (args, None),
            };
            out.push((name, Some(a1), a2));
            // Skip to the next comma (HAProxy ignores characters between
            // ')' and ',').
            let tail = &inner[close + 1..];
            rest = match tail.find(',') {
                Some(p) => &tail[p + 1..],
                None => "",
            };
        } else {
            out.push((name, None, None));
            rest = after.strip_prefix(',').unwrap_or("");
        }
    }
    Ok(out)
}

/// `atol()`-like: the value of the leading decimal digits, 0 when none.
fn leading_number(s: &str) -> u64 {
    let mut v: u64 = 0;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    v
}

/// HAProxy's `parse_size_err`: digits then an optional k/m/g suffix
/// (powers of 1024). The error is the offending character.
pub fn parse_size(text: &str) -> Result<u32, char> {
    let b = text.as_bytes();
    let first = *b.first().ok_or('\0')?;
    if !first.is_ascii_digit() {
        return Err(char::from(first));
    }
    let mut v: u32 = 0;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u32::from(c - b'0')))
            .ok_or(char::from(c))?;
        i += 1;
    }
    if let Some(&c) = b.get(i) {
        let shift = match c {
            b'k' | b'K' => 10,
            b'm' | b'M' => 20,
            b'g' | b'G' => 30,
            _ => return Err(char::from(c)),
        };
        if v > (u32::MAX >> shift) {
            return Err(char::from(c));
        }
        v <<= shift;
        if let Some(&extra) = b.get(i + 1) {
            return Err(char::from(extra));
        }
    }
    Ok(v)
}

/// Errors of [`parse_time_ms`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeErr {
    /// At least 2^31 ms.
    Over,
    /// A non-zero value that rounds to 0 ms.
    Under,
    /// An unexpected character.
    Char(char),
}

/// HAProxy's `parse_time_err` in milliseconds: digits and an optional unit
/// among `us`, `ms`, `s`, `m`, `h`, `d` (default ms), rounded up. Extra
/// characters after a unit give a warning, as in 2.6.
pub fn parse_time_ms(text: &str) -> Result<(u32, Option<String>), TimeErr> {
    let b = text.as_bytes();
    match b.first() {
        Some(c) if c.is_ascii_digit() => {}
        Some(&c) => return Err(TimeErr::Char(char::from(c))),
        None => return Err(TimeErr::Char('\0')),
    }
    let mut value: u64 = 0;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        value = value.saturating_mul(10).saturating_add(u64::from(c - b'0'));
        i += 1;
    }
    // (multiplier, divisor) from the unit to milliseconds.
    let (mul, div, ulen): (u64, u64, usize) = match (b.get(i), b.get(i + 1)) {
        (None, _) => (1, 1, 0),
        (Some(b's'), _) => (1000, 1, 1),
        (Some(b'u'), Some(b's')) => (1, 1000, 2),
        (Some(b'm'), Some(b's')) => (1, 1, 2),
        (Some(b'm'), _) => (60_000, 1, 1),
        (Some(b'h'), _) => (3_600_000, 1, 1),
        (Some(b'd'), _) => (86_400_000, 1, 1),
        (Some(&c), _) => return Err(TimeErr::Char(char::from(c))),
    };
    let warn = b.get(i + ulen).map(|&c| {
        format!(
            "unexpected character '{}' after the timer value '{text}', only (us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. This will be reported as an error in next versions.",
            char::from(c)
        )
    });
    let result = value.saturating_mul(mul).saturating_add(div - 1) / div;
    if result >= 0x8000_0000 {
        return Err(TimeErr::Over);
    }
    if result == 0 && value != 0 {
        return Err(TimeErr::Under);
    }
    Ok((result as u32, warn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_suffixes() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("100k"), Ok(102_400));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("4g"), Err('g'));
        assert_eq!(parse_size("1kb"), Err('b'));
        assert_eq!(parse_size("x"), Err('x'));
        assert_eq!(parse_size("4294967296"), Err('6'));
    }

    #[test]
    fn time_units() {
        assert_eq!(parse_time_ms("30s"), Ok((30_000, None)));
        assert_eq!(parse_time_ms("10"), Ok((10, None)));
        assert_eq!(parse_time_ms("1m"), Ok((60_000, None)));
        assert_eq!(parse_time_ms("1500us"), Ok((2, None)));
        assert_eq!(parse_time_ms("1us"), Ok((1, None)));
        assert_eq!(parse_time_ms("0"), Ok((0, None)));
        assert_eq!(parse_time_ms("25d"), Err(TimeErr::Over));
        assert_eq!(parse_time_ms("1x"), Err(TimeErr::Char('x')));
        assert!(parse_time_ms("10sx").unwrap().1.is_some());
    }

    #[test]
    fn store_list_split() {
        let v = split_store_list("gpc0,conn_rate(10s),gpc_rate(3,1m)").unwrap();
        assert_eq!(
            v,
            vec![
                ("gpc0", None, None),
                ("conn_rate", Some("10s"), None),
                ("gpc_rate", Some("3"), Some("1m"))
            ]
        );
        assert!(split_store_list("conn_rate(10s").is_err());
    }
}
