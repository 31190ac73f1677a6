//! The fetch catalog: names, output types, data classes and
//! descriptions, aliases, and the HAProxy fetches Fairlead lacks.

use super::usage;
use crate::sample::SmpType;

/// One catalog line: name, output type, data class, short description.
pub const FETCHES: &[(&str, SmpType, u8, &str)] = {
    use usage::*;
    use SmpType as T;
    &[
        ("method", T::Meth, L7REQ, "the request method"),
        ("req.proto_http", T::Bool, L7REQ, "the request is HTTP"),
        (
            "path",
            T::Str,
            L7REQ,
            "the request path, without the query string",
        ),
        ("pathq", T::Str, L7REQ, "the path and the query string"),
        (
            "base",
            T::Str,
            L7REQ,
            "the first Host header followed by the path",
        ),
        ("url", T::Str, L7REQ, "the request target as received"),
        (
            "query",
            T::Str,
            L7REQ,
            "the query string, after the first '?'",
        ),
        (
            "url_param",
            T::Str,
            L7REQ,
            "url_param(name[,delim]): a query string parameter (alias urlp)",
        ),
        (
            "req.ver",
            T::Str,
            L7REQ,
            "the request's HTTP version (\"1.1\"; alias req_ver)",
        ),
        (
            "req.hdr",
            T::Str,
            L7REQ,
            "req.hdr([name[,occ]]): header values, comma-separated values split (alias hdr)",
        ),
        (
            "req.fhdr",
            T::Str,
            L7REQ,
            "req.fhdr(name[,occ]): full header values",
        ),
        (
            "req.hdr_cnt",
            T::Sint,
            L7REQ,
            "req.hdr_cnt([name]): how many values (alias hdr_cnt)",
        ),
        (
            "req.hdr_names",
            T::Str,
            L7REQ,
            "the header names, comma-separated",
        ),
        (
            "req.cook",
            T::Str,
            L7REQ,
            "req.cook(name): a request cookie's value (alias cook)",
        ),
        (
            "req.cook_cnt",
            T::Sint,
            L7REQ,
            "req.cook_cnt([name]): how many such cookies (alias cook_cnt)",
        ),
        (
            "http_auth",
            T::Bool,
            L7REQ,
            "http_auth(userlist): valid Basic credentials",
        ),
        (
            "http_auth_group",
            T::Str,
            L7REQ,
            "http_auth_group(userlist): the authenticated user's groups, for ACLs",
        ),
        (
            "http_auth_user",
            T::Str,
            L7REQ,
            "the user name sent in Basic credentials",
        ),
        (
            "req.body",
            T::Bin,
            L7REQ,
            "the buffered request body (option http-buffer-request)",
        ),
        (
            "req.body_len",
            T::Sint,
            L7REQ,
            "the length of the buffered request body",
        ),
        (
            "req.len",
            T::Sint,
            L6REQ,
            "bytes in the request buffer (alias req_len)",
        ),
        (
            "req.payload",
            T::Bin,
            L6REQ,
            "req.payload(offset,length): request buffer bytes",
        ),
        (
            "req.ssl_sni",
            T::Str,
            L6REQ,
            "the SNI of a TLS ClientHello in the request buffer (alias req_ssl_sni)",
        ),
        (
            "req.ssl_hello_type",
            T::Sint,
            L6REQ,
            "1 when the request buffer holds a TLS ClientHello (alias req_ssl_hello_type)",
        ),
        (
            "req.rdp_cookie",
            T::Str,
            L6REQ,
            "req.rdp_cookie([name]): the RDP cookie of the request buffer, any name by default (alias rdp_cookie)",
        ),
        (
            "req.rdp_cookie_cnt",
            T::Sint,
            L6REQ,
            "req.rdp_cookie_cnt([name]): 1 when the request buffer has that RDP cookie, else 0 (alias rdp_cookie_cnt)",
        ),
        ("res.len", T::Sint, L6RES, "bytes in the response buffer"),
        (
            "res.payload",
            T::Bin,
            L6RES,
            "res.payload(offset,length): response buffer bytes",
        ),
        (
            "wait_end",
            T::Bool,
            INTERNAL,
            "true once the inspect-delay expired (MISS before)",
        ),
        ("status", T::Sint, L7RES, "the response status"),
        (
            "res.ver",
            T::Str,
            L7RES,
            "the response's HTTP version (alias resp_ver)",
        ),
        (
            "res.hdr",
            T::Str,
            L7RES,
            "res.hdr([name[,occ]]): response header values (alias shdr)",
        ),
        (
            "res.fhdr",
            T::Str,
            L7RES,
            "res.fhdr(name[,occ]): full response header values",
        ),
        (
            "res.hdr_cnt",
            T::Sint,
            L7RES,
            "res.hdr_cnt([name]) (alias shdr_cnt)",
        ),
        (
            "res.cook",
            T::Str,
            L7RES,
            "res.cook(name): a Set-Cookie value (alias scook)",
        ),
        ("src", T::Addr, L4, "the client's address"),
        ("src_port", T::Sint, L4, "the client's port"),
        ("dst", T::Addr, L4, "the address the client connected to"),
        ("dst_port", T::Sint, L4, "the port the client connected to"),
        (
            "fc_rcvd_proxy",
            T::Bool,
            L4,
            "the connection started with a PROXY protocol header",
        ),
        (
            "fc_pp_authority",
            T::Str,
            L4,
            "the PROXY v2 header's AUTHORITY TLV (the client's SNI)",
        ),
        (
            "fc_pp_unique_id",
            T::Str,
            L4,
            "the PROXY v2 header's UNIQUE_ID TLV",
        ),
        ("ssl_fc", T::Bool, L5, "the client connection uses TLS"),
        ("ssl_fc_sni", T::Str, L5, "the SNI the client sent"),
        ("ssl_fc_alpn", T::Str, L5, "the protocol ALPN selected"),
        ("ssl_fc_protocol", T::Str, L5, "the TLS version (TLSv1.3)"),
        ("ssl_fc_cipher", T::Str, L5, "the cipher suite"),
        (
            "ssl_fc_is_resumed",
            T::Bool,
            L5,
            "the TLS session was resumed",
        ),
        (
            "ssl_c_used",
            T::Bool,
            L5,
            "the client presented a certificate",
        ),
        (
            "ssl_c_verify",
            T::Sint,
            L5,
            "the client certificate's verification result (0: ok)",
        ),
        (
            "ssl_c_s_dn",
            T::Str,
            L5,
            "the client certificate's subject DN",
        ),
        ("var", T::Any, INTERNAL, "var(name[,default]): a variable"),
        (
            "nbsrv",
            T::Sint,
            INTERNAL,
            "nbsrv([backend]): usable servers",
        ),
        ("be_name", T::Str, INTERNAL, "the backend's name"),
        ("fe_name", T::Str, INTERNAL, "the frontend's name"),
        ("srv_name", T::Str, INTERNAL, "the server's name"),
        (
            "srv_id",
            T::Sint,
            INTERNAL,
            "the server's id (in responses)",
        ),
        ("hostname", T::Str, INTERNAL, "the machine's host name"),
        (
            "unique-id",
            T::Str,
            INTERNAL,
            "the transaction's (HTTP) or stream's (TCP) unique id (`unique-id-format`)",
        ),
        ("uuid", T::Str, INTERNAL, "uuid([4]): a random UUID"),
        ("rand", T::Sint, INTERNAL, "rand([range]): a random integer"),
        ("always_true", T::Bool, INTERNAL, "true"),
        ("always_false", T::Bool, INTERNAL, "false"),
        ("int", T::Sint, INTERNAL, "int(value): a constant"),
        ("str", T::Str, INTERNAL, "str(value): a constant"),
        ("bool", T::Bool, INTERNAL, "bool(value): a constant"),
        ("ipv4", T::Ipv4, INTERNAL, "ipv4(value): a constant"),
        ("ipv6", T::Ipv6, INTERNAL, "ipv6(value): a constant"),
        ("meth", T::Meth, INTERNAL, "meth(value): a constant"),
        (
            "env",
            T::Str,
            INTERNAL,
            "env(name): an environment variable",
        ),
        (
            "date",
            T::Sint,
            INTERNAL,
            "date([offset]): seconds since the epoch",
        ),
        ("pid", T::Sint, INTERNAL, "the process id"),
    ]
};

/// Older and shorter names of catalog fetches: (alias, catalog name).
pub const ALIASES: &[(&str, &str)] = &[
    ("hdr", "req.hdr"),
    ("fhdr", "req.fhdr"),
    ("hdr_cnt", "req.hdr_cnt"),
    ("cook", "req.cook"),
    ("cook_cnt", "req.cook_cnt"),
    ("urlp", "url_param"),
    ("req_ver", "req.ver"),
    ("req_len", "req.len"),
    ("req_ssl_sni", "req.ssl_sni"),
    ("req_ssl_hello_type", "req.ssl_hello_type"),
    ("rdp_cookie", "req.rdp_cookie"),
    ("rdp_cookie_cnt", "req.rdp_cookie_cnt"),
    ("resp_ver", "res.ver"),
    ("shdr", "res.hdr"),
    ("shdr_cnt", "res.hdr_cnt"),
    ("scook", "res.cook"),
    ("req.cookie", "req.cook"),
];

/// HAProxy fetches Fairlead does not have yet (stick tables, captures,
/// and a few others), so that `-c` says "not implemented" for them.
fn is_haproxy_fetch(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sc_", "sc0_", "sc1_", "sc2_", "table_", "capture.", "ssl_c_", "ssl_f_", "ssl_bc", "fc_",
        "bc_",
    ];
    const NAMES: &[&str] = &[
        "src_conn_cur",
        "src_conn_cnt",
        "src_conn_rate",
        "src_sess_cnt",
        "src_sess_rate",
        "src_http_req_cnt",
        "src_http_req_rate",
        "src_http_err_cnt",
        "src_http_err_rate",
        "src_get_gpc0",
        "src_get_gpc1",
        "src_inc_gpc0",
        "src_inc_gpc1",
        "src_clr_gpc0",
        "src_gpc0_rate",
        "src_kbytes_in",
        "src_kbytes_out",
        "src_bytes_in_rate",
        "src_bytes_out_rate",
        "src_updt_conn_cnt",
        "src_get_gpt0",
        "src_trackers",
        "unique-id",
        "req.hdrs",
        "req.hdrs_bin",
        "res.body",
        "so_id",
        "connslots",
        "be_conn",
        "be_conn_free",
        "be_sess_rate",
        "fe_conn",
        "fe_req_rate",
        "fe_sess_rate",
        "queue",
        "avg_queue",
        "srv_conn",
        "srv_is_up",
        "srv_queue",
        "srv_sess_rate",
        "wait_end",
        "stopping",
        "lat_ns_avg",
        "lat_ns_tot",
        "cpu_calls",
        "be_id",
        "fe_id",
        "ssl_fc_has_crt",
        "ssl_fc_has_sni",
        "ssl_fc_session_id",
        "ssl_fc_cipherlist_bin",
        "req.ssl_ver",
        "req_ssl_ver",
        "req.ssl_alpn",
        "req.ssl_st_ext",
        "req.ssl_ec_ext",
        "res.ssl_hello_type",
        "http_first_req",
        "url_ip",
        "url_port",
        "urlp_val",
        "res.cook_cnt",
        "res.cook_val",
        "cook_val",
        "var_get",
        "thread",
        "nbproc",
        "proc",
        "ltime",
        "utime",
        "res.comp",
        "res.comp_algo",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// The error for a fetch name that is not in the catalog.
pub fn unknown(name: &str) -> String {
    if is_haproxy_fetch(name) {
        format!("fetch method '{name}' is not implemented yet in Fairlead")
    } else {
        format!("unknown fetch method '{name}'")
    }
}

/// Resolves an alias to its catalog name.
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, c)| c)
}

/// Whether `name` (or its alias) is a known fetch.
pub fn exists(name: &str) -> bool {
    let n = canonical(name);
    FETCHES.iter().any(|f| f.0 == n) || fairlead_stick::fetch::parse_fetch(n).is_some()
}
