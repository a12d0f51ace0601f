"""Answers GET / with whether MySQL and Redis, found through the
DATABASE_URL and REDIS_URL that sbf injects, answer. Standard library only."""

import json
import os
import socket
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit


def mysql_version(url):
    # A MySQL server greets first: length (3), sequence (1), protocol 10,
    # then its version as a NUL-terminated string.
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port or 3306), timeout=3) as s:
        greeting = s.recv(256)
    return greeting[5:greeting.index(b"\0", 5)].decode()


def redis_ping(url):
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port or 6379), timeout=3) as s:
        s.sendall(b"PING\r\n")
        return s.recv(64).decode().strip().lstrip("+")


def check(probe, name):
    try:
        return probe(os.environ[name])
    except Exception as e:  # report, never crash the page
        return f"error: {e}"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({
            "mysql": check(mysql_version, "DATABASE_URL"),
            "redis": check(redis_ping, "REDIS_URL"),
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body + b"\n")


HTTPServer(("0.0.0.0", 8080), Handler).serve_forever()
