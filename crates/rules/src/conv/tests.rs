use super::*;
use crate::sample::SmpType::{Addr, Any, Bin, Bool, Ipv4, Ipv6, Sint, Str};
use crate::txn::Scope;
use crate::Env;
use std::collections::HashMap;

#[derive(Default)]
struct TestTxn {
    vars: HashMap<(Scope, String), Sample<'static>>,
    servers: HashMap<String, i64>,
}

impl TestTxn {
    fn with_var(mut self, name: &str, v: Sample<'static>) -> Self {
        let r = VarRef::parse(name).unwrap();
        self.vars.insert((r.scope, r.name), v);
        self
    }
}

impl Txn for TestTxn {
    fn var(&self, v: &VarRef) -> Option<Sample<'_>> {
        self.vars
            .get(&(v.scope, v.name.clone()))
            .map(Sample::reborrow)
    }
    fn nbsrv(&self, backend: Option<&str>) -> Option<i64> {
        self.servers.get(backend?).copied()
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn parse(name: &str, args: &[&str], input: SmpType) -> Result<Conv, String> {
    Conv::parse(name, &strings(args), input, &Env::default())
}

fn conv(name: &str, args: &[&str], input: SmpType) -> Conv {
    parse(name, args, input).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `name(args)` on `s` with the variables of `txn`.
fn run_with(txn: &TestTxn, name: &str, args: &[&str], s: Sample<'_>) -> Option<Sample<'static>> {
    let c = conv(name, args, s.smp_type());
    c.apply(s, txn).map(Sample::into_owned)
}

fn run(name: &str, args: &[&str], s: Sample<'_>) -> Option<Sample<'static>> {
    run_with(&TestTxn::default(), name, args, s)
}

/// Runs a converter on a string and reads the output as text.
fn on_str(name: &str, args: &[&str], input: &str) -> Option<String> {
    on_bytes(name, args, input.as_bytes())
}

fn on_bytes(name: &str, args: &[&str], input: &[u8]) -> Option<String> {
    let out = run(name, args, Sample::str(input))?;
    Some(String::from_utf8_lossy(out.as_bytes().expect("a string output")).into_owned())
}

fn int_of(name: &str, args: &[&str], s: Sample<'_>) -> Option<i64> {
    match run(name, args, s)? {
        Sample::Sint(i) => Some(i),
        other => panic!("{name}: expected sint, got {other:?}"),
    }
}

fn bin(b: &[u8]) -> Sample<'_> {
    Sample::Bin(Cow::Borrowed(b))
}

fn is_borrowed(s: &Sample<'_>) -> bool {
    matches!(
        s,
        Sample::Str(Cow::Borrowed(_)) | Sample::Bin(Cow::Borrowed(_))
    )
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

#[test]
fn field_documented_examples() {
    let s = "f1_f2_f3__f5";
    assert_eq!(on_str("field", &["5", "_"], s).unwrap(), "f5");
    assert_eq!(on_str("field", &["2", "_", "0"], s).unwrap(), "f2_f3__f5");
    assert_eq!(on_str("field", &["2", "_", "2"], s).unwrap(), "f2_f3");
    assert_eq!(on_str("field", &["-2", "_", "3"], s).unwrap(), "f2_f3_");
    assert_eq!(on_str("field", &["-3", "_", "0"], s).unwrap(), "f1_f2_f3");
}

#[test]
fn field_edges() {
    let s = "f1_f2_f3__f5";
    assert_eq!(on_str("field", &["4", "_"], s).unwrap(), "");
    assert_eq!(on_str("field", &["-1", "_"], s).unwrap(), "f5");
    assert_eq!(on_str("field", &["-5", "_"], s).unwrap(), "f1");
    assert_eq!(on_str("field", &["1", "_"], s).unwrap(), "f1");
    // More fields asked for than there are: to the end.
    assert_eq!(on_str("field", &["4", "_", "9"], s).unwrap(), "_f5");
    // Several delimiters.
    assert_eq!(on_str("field", &["3", ",;"], "a,b;c,d").unwrap(), "c");
    // Missing fields fail.
    assert_eq!(on_str("field", &["6", "_"], s), None);
    assert_eq!(on_str("field", &["-6", "_"], s), None);
    assert_eq!(on_str("field", &["2", ","], "abc"), None);
    assert_eq!(on_str("field", &["1", ","], "abc").unwrap(), "abc");
    // Parse errors.
    assert!(parse("field", &["0", "_"], Str)
        .unwrap_err()
        .contains("must not be 0"));
    assert!(parse("field", &["1", ""], Str)
        .unwrap_err()
        .contains("empty"));
    assert!(parse("field", &["x", "_"], Str)
        .unwrap_err()
        .contains("integer"));
    assert!(parse("field", &["1"], Str)
        .unwrap_err()
        .contains("expects 2 to 3"));
}

#[test]
fn field_does_not_copy() {
    let t = TestTxn::default();
    let c = conv("field", &["2", "/"], Str);
    let out = c.apply(Sample::str(b"a/b/c"), &t).unwrap();
    assert!(is_borrowed(&out));
    assert_eq!(out, Sample::str(b"b"));
    // An owned input is cut in place.
    let out = c.apply(Sample::owned_str(b"x/yy/z".to_vec()), &t).unwrap();
    assert_eq!(out, Sample::str(b"yy"));
}

#[test]
fn word_documented_examples() {
    let s = "f1_f2_f3__f5";
    assert_eq!(on_str("word", &["4", "_"], s).unwrap(), "f5");
    assert_eq!(on_str("word", &["2", "_", "0"], s).unwrap(), "f2_f3__f5");
    assert_eq!(on_str("word", &["3", "_", "2"], s).unwrap(), "f3__f5");
    assert_eq!(on_str("word", &["-2", "_", "3"], s).unwrap(), "f1_f2_f3");
    assert_eq!(on_str("word", &["-3", "_", "0"], s).unwrap(), "f1_f2");
    assert_eq!(on_str("word", &["1", "/"], "/f1/f2/f3/f4").unwrap(), "f1");
}

#[test]
fn word_edges() {
    assert_eq!(on_str("word", &["-1", "/"], "/a/b/").unwrap(), "b");
    assert_eq!(on_str("word", &["2", " "], "  a   b  c ").unwrap(), "b");
    assert_eq!(
        on_str("word", &["2", " ", "0"], "  a   b  c ").unwrap(),
        "b  c "
    );
    // A missing word is an empty string, not a failure (unlike field).
    assert_eq!(on_str("word", &["5", "_"], "a_b").unwrap(), "");
    assert_eq!(on_str("word", &["-3", "_"], "a_b").unwrap(), "");
    assert_eq!(on_str("word", &["1", "_"], "___").unwrap(), "");
    // Bearer token, JWT payload.
    assert_eq!(on_str("word", &["2", "."], "h.p.s").unwrap(), "p");
}

#[test]
fn regsub_basics() {
    assert_eq!(
        on_str("regsub", &["/+", "/", "g"], "/////a///b/c/xzxyz/").unwrap(),
        "/a/b/c/xzxyz/"
    );
    // Without g, only the first match.
    assert_eq!(on_str("regsub", &["/+", "/"], "//a//b").unwrap(), "/a//b");
    assert_eq!(
        on_str("regsub", &["[?;&]*", ""], "?;&a=1&b").unwrap(),
        "a=1&b"
    );
    // Case.
    assert_eq!(on_str("regsub", &["abc", "x"], "ABC abc").unwrap(), "ABC x");
    assert_eq!(
        on_str("regsub", &["abc", "x", "i"], "ABC abc").unwrap(),
        "x abc"
    );
    assert_eq!(
        on_str("regsub", &["abc", "x", "gi"], "ABC abc").unwrap(),
        "x x"
    );
    assert_eq!(
        on_str("regsub", &["abc", "x", "ig"], "ABC abc").unwrap(),
        "x x"
    );
    assert!(parse("regsub", &["a", "b", "gx"], Str)
        .unwrap_err()
        .contains("invalid regex flag 'x'"));
    assert!(parse("regsub", &["(", "b"], Str)
        .unwrap_err()
        .contains("invalid regex"));
}

#[test]
fn regsub_backreferences() {
    // The documented example.
    assert_eq!(
        on_str(
            "regsub",
            &["(foo|bar)([0-9]+)?", "\\2\\1", "i"],
            "/FOO12/bar3"
        )
        .unwrap(),
        "/12FOO/bar3"
    );
    assert_eq!(
        on_str(
            "regsub",
            &["(foo|bar)([0-9]+)?", "\\2\\1", "gi"],
            "/FOO12/bar3/bar"
        )
        .unwrap(),
        "/12FOO/3bar/bar"
    );
    // \0 is the whole match; a group beyond the regex's is empty.
    assert_eq!(
        on_str("regsub", &["b+", "<\\0\\7>"], "abbc").unwrap(),
        "a<bb>c"
    );
    // \xHH inserts a byte, \<other> the byte itself.
    assert_eq!(
        on_str("regsub", &["b", "\\x41\\\\\\q"], "abc").unwrap(),
        "aA\\qc"
    );
    assert!(parse("regsub", &["b", "x\\"], Str)
        .unwrap_err()
        .contains("backslash"));
}

#[test]
fn regsub_empty_matches() {
    // Like sed: an empty match before each byte and one at the end.
    assert_eq!(
        on_str("regsub", &["x*", "-", "g"], "abc").unwrap(),
        "-a-b-c-"
    );
    assert_eq!(on_str("regsub", &["x*", "-"], "abc").unwrap(), "-abc");
    // After a non-empty match, HAProxy searches again right there, so an
    // empty match follows it (sed would give "-a-c-").
    assert_eq!(
        on_str("regsub", &["b*", "-", "g"], "abc").unwrap(),
        "-a--c-"
    );
    assert_eq!(on_str("regsub", &["x*", "-", "g"], "").unwrap(), "-");
    assert_eq!(on_str("regsub", &["^", ">", "g"], "ab").unwrap(), ">ab");
    // HAProxy restarts the search at the end of the string after a match
    // there, so `$` is substituted twice.
    assert_eq!(on_str("regsub", &["$", "X", "g"], "ab").unwrap(), "abXX");
}

#[test]
fn regsub_without_match_keeps_the_input() {
    let t = TestTxn::default();
    let c = conv("regsub", &["z", "y", "g"], Str);
    let out = c.apply(Sample::str(b"abc"), &t).unwrap();
    assert!(is_borrowed(&out));
    assert_eq!(out, Sample::str(b"abc"));
}

#[test]
fn regsub_works_on_bytes() {
    // HAProxy's regexes are byte-oriented: `.` matches one byte.
    assert_eq!(
        on_bytes("regsub", &["^.", "X"], "é".as_bytes()).unwrap(),
        "X\u{fffd}"
    );
    // A non-ASCII literal still works.
    assert_eq!(
        on_str("regsub", &["é", "e", "g"], "café é").unwrap(),
        "cafe e"
    );
}

#[test]
fn concat_and_add_item() {
    let t = TestTxn::default()
        .with_var("txn.ip", Sample::owned_str(b"10.0.0.1".to_vec()))
        .with_var("sess.n", Sample::Sint(42))
        .with_var("txn.empty", Sample::owned_str(Vec::new()));
    let concat = |args: &[&str], input: &str| {
        let out = run_with(&t, "concat", args, Sample::str(input.as_bytes())).unwrap();
        String::from_utf8(out.as_bytes().unwrap().to_vec()).unwrap()
    };
    assert_eq!(concat(&["<ip=", "txn.ip", ">"], "x"), "x<ip=10.0.0.1>");
    assert_eq!(concat(&["", "sess.n"], ""), "42");
    assert_eq!(concat(&["-"], "a"), "a-");
    assert_eq!(concat(&["(", "txn.missing", ")"], "a"), "a()");
    assert_eq!(concat(&["", "", "!"], "a"), "a!");
    assert!(parse("concat", &[], Str).is_err());
    assert!(parse("concat", &["a", "nope"], Str)
        .unwrap_err()
        .contains("nope"));

    let add_item = |args: &[&str], input: &str| {
        let out = run_with(&t, "add_item", args, Sample::str(input.as_bytes())).unwrap();
        String::from_utf8(out.as_bytes().unwrap().to_vec()).unwrap()
    };
    assert_eq!(add_item(&[",", "txn.ip"], "a"), "a,10.0.0.1");
    assert_eq!(add_item(&[",", "txn.ip"], ""), "10.0.0.1");
    assert_eq!(add_item(&[",", "txn.missing", "(s)"], "a"), "a,(s)");
    assert_eq!(add_item(&[",", "txn.missing", "(s)"], ""), "(s)");
    assert_eq!(add_item(&[",", "txn.empty"], "a"), "a");
    assert_eq!(add_item(&[",", "", "x"], "a"), "a,x");
    assert!(parse("add_item", &[",", ""], Str).is_err());
}

#[test]
fn bytes_slices() {
    let t = TestTxn::default();
    let b = |args: &[&str]| {
        let c = conv("bytes", args, Bin);
        let out = c.apply(bin(b"abcdef"), &t).unwrap();
        assert!(is_borrowed(&out));
        String::from_utf8(out.as_bytes().unwrap().to_vec()).unwrap()
    };
    assert_eq!(b(&["2"]), "cdef");
    assert_eq!(b(&["2", "3"]), "cde");
    assert_eq!(b(&["0", "0"]), "");
    assert_eq!(b(&["4", "10"]), "ef");
    assert_eq!(b(&["6"]), "");
    assert_eq!(b(&["10"]), "");
    assert_eq!(b(&["-1"]), "");
    assert_eq!(b(&["1", "-1"]), "bcdef");
    assert_eq!(conv("bytes", &["1"], Str).out_type(), Bin);
    assert!(parse("bytes", &[], Bin).is_err());
}

#[test]
fn strcmp_against_a_variable() {
    let t = TestTxn::default()
        .with_var("txn.host", Sample::owned_str(b"abc".to_vec()))
        .with_var("txn.n", Sample::Sint(12));
    let cmp = |input: &str, var: &str| match run_with(
        &t,
        "strcmp",
        &[var],
        Sample::str(input.as_bytes()),
    ) {
        Some(Sample::Sint(i)) => Some(i),
        None => None,
        other => panic!("{other:?}"),
    };
    assert_eq!(cmp("abc", "txn.host"), Some(0));
    assert!(cmp("abb", "txn.host").unwrap() < 0);
    assert!(cmp("abd", "txn.host").unwrap() > 0);
    assert_eq!(cmp("ab", "txn.host"), Some(-1));
    assert_eq!(cmp("abcd", "txn.host"), Some(1));
    assert_eq!(cmp("12", "txn.n"), Some(0));
    assert_eq!(cmp("abc", "txn.none"), None);
    assert!(parse("strcmp", &[""], Str)
        .unwrap_err()
        .contains("missing variable"));
    assert!(parse("strcmp", &["host"], Str).is_err());
    assert_eq!(strcmp(b"a\0x", b"a\0y"), 0);
    assert_eq!(strcmp(b"a\0", b"a\0y"), -1);
}

#[test]
fn length_lower_upper() {
    assert_eq!(int_of("length", &[], Sample::str(b"hello")), Some(5));
    assert_eq!(int_of("length", &[], Sample::str(b"")), Some(0));
    // sint is cast to its decimal string.
    assert_eq!(int_of("length", &[], Sample::Sint(-1234)), Some(5));
    assert_eq!(on_str("lower", &[], "HeLLo-É").unwrap(), "hello-É");
    assert_eq!(on_str("upper", &[], "HeLLo-é").unwrap(), "HELLO-é");
    let t = TestTxn::default();
    let lower = conv("lower", &[], Str);
    assert!(is_borrowed(
        &lower.apply(Sample::str(b"already"), &t).unwrap()
    ));
    assert!(!is_borrowed(
        &lower.apply(Sample::str(b"Changed"), &t).unwrap()
    ));
    // `lower()` is the same as `lower`.
    assert!(parse("lower", &[""], Str).is_ok());
    assert!(parse("lower", &["x"], Str)
        .unwrap_err()
        .contains("takes no arguments"));
}

#[test]
fn json_escaping() {
    assert_eq!(
        on_str("json", &["utf8s"], "Very \"Ugly\" UA 1/2").unwrap(),
        "Very \\\"Ugly\\\" UA 1\\/2"
    );
    assert_eq!(
        on_str("json", &["ascii"], "a\\b\x08\x0c\r\n\t\x01\x7f").unwrap(),
        "a\\\\b\\b\\f\\r\\n\\t\\u0001\\u007f"
    );
    // ascii: every byte above 0x7e is \u00XX.
    assert_eq!(on_str("json", &["ascii"], "é").unwrap(), "\\u00c3\\u00a9");
    // No argument and an empty one read as ascii.
    assert_eq!(on_str("json", &[], "é").unwrap(), "\\u00c3\\u00a9");
    assert_eq!(on_str("json", &[""], "é").unwrap(), "\\u00c3\\u00a9");
    // utf8 decodes.
    assert_eq!(on_str("json", &["utf8"], "é€").unwrap(), "\\u00e9\\u20ac");
    assert!(parse("json", &["latin1"], Str)
        .unwrap_err()
        .contains("utf8ps"));
}

#[test]
fn json_utf8_errors() {
    let j = |mode: &str, b: &[u8]| on_bytes("json", &[mode], b);
    // A bad byte.
    assert_eq!(j("utf8", b"a\xffb"), None);
    assert_eq!(j("utf8s", b"a\xffb").unwrap(), "ab");
    assert_eq!(j("utf8p", b"a\xffb"), None);
    assert_eq!(j("utf8ps", b"a\xffb").unwrap(), "ab");
    assert_eq!(j("ascii", b"a\xffb").unwrap(), "a\\u00ffb");
    // A truncated sequence drops its lead byte only.
    assert_eq!(j("utf8s", b"a\xc3").unwrap(), "a");
    assert_eq!(j("utf8s", b"\xe2\x82x").unwrap(), "x");
    // Overlong "/" (C0 AF): accepted by the p decoders.
    assert_eq!(j("utf8", b"\xc0\xaf"), None);
    assert_eq!(j("utf8s", b"\xc0\xaf").unwrap(), "");
    assert_eq!(j("utf8p", b"\xc0\xaf").unwrap(), "\\/");
    assert_eq!(j("utf8ps", b"\xc0\xaf").unwrap(), "\\/");
    // A surrogate is an invalid range for every decoder.
    assert_eq!(j("utf8p", b"\xed\xa0\x80"), None);
    assert_eq!(j("utf8ps", b"x\xed\xa0\x80").unwrap(), "x");
    // Above U+FFFF does not fit a \u escape.
    assert_eq!(j("utf8", "a😀".as_bytes()), None);
    assert_eq!(j("utf8p", "a😀".as_bytes()), None);
    assert_eq!(j("utf8s", "a😀".as_bytes()).unwrap(), "a");
    assert_eq!(j("utf8ps", "a😀".as_bytes()).unwrap(), "a");
}

#[test]
fn json_plain_input_is_not_copied() {
    let t = TestTxn::default();
    let c = conv("json", &["utf8"], Str);
    assert!(is_borrowed(
        &c.apply(Sample::str(b"plain text"), &t).unwrap()
    ));
}

#[test]
fn hex_and_base64() {
    let t = TestTxn::default();
    let hex = conv("hex", &[], Bin);
    assert_eq!(hex.out_type(), Str);
    assert_eq!(
        hex.apply(bin(b"\x00\xffA\x0f"), &t).unwrap(),
        Sample::str(b"00FF410F")
    );
    assert_eq!(on_str("hex", &[], "hi").unwrap(), "6869");
    let b64 = |b: &[u8]| {
        let out = conv("base64", &[], Bin).apply(bin(b), &t).unwrap();
        String::from_utf8(out.as_bytes().unwrap().to_vec()).unwrap()
    };
    assert_eq!(b64(b"\x00\xff\xfehello?"), "AP/+aGVsbG8/");
    assert_eq!(b64(b"a"), "YQ==");
    assert_eq!(b64(b"ab"), "YWI=");
    assert_eq!(b64(b""), "");
    let u64e = |b: &[u8]| {
        let out = conv("ub64enc", &[], Bin).apply(bin(b), &t).unwrap();
        String::from_utf8(out.as_bytes().unwrap().to_vec()).unwrap()
    };
    assert_eq!(u64e(b"\x00\xff\xfehello?"), "AP_-aGVsbG8_");
    assert_eq!(u64e(b"a"), "YQ");
}

#[test]
fn base64_decoding() {
    let dec = |name: &str, s: &str| {
        run(name, &[], Sample::str(s.as_bytes())).map(|o| {
            assert_eq!(o.smp_type(), Bin);
            o.as_bytes().unwrap().to_vec()
        })
    };
    assert_eq!(
        dec("b64dec", "AP/+aGVsbG8/").unwrap(),
        b"\x00\xff\xfehello?"
    );
    assert_eq!(dec("b64dec", "YQ==").unwrap(), b"a");
    assert_eq!(dec("b64dec", "YWI=").unwrap(), b"ab");
    assert_eq!(dec("b64dec", "").unwrap(), b"");
    // Non-canonical trailing bits are ignored.
    assert_eq!(dec("b64dec", "YR==").unwrap(), b"a");
    // HAProxy's padding rules.
    assert_eq!(dec("b64dec", "A===").unwrap(), b"");
    assert_eq!(dec("b64dec", "YQ==YWI=").unwrap(), b"aab");
    assert_eq!(dec("b64dec", "===="), None);
    assert_eq!(dec("b64dec", "Y=Q="), None);
    assert_eq!(dec("b64dec", "YQ"), None);
    assert_eq!(dec("b64dec", "YQ=*"), None);
    assert_eq!(dec("b64dec", "AP_-"), None);
    assert_eq!(
        dec("ub64dec", "AP_-aGVsbG8_").unwrap(),
        b"\x00\xff\xfehello?"
    );
    assert_eq!(dec("ub64dec", "YQ").unwrap(), b"a");
    assert_eq!(dec("ub64dec", "YWI").unwrap(), b"ab");
    assert_eq!(dec("ub64dec", "YQ==").unwrap(), b"a");
    assert_eq!(dec("ub64dec", "Y"), None);
    assert_eq!(dec("ub64dec", "AP/+"), None);
    // A JWT payload.
    assert_eq!(
        dec("ub64dec", "eyJpc3MiOiJqb2UifQ").unwrap(),
        br#"{"iss":"joe"}"#
    );
}

#[test]
fn url_decoding() {
    assert_eq!(on_str("url_dec", &[], "a%20b+c").unwrap(), "a b+c");
    assert_eq!(on_str("url_dec", &["1"], "a%20b+c").unwrap(), "a b c");
    assert_eq!(on_str("url_dec", &["0"], "a%20b+c").unwrap(), "a b+c");
    // '+' is a space after a '?'.
    assert_eq!(on_str("url_dec", &[], "/a+b?x=c+d").unwrap(), "/a+b?x=c d");
    assert_eq!(on_str("url_dec", &[], "%2f%2F%41").unwrap(), "//A");
    assert_eq!(on_str("url_dec", &[], "%zz"), None);
    assert_eq!(on_str("url_dec", &[], "ab%4"), None);
    assert_eq!(on_str("url_dec", &[], "ab%"), None);
    // The input is a C string for HAProxy: it ends at a NUL byte.
    assert_eq!(on_bytes("url_dec", &[], b"a%41\0b").unwrap(), "aA");
    let t = TestTxn::default();
    let c = conv("url_dec", &[], Str);
    assert!(is_borrowed(
        &c.apply(Sample::str(b"/plain+path"), &t).unwrap()
    ));
    assert!(parse("url_dec", &["yes"], Str).is_err());
}

#[test]
fn url_encoding() {
    assert_eq!(
        on_str("url_enc", &[], "a b&c=d/é~._-").unwrap(),
        "a%20b%26c%3Dd%2F%C3%A9~._-"
    );
    assert_eq!(on_str("url_enc", &["query"], "x+y").unwrap(), "x%2By");
    assert!(parse("url_enc", &["path"], Str)
        .unwrap_err()
        .contains("query"));
    let t = TestTxn::default();
    let c = conv("url_enc", &[], Str);
    assert!(is_borrowed(&c.apply(Sample::str(b"plain"), &t).unwrap()));
}

#[test]
fn hashes_match_the_balancing_functions() {
    let h = |name: &str, args: &[&str]| int_of(name, args, Sample::str(b"hello")).unwrap();
    // Same values as crates/balance/src/hash.rs gives for "hello".
    assert_eq!(h("sdbm", &[]), 684_824_882);
    assert_eq!(h("djb2", &[]), 261_238_937);
    assert_eq!(h("wt6", &[]), 0xd2e6_e6b7);
    assert_eq!(h("crc32", &[]), 0x3610_a686);
    assert_eq!(h("crc32c", &[]), 2_591_144_780);
    // avalanche: HAProxy's full_hash of the 32-bit hash (values from
    // HAProxy 2.6.12, tests/scenarios/42_conv_hashes.scn).
    assert_eq!(h("sdbm", &["1"]), 2_061_535_398);
    assert_eq!(h("crc32", &["1"]), 3_902_247_103);
    assert_eq!(h("sdbm", &["0"]), 684_824_882);
    assert_eq!(int_of("djb2", &[], Sample::str(b"a")), Some(177_670));
    assert_eq!(int_of("sdbm", &[], bin(b"ab")), Some(6_363_201));
    assert_eq!(conv("wt6", &[], Str).out_type(), Sint);
    assert!(parse("sdbm", &["yes"], Str).is_err());
}

#[test]
fn xxhash() {
    let e = || Sample::str(b"");
    assert_eq!(
        int_of("xxh3", &[], e()),
        Some(0x2D06_8005_38D3_94C2_u64 as i64)
    );
    assert_eq!(
        int_of("xxh64", &[], e()),
        Some(0xEF46_DB37_51D8_E999_u64 as i64)
    );
    assert_eq!(int_of("xxh32", &[], e()), Some(0x02CC_5D05));
    let a = int_of("xxh3", &[], Sample::str(b"hello")).unwrap();
    let b = int_of("xxh3", &["1"], Sample::str(b"hello")).unwrap();
    assert_ne!(a, b);
    assert_eq!(b, xxhash_rust::xxh3::xxh3_64_with_seed(b"hello", 1) as i64);
    // A negative seed is the same 64 bits.
    assert_eq!(
        int_of("xxh3", &["-1"], Sample::str(b"x")),
        Some(xxhash_rust::xxh3::xxh3_64_with_seed(b"x", u64::MAX) as i64)
    );
}

#[test]
fn digests() {
    let d = |name: &str, args: &[&str]| {
        let out = run(name, args, Sample::str(b"abc")).unwrap();
        assert_eq!(out.smp_type(), Bin);
        hexs(out.as_bytes().unwrap())
    };
    assert_eq!(d("sha1", &[]), "a9993e364706816aba3e25717850c26c9cd0d89d");
    let sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    assert_eq!(d("sha2", &[]), sha256);
    assert_eq!(d("sha2", &["256"]), sha256);
    assert_eq!(d("digest", &["SHA256"]), sha256);
    assert_eq!(d("digest", &["sha1"]), d("sha1", &[]));
    assert_eq!(
        d("sha2", &["224"]),
        "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"
    );
    assert!(d("sha2", &["384"]).starts_with("cb00753f45a35e8bb5a03d699ac65007"));
    assert!(d("sha2", &["512"]).starts_with("ddaf35a193617abacc417349ae204131"));
    assert_eq!(d("sha2", &["512"]).len(), 128);
    assert!(parse("sha2", &["100"], Bin).unwrap_err().contains("'100'"));
    assert!(parse("sha2", &["0"], Bin).is_err());
    assert!(parse("digest", &["md4"], Bin).is_err());
}

#[test]
fn arithmetic() {
    let t = TestTxn::default()
        .with_var("txn.x", Sample::Sint(7))
        .with_var("txn.s", Sample::owned_str(b"-3".to_vec()))
        .with_var("txn.ip", Sample::Ipv6("::1".parse().unwrap()));
    let a = |name: &str, arg: &str, v: i64| match run_with(&t, name, &[arg], Sample::Sint(v)) {
        Some(Sample::Sint(i)) => Some(i),
        None => None,
        other => panic!("{other:?}"),
    };
    assert_eq!(a("add", "5", 10), Some(15));
    assert_eq!(a("add", "-1", -1), Some(-2));
    assert_eq!(a("add", "txn.x", 1), Some(8));
    assert_eq!(a("add", "txn.s", 1), Some(-2));
    assert_eq!(a("add", "1", i64::MAX), Some(i64::MAX));
    assert_eq!(a("add", "-1", i64::MIN), Some(i64::MIN));
    assert_eq!(a("sub", "3", 1), Some(-2));
    assert_eq!(a("sub", "-9223372036854775808", 0), Some(i64::MAX));
    assert_eq!(a("sub", "-9223372036854775808", -5), Some(i64::MAX - 4));
    assert_eq!(a("sub", "1", i64::MIN), Some(i64::MIN));
    assert_eq!(a("mul", "3", -4), Some(-12));
    assert_eq!(a("mul", "2", i64::MAX), Some(i64::MAX));
    assert_eq!(a("mul", "-2", i64::MAX), Some(i64::MIN));
    assert_eq!(a("mul", "-1", i64::MIN), Some(i64::MAX));
    assert_eq!(a("div", "2", 7), Some(3));
    assert_eq!(a("div", "2", -7), Some(-3));
    assert_eq!(a("div", "0", 7), Some(i64::MAX));
    assert_eq!(a("div", "0", -7), Some(i64::MAX));
    assert_eq!(a("div", "-1", i64::MIN), Some(i64::MAX));
    assert_eq!(a("mod", "3", 7), Some(1));
    assert_eq!(a("mod", "3", -7), Some(-1));
    assert_eq!(a("mod", "0", 7), Some(0));
    assert_eq!(a("mod", "-1", i64::MIN), Some(0));
    assert_eq!(a("and", "6", 3), Some(2));
    assert_eq!(a("or", "4", 3), Some(7));
    assert_eq!(a("xor", "txn.x", 1), Some(6));
    // A value past 64 bits saturates, like HAProxy's read_int64.
    assert_eq!(a("add", "99999999999999999999", 0), Some(i64::MAX));
    // A missing or uncastable variable makes the converter fail.
    assert_eq!(a("add", "txn.none", 1), None);
    assert_eq!(a("add", "txn.ip", 1), None);
    // Parse errors.
    assert!(parse("add", &["abc"], Sint)
        .unwrap_err()
        .contains("integer or a variable"));
    assert!(parse("add", &["foo.bar"], Sint)
        .unwrap_err()
        .contains("scope"));
    assert!(parse("add", &["1x"], Sint).is_err());
    assert!(parse("add", &[], Sint)
        .unwrap_err()
        .contains("expects 1 argument"));
}

#[test]
fn unary_integer_converters() {
    let u = |name: &str, v: i64| run(name, &[], Sample::Sint(v)).unwrap();
    assert_eq!(u("neg", 5), Sample::Sint(-5));
    assert_eq!(u("neg", i64::MIN), Sample::Sint(i64::MAX));
    assert_eq!(u("cpl", 0), Sample::Sint(-1));
    assert_eq!(u("bool", 3), Sample::Bool(true));
    assert_eq!(u("bool", 0), Sample::Bool(false));
    assert_eq!(u("not", 0), Sample::Bool(true));
    assert_eq!(u("not", -2), Sample::Bool(false));
    assert_eq!(u("odd", -3), Sample::Bool(true));
    assert_eq!(u("even", -3), Sample::Bool(false));
    assert_eq!(u("even", 0), Sample::Bool(true));
    assert_eq!(conv("odd", &[], Sint).out_type(), Bool);
    // A string input is read as an integer.
    assert_eq!(run("neg", &[], Sample::str(b"12")), Some(Sample::Sint(-12)));
    assert_eq!(int_of("hex2i", &[], Sample::str(b"ff")), Some(255));
    assert_eq!(int_of("hex2i", &[], Sample::str(b"7FfF")), Some(0x7fff));
    assert_eq!(int_of("hex2i", &[], Sample::str(b"")), Some(0));
    assert_eq!(int_of("hex2i", &[], Sample::str(b"0x1")), None);
    assert_eq!(
        run("htonl", &[], Sample::Sint(0x1_0102_0304)),
        Some(Sample::Bin(Cow::Owned(vec![1, 2, 3, 4])))
    );
}

#[test]
fn ipmask() {
    let v4 = |s: &str| Sample::Ipv4(s.parse().unwrap());
    let v6 = |s: &str| Sample::Ipv6(s.parse().unwrap());
    assert_eq!(
        run("ipmask", &["24"], v4("192.168.1.77")),
        Some(v4("192.168.1.0"))
    );
    assert_eq!(
        run("ipmask", &["255.255.0.0"], v4("192.168.1.77")),
        Some(v4("192.168.0.0"))
    );
    assert_eq!(
        run("ipmask", &["0"], v4("192.168.1.77")),
        Some(v4("0.0.0.0"))
    );
    assert_eq!(
        run("ipmask", &["32"], v4("192.168.1.77")),
        Some(v4("192.168.1.77"))
    );
    // A string is parsed as an address.
    assert_eq!(
        run("ipmask", &["16"], Sample::str(b"10.1.2.3")),
        Some(v4("10.1.0.0"))
    );
    // IPv6 needs the second mask.
    assert_eq!(run("ipmask", &["24"], v6("2001:db8::1")), None);
    assert_eq!(
        run("ipmask", &["24", "32"], v6("2001:db8:1:2::1")),
        Some(v6("2001:db8::"))
    );
    assert_eq!(
        run("ipmask", &["24", "ffff:ffff:ffff::"], v6("2001:db8:1:2::1")),
        Some(v6("2001:db8:1::"))
    );
    // An IPv4-mapped address is masked as IPv4.
    assert_eq!(
        run("ipmask", &["24", "64"], v6("::ffff:10.1.2.3")),
        Some(v4("10.1.2.0"))
    );
    assert_eq!(conv("ipmask", &["24"], Ipv4).out_type(), Ipv4);
    assert_eq!(conv("ipmask", &["24", "64"], Ipv4).out_type(), Addr);
    assert!(parse("ipmask", &["33"], Ipv4)
        .unwrap_err()
        .contains("IPv4 mask"));
    assert!(parse("ipmask", &["24", "129"], Ipv4)
        .unwrap_err()
        .contains("IPv6 mask"));
    assert!(parse("ipmask", &["1.2.3"], Ipv4).is_err());
}

#[test]
fn iif_and_nbsrv() {
    let s = |b: &'static [u8]| Sample::Str(Cow::Borrowed(b));
    assert_eq!(
        run("iif", &["https", "http"], Sample::Bool(true)),
        Some(s(b"https"))
    );
    assert_eq!(
        run("iif", &["https", "http"], Sample::Bool(false)),
        Some(s(b"http"))
    );
    assert_eq!(run("iif", &["yes", "no"], Sample::Sint(0)), Some(s(b"no")));
    // str casts to bool through its integer value.
    assert_eq!(
        run("iif", &["yes", "no"], Sample::str(b"2")),
        Some(s(b"yes"))
    );
    assert!(parse("iif", &["a"], Bool).is_err());

    let mut t = TestTxn::default();
    t.servers.insert("app".into(), 3);
    assert_eq!(
        run_with(&t, "nbsrv", &[], Sample::str(b"app")),
        Some(Sample::Sint(3))
    );
    assert_eq!(run_with(&t, "nbsrv", &[], Sample::str(b"nope")), None);
}

#[test]
fn trims() {
    assert_eq!(on_str("ltrim", &[" \t"], " \t a b ").unwrap(), "a b ");
    assert_eq!(on_str("rtrim", &[" \t"], " a b \t").unwrap(), " a b");
    assert_eq!(on_str("rtrim", &["x"], "xxx").unwrap(), "");
    assert_eq!(on_str("ltrim", &["x"], "xxx").unwrap(), "");
    assert_eq!(on_str("cut_crlf", &[], "ab\r\ncd").unwrap(), "ab");
    assert_eq!(on_str("cut_crlf", &[], "ab\ncd").unwrap(), "ab");
    assert!(parse("ltrim", &[], Str).is_err());
}

#[test]
fn input_types_are_checked_at_parse_time() {
    // Reachable by a cast.
    assert!(parse("lower", &[], Bin).is_ok());
    assert!(parse("lower", &[], Sint).is_ok());
    assert!(parse("iif", &["a", "b"], Str).is_ok());
    assert!(parse("hex", &[], Sint).is_ok());
    assert!(parse("ipmask", &["24"], Str).is_ok());
    assert!(parse("add", &["1"], Any).is_ok());
    // Not reachable.
    let e = parse("ipmask", &["24"], Bin).unwrap_err();
    assert!(
        e.contains("converter 'ipmask' cannot be applied to a 'bin' sample"),
        "{e}"
    );
    assert!(parse("add", &["1"], Bin).unwrap_err().contains("'bin'"));
    assert!(parse("iif", &["a", "b"], Ipv4).is_err());
    assert!(parse("bool", &[], Ipv6).is_err());
    // A converter's output feeds the next one's check.
    let hex = conv("hex", &[], Bin);
    assert!(parse("ipmask", &["24"], hex.out_type()).is_ok());
    let sha = conv("sha1", &[], Str);
    assert!(parse("add", &["1"], sha.out_type()).is_err());
}

#[test]
fn unknown_names_and_arity() {
    assert_eq!(
        parse("nope", &[], Str).unwrap_err(),
        "unknown converter 'nope'"
    );
    // Map-like names go to the map converters, which know no 'mapx'.
    assert_eq!(
        parse("mapx", &["f"], Str).unwrap_err(),
        "unknown converter 'mapx'"
    );
    let e = parse("field", &["1", "2", "3", "4"], Str).unwrap_err();
    assert!(e.contains("field(<index>,<delimiters>[,<count>])"), "{e}");
    let e = parse("sdbm", &["1", "2"], Str).unwrap_err();
    assert!(e.contains("takes at most 1 argument"), "{e}");
    let e = parse("iif", &[], Bool).unwrap_err();
    assert!(e.contains("expects 2 arguments"), "{e}");
}

#[test]
fn converter_table() {
    assert_eq!(CONVERTERS.len(), SPECS.len() + 2);
    assert!(CONVERTERS[0].0.starts_with("map"));
    assert!(CONVERTERS[1].0.starts_with("in_table"));
    for w in SPECS.windows(2) {
        assert!(w[0].name < w[1].name, "{} / {}", w[0].name, w[1].name);
    }
    let env = Env::default();
    for s in SPECS {
        assert!(s.min <= s.max);
        // Every listed converter has a parser: feed it plausible arguments.
        let args: Vec<String> = match s.name {
            "field" | "word" => strings(&["1", ","]),
            "regsub" => strings(&["a", "b"]),
            "iif" => strings(&["a", "b"]),
            "add_item" => strings(&[",", "txn.a"]),
            "strcmp" => strings(&["txn.a"]),
            "digest" => strings(&["sha256"]),
            "ipmask" => strings(&["24"]),
            "bytes" | "add" | "sub" | "mul" | "div" | "mod" | "and" | "or" | "xor" => {
                strings(&["1"])
            }
            _ => vec!["x".to_string(); s.min],
        };
        let c = Conv::parse(s.name, &args, s.input, &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.name(), s.name);
        assert_eq!(c.in_type(), s.input);
    }
}

/// `in_table` and `table_*`: the table is mandatory and must exist, the
/// array forms take an index first; absent keys read 0 / false.
#[test]
fn stick_table_converters() {
    let mut env = Env::default();
    let spec = fairlead_stick::TableSpec::parse(
        "t",
        &[
            "type",
            "string",
            "size",
            "10",
            "store",
            "gpc(2),http_req_cnt",
        ],
        false,
    )
    .unwrap()
    .0;
    let table = fairlead_stick::Table::new(spec);
    env.tables.insert("t".into(), table.clone());
    let p = |name: &str, args: &[&str]| Conv::parse(name, &strings(args), Str, &env);
    assert!(p("in_table", &[])
        .unwrap_err()
        .contains("expects a table name"));
    assert!(p("table_gpc0", &["nope"])
        .unwrap_err()
        .contains("unable to find table 'nope'"));
    assert!(p("table_gpc", &["t"])
        .unwrap_err()
        .contains("invalid array index 't'"));
    let e = table.get_or_create(b"abc", 0).unwrap();
    e.inc_gpc(fairlead_stick::Gpc::Idx(1), 0);
    let txn = TestTxn::default();
    let run = |c: &Conv, k: &'static str| {
        c.apply(Sample::Str(k.as_bytes().into()), &txn)
            .map(|s| s.into_owned())
    };
    let in_t = p("in_table", &["t"]).unwrap();
    assert_eq!(in_t.out_type(), Bool);
    assert!(matches!(run(&in_t, "abc"), Some(Sample::Bool(true))));
    assert!(matches!(run(&in_t, "zzz"), Some(Sample::Bool(false))));
    let g = p("table_gpc", &["1", "t"]).unwrap();
    assert!(matches!(run(&g, "abc"), Some(Sample::Sint(1))));
    assert!(matches!(run(&g, "zzz"), Some(Sample::Sint(0))));
    // Data the table does not store: the converter fails.
    let c = p("table_conn_cur", &["t"]).unwrap();
    assert!(run(&c, "abc").is_none());
    let r = p("table_http_req_cnt", &["t"]).unwrap();
    assert!(matches!(run(&r, "abc"), Some(Sample::Sint(0))));
}
