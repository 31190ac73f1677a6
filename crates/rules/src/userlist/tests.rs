use super::*;

fn lines(text: &str) -> Vec<(usize, Vec<String>)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split_whitespace().map(str::to_string).collect()))
        .filter(|(_, w): &(usize, Vec<String>)| !w.is_empty())
        .collect()
}

fn basic(user_pass: &str) -> Vec<u8> {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_pass)
    )
    .into_bytes()
}

// Fixed vectors made by known-good implementations:
// `openssl passwd -5 -salt abc secret`, `-6`, `-1`, and glibc/libxcrypt
// crypt(3) (through Python's `crypt` module) for bcrypt and yescrypt.
const SHA256_SECRET: &str = "$5$abc$qsg6EHbUzHQzF1POlD7zUwBINSELQxypPaeDcZe6vH0";
const SHA256_ROUNDS_SECRET: &str = "$5$rounds=1000$abc$Mz4DiYKTnNKbZLo/mIp3d8Y4aQBhv3uhSwxLDy55/Y8";
const SHA512_SECRET: &str =
    "$6$abc$IdWKNKTJEb8LxY7CGg8YBXlvtfZzFw7Mp/r6niK9YB2mdvgY..TKjv1T..8RadRt2qvUHYRLr/TsVArtr91iR1";
const MD5_SECRET: &str = "$1$abc$iCQ2D3nhptRYi27fDYv2s1";
const MD5_EMPTY_SALT_X: &str = "$1$$LP5.V3ajGqHDdXW6XwZQy.";
const MD5_LONG: &str = "$1$abcdefgh$apR79uSs0V5fMrws52ggI1"; // "passwordlong"
const BCRYPT_SECRET: &str = "$2b$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a";
// The bcrypt crate's own test vector (hash from an online tool).
const BCRYPT_PASSWORD: &str = "$2a$04$UuTkLRZZ6QofpDOlMz32MuuxEHA43WOemOYHPz6.SjsVsyO1tDU96";
const YESCRYPT_SECRET: &str = "$y$j9T$abcdefghijklmnop$3dL1LkYnZM.OVXuVdnnaKVDlLYT92dRwOzDZ5XiVCe.";

#[test]
fn fixed_vectors_per_scheme() {
    for (hash, scheme, pw) in [
        (SHA256_SECRET, Scheme::Sha256Crypt, "secret"),
        (SHA256_ROUNDS_SECRET, Scheme::Sha256Crypt, "secret"),
        (SHA512_SECRET, Scheme::Sha512Crypt, "secret"),
        (MD5_SECRET, Scheme::Md5Crypt, "secret"),
        (MD5_EMPTY_SALT_X, Scheme::Md5Crypt, "x"),
        (MD5_LONG, Scheme::Md5Crypt, "passwordlong"),
        (BCRYPT_SECRET, Scheme::Bcrypt, "secret"),
        (BCRYPT_PASSWORD, Scheme::Bcrypt, "password"),
        (YESCRYPT_SECRET, Scheme::Yescrypt, "secret"),
    ] {
        let h = Hashed::parse(hash).unwrap_or_else(|e| panic!("{hash}: {e}"));
        assert_eq!(h.scheme(), scheme, "{hash}");
        assert!(h.verify(pw.as_bytes()), "{hash} should accept {pw}");
        assert!(
            !h.verify(b"Secret"),
            "{hash} should refuse a wrong password"
        );
        assert!(!h.verify(b""), "{hash} should refuse an empty password");
    }
}

#[test]
fn generated_hashes() {
    let b = bcrypt::hash("hunter2", 4).unwrap();
    let h = Hashed::parse(&b).unwrap();
    assert!(h.verify(b"hunter2") && !h.verify(b"hunter3"));

    use sha_crypt::{Algorithm, Params, ShaCrypt};
    for alg in [Algorithm::Sha256Crypt, Algorithm::Sha512Crypt] {
        let hasher = ShaCrypt::new(alg, Params::new(1000).unwrap());
        let out = sha_crypt::CustomizedPasswordHasher::hash_password_customized(
            &hasher,
            b"hunter2",
            b"0123456789ab",
            None,
            None,
            Params::new(1000).unwrap(),
        )
        .unwrap();
        let h = Hashed::parse(out.as_str()).unwrap_or_else(|e| panic!("{}: {e}", out.as_str()));
        assert!(h.verify(b"hunter2") && !h.verify(b"hunter3"));
    }
    // MD5-crypt: our composition against itself with several lengths,
    // anchored by the fixed vectors above.
    for pw in [
        "",
        "a",
        "0123456789abcdef",
        "0123456789abcdefX",
        &"z".repeat(100),
    ] {
        let s = md5_crypt(pw.as_bytes(), b"saltsalt");
        let h = Hashed::parse(&s).unwrap();
        assert!(h.verify(pw.as_bytes()));
    }
}

#[test]
fn unsupported_hashes() {
    for (hash, needle) in [
        ("abNANd1rDfiNc", "DES"),
        ("$2x$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a", "$2x$"),
        ("$2b$05$short", "malformed bcrypt"),
        ("$2b$99$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a", "malformed bcrypt"),
        ("$5$rounds=10$abc$qsg6EHbUzHQzF1POlD7zUwBINSELQxypPaeDcZe6vH0", "rounds"),
        ("$5$abc$tooshort", "malformed SHA-256"),
        ("$6$abc$", "malformed SHA-512"),
        ("$6$abcdefghijklmnopq$IdWKNKTJEb8LxY7CGg8YBXlvtfZzFw7Mp/r6niK9YB2mdvgY..TKjv1T..8RadRt2qvUHYRLr/TsVArtr91iR1", "salt"),
        ("$1$abc", "malformed MD5"),
        ("$7$whatever", "unknown hash scheme '$7$'"),
        ("$y$$abc$def", "yescrypt"),
        ("plaintext", "insecure-password"),
        ("", "not a crypt"),
    ] {
        let e = Hashed::parse(hash).unwrap_err();
        assert!(e.contains(needle), "{hash}: {e}");
    }
}

#[test]
fn parse_manual_example() {
    // The two userlists of the HAProxy manual are functionally identical.
    let l1 = Userlist::parse(
        "L1",
        &lines(&format!(
            "group G1 users tiger,scott\ngroup G2 users xdb,scott\n\
             user tiger password {SHA512_SECRET}\n\
             user scott insecure-password elgato\nuser xdb insecure-password hello\n"
        )),
    )
    .unwrap();
    let l2 = Userlist::parse(
        "L2",
        &lines(&format!(
            "group G1\ngroup G2\n\
             user tiger password {SHA512_SECRET} groups G1\n\
             user scott insecure-password elgato groups G1,G2\n\
             user xdb insecure-password hello groups G2\n"
        )),
    )
    .unwrap();
    for ul in [&l1, &l2] {
        assert_eq!(ul.groups(), ["G1", "G2"]);
        assert!(ul.check("tiger", "secret"));
        assert!(!ul.check("tiger", "elgato"));
        assert!(ul.check("scott", "elgato"));
        assert!(!ul.check("scott", "Elgato"));
        assert!(!ul.check("nobody", "elgato"));
        assert!(ul.in_group("tiger", "G1") && !ul.in_group("tiger", "G2"));
        assert!(ul.in_group("scott", "G1") && ul.in_group("scott", "G2"));
        assert!(ul.in_group("xdb", "G2") && !ul.in_group("xdb", "G1"));
        assert!(!ul.in_group("nobody", "G1"));
        assert!(ul.groups_of("nobody").is_empty());
        assert_eq!(ul.groups_of("xdb"), ["G2"]);
        assert!(ul.warnings().is_empty());
    }
    let mut g = l1.user("scott").unwrap().groups.clone();
    g.sort();
    assert_eq!(g, ["G1", "G2"]);
}

#[test]
fn parse_errors_and_warnings() {
    let e = Userlist::parse(
        "L",
        &lines(
            "user a insecure-password x groups nope\n\
             group G users ghost\n\
             frob x\n\
             user b password plain\n\
             user c secret x\n\
             group bad/name\n\
             user d password\n\
             group\n",
        ),
    )
    .unwrap_err();
    let msgs: Vec<String> = e.iter().map(|(l, m)| format!("{l}: {m}")).collect();
    let all = msgs.join("\n");
    assert!(
        all.contains("1: userlist 'L': no such group 'nope' specified in user 'a'"),
        "{all}"
    );
    assert!(
        all.contains("2: userlist 'L': no such user 'ghost' specified in group 'G'"),
        "{all}"
    );
    assert!(
        all.contains("3: unknown keyword 'frob' in 'userlist' section"),
        "{all}"
    );
    assert!(
        all.contains("4: the encrypted password used for user 'b' is not supported"),
        "{all}"
    );
    assert!(
        all.contains("5: 'user' only supports 'password', 'insecure-password' and 'groups'"),
        "{all}"
    );
    assert!(
        all.contains("6: character '/' is not permitted in 'group' name 'bad/name'"),
        "{all}"
    );
    assert!(
        all.contains("7: 'password' expects <password> as argument"),
        "{all}"
    );
    assert!(all.contains("8: 'group' expects <name>"), "{all}");

    let ul = Userlist::parse(
        "L",
        &lines("user a insecure-password one\nuser a insecure-password two\ngroup G\ngroup G users a\nuser n\n"),
    )
    .unwrap();
    assert_eq!(ul.users().len(), 2);
    assert!(ul.check("a", "one") && !ul.check("a", "two"));
    assert!(
        !ul.in_group("a", "G"),
        "the duplicated group line is ignored"
    );
    assert_eq!(ul.warnings().len(), 2);
    assert_eq!(
        ul.warnings()[0],
        (
            2,
            "ignoring duplicated user 'a' in userlist 'L'".to_string()
        )
    );
    assert_eq!(ul.warnings()[1].0, 4);
    // A user without password never authenticates.
    assert!(!ul.check("n", "") && !ul.check("n", "x"));
}

#[test]
fn basic_header() {
    let ul = Userlist::parse(
        "L",
        &lines(&format!(
            "user admin password {SHA256_SECRET}\nuser bob insecure-password pa:ss\n"
        )),
    )
    .unwrap();
    assert_eq!(
        ul.check_basic(&basic("admin:secret")).as_deref(),
        Some("admin")
    );
    assert_eq!(ul.check_basic(&basic("admin:wrong")), None);
    assert_eq!(ul.check_basic(&basic("bob:pa:ss")).as_deref(), Some("bob"));
    let mut v = b"basic    ".to_vec();
    v.extend_from_slice(&basic("bob:pa:ss")[6..]);
    assert_eq!(ul.check_basic(&v).as_deref(), Some("bob"));
    assert_eq!(ul.check_basic(b"Bearer abc"), None);
    assert_eq!(ul.check_basic(b"Basic"), None);
    assert_eq!(ul.check_basic(b" Basic Ym9iOnBhOnNz"), None);
    assert_eq!(ul.check_basic(b"Basic Ym9iOnBhOnNz="), None, "bad padding");
    assert_eq!(ul.check_basic(b"Basic !!!!"), None);
    assert_eq!(parse_basic_auth(&basic("nocolon")), None);
    assert_eq!(
        parse_basic_auth(&basic("u:p\0rest")),
        Some((b"u".to_vec(), b"p".to_vec()))
    );
    assert_eq!(parse_basic_auth(&basic(":")), Some((vec![], vec![])));
    assert_eq!(basic_user(&basic("eve:wrong")).as_deref(), Some("eve"));
    assert_eq!(basic_user(b"Digest x"), None);
}

#[test]
fn cache_is_used_and_bounded() {
    let ul = Userlist::parse("L", &lines(&format!("user u password {SHA512_SECRET}\n"))).unwrap();
    assert!(ul.check("u", "secret"));
    assert_eq!(ul.cache_lock().len(), 1);
    assert!(ul.check("u", "secret"));
    assert!(!ul.check("u", "nope"));
    assert_eq!(ul.cache_lock().len(), 1, "failures are not cached");
    {
        let mut c = ul.cache_lock();
        for i in 0..CACHE_CAPACITY - 1 {
            c.insert(cache_key("x", "y", &i.to_le_bytes()));
        }
        assert_eq!(c.len(), CACHE_CAPACITY);
        c.remove(&cache_key("u", SHA512_SECRET, b"secret"));
        c.insert(cache_key("x", "y", b"fill"));
    }
    assert!(ul.check("u", "secret"));
    assert_eq!(ul.cache_lock().len(), 1, "a full cache is emptied");
    // The key never holds the password itself.
    let key = cache_key("u", SHA512_SECRET, b"secret");
    assert!(!key.windows(6).any(|w| w == b"secret"));
}
