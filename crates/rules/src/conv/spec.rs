//! The table of supported converters: names, argument syntax and counts,
//! types and descriptions (the source of [`super::CONVERTERS`] and of
//! the argument-count messages).

use crate::sample::SmpType::{self, Addr, Bin, Bool, Ipv4, Sint, Str};

/// One supported converter: its name, argument syntax, argument count,
/// input and (default) output types, and what it does.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) args: &'static str,
    pub(super) min: usize,
    pub(super) max: usize,
    pub(super) input: SmpType,
    pub(super) output: SmpType,
    pub(super) desc: &'static str,
}

const fn spec(
    name: &'static str,
    args: &'static str,
    min: usize,
    max: usize,
    input: SmpType,
    output: SmpType,
    desc: &'static str,
) -> Spec {
    Spec {
        name,
        args,
        min,
        max,
        input,
        output,
        desc,
    }
}

const AVAL: &str = "[<avalanche>]";
const VALUE: &str = "<value>";

#[rustfmt::skip]
pub(super) const SPECS: &[Spec] = &[
    spec("add", VALUE, 1, 1, Sint, Sint, "adds an integer or a variable (saturates)"),
    spec("add_item", "<delim>,[<var>][,<suffix>]", 2, 3, Str, Str, "appends a delimiter (only after a non-empty input), a variable and a suffix"),
    spec("and", VALUE, 1, 1, Sint, Sint, "bitwise AND with an integer or a variable"),
    spec("b64dec", "", 0, 0, Str, Bin, "decodes base64"),
    spec("base64", "", 0, 0, Bin, Str, "encodes as base64"),
    spec("bool", "", 0, 0, Sint, Bool, "true if the integer is not 0"),
    spec("bytes", "<offset>[,<length>]", 1, 2, Bin, Bin, "extracts bytes from an offset, optionally up to a length"),
    spec("concat", "[<start>],[<var>][,<end>]", 1, 3, Str, Str, "appends a string, a variable and a string"),
    spec("cpl", "", 0, 0, Sint, Sint, "ones' complement"),
    spec("crc32", AVAL, 0, 1, Bin, Sint, "CRC-32 (IEEE) as an unsigned 32-bit integer"),
    spec("crc32c", AVAL, 0, 1, Bin, Sint, "CRC-32C (Castagnoli) as an unsigned 32-bit integer"),
    spec("cut_crlf", "", 0, 0, Str, Str, "cuts the string at the first CR or LF"),
    spec("digest", "<algorithm>", 1, 1, Bin, Bin, "message digest: sha1, sha224, sha256, sha384 or sha512"),
    spec("div", VALUE, 1, 1, Sint, Sint, "divides by an integer or a variable (by 0: the largest integer)"),
    spec("djb2", AVAL, 0, 1, Bin, Sint, "DJB2 hash as an unsigned 32-bit integer"),
    spec("even", "", 0, 0, Sint, Bool, "true if the integer is even"),
    spec("field", "<index>,<delimiters>[,<count>]", 2, 3, Str, Str, "extracts delimited fields (negative index: from the end)"),
    spec("hex", "", 0, 0, Bin, Str, "encodes as uppercase hexadecimal"),
    spec("hex2i", "", 0, 0, Str, Sint, "reads a hexadecimal string as an integer"),
    spec("htonl", "", 0, 0, Sint, Bin, "the integer as 4 bytes in network order"),
    spec("iif", "<true>,<false>", 2, 2, Bool, Str, "one of two strings depending on a boolean"),
    spec("ipmask", "<mask4>[,<mask6>]", 1, 2, Addr, Ipv4, "masks an address (IPv6 needs <mask6>)"),
    spec("json", "[<input-code>]", 0, 1, Str, Str, "escapes for a JSON string (ascii, utf8, utf8s, utf8p, utf8ps)"),
    spec("length", "", 0, 0, Str, Sint, "length of the string in bytes"),
    spec("lower", "", 0, 0, Str, Str, "lowercases ASCII letters"),
    spec("ltrim", "<chars>", 1, 1, Str, Str, "removes the given characters at the start"),
    spec("mod", VALUE, 1, 1, Sint, Sint, "remainder of the division by an integer or a variable (by 0: 0)"),
    spec("mul", VALUE, 1, 1, Sint, Sint, "multiplies by an integer or a variable (saturates)"),
    spec("nbsrv", "", 0, 0, Str, Sint, "usable servers of the backend named by the input"),
    spec("neg", "", 0, 0, Sint, Sint, "the opposite value"),
    spec("not", "", 0, 0, Sint, Bool, "true if the integer is 0"),
    spec("odd", "", 0, 0, Sint, Bool, "true if the integer is odd"),
    spec("or", VALUE, 1, 1, Sint, Sint, "bitwise OR with an integer or a variable"),
    spec("regsub", "<regex>,<subst>[,<flags>]", 2, 3, Str, Str, "regex substitution (flags: i, g; \\1..\\9 in <subst>)"),
    spec("rtrim", "<chars>", 1, 1, Str, Str, "removes the given characters at the end"),
    spec("sdbm", AVAL, 0, 1, Bin, Sint, "SDBM hash as an unsigned 32-bit integer"),
    spec("sha1", "", 0, 0, Bin, Bin, "SHA-1 digest (20 bytes)"),
    spec("sha2", "[<bits>]", 0, 1, Bin, Bin, "SHA-2 digest: 224, 256 (default), 384 or 512 bits"),
    spec("strcmp", "<var>", 1, 1, Str, Sint, "compares with a variable like strcmp(3)"),
    spec("sub", VALUE, 1, 1, Sint, Sint, "subtracts an integer or a variable (saturates)"),
    spec("ub64dec", "", 0, 0, Str, Bin, "decodes base64url"),
    spec("ub64enc", "", 0, 0, Bin, Str, "encodes as base64url without padding"),
    spec("upper", "", 0, 0, Str, Str, "uppercases ASCII letters"),
    spec("url_dec", "[<in_form>]", 0, 1, Str, Str, "decodes %XX ('+' is a space in forms or after '?')"),
    spec("url_enc", "[<enc_type>]", 0, 1, Str, Str, "query-string encoding (%XX)"),
    spec("word", "<index>,<delimiters>[,<count>]", 2, 3, Str, Str, "extracts words (runs of delimiters count once)"),
    spec("wt6", AVAL, 0, 1, Bin, Sint, "WT6 hash as an unsigned 32-bit integer"),
    spec("xor", VALUE, 1, 1, Sint, Sint, "bitwise XOR with an integer or a variable"),
    spec("xxh3", "[<seed>]", 0, 1, Bin, Sint, "64-bit XXH3 hash (signed)"),
    spec("xxh32", "[<seed>]", 0, 1, Bin, Sint, "32-bit XXH32 hash (unsigned)"),
    spec("xxh64", "[<seed>]", 0, 1, Bin, Sint, "64-bit XXH64 hash (signed)"),
];

const MAP_DOC: (&str, &str) = (
    "map, map_<match>[_<out>]",
    "looks the input up in a map file: <match> is str, beg, sub, dir, dom, end, reg, regm, int or ip; <out> is str, int or ip",
);

const STICK_DOC: (&str, &str) = (
    "in_table, table_<data>",
    "looks the input up in a stick table (`in_table(<table>)`: whether it is there; `table_<data>([<idx>,]<table>)`: the entry's value, 0 when absent): bytes_in_rate, bytes_out_rate, conn_cnt, conn_cur, conn_rate, gpt, gpt0, gpc, gpc0, gpc1, gpc_rate, gpc0_rate, gpc1_rate, http_err_cnt, http_err_rate, http_fail_cnt, http_fail_rate, http_req_cnt, http_req_rate, kbytes_in, kbytes_out, server_id, sess_cnt, sess_rate, trackers",
);

pub(super) const fn converters_table() -> [(&'static str, &'static str); SPECS.len() + 2] {
    let mut out = [MAP_DOC; SPECS.len() + 2];
    out[1] = STICK_DOC;
    let mut i = 0;
    while i < SPECS.len() {
        out[i + 2] = (SPECS[i].name, SPECS[i].desc);
        i += 1;
    }
    out
}
