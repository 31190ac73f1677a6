//! HAProxy-style canned error responses and [`HttpError`] constructors.
//!
//! Every page is a `&'static [u8]` built at compile time with `concat!`;
//! the `content-length` values are literals checked against the real body
//! length by the unit tests below.

use crate::HttpError;

impl HttpError {
    /// Builds an error; `const` so parsers can keep them cheap.
    pub const fn new(status: u16, reason: &'static str, offset: usize) -> Self {
        HttpError {
            status,
            reason,
            offset,
        }
    }
}

impl HttpError {
    /// True when the start line itself was rejected (not HTTP/1.x, bad
    /// status code, invalid method or target): the peer probably does not
    /// speak HTTP at all, e.g. a health check reaching an SSH or Redis port.
    pub fn in_start_line(&self) -> bool {
        crate::request::START_LINE_REASONS.contains(&self.reason)
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}) at byte {}",
            self.reason, self.status, self.offset
        )
    }
}

impl std::error::Error for HttpError {}

/// One complete response: status line, the four fixed headers, HTML body.
/// `$title` is both the status line text and the `<h1>`; `$len` is the body
/// length as a literal (verified by tests).
macro_rules! page {
    ($title:literal, $len:literal, $msg:literal) => {
        concat!(
            "HTTP/1.1 ",
            $title,
            "\r\ncontent-length: ",
            $len,
            "\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n",
            "<html><body><h1>",
            $title,
            "</h1>\n",
            $msg,
            "\n</body></html>\n"
        )
        .as_bytes()
    };
}

/// The complete HAProxy-style error response for `status` (400, 403, 408,
/// 413, 414, 421, 422, 425, 429, 431, 500, 501, 502, 503, 504; others map to
/// 500).
/// Each carries `content-length`, `cache-control: no-cache`,
/// `content-type: text/html` and `connection: close`, and HAProxy's HTML
/// body, e.g. `<html><body><h1>503 Service Unavailable</h1>\nNo server is
/// available to handle this request.\n</body></html>\n`.
///
/// Also available, as in HAProxy: 200 (monitor-uri's "Service ready."),
/// 404, 405 and 410 (useful for `deny_status`).
pub fn error_response(status: u16) -> &'static [u8] {
    match status {
        200 => page!("200 OK", "58", "Service ready."),
        400 => page!(
            "400 Bad request",
            "90",
            "Your browser sent an invalid request."
        ),
        403 => page!(
            "403 Forbidden",
            "93",
            "Request forbidden by administrative rules."
        ),
        404 => page!("404 Not Found", "83", "The resource could not be found."),
        405 => page!(
            "405 Method Not Allowed",
            "146",
            "A request was made of a resource using a request method not supported by that resource"
        ),
        408 => page!(
            "408 Request Time-out",
            "110",
            "Your browser didn't send a complete request in time."
        ),
        410 => page!(
            "410 Gone",
            "114",
            "The resource is no longer available and will not be available again."
        ),
        413 => page!(
            "413 Payload Too Large",
            "106",
            "The request entity exceeds the maximum allowed."
        ),
        414 => page!("414 URI Too Long", "83", "The request line is too long."),
        421 => page!(
            "421 Misdirected Request",
            "104",
            "Request sent to a non-authoritative server."
        ),
        422 => page!(
            "422 Unprocessable Content",
            "116",
            "The server cannot process the contained instructions."
        ),
        425 => page!("425 Too Early", "80", "Your browser sent early data."),
        429 => page!(
            "429 Too Many Requests",
            "117",
            "You have sent too many requests in a given amount of time."
        ),
        431 => page!(
            "431 Request Header Fields Too Large",
            "132",
            "Your browser sent request header fields that are too large."
        ),
        501 => page!(
            "501 Not Implemented",
            "135",
            "The server does not support the functionality required to fulfill the request."
        ),
        502 => page!(
            "502 Bad Gateway",
            "107",
            "The server returned an invalid or incomplete response."
        ),
        503 => page!(
            "503 Service Unavailable",
            "107",
            "No server is available to handle this request."
        ),
        504 => page!(
            "504 Gateway Time-out",
            "92",
            "The server didn't respond in time."
        ),
        _ => page!(
            "500 Internal Server Error",
            "97",
            "An internal server error occurred."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[u16] = &[
        200, 400, 403, 404, 405, 408, 410, 413, 414, 421, 422, 425, 429, 431, 500, 501, 502, 503,
        504,
    ];

    fn split(page: &[u8]) -> (&str, &str) {
        let s = std::str::from_utf8(page).unwrap();
        let i = s.find("\r\n\r\n").unwrap();
        (&s[..i + 4], &s[i + 4..])
    }

    #[test]
    fn content_length_matches_body_for_every_status() {
        for &st in ALL.iter().chain(&[0u16, 302, 599, 999]) {
            let (head, body) = split(error_response(st));
            let cl: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(cl, body.len(), "status {st}");
        }
    }

    #[test]
    fn status_line_and_headers() {
        for &st in ALL {
            let (head, body) = split(error_response(st));
            assert!(head.starts_with(&format!("HTTP/1.1 {st} ")), "{head}");
            assert!(head.contains("\r\ncache-control: no-cache\r\n"));
            assert!(head.contains("\r\ncontent-type: text/html\r\n"));
            assert!(head.contains("\r\nconnection: close\r\n"));
            assert!(body.starts_with(&format!("<html><body><h1>{st} ")));
            assert!(body.ends_with("\n</body></html>\n"));
            // The status line text and the <h1> agree.
            let title = &head["HTTP/1.1 ".len()..head.find("\r\n").unwrap()];
            assert!(body.contains(&format!("<h1>{title}</h1>")));
        }
    }

    #[test]
    fn exact_503() {
        assert_eq!(
            error_response(503),
            &b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"[..]
        );
    }

    #[test]
    fn unknown_maps_to_500() {
        assert_eq!(error_response(418), error_response(500));
        assert!(error_response(999).starts_with(b"HTTP/1.1 500 Internal Server Error\r\n"));
    }

    #[test]
    fn display() {
        let e = HttpError::new(400, "bad", 3);
        assert_eq!(e.to_string(), "bad (400) at byte 3");
    }
}
