#!/usr/bin/env python3
"""Two TLS handshakes interleaved on one proxy worker, for tests/tls.rs.

Client A sends its ClientHello (SNI a.example) and reads the proxy's
answer, but holds back its Finished; meanwhile client B (SNI b.example)
makes a whole connection and one request. Then A finishes and makes its
request. Each request asks for the response header `x-sni`, which the
proxy fills from `ssl_fc_sni`. Prints `A <x-sni>` and `B <x-sni>`.

Usage: interleave.py HOST PORT CAFILE
"""
import socket
import ssl
import sys

host, port, cafile = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def context():
    c = ssl.create_default_context(cafile=cafile)
    c.set_alpn_protocols(["http/1.1"])
    return c


def x_sni(resp):
    for line in resp.split(b"\r\n"):
        if line.lower().startswith(b"x-sni:"):
            return line.split(b":", 1)[1].strip().decode()
    return "(none)"


def read_response(read):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = read()
        if not chunk:
            break
        data += chunk
    return data


# A: ClientHello out, the server's flight in, Finished held back.
a_sock = socket.create_connection((host, port), timeout=10)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
a = context().wrap_bio(inc, out, server_hostname="a.example")
try:
    a.do_handshake()
except ssl.SSLWantReadError:
    pass
a_sock.sendall(out.read())
while True:
    data = a_sock.recv(65536)
    if not data:
        sys.exit("A: connection closed during the handshake")
    inc.write(data)
    try:
        a.do_handshake()
        break
    except ssl.SSLWantReadError:
        continue
held = out.read()  # A's Finished, not sent yet

# B: a whole connection and a request while A's handshake is open.
with socket.create_connection((host, port), timeout=10) as raw:
    with context().wrap_socket(raw, server_hostname="b.example") as b:
        b.sendall(b"GET /b HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n")
        print("B", x_sni(read_response(lambda: b.recv(65536))), flush=True)

# A: Finished, then its request.
a_sock.sendall(held)
a.write(b"GET /a HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n")
a_sock.sendall(out.read())


def a_read():
    while True:
        try:
            return a.read(65536)
        except ssl.SSLWantReadError:
            data = a_sock.recv(65536)
            if not data:
                return b""
            inc.write(data)
        except ssl.SSLZeroReturnError:
            return b""


print("A", x_sni(read_response(a_read)), flush=True)
