//! `proxy-v2-options` and the `send-proxy-v2-ssl*` shortcuts: what a
//! server's PROXY protocol v2 header carries besides the addresses.

/// The TLVs a `send-proxy-v2` header adds. Each is off by default; the
/// ALPN negotiated with the client is always sent when there is one, as
/// HAProxy does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyV2Options {
    /// `ssl` (also `send-proxy-v2-ssl`): the `PP2_TYPE_SSL` TLV with the
    /// client connection's TLS flags and version. Default is off.
    pub ssl: bool,
    /// `cert-cn` (also `send-proxy-v2-ssl-cn`): the client certificate's
    /// common name in the SSL TLV; implies `ssl`. Default is off.
    pub cert_cn: bool,
    /// `ssl-cipher`: the cipher in the SSL TLV; implies `ssl`. Default is
    /// off.
    pub ssl_cipher: bool,
    /// `cert-sig`: the signature algorithm of the certificate the
    /// frontend presented to the client (`RSA-SHA256`), in the SSL TLV;
    /// implies `ssl`, as in HAProxy. Default is off.
    pub cert_sig: bool,
    /// `cert-key`: the key algorithm and size of that certificate
    /// (`RSA2048`, `EC256`), in the SSL TLV; implies `ssl`. Default is
    /// off.
    pub cert_key: bool,
    /// `authority`: the AUTHORITY TLV received from the client's own
    /// PROXY header, else the client's SNI. Default is off.
    pub authority: bool,
    /// `unique-id`: the stream's unique id (`unique-id-format`). Default
    /// is off.
    pub unique_id: bool,
    /// `crc32c`: a CRC32C checksum of the header. Default is off.
    pub crc32c: bool,
}

impl ProxyV2Options {
    /// Applies a comma-separated `proxy-v2-options` list.
    pub fn parse_into(&mut self, list: &str) -> Result<(), String> {
        for opt in list.split(',') {
            match opt {
                "ssl" => self.ssl = true,
                // The SSL sub-TLV options imply the SSL TLV, as in HAProxy
                // (checked with 2.6.12: `ssl-cipher` alone sends it).
                "cert-cn" => {
                    self.ssl = true;
                    self.cert_cn = true;
                }
                "ssl-cipher" => {
                    self.ssl = true;
                    self.ssl_cipher = true;
                }
                "authority" => self.authority = true,
                "unique-id" => self.unique_id = true,
                "crc32c" => self.crc32c = true,
                "cert-sig" => {
                    self.ssl = true;
                    self.cert_sig = true;
                }
                "cert-key" => {
                    self.ssl = true;
                    self.cert_key = true;
                }
                _ => {
                    return Err(format!(
                        "'proxy-v2-options' : '{opt}' is not a valid option (expected one of ssl, cert-cn, ssl-cipher, cert-sig, cert-key, authority, crc32c, unique-id)"
                    ))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_list_and_refuses_unknown_options() {
        let mut o = ProxyV2Options::default();
        o.parse_into("ssl,cert-cn,authority,unique-id,crc32c,ssl-cipher")
            .unwrap();
        assert!(o.ssl && o.cert_cn && o.authority && o.unique_id && o.crc32c && o.ssl_cipher);
        let e = ProxyV2Options::default()
            .parse_into("ssl,bogus")
            .unwrap_err();
        assert!(e.contains("'bogus' is not a valid option"), "{e}");
        for opt in ["cert-cn", "ssl-cipher"] {
            let mut o = ProxyV2Options::default();
            o.parse_into(opt).unwrap();
            assert!(o.ssl, "{opt} implies ssl");
        }
        let mut o = ProxyV2Options::default();
        o.parse_into("cert-sig").unwrap();
        assert!(o.ssl && o.cert_sig && !o.cert_key);
        let mut o = ProxyV2Options::default();
        o.parse_into("cert-key").unwrap();
        assert!(o.ssl && o.cert_key && !o.cert_sig);
    }
}
