"""Where and who: the same settings, environment variables and config file
as ``baton ctl`` (docs/ctl.md, "Connecting").

Precedence: an argument given to ``Client(...)`` beats the environment, which
beats the config file. The config file is ``config=``, else ``BATON_CONFIG``,
else ``~/.config/baton/ctl.yaml`` if present; its keys are ctl's: ``addr``,
``token``, ``token_file``, ``ca_file``, ``insecure``, ``output`` (ignored
here). This client speaks HTTPS only, so ``insecure`` (``BATON_INSECURE=1``)
is refused unless a CA file is given to the constructor.

One extension: ``BATON_ADDR`` and ``addr`` (and ``addresses=``) may name
several nodes separated by commas, tried in turn when one does not answer;
``baton ctl`` takes one address, so keep a list out of a config file that
ctl reads too.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Union

from .errors import ConfigError

DEFAULT_ADDR = "127.0.0.1:7001"
CONFIG_KEYS = ("addr", "token", "token_file", "output", "ca_file", "insecure")
_TRUE = {"true", "yes", "on", "y"}
_FALSE = {"false", "no", "off", "n"}


@dataclass(frozen=True)
class Settings:
    addresses: List[str]
    token: Optional[str] = field(repr=False)  # never in a repr
    ca_file: Optional[str]  # None: the system's trusted roots
    config_path: Optional[str]


def split_addr(addr: str) -> tuple:
    """"HOST:PORT" (or "[V6]:PORT") -> (host, port); ConfigError otherwise."""
    a = addr.strip()
    colon = a.rfind(":")
    if colon <= 0 or colon == len(a) - 1 or not a[colon + 1:].isdigit():
        raise ConfigError(f"address '{addr}' is not HOST:PORT")
    host = a[:colon]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or "/" in host:
        raise ConfigError(f"address '{addr}' is not HOST:PORT")
    return host, int(a[colon + 1:])


def parse_addresses(value: Union[str, Sequence[str]]) -> List[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out = [a.strip() for a in items if a and a.strip()]
    if not out:
        raise ConfigError("no node address given (HOST:PORT)")
    for a in out:
        split_addr(a)
    return out


def _unquote(raw: str, where: str) -> str:
    v = raw.strip()
    if len(v) >= 2 and v[0] == v[-1] == "'":
        return v[1:-1].replace("''", "'")
    if len(v) >= 2 and v[0] == v[-1] == '"':
        out, i, body = [], 0, v[1:-1]
        escapes = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "0": "\0"}
        while i < len(body):
            ch = body[i]
            if ch == "\\" and i + 1 < len(body) and body[i + 1] in escapes:
                out.append(escapes[body[i + 1]])
                i += 2
                continue
            out.append(ch)
            i += 1
        return "".join(out)
    if v[:1] in ("'", '"', "[", "{", "&", "*", "!", "|", ">"):
        raise ConfigError(f"{where}: only plain and quoted scalars are understood here")
    return v


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def parse_config_text(text: str, path: str) -> Dict[str, str]:
    """ctl's config file: a flat YAML map of scalars (the subset ctl's keys need)."""
    out: Dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).rstrip()
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        if line[0] in " \t":
            raise ConfigError(f"{path}:{n}: nested values are not config keys")
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{path}:{n}: expected 'key: value'")
        if key not in CONFIG_KEYS:
            raise ConfigError(f"{path}: unknown key '{key}' (known: {', '.join(CONFIG_KEYS)})")
        if key in out:
            raise ConfigError(f"{path}:{n}: key '{key}' given twice")
        v = _unquote(value, f"{path}:{n}")
        if v in ("", "~", "null") and value.strip()[:1] not in ("'", '"'):
            continue  # null: as if absent
        out[key] = v
    return out


def read_token_file(path: str) -> str:
    try:
        with open(path, "r", encoding="utf-8") as f:
            token = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read token file {path}: {e.strerror or e}") from None
    return token.rstrip("\r\n ")


def resolve(addresses: Union[str, Sequence[str], None] = None, token: Optional[str] = None,
            token_file: Optional[str] = None, ca_file: Optional[str] = None, config: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings in force: arguments, then the environment, then the file."""
    env = os.environ if env is None else env
    path = config or env.get("BATON_CONFIG") or None
    named = path is not None
    if not named and env.get("HOME"):
        path = os.path.join(env["HOME"], ".config", "baton", "ctl.yaml")
    file: Dict[str, str] = {}
    if path:
        try:
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            if named:
                raise ConfigError(f"cannot read config file {path}") from None
            path = None
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
        else:
            file = parse_config_text(text, path)

    if addresses is not None:
        addrs = parse_addresses(addresses)
    elif env.get("BATON_ADDR"):
        addrs = parse_addresses(env["BATON_ADDR"])
    else:
        addrs = parse_addresses(file.get("addr", DEFAULT_ADDR))

    if token is not None:
        tok: Optional[str] = token
    elif token_file is not None:
        tok = read_token_file(token_file)
    elif env.get("BATON_TOKEN"):
        tok = env["BATON_TOKEN"]
    elif env.get("BATON_TOKEN_FILE"):
        tok = read_token_file(env["BATON_TOKEN_FILE"])
    elif "token" in file:
        tok = file["token"]
    elif "token_file" in file:
        tok = read_token_file(file["token_file"])
    else:
        tok = None
    if tok is not None and ("\r" in tok or "\n" in tok):
        raise ConfigError("the token holds a line break")

    if ca_file is not None:
        ca: Optional[str] = ca_file
    else:
        insecure_value = file.get("insecure", "false").lower()
        if insecure_value not in _TRUE | _FALSE:
            raise ConfigError(f"{path}: insecure must be true or false")
        if env.get("BATON_INSECURE", "") == "1" or insecure_value in _TRUE:
            raise ConfigError("plaintext (BATON_INSECURE=1 or insecure: true) is not supported: this client "
                              "speaks HTTPS only and verifies the node's certificate; give ca_file")
        ca = env.get("BATON_CA_FILE") or file.get("ca_file") or None
    if ca is not None and not os.path.isfile(ca):
        raise ConfigError(f"cannot read CA file {ca}")
    return Settings(addrs, tok, ca, path)
