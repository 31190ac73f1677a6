use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

const MAX: usize = 16384;

/// A file in the temporary directory, removed on drop.
struct TempFile(String);

impl TempFile {
    fn new(content: &[u8]) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "fairlead-reply-{}-{}.tmp",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, content).unwrap();
        TempFile(path.to_string_lossy().into_owned())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn w(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn parse(words: &[String], default: u16) -> Result<(Reply, usize), String> {
    Reply::parse_options(words, default, true, MAX, &HashMap::new())
}

const PAGE_503: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nsorry";

#[test]
fn payload_forms() {
    let f = TempFile::new(b"<h1>hi</h1>");
    let lf = TempFile::new(b"hello %[src]");
    let ef = TempFile::new(PAGE_503);

    let (r, n) = parse(&w("if TRUE"), 200).unwrap();
    assert_eq!((r.status, &r.body, n), (200, &ReplyBody::Empty, 0));

    let (r, n) = parse(
        &w("status 404 content-type text/plain string nope hdr X-A %[src] if x"),
        200,
    )
    .unwrap();
    assert_eq!(n, 9);
    assert_eq!(r.status, 404);
    assert_eq!(
        r.body,
        ReplyBody::String {
            content_type: "text/plain".into(),
            data: Arc::from(&b"nope"[..])
        }
    );
    assert_eq!(r.headers, [("X-A".to_string(), "%[src]".to_string())]);
    assert!(r.warnings.is_empty());

    let (r, _) = parse(&w(&format!("content-type text/html file {}", f.0)), 200).unwrap();
    assert_eq!(
        r.body,
        ReplyBody::File {
            content_type: "text/html".into(),
            data: Arc::from(&b"<h1>hi</h1>"[..])
        }
    );

    let (r, _) = parse(
        &w(&format!("lf-file {} content-type text/plain", lf.0)),
        200,
    )
    .unwrap();
    assert_eq!(
        r.body,
        ReplyBody::LfFile {
            content_type: "text/plain".into(),
            fmt: "hello %[src]".into()
        }
    );

    let words = vec![
        "content-type".into(),
        "text/plain".into(),
        "lf-string".into(),
        "Access denied. IP %[src]".into(),
    ];
    let (r, n) = parse(&words, 403).unwrap();
    assert_eq!(n, 4);
    assert_eq!(
        r.body,
        ReplyBody::LfString {
            content_type: "text/plain".into(),
            fmt: "Access denied. IP %[src]".into()
        }
    );

    let (r, _) = parse(
        &w(&format!(
            "status 503 errorfile {} hdr X-A b content-type t/x",
            ef.0
        )),
        200,
    )
    .unwrap();
    assert_eq!(r.body, ReplyBody::Raw(Arc::from(PAGE_503)));
    assert!(r.headers.is_empty());
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);

    let (r, _) = parse(&w("status 503 default-errorfiles"), 200).unwrap();
    assert_eq!((r.status, r.body), (503, ReplyBody::DefaultError));

    // Empty payloads are dummy responses; content-type is then ignored.
    let empty = TempFile::new(b"");
    let (r, _) = parse(&w(&format!("content-type text/html file {}", empty.0)), 200).unwrap();
    assert_eq!(r.body, ReplyBody::Empty);
    assert_eq!(r.warnings.len(), 1);
    let (r, _) = parse(&w("content-type text/html"), 200).unwrap();
    assert_eq!((r.body, r.warnings.len()), (ReplyBody::Empty, 1));

    // Ignored headers.
    let (r, _) = parse(&w("hdr Content-Length 3 hdr x y"), 200).unwrap();
    assert_eq!(r.headers, [("x".to_string(), "y".to_string())]);
    assert!(r.warnings[0].contains("'Content-Length' always ignored"));

    // `status` refused where not allowed: it ends the options.
    let (r, n) = Reply::parse_options(&w("status 404"), 200, false, MAX, &HashMap::new()).unwrap();
    assert_eq!((r.status, n), (200, 0));
}

#[test]
fn option_errors() {
    let f = TempFile::new(b"x");
    for (line, needle) in [
        ("status 199", "Unexpected status code '199'"),
        ("status 600", "Unexpected status code '600'"),
        ("status", "'status' expects <status_code>"),
        ("content-type", "'content-type' expects <ctype>"),
        (
            "string a lf-string b",
            "unexpected 'lf-string' argument, 'string' already defined",
        ),
        (
            "string abc",
            "a content type must be defined when non-empty payload",
        ),
        (
            "lf-string abc",
            "a content type must be defined with a log-format payload",
        ),
        (
            "status 204 content-type t/p string abc",
            "No body expected for 204 responses",
        ),
        (
            "status 304 content-type t/p lf-string x",
            "No body expected for 304 responses",
        ),
        ("hdr onlyname", "'hdr' expects <name> and <value>"),
        ("hdr bad:name v", "invalid header name"),
        (
            "status 302 default-errorfiles",
            "status code '302' not handled by default with 'default-errorfiles' argument.",
        ),
        ("errorfiles nosuch", "unknown http-errors section 'nosuch'"),
    ] {
        let e = parse(&w(line), 200).unwrap_err();
        assert!(e.contains(needle), "{line}: {e}");
    }
    let e = parse(
        &w("content-type t/p file /nonexistent/fairlead/x.html"),
        200,
    )
    .unwrap_err();
    assert!(
        e.contains("error opening file '/nonexistent/fairlead/x.html'"),
        "{e}"
    );
    let e = parse(&w("errorfile /nonexistent/fairlead/503.http"), 200).unwrap_err();
    assert!(e.contains("'/nonexistent/fairlead/503.http'"), "{e}");
    let big = TempFile::new(&[b'a'; 100]);
    let e = Reply::parse_options(
        &w(&format!("content-type t/p file {}", big.0)),
        200,
        true,
        64,
        &HashMap::new(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        format!("file '{}' exceeds the buffer size (100 > 64)", big.0)
    );
    let e = Reply::parse_options(
        &w(&format!("lf-file {}", f.0)),
        200,
        true,
        MAX,
        &HashMap::new(),
    )
    .unwrap_err();
    assert!(e.contains("content type must be defined"), "{e}");
}

#[test]
fn errorfiles_option_resolution() {
    let mut sections = HttpErrorsSections::new();
    sections.insert(
        "site".into(),
        HashMap::from([(503u16, Arc::from(PAGE_503))]),
    );
    let (r, _) =
        Reply::parse_options(&w("status 503 errorfiles site"), 200, true, MAX, &sections).unwrap();
    assert_eq!(r.body, ReplyBody::Raw(Arc::from(PAGE_503)));
    let (r, _) =
        Reply::parse_options(&w("status 404 errorfiles site"), 200, true, MAX, &sections).unwrap();
    assert_eq!(r.body, ReplyBody::DefaultError);
    assert!(r.warnings[0].contains("status '404' referenced by an http reply not declared"));
}

#[test]
fn deny_forms() {
    let none = HashMap::new();
    let (r, n) = Reply::parse_deny(&w(""), 403, MAX, &none).unwrap();
    assert_eq!((r.status, r.body, n), (403, ReplyBody::DefaultError, 0));
    let (r, n) = Reply::parse_deny(&w("if TRUE"), 500, MAX, &none).unwrap();
    assert_eq!((r.status, r.body, n), (500, ReplyBody::DefaultError, 0));
    let (r, n) = Reply::parse_deny(&w("deny_status 429 unless ok"), 403, MAX, &none).unwrap();
    assert_eq!((r.status, r.body, n), (429, ReplyBody::DefaultError, 2));
    let e = Reply::parse_deny(&w("deny_status 418"), 403, MAX, &none).unwrap_err();
    assert!(
        e.contains("status code '418' not handled by default"),
        "{e}"
    );
    let (r, n) = Reply::parse_deny(
        &w("deny_status 418 content-type t/p string teapot if x"),
        403,
        MAX,
        &none,
    )
    .unwrap();
    assert_eq!((r.status, n), (418, 6));
    assert!(matches!(r.body, ReplyBody::String { .. }));
    let (r, n) = Reply::parse_deny(&w("status 403 hdr X-Why blocked"), 403, MAX, &none).unwrap();
    assert_eq!((r.status, &r.body, n), (403, &ReplyBody::Empty, 5));
    assert!(Reply::parse_deny(&w("deny_status"), 403, MAX, &none).is_err());
}

#[test]
fn http_error_directive() {
    let none = HashMap::new();
    let r = Reply::parse_http_error(
        &w("status 503 content-type text/plain string down"),
        MAX,
        &none,
    )
    .unwrap();
    assert_eq!(r.status, 503);
    let e =
        Reply::parse_http_error(&w("content-type text/plain string x"), MAX, &none).unwrap_err();
    assert!(e.contains("expects at least a <status>"), "{e}");
    let e = Reply::parse_http_error(&w("status 418"), MAX, &none).unwrap_err();
    assert_eq!(e, "status code '418' not handled.");
    let e = Reply::parse_http_error(&w("status 503 bogus"), MAX, &none).unwrap_err();
    assert_eq!(e, "unknown keyword 'bogus'.");

    let mut pages = ErrorPages::new();
    pages.set(503, Arc::from(PAGE_503));
    pages.set_reply(r.clone());
    assert_eq!(pages.get(503), None, "not a raw page any more");
    assert_eq!(pages.reply(503), Some(&r));
    let reset = Reply::parse_http_error(&w("status 503 default-errorfiles"), MAX, &none).unwrap();
    pages.set_reply(reset);
    assert!(pages.is_empty());
}

#[test]
fn errorloc_bytes() {
    assert_eq!(
        errorloc_response(302, "https://example.com/err"),
        b"HTTP/1.1 302 Found\r\nCache-Control: no-cache\r\nContent-length: 0\r\nLocation: https://example.com/err\r\n\r\n"
    );
    assert_eq!(
        errorloc_response(303, "/oops"),
        b"HTTP/1.1 303 See Other\r\nCache-Control: no-cache\r\nContent-length: 0\r\nLocation: /oops\r\n\r\n"
    );
    let none = HashMap::new();
    let mut pages = ErrorPages::new();
    for (line, status, first) in [
        ("errorloc 503 /a", 503, &b"HTTP/1.1 302 Found\r\n"[..]),
        ("errorloc302 500 /b", 500, b"HTTP/1.1 302 Found\r\n"),
        ("errorloc303 403 /c", 403, b"HTTP/1.1 303 See Other\r\n"),
    ] {
        assert_eq!(
            pages.apply_line(&w(line), MAX, &none).unwrap(),
            Some(vec![])
        );
        assert!(pages.get(status).unwrap().starts_with(first), "{line}");
    }
    assert!(pages.get(500).unwrap().ends_with(b"Location: /b\r\n\r\n"));
    let e = pages
        .apply_line(&w("errorloc 302 /x"), MAX, &none)
        .unwrap_err();
    assert_eq!(e, "errorloc : status code '302' not handled.");
    let e = pages
        .apply_line(&w("errorloc303 503"), MAX, &none)
        .unwrap_err();
    assert_eq!(
        e,
        "errorloc303 : expects <status_code> and <url> as arguments."
    );
    assert_eq!(
        pages
            .apply_line(&w("timeout client 5s"), MAX, &none)
            .unwrap(),
        None
    );
}

#[test]
fn errorfile_loading_and_validation() {
    let good = TempFile::new(PAGE_503);
    assert_eq!(&*load_errorfile(&good.0, 503, MAX).unwrap(), PAGE_503);
    // The status in the file need not be the configured one.
    assert!(load_errorfile(&good.0, 403, MAX).is_ok());
    let e = load_errorfile(&good.0, 418, MAX).unwrap_err();
    assert_eq!(e, "status code '418' not handled.");
    for code in ERROR_CODES {
        assert!(load_errorfile(&good.0, code, MAX).is_ok(), "{code}");
    }
    // /dev/null: valid, empty (the connection is just closed).
    assert!(load_errorfile("/dev/null", 408, MAX).unwrap().is_empty());
    let e = load_errorfile("/nonexistent/fairlead/503.http", 503, MAX).unwrap_err();
    assert!(
        e.starts_with("error opening file '/nonexistent/fairlead/503.http'"),
        "{e}"
    );
    let e = load_errorfile(&good.0, 503, 10).unwrap_err();
    assert_eq!(
        e,
        format!(
            "file '{}' exceeds the buffer size ({} > 10)",
            good.0,
            PAGE_503.len()
        )
    );

    for (content, needle) in [
        (&b"<html>not http</html>"[..], "unable to parse headers"),
        (b"HTTP/1.1 503 Oops\r\nContent-Length: 5\r\n", "incomplete"),
        (
            b"HTTP/1.1 100 Continue\r\n\r\n",
            "invalid http status code for an error message (100)",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "chunk-encoded payload not supported",
        ),
        (
            b"HTTP/1.1 204 No Content\r\n\r\nbody",
            "message payload not expected",
        ),
        (
            b"HTTP/1.1 503 X\r\nContent-Length: 0\r\n\r\nbody",
            "message payload not expected",
        ),
        (
            b"HTTP/1.1 503 X\r\nContent-Length: 10\r\n\r\nbody",
            "payload size does not match the announced content-length (4 != 10)",
        ),
        (
            b"HTTP/1.1 503 X\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nbody",
            "conflicting content-length",
        ),
        (
            b"HTTP/1.1 503 X\r\nContent-Length: x\r\n\r\nbody",
            "invalid content-length",
        ),
    ] {
        let f = TempFile::new(content);
        let e = load_errorfile(&f.0, 503, MAX).unwrap_err();
        assert!(e.contains(needle) && e.contains(&f.0), "{e}");
    }
    // Close-delimited bodies and bare LF line ends are accepted.
    let f = TempFile::new(
        b"HTTP/1.0 503 Service Unavailable\nContent-Type: text/html\n\n<h1>down</h1>\n",
    );
    assert!(load_errorfile(&f.0, 503, MAX).is_ok());
}

#[test]
fn proxy_lines_and_http_errors_sections() {
    let p503 = TempFile::new(PAGE_503);
    let p404 = TempFile::new(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    let lines = vec![
        (10, w(&format!("errorfile 503 {}", p503.0))),
        (11, w(&format!("errorfile 404 {}", p404.0))),
        (12, w("errorfile 408 /dev/null")),
        (13, vec![]),
    ];
    let site = parse_http_errors_section("site", &lines, MAX).unwrap();
    assert_eq!(site.len(), 3);
    assert_eq!(&*site[&503], PAGE_503);
    assert!(site[&408].is_empty());

    let bad = vec![
        (1, w("errorfile 418 /dev/null")),
        (2, w("errorfile 503 /nonexistent/fairlead/x.http")),
        (3, w("errorloc 503 /x")),
        (4, w("errorfile 503")),
    ];
    let e = parse_http_errors_section("site", &bad, MAX).unwrap_err();
    assert_eq!(
        e[0],
        (1, "errorfile : status code '418' not handled.".to_string())
    );
    assert!(
        e[1].0 == 2 && e[1].1.contains("/nonexistent/fairlead/x.http"),
        "{e:?}"
    );
    assert_eq!(
        e[2],
        (
            3,
            "unknown keyword 'errorloc' in 'http-errors' section 'site'".to_string()
        )
    );
    assert_eq!(
        e[3],
        (
            4,
            "errorfile : expects <status_code> and <file> as arguments.".to_string()
        )
    );

    let mut sections = HttpErrorsSections::new();
    sections.insert("site".into(), site);

    // Defaults, then the proxy's own lines in order.
    let mut defaults = ErrorPages::new();
    defaults
        .apply_line(&w("errorloc 503 /maint"), MAX, &sections)
        .unwrap();
    let mut px = defaults.clone();
    assert!(px.get(503).unwrap().starts_with(b"HTTP/1.1 302"));
    let warns = px
        .apply_line(&w("errorfiles site"), MAX, &sections)
        .unwrap()
        .unwrap();
    assert!(warns.is_empty());
    assert_eq!(&**px.get(503).unwrap(), PAGE_503);
    assert!(px.get(404).is_some() && px.get(408).is_some());

    let mut px = defaults.clone();
    let warns = px
        .apply_line(&w("errorfiles site 404 500"), MAX, &sections)
        .unwrap()
        .unwrap();
    assert_eq!(
        warns,
        ["status '500' not declared in http-errors section 'site'."]
    );
    assert!(
        px.get(503).unwrap().starts_with(b"HTTP/1.1 302"),
        "503 not imported"
    );
    assert!(px.get(404).is_some() && px.get(408).is_none());

    let e = px
        .apply_line(&w("errorfiles site 302"), MAX, &sections)
        .unwrap_err();
    assert_eq!(e, "errorfiles : status code '302' not handled.");
    let e = px
        .apply_line(&w("errorfiles other"), MAX, &sections)
        .unwrap_err();
    assert_eq!(e, "errorfiles : unknown http-errors section 'other'.");
    let e = px
        .apply_line(
            &w("errorfile 503 /nonexistent/fairlead/y.http"),
            MAX,
            &sections,
        )
        .unwrap_err();
    assert!(
        e.starts_with("errorfile : error opening file '/nonexistent/fairlead/y.http'"),
        "{e}"
    );

    px.apply_line(&w(&format!("errorfile 503 {}", p503.0)), MAX, &sections)
        .unwrap();
    assert_eq!(&**px.get(503).unwrap(), PAGE_503);

    let be = ErrorPages::new();
    assert_eq!(
        ErrorPages::lookup(&be, &px, 503).map(|r| &r.body),
        Some(&ReplyBody::Raw(Arc::from(PAGE_503)))
    );
    assert!(ErrorPages::lookup(&be, &px, 502).is_none());
}

#[test]
fn atol_like_haproxy() {
    assert_eq!(atol("403"), 403);
    assert_eq!(atol("403abc"), 403);
    assert_eq!(atol("abc"), 0);
    assert_eq!(atol(" -5"), -5);
    assert_eq!(atol("99999999999999999999999"), i64::MAX);
}
