//! `userlist` sections (HAProxy 2.6 configuration manual §3.4) and the
//! password checks behind `http_auth(<userlist>)` and
//! `http_auth_group(<userlist>)`.
//!
//! ```text
//! userlist L1
//!     group G1 users tiger,scott
//!     group G2
//!     user tiger password $6$k6y3o.eP$JlKBx9za...
//!     user scott insecure-password elgato groups G2
//! ```
//!
//! * `group <name> [users <user>,<user>,...]` and
//!   `user <name> [password|insecure-password <pw>] [groups <g>,<g>,...]`;
//!   memberships may be declared on either side, and names may be used
//!   before they are declared (they are resolved once the section is read).
//! * A duplicated user or group is ignored with a warning, as in HAProxy;
//!   a reference to an unknown user or group is an error.
//! * `password` takes a crypt(3) hash. Supported: `$1$` (MD5-crypt), `$5$`
//!   (SHA-256-crypt), `$6$` (SHA-512-crypt), `$2a$`/`$2b$`/`$2y$` (bcrypt)
//!   and `$y$` (yescrypt, the default of recent `mkpasswd`). Traditional
//!   DES crypt is refused when the section is parsed, as an unsupported
//!   hash is by HAProxy.
//! * Hashing is deliberately expensive (HAProxy recomputes it for every
//!   request). Each [`Userlist`] remembers up to [`CACHE_CAPACITY`]
//!   successful checks, keyed by a SHA-256 digest of user, hash and
//!   password (never the clear-text password), so repeated requests with
//!   the same credentials cost one hash lookup. Failed checks are not
//!   cached, so wrong guesses cannot evict good entries.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Mutex;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use sha_crypt::PasswordVerifier as _;

/// How many verified (user, password) pairs a [`Userlist`] remembers; the
/// cache is emptied when it is full.
pub const CACHE_CAPACITY: usize = 1024;

/// The most memory a `$y$` (yescrypt) hash may ask for per check; hashes
/// asking for more are refused when the section is parsed.
const YESCRYPT_MAX_MEMORY: u64 = 1 << 30;

/// crypt(3)'s base-64 alphabet (also bcrypt's, in another order).
fn is_crypt64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'/'
}

fn all_crypt64(s: &str) -> bool {
    s.bytes().all(is_crypt64)
}

/// A supported password hash scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `$1$`: MD5-crypt (1000 rounds of MD5; weak, kept for old configs).
    Md5Crypt,
    /// `$5$`: SHA-256-crypt.
    Sha256Crypt,
    /// `$6$`: SHA-512-crypt.
    Sha512Crypt,
    /// `$2a$`, `$2b$`, `$2y$`: bcrypt.
    Bcrypt,
    /// `$y$`: yescrypt.
    Yescrypt,
}

/// A validated crypt(3) hash string.
#[derive(Clone, PartialEq, Eq)]
pub struct Hashed {
    scheme: Scheme,
    text: String,
}

impl Hashed {
    /// Recognises and validates a crypt(3) hash string; the error says why
    /// it is not supported.
    pub fn parse(text: &str) -> Result<Hashed, String> {
        let scheme = classify(text)?;
        Ok(Hashed {
            scheme,
            text: text.to_string(),
        })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The hash string as configured.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `password` hashes to this value (no caching).
    pub fn verify(&self, password: &[u8]) -> bool {
        match self.scheme {
            Scheme::Md5Crypt => md5_crypt_verify(password, &self.text),
            Scheme::Sha256Crypt | Scheme::Sha512Crypt => sha_crypt::ShaCrypt::default()
                .verify_password(password, self.text.as_str())
                .is_ok(),
            Scheme::Bcrypt => bcrypt::verify(password, &self.text).unwrap_or(false),
            Scheme::Yescrypt => yescrypt::Yescrypt::default()
                .verify_password(password, self.text.as_str())
                .is_ok(),
        }
    }
}

impl fmt::Debug for Hashed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hashed({:?}, {:?})", self.scheme, self.text)
    }
}

/// Works out the scheme of `text` and checks its structure, so that a
/// hash the verifiers would reject is refused at load time (as HAProxy
/// does by calling `crypt("", hash)` on each).
fn classify(text: &str) -> Result<Scheme, String> {
    if let Some(rest) = text.strip_prefix("$1$") {
        // $1$<salt, at most 8>$<22 chars>
        let (salt, hash) = rest
            .split_once('$')
            .ok_or_else(|| "malformed MD5-crypt hash ('$1$<salt>$<hash>' expected)".to_string())?;
        if salt.len() > 8 || !all_crypt64(salt) || hash.len() != 22 || !all_crypt64(hash) {
            return Err("malformed MD5-crypt hash ('$1$<salt>$<hash>' expected)".into());
        }
        return Ok(Scheme::Md5Crypt);
    }
    for (prefix, scheme, len) in [
        ("$5$", Scheme::Sha256Crypt, 43),
        ("$6$", Scheme::Sha512Crypt, 86),
    ] {
        let Some(rest) = text.strip_prefix(prefix) else {
            continue;
        };
        let what = if len == 43 { "SHA-256" } else { "SHA-512" };
        let malformed =
            || format!("malformed {what}-crypt hash ('{prefix}[rounds=N$]<salt>$<hash>' expected)");
        let mut fields: Vec<&str> = rest.split('$').collect();
        if fields.len() == 3 {
            let rounds = fields.remove(0);
            let n = rounds
                .strip_prefix("rounds=")
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u64>().ok())
                .ok_or_else(malformed)?;
            if !(1_000..=999_999_999).contains(&n) {
                return Err(format!(
                    "{what}-crypt rounds must be within 1000..999999999 (found {n})"
                ));
            }
        }
        let [salt, hash] = fields[..] else {
            return Err(malformed());
        };
        if salt.is_empty() || salt.len() > 16 || !all_crypt64(salt) {
            return Err(format!(
                "{what}-crypt salt must be 1 to 16 characters of [./0-9A-Za-z]"
            ));
        }
        if hash.len() != len || !all_crypt64(hash) {
            return Err(malformed());
        }
        return Ok(scheme);
    }
    if text.starts_with("$2") {
        let b = text.as_bytes();
        let variant_ok = matches!(text.get(..4), Some("$2a$" | "$2b$" | "$2y$"));
        if text.starts_with("$2x$") {
            return Err("bcrypt variant '$2x$' (the buggy pre-2011 one) is not supported".into());
        }
        let cost = text.get(4..6).and_then(|c| c.parse::<u32>().ok());
        if !variant_ok
            || b.len() != 60
            || b[6] != b'$'
            || !cost.is_some_and(|c| (4..=31).contains(&c))
            || !b[7..].iter().all(|&c| is_crypt64(c))
        {
            return Err("malformed bcrypt hash ('$2b$<cost 04-31>$<53 chars>' expected)".into());
        }
        return Ok(Scheme::Bcrypt);
    }
    if let Some(rest) = text.strip_prefix("$y$") {
        let malformed =
            || "malformed yescrypt hash ('$y$<params>$<salt>$<hash>' expected)".to_string();
        let [params, salt, hash] = rest.split('$').collect::<Vec<_>>()[..] else {
            return Err(malformed());
        };
        if salt.is_empty() || hash.is_empty() || !all_crypt64(salt) || !all_crypt64(hash) {
            return Err(malformed());
        }
        let params: yescrypt::Params = params
            .parse()
            .map_err(|_| "invalid yescrypt parameters".to_string())?;
        let memory = params
            .n()
            .saturating_mul(u64::from(params.r()))
            .saturating_mul(128);
        if memory > YESCRYPT_MAX_MEMORY {
            return Err(format!(
                "yescrypt parameters need {memory} bytes per check (at most {YESCRYPT_MAX_MEMORY} allowed)"
            ));
        }
        return Ok(Scheme::Yescrypt);
    }
    if text.len() == 13 && all_crypt64(text) {
        return Err("traditional DES crypt is not supported; rehash with SHA-512 ('mkpasswd -m sha-512' or 'openssl passwd -6')".into());
    }
    if let Some(rest) = text.strip_prefix('$') {
        let id = rest.split('$').next().unwrap_or("");
        return Err(format!("unknown hash scheme '${id}$'"));
    }
    Err("not a crypt(3) hash (use 'insecure-password' for a clear-text password)".into())
}

/// MD5-crypt (Poul-Henning Kamp's FreeBSD scheme, glibc's `$1$`), composed
/// from the RustCrypto `md-5` digest; `stored` must have passed
/// [`classify`]. The whole recomputed string is compared with the stored
/// one, as HAProxy compares crypt(3)'s output with `strcmp`.
fn md5_crypt_verify(password: &[u8], stored: &str) -> bool {
    let Some(salt) = stored.strip_prefix("$1$").and_then(|r| r.split('$').next()) else {
        return false;
    };
    let computed = md5_crypt(password, salt.as_bytes());
    ct_eq(computed.as_bytes(), stored.as_bytes())
}

fn md5_crypt(password: &[u8], salt: &[u8]) -> String {
    use md5::Md5;
    const MAGIC: &[u8] = b"$1$";
    let salt = &salt[..salt.len().min(8)];

    let mut alt = Md5::new();
    alt.update(password);
    alt.update(salt);
    alt.update(password);
    let alt = alt.finalize();

    let mut ctx = Md5::new();
    ctx.update(password);
    ctx.update(MAGIC);
    ctx.update(salt);
    let mut left = password.len();
    while left > 0 {
        let n = left.min(16);
        ctx.update(&alt[..n]);
        left -= n;
    }
    let mut i = password.len();
    while i > 0 {
        if i & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(&password[..1]);
        }
        i >>= 1;
    }
    let mut fin: [u8; 16] = ctx.finalize().into();

    for round in 0..1000u32 {
        let mut c = Md5::new();
        if round & 1 == 1 {
            c.update(password);
        } else {
            c.update(fin);
        }
        if round % 3 != 0 {
            c.update(salt);
        }
        if round % 7 != 0 {
            c.update(password);
        }
        if round & 1 == 1 {
            c.update(fin);
        } else {
            c.update(password);
        }
        fin = c.finalize().into();
    }

    const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(3 + salt.len() + 1 + 22);
    out.push_str("$1$");
    out.extend(salt.iter().map(|&b| char::from(b)));
    out.push('$');
    let mut put = |mut v: u32, n: usize| {
        for _ in 0..n {
            out.push(char::from(ITOA64[(v & 0x3f) as usize]));
            v >>= 6;
        }
    };
    let f = |i: usize| u32::from(fin[i]);
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        put((f(a) << 16) | (f(b) << 8) | f(c), 4);
    }
    put(f(11), 2);
    out
}

/// Equality without an early exit on the first differing byte.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A user's password as configured.
#[derive(Clone, PartialEq, Eq)]
pub enum Password {
    /// No `password` nor `insecure-password`: the user can be named in
    /// groups but never authenticates.
    None,
    /// `insecure-password <pw>`: compared as is.
    Insecure(String),
    /// `password <hash>`.
    Hashed(Hashed),
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Password::None => f.write_str("None"),
            Password::Insecure(_) => f.write_str("Insecure(<redacted>)"),
            Password::Hashed(h) => write!(f, "Hashed({:?})", h.scheme),
        }
    }
}

/// One `user` of a userlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The password.
    pub password: Password,
    /// The groups the user belongs to, from both its own `groups` option and
    /// the `users` option of `group` lines; each once, in declaration order.
    pub groups: Vec<String>,
}

/// A parsed `userlist` section.
pub struct Userlist {
    name: String,
    users: Vec<User>,
    index: HashMap<String, usize>,
    groups: Vec<String>,
    warnings: Vec<(usize, String)>,
    cache: Mutex<HashSet<[u8; 32]>>,
}

impl fmt::Debug for Userlist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Userlist")
            .field("name", &self.name)
            .field("users", &self.users)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

/// Takes the value following option `words[i]`, or says it is missing.
fn option_value<'a>(words: &'a [String], i: usize, what: &str) -> Result<&'a str, String> {
    words
        .get(i + 1)
        .map(String::as_str)
        .ok_or_else(|| format!("'{}' expects {what} as argument", words[i]))
}

/// Comma-separated names, empty items skipped (as `strtok` does).
fn name_list(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// HAProxy's `invalid_char()`: names may hold letters, digits, `.`, `_`,
/// `-` and `:`.
fn invalid_char(name: &str) -> Option<char> {
    name.chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':')))
}

struct PendingGroup {
    line: usize,
    name: String,
    users: Vec<String>,
}

struct PendingUser {
    line: usize,
    user: User,
}

impl Userlist {
    /// Parses the lines of `userlist <name>` (the section line itself not
    /// included): each entry is the line number and its words, the keyword
    /// first. Errors carry line numbers; warnings (duplicates) are kept in
    /// [`Userlist::warnings`].
    pub fn parse(
        name: &str,
        lines: &[(usize, Vec<String>)],
    ) -> Result<Userlist, Vec<(usize, String)>> {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let mut groups: Vec<PendingGroup> = Vec::new();
        let mut users: Vec<PendingUser> = Vec::new();

        for (line, words) in lines {
            let line = *line;
            let Some(kw) = words.first() else { continue };
            let res = match kw.as_str() {
                "group" => parse_group(name, words, line, &groups, &mut warnings).map(|g| {
                    if let Some(g) = g {
                        groups.push(g);
                    }
                }),
                "user" => parse_user(name, words, line, &users, &mut warnings).map(|u| {
                    if let Some(u) = u {
                        users.push(u);
                    }
                }),
                other => Err(format!("unknown keyword '{other}' in 'userlist' section")),
            };
            if let Err(e) = res {
                errors.push((line, e));
            }
        }

        // Resolve memberships declared on either side.
        let group_names: HashSet<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        let mut index = HashMap::new();
        for (i, u) in users.iter().enumerate() {
            index.insert(u.user.name.clone(), i);
            for g in &u.user.groups {
                if !group_names.contains(g.as_str()) {
                    errors.push((
                        u.line,
                        format!(
                            "userlist '{name}': no such group '{g}' specified in user '{}'",
                            u.user.name
                        ),
                    ));
                }
            }
        }
        let mut extra: Vec<(usize, String)> = Vec::new();
        for g in &groups {
            for u in &g.users {
                match index.get(u) {
                    Some(&i) => extra.push((i, g.name.clone())),
                    None => errors.push((
                        g.line,
                        format!(
                            "userlist '{name}': no such user '{u}' specified in group '{}'",
                            g.name
                        ),
                    )),
                }
            }
        }
        if !errors.is_empty() {
            errors.sort_by_key(|e| e.0);
            return Err(errors);
        }
        let mut users: Vec<User> = users.into_iter().map(|p| p.user).collect();
        for (i, g) in extra {
            users[i].groups.push(g);
        }
        for u in &mut users {
            let mut seen = HashSet::new();
            u.groups.retain(|g| seen.insert(g.clone()));
        }
        Ok(Userlist {
            name: name.to_string(),
            users,
            index,
            groups: groups.into_iter().map(|g| g.name).collect(),
            warnings,
            cache: Mutex::new(HashSet::new()),
        })
    }

    /// The userlist's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The users, in declaration order.
    pub fn users(&self) -> &[User] {
        &self.users
    }

    /// The group names, in declaration order.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// Warnings found while parsing (duplicated users or groups, ignored).
    pub fn warnings(&self) -> &[(usize, String)] {
        &self.warnings
    }

    /// The user called `name`.
    pub fn user(&self, name: &str) -> Option<&User> {
        self.index.get(name).map(|&i| &self.users[i])
    }

    /// Whether `user` exists and `password` is its password. Successful
    /// hash checks are cached (see the module documentation).
    pub fn check(&self, user: &str, password: impl AsRef<[u8]>) -> bool {
        let password = password.as_ref();
        let Some(u) = self.user(user) else {
            return false;
        };
        match &u.password {
            Password::None => false,
            Password::Insecure(p) => ct_eq(p.as_bytes(), password),
            Password::Hashed(h) => {
                let key = cache_key(user, h.as_str(), password);
                if self.cache_lock().contains(&key) {
                    return true;
                }
                let ok = h.verify(password);
                if ok {
                    let mut cache = self.cache_lock();
                    if cache.len() >= CACHE_CAPACITY {
                        cache.clear();
                    }
                    cache.insert(key);
                }
                ok
            }
        }
    }

    fn cache_lock(&self) -> std::sync::MutexGuard<'_, HashSet<[u8; 32]>> {
        // A panic elsewhere cannot leave the set inconsistent.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The groups of `user` (empty for an unknown user): what
    /// `http_auth_group` matches its patterns against.
    pub fn groups_of(&self, user: &str) -> &[String] {
        self.user(user).map_or(&[], |u| u.groups.as_slice())
    }

    /// Whether `user` exists and belongs to `group`.
    pub fn in_group(&self, user: &str, group: &str) -> bool {
        self.user(user)
            .is_some_and(|u| u.groups.iter().any(|g| g == group))
    }

    /// Checks an `Authorization` (or `Proxy-Authorization`) header value of
    /// the `Basic` scheme; the user name when the credentials are valid.
    pub fn check_basic(&self, authorization: &[u8]) -> Option<String> {
        let (user, pass) = parse_basic_auth(authorization)?;
        let user = String::from_utf8(user).ok()?;
        self.check(&user, &pass).then_some(user)
    }
}

/// SHA-256 of user, configured hash and password, length-prefixed so that
/// no two triples share a key.
fn cache_key(user: &str, hash: &str, password: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [user.as_bytes(), hash.as_bytes()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(password);
    h.finalize().into()
}

fn parse_group(
    list: &str,
    words: &[String],
    line: usize,
    groups: &[PendingGroup],
    warnings: &mut Vec<(usize, String)>,
) -> Result<Option<PendingGroup>, String> {
    let name = words
        .get(1)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "'group' expects <name> as arguments".to_string())?;
    if let Some(c) = invalid_char(name) {
        return Err(format!(
            "character '{c}' is not permitted in 'group' name '{name}'"
        ));
    }
    let mut users = Vec::new();
    let mut i = 2;
    while i < words.len() {
        match words[i].as_str() {
            "users" => {
                users = name_list(option_value(words, i, "a comma-separated list of users")?);
                i += 2;
            }
            other => {
                return Err(format!(
                    "'group' only supports 'users' option (found '{other}')"
                ));
            }
        }
    }
    if groups.iter().any(|g| &g.name == name) {
        warnings.push((
            line,
            format!("ignoring duplicated group '{name}' in userlist '{list}'"),
        ));
        return Ok(None);
    }
    Ok(Some(PendingGroup {
        line,
        name: name.clone(),
        users,
    }))
}

fn parse_user(
    list: &str,
    words: &[String],
    line: usize,
    users: &[PendingUser],
    warnings: &mut Vec<(usize, String)>,
) -> Result<Option<PendingUser>, String> {
    let name = words
        .get(1)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "'user' expects <name> as arguments".to_string())?;
    if users.iter().any(|u| &u.user.name == name) {
        warnings.push((
            line,
            format!("ignoring duplicated user '{name}' in userlist '{list}'"),
        ));
        return Ok(None);
    }
    let mut password = Password::None;
    let mut groups = Vec::new();
    let mut i = 2;
    while i < words.len() {
        match words[i].as_str() {
            "password" => {
                let v = option_value(words, i, "<password>")?;
                let h = Hashed::parse(v).map_err(|why| {
                    format!("the encrypted password used for user '{name}' is not supported: {why}")
                })?;
                password = Password::Hashed(h);
            }
            "insecure-password" => {
                password = Password::Insecure(option_value(words, i, "<password>")?.to_string());
            }
            "groups" => {
                groups = name_list(option_value(words, i, "a comma-separated list of groups")?);
            }
            other => {
                return Err(format!(
                    "'user' only supports 'password', 'insecure-password' and 'groups' options (found '{other}')"
                ));
            }
        }
        i += 2;
    }
    Ok(Some(PendingUser {
        line,
        user: User {
            name: name.clone(),
            password,
            groups,
        },
    }))
}

/// Splits a `Basic` credentials header value into user and password, as
/// HAProxy 2.6 does: the scheme (case-insensitive), one or more spaces,
/// then standard padded base64 of `user:password`. The decoded text ends
/// at its first NUL byte (HAProxy handles it as a C string) and splits at
/// the first `:`. HAProxy compares only as many letters of the scheme as
/// the header has (so `Bas` passes there); here the scheme must be `Basic`.
pub fn parse_basic_auth(value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let sp = value.iter().position(|&b| b == b' ')?;
    if sp == 0 || !value[..sp].eq_ignore_ascii_case(b"Basic") {
        return None;
    }
    let data = &value[sp..];
    let data = &data[data.iter().position(|&b| b != b' ').unwrap_or(data.len())..];
    let mut decoded = BASE64.decode(data).ok()?;
    if let Some(nul) = decoded.iter().position(|&b| b == 0) {
        decoded.truncate(nul);
    }
    let colon = decoded.iter().position(|&b| b == b':')?;
    let pass = decoded.split_off(colon + 1);
    decoded.truncate(colon);
    Some((decoded, pass))
}

/// The user name of `Basic` credentials, whether valid or not (the
/// `http_auth_user` fetch); bytes that are not UTF-8 are replaced.
pub fn basic_user(authorization: &[u8]) -> Option<String> {
    parse_basic_auth(authorization).map(|(u, _)| String::from_utf8_lossy(&u).into_owned())
}

/// Standard alphabet, padding required, non-zero trailing bits tolerated
/// (HAProxy's decoder does not check them).
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
);

#[cfg(test)]
mod tests;
