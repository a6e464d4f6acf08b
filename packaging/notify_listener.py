#!/usr/bin/env python3
"""Stands in for systemd's side of Type=notify (the machine the .deb test
runs on has no systemd running): binds the datagram socket a service's
NOTIFY_SOCKET names and appends each notification it receives to a file,
one per line (its KEY=value lines joined with ' | '), until it is killed.

    packaging/notify_listener.py SOCKET_PATH OUT_FILE [OWNER]

OWNER: a user that may send to the socket (the service's User=)."""
import os
import pwd
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
if len(sys.argv) > 3:
    os.chown(path, pwd.getpwnam(sys.argv[3]).pw_uid, -1)
os.chmod(path, 0o600)
with open(out, "a", buffering=1) as f:
    print("LISTENING", file=f)
    while True:
        data = s.recv(4096)
        print(data.decode("utf-8", "replace").replace("\n", " | "), file=f)
