use super::*;
use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

fn tmp(name: &str, body: &str) -> String {
    let dir = std::env::temp_dir().join(format!("fairlead-pat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    p.to_string_lossy().into_owned()
}

fn set(method: Method, icase: bool, vals: &[&str]) -> PatternSet {
    let mut b = PatternSet::builder(method).flag_ignore_case(icase);
    for v in vals {
        b.add_value(v).unwrap();
    }
    b.build().unwrap()
}

fn s(v: &str) -> Sample<'_> {
    Sample::str(v.as_bytes())
}

fn v4(a: &str) -> Sample<'static> {
    Sample::Ipv4(a.parse().unwrap())
}

fn v6(a: &str) -> Sample<'static> {
    Sample::Ipv6(a.parse::<Ipv6Addr>().unwrap())
}

fn key_of(p: &PatternSet, smp: &Sample<'_>) -> Option<String> {
    p.lookup(smp).map(|e| e.key_str().into_owned())
}

#[test]
fn methods_parse() {
    assert_eq!(Method::parse("beg"), Some(Method::Beg));
    assert_eq!(Method::parse("regm"), None);
    assert_eq!(method_for_suffix("_beg"), Some(Method::Beg));
    assert_eq!(method_for_suffix("dom"), Some(Method::Dom));
    assert_eq!(method_for_suffix("_len"), Some(Method::Len));
    assert_eq!(method_for_suffix("_cnt"), None);
    assert_eq!(method_for_suffix("_ip"), None);
}

#[test]
fn str_exact_and_icase() {
    let p = set(Method::Str, false, &["GET", "post"]);
    assert!(p.matches(&s("GET")));
    assert!(!p.matches(&s("get")));
    assert!(!p.matches(&s("GETX")));
    let p = set(Method::Str, true, &["Abc", "aBC", "x"]);
    assert!(p.matches(&s("ABC")));
    assert_eq!(
        key_of(&p, &s("abc")).as_deref(),
        Some("Abc"),
        "-i: first in order"
    );
    // A `-i` in the middle applies to the values after it.
    let mut b = PatternSet::builder(Method::Str);
    b.add_value("One").unwrap();
    let mut b = b.flag_ignore_case(true);
    b.add_value("Two").unwrap();
    let p = b.build().unwrap();
    assert!(!p.matches(&s("one")));
    assert!(p.matches(&s("TWO")));
    // Samples of other types are cast.
    let p = set(Method::Str, false, &["42"]);
    assert!(p.matches(&Sample::Sint(42)));
}

#[test]
fn beg_longest_vs_first() {
    let p = set(Method::Beg, false, &["/api", "/api/v2", "/"]);
    assert_eq!(key_of(&p, &s("/api/v2/x")).as_deref(), Some("/api/v2"));
    assert_eq!(key_of(&p, &s("/api/v1")).as_deref(), Some("/api"));
    assert_eq!(key_of(&p, &s("/other")).as_deref(), Some("/"));
    assert!(!p.matches(&s("api")));
    let p = set(Method::Beg, true, &["/API", "/api/V2"]);
    assert_eq!(
        key_of(&p, &s("/api/v2/x")).as_deref(),
        Some("/API"),
        "-i: first in order"
    );
    let p = set(Method::Beg, true, &["/api/V2", "/API"]);
    assert_eq!(key_of(&p, &s("/Api/v2/x")).as_deref(), Some("/api/V2"));
}

#[test]
fn ip_finest_and_families() {
    let p = set(
        Method::Ip,
        false,
        &["10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/255.255.0.0"],
    );
    assert_eq!(key_of(&p, &v4("10.1.2.3")).as_deref(), Some("10.1.0.0/16"));
    assert_eq!(key_of(&p, &v4("10.2.2.3")).as_deref(), Some("10.0.0.0/8"));
    assert!(p.matches(&v4("192.168.4.5")));
    assert!(!p.matches(&v4("11.0.0.1")));
    assert!(p.matches(&s("10.9.9.9")), "strings are cast to addresses");
    // IPv6 samples meet IPv4 patterns only when they embed an IPv4 address.
    assert!(p.matches(&v6("::ffff:10.1.2.3")));
    assert!(p.matches(&v6("::10.1.2.3")));
    assert!(p.matches(&v6("2002:0a01:0203::1")));
    assert!(!p.matches(&v6("2001:db8::10.1.2.3")));
    // IPv4 samples meet IPv6 patterns as ::ffff:a.b.c.d.
    let p = set(Method::Ip, false, &["::ffff:10.0.0.0/104", "2001:db8::/32"]);
    assert!(p.matches(&v4("10.3.4.5")));
    assert!(!p.matches(&v4("11.3.4.5")));
    assert!(p.matches(&v6("2001:db8:1::1")));
    let p = set(Method::Ip, false, &["::/0"]);
    assert!(p.matches(&v4("1.2.3.4")));
    // Non-contiguous masks live in the list.
    let p = set(Method::Ip, false, &["10.0.0.1/255.0.0.255"]);
    assert!(p.matches(&v4("10.9.9.1")));
    assert!(!p.matches(&v4("10.9.9.2")));
    assert!(p.matches(&v6("::ffff:10.9.9.1")));
    // The v4 tree is tried before the v6 one for a v4 sample.
    let p = set(Method::Ip, false, &["::ffff:10.1.0.0/112", "10.0.0.0/8"]);
    assert_eq!(key_of(&p, &v4("10.1.2.3")).as_deref(), Some("10.0.0.0/8"));
}

#[test]
fn ip_inet_aton_and_errors() {
    let p = set(Method::Ip, false, &["10.12"]);
    assert!(p.matches(&v4("10.0.0.12")));
    let p = set(Method::Ip, false, &["192.168.1/22"]);
    assert!(p.matches(&v4("192.168.3.200")));
    assert!(!p.matches(&v4("192.168.4.1")));
    let p = set(Method::Ip, false, &["127.1"]);
    assert!(p.matches(&v4("127.0.0.1")));
    let mut b = PatternSet::builder(Method::Ip).no_dns(true);
    assert!(b.add_value("10.12").is_err(), "-n: no gethostbyname forms");
    let err = b.add_value("some.host.example").unwrap_err();
    assert!(err.contains("some.host.example"), "{err}");
    assert!(b.add_value("10.0.0.1/33").is_err());
    assert!(b.add_value("fe80::/129").is_err());
    b.add_value("10.0.0.1").unwrap();
}

#[test]
fn dom_dir_sub_end() {
    let p = set(Method::Dom, false, &["example.com"]);
    assert!(p.matches(&s("www.example.com")));
    assert!(p.matches(&s("example.com")));
    assert!(p.matches(&s("example.com.evil.org")));
    assert!(p.matches(&s("example.com:8080")));
    assert!(!p.matches(&s("notexample.com")));
    assert!(!p.matches(&s("example.comx")));
    let p = set(Method::Dom, true, &[".Example.COM."]);
    assert!(p.matches(&s("WWW.EXAMPLE.com")));
    let p = set(Method::Dir, false, &["/img/"]);
    assert!(p.matches(&s("/static/img/a.png")));
    assert!(p.matches(&s("/img?x")));
    assert!(!p.matches(&s("/images/a.png")));
    assert!(!p.matches(&s("/a.img")));
    let p = set(Method::Sub, true, &["ADMIN"]);
    assert!(p.matches(&s("/x/admin/y")));
    assert!(!p.matches(&s("/x/adm/y")));
    let p = set(Method::End, false, &[".php", ".jpg"]);
    assert_eq!(key_of(&p, &s("/a.jpg")).as_deref(), Some(".jpg"));
    assert!(!p.matches(&s("/a.JPG")));
    let p = set(Method::Sub, false, &["b", "a"]);
    assert_eq!(
        key_of(&p, &s("xab")).as_deref(),
        Some("b"),
        "lists: first in order"
    );
}

#[test]
fn reg_len_bin() {
    let p = set(Method::Reg, true, &["^/API/v[0-9]+"]);
    assert!(p.matches(&s("/api/v12/x")));
    assert!(!p.matches(&s("/api/x")));
    let p = set(Method::Reg, false, &["^/API"]);
    assert!(!p.matches(&s("/api")));
    let mut b = PatternSet::builder(Method::Reg);
    let err = b.add_value("(").unwrap_err();
    assert!(err.contains("'('"), "{err}");
    let p = set(Method::Len, false, &["0", "10:"]);
    assert!(p.matches(&s("")));
    assert!(p.matches(&s("0123456789")));
    assert!(!p.matches(&s("abc")));
    let p = set(Method::Len, false, &["gt", "3"]);
    assert!(p.matches(&s("abcd")));
    assert!(!p.matches(&s("abc")));
    let p = set(Method::Bin, false, &["DEADbeef"]);
    assert!(p.matches(&Sample::Bin(b"\xde\xad\xbe\xef"[..].into())));
    assert!(p.matches(
        &s("\u{0}")
            .cast(SmpType::Bin)
            .map(|_| Sample::Bin(vec![0xde, 0xad, 0xbe, 0xef].into()))
            .unwrap()
    ));
    assert!(!p.matches(&Sample::Bin(b"\xde\xad\xbe"[..].into())));
    let mut b = PatternSet::builder(Method::Bin);
    assert!(b.add_value("abc").unwrap_err().contains("'abc'"));
    assert!(b.add_value("zz").is_err());
}

#[test]
fn int_ranges_operators_versions() {
    let p = set(Method::Int, false, &["1:3", "10", ":-5"]);
    assert!(p.matches(&Sample::Sint(2)));
    assert!(p.matches(&Sample::Sint(10)));
    assert!(p.matches(&Sample::Sint(-7)));
    assert!(!p.matches(&Sample::Sint(4)));
    assert!(p.matches(&s("3")), "strings are cast to integers");
    let p = set(Method::Int, false, &["100:"]);
    assert!(p.matches(&Sample::Sint(i64::MAX)));
    assert!(!p.matches(&Sample::Sint(99)));
    // Operators apply to every value after them.
    let p = set(Method::Int, false, &["gt", "5", "1"]);
    assert!(p.matches(&Sample::Sint(6)));
    assert!(p.matches(&Sample::Sint(2)));
    assert!(!p.matches(&Sample::Sint(1)));
    let p = set(Method::Int, false, &["lt", "5"]);
    assert!(p.matches(&Sample::Sint(4)) && !p.matches(&Sample::Sint(5)));
    let p = set(Method::Int, false, &["le", "5"]);
    assert!(p.matches(&Sample::Sint(5)) && !p.matches(&Sample::Sint(6)));
    let p = set(Method::Int, false, &["ge", "5"]);
    assert!(p.matches(&Sample::Sint(5)) && !p.matches(&Sample::Sint(4)));
    let p = set(Method::Int, false, &["eq", "5"]);
    assert!(p.matches(&Sample::Sint(5)) && !p.matches(&Sample::Sint(4)));
    let mut b = PatternSet::builder(Method::Int);
    assert!(b.add_value("abc").unwrap_err().contains("'abc'"));
    assert!(b.add_value("5:1").is_err());
    // Dotted versions (major << 16 | minor).
    let mut b = PatternSet::builder(Method::Int).dotted_version(true);
    b.add_value("ge").unwrap();
    b.add_value("3.1").unwrap();
    let p = b.build().unwrap();
    assert!(p.matches(&Sample::Sint(3 << 16 | 1)));
    assert!(p.matches(&Sample::Sint(3 << 16 | 3)));
    assert!(!p.matches(&Sample::Sint(3 << 16)));
}

#[test]
fn found_and_bool() {
    let p = set(Method::Found, false, &[]);
    assert!(p.matches(&Sample::Sint(0)));
    let p = set(Method::Bool, false, &["ignored"]);
    assert!(p.matches(&Sample::Sint(3)));
    assert!(!p.matches(&Sample::Sint(0)));
    assert!(p.matches(&Sample::Bool(true)));
    assert!(!p.matches(&s("abc")));
    assert!(p.matches(&s("12")));
}

#[test]
fn acl_file_loading() {
    let reg = Registry::default();
    let f = tmp("hosts.acl", "# comment\n\n   www.example.com\n#api.example.com\nadmin.example.com\r\n  # not a comment\n");
    let r = reg.load_file(&f, false).unwrap();
    let keys: Vec<String> = r
        .entries()
        .iter()
        .map(|e| e.key_str().into_owned())
        .collect();
    assert_eq!(
        keys,
        ["www.example.com", "admin.example.com", "# not a comment"]
    );
    assert_eq!(r.entries()[0].line(), 3);
    assert!(
        Arc::ptr_eq(&r, &reg.load_file(&f, false).unwrap()),
        "read once per path"
    );
    assert!(reg.load_file(&f, true).unwrap_err().contains("one column"));
    let mut b = PatternSet::builder(Method::Str).flag_ignore_case(true);
    b.add_file(r.clone());
    b.add_value("extra").unwrap();
    let p = b.build().unwrap();
    assert!(p.matches(&s("WWW.example.com")));
    assert!(p.matches(&s("extra")));
    assert!(!p.matches(&s("api.example.com")));
    let err = reg.load_file("/nonexistent/f.acl", false).unwrap_err();
    assert!(
        err.contains("failed to open pattern file </nonexistent/f.acl>"),
        "{err}"
    );
    // A bad entry names its file and line.
    let f2 = tmp("bad.acl", "10.0.0.1\n\nnot-an-ip\n");
    let r2 = reg.load_file(&f2, false).unwrap();
    let mut b = PatternSet::builder(Method::Ip).no_dns(true);
    b.add_file(r2);
    let err = b.build().unwrap_err();
    assert!(
        err.contains("'not-an-ip'") && err.contains("line 3") && err.contains(&f2),
        "{err}"
    );
    let l = reg.list();
    assert_eq!(l.len(), 2);
    assert!(l[0].acl && !l[0].map && l[0].count == 3);
}

#[test]
fn runtime_edits_reach_built_sets() {
    let reg = Registry::default();
    let f = tmp("edit.acl", "/a\n");
    let r = reg.load_file(&f, false).unwrap();
    let mut b = PatternSet::builder(Method::Beg);
    b.add_file(r.clone());
    let beg = b.build().unwrap();
    let mut b = PatternSet::builder(Method::Str).flag_ignore_case(true);
    b.add_file(r.clone());
    let stri = b.build().unwrap();
    assert!(beg.matches(&s("/a/x")));
    let id = reg.add(&f, "/B", None).unwrap();
    assert!(beg.matches(&s("/B/x")));
    assert!(stri.matches(&s("/b")));
    assert_eq!(reg.entries(&f).unwrap()[1], (id, "/B".to_string(), None));
    assert_eq!(reg.del(&f, &format!("#{id:#x}")), Ok(1));
    assert!(!beg.matches(&s("/B/x")));
    assert!(reg.del(&f, "/nope").is_err());
    // Prepare / commit swaps everything at once.
    let v = reg.prepare(&f).unwrap();
    reg.add_versioned(&f, v, "/c", None).unwrap();
    reg.add_versioned(&f, v, "/d", None).unwrap();
    assert!(!beg.matches(&s("/c")) && beg.matches(&s("/a")));
    reg.commit(&f, v).unwrap();
    assert!(beg.matches(&s("/c")) && beg.matches(&s("/d/e")) && !beg.matches(&s("/a")));
    assert_eq!(r.versions(), (v, v));
    assert!(reg.commit(&f, v - 1).is_err());
    reg.clear(&f, None).unwrap();
    assert!(!beg.matches(&s("/c")));
    // Actions.
    assert!(r.add_unique("/e"));
    assert!(r.add_unique("/e"));
    assert_eq!(r.len(), 1);
    assert!(r.delete_key("/e"));
    assert!(!r.delete_key("/e"));
    // An entry one user cannot parse is refused for all.
    let mut b = PatternSet::builder(Method::Int);
    b.add_file(r.clone());
    let ints = b.build().unwrap();
    assert!(reg.add(&f, "abc", None).is_err());
    assert!(r.is_empty());
    reg.add(&f, "7", None).unwrap();
    assert!(ints.matches(&Sample::Sint(7)));
    assert!(reg.find(&format!("#{}", r.id())).is_some());
    assert!(reg.find("#99").is_none());
}

#[test]
fn ip_runtime_edits() {
    let reg = Registry::default();
    let f = tmp("edit-ip.map", "10.0.0.0/8 a\n");
    let r = reg.load_file(&f, true).unwrap();
    let mut b = PatternSet::builder(Method::Ip);
    b.add_file(r.clone());
    let p = b.build().unwrap();
    reg.add(&f, "10.1.0.0/16", Some("b")).unwrap();
    reg.add(&f, "10.0.0.1/255.0.0.255", Some("c")).unwrap();
    let e = p.lookup(&v4("10.1.2.3")).unwrap();
    assert_eq!(e.value(), Some(&b"b"[..]));
    assert_eq!(reg.set(&f, "10.1.0.0/16", "B"), Ok(1));
    assert_eq!(p.lookup(&v4("10.1.2.3")).unwrap().value(), Some(&b"B"[..]));
    reg.del(&f, "10.1.0.0/16").unwrap();
    assert_eq!(p.lookup(&v4("10.1.2.3")).unwrap().value(), Some(&b"a"[..]));
    reg.del(&f, "10.0.0.0/8").unwrap();
    assert_eq!(p.lookup(&v4("10.1.2.1")).unwrap().value(), Some(&b"c"[..]));
    reg.del(&f, "10.0.0.1/255.0.0.255").unwrap();
    assert!(!p.matches(&v4("10.1.2.1")));
}

#[test]
fn large_maps_build_and_grow() {
    let reg = Registry::default();
    let mut body = String::new();
    for i in 0..100_000 {
        body.push_str(&format!("/p{i}/x v{i}\n"));
    }
    let f = tmp("big.map", &body);
    let r = reg.load_file(&f, true).unwrap();
    for m in [Method::Str, Method::Beg] {
        let mut b = PatternSet::builder(m);
        b.add_file(r.clone());
        let p = b.build().unwrap();
        assert_eq!(
            p.lookup(&s("/p99999/x")).unwrap().value(),
            Some(&b"v99999"[..])
        );
        assert!(!p.matches(&s("/q")));
    }
    let mut b = PatternSet::builder(Method::Beg);
    b.add_file(r.clone());
    let p = b.build().unwrap();
    assert_eq!(p.lookup(&s("/p5/x/y")).unwrap().value(), Some(&b"v5"[..]));
    // Many single edits (each copies one shard, not the whole map).
    let small = tmp("grow.acl", "");
    let r = reg.load_file(&small, false).unwrap();
    let mut b = PatternSet::builder(Method::Str);
    b.add_file(r.clone());
    let p = b.build().unwrap();
    for i in 0..20_000 {
        r.add(&format!("k{i}"), None).unwrap();
    }
    assert!(p.matches(&s("k0")) && p.matches(&s("k19999")) && !p.matches(&s("k20000")));
    for i in 0..20_000 {
        r.del(&format!("k{i}")).unwrap();
    }
    assert!(!p.matches(&s("k5")));
}

#[test]
fn ipv4_compat_samples() {
    let p = set(Method::Ip, false, &["0.0.0.0/0"]);
    assert!(p.matches(&Sample::Ipv4(Ipv4Addr::new(8, 8, 8, 8))));
    assert!(!p.matches(&v6("2001:db8::1")));
}

/// Prints lookup costs for 1k and 100k entries (`--ignored --nocapture`).
#[test]
#[ignore]
fn lookup_cost_is_flat() {
    use std::time::Instant;
    for n in [1_000usize, 100_000] {
        for m in [Method::Str, Method::Beg, Method::Ip] {
            let mut b = PatternSet::builder(m);
            for i in 0..n {
                let v = match m {
                    Method::Ip => {
                        format!("{}.{}.{}.0/24", 10 + i / 65536, (i / 256) % 256, i % 256)
                    }
                    _ => format!("/path{i}/seg"),
                };
                b.add_value(&v).unwrap();
            }
            let p = b.build().unwrap();
            let probes: Vec<Sample<'static>> = (0..1000)
                .map(|i| match m {
                    Method::Ip => {
                        Sample::Ipv4(Ipv4Addr::new(10, (i * 7 % 256) as u8, (i % 256) as u8, 9))
                    }
                    _ => Sample::owned_str(
                        format!("/path{}/seg/more/stuff", i * 97 % n).into_bytes(),
                    ),
                })
                .collect();
            let t = Instant::now();
            let mut hits = 0;
            for _ in 0..100 {
                for s in &probes {
                    hits += p.matches(s) as usize;
                }
            }
            let ns = t.elapsed().as_nanos() / 100_000;
            println!("{m:?} n={n}: {ns} ns/lookup ({hits} hits)");
        }
    }
}

#[test]
fn lookups_during_edits() {
    let r = Arc::new(PatRef::default());
    r.add("stable", None).unwrap();
    let mut b = PatternSet::builder(Method::Str);
    b.add_file(r.clone());
    let p = Arc::new(b.build().unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (p, stop) = (p.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert!(p.matches(&Sample::str(b"stable")));
                n += 1;
            }
            n
        })
    };
    for i in 0..2000 {
        r.add(&format!("k{i}"), None).unwrap();
        if i % 2 == 0 {
            r.del(&format!("k{i}")).unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    assert!(p.matches(&s("k1")) && !p.matches(&s("k2")));
    assert_eq!(r.len(), 1001);
}
