"""Configuration like `baton ctl` (docs/ctl.md, "Connecting"): arguments,
then the environment, then the config file."""
from __future__ import annotations

import pytest

from baton_client import Client, ConfigError
from baton_client.config import parse_config_text, resolve


@pytest.fixture
def files(tmp_path, tls_dirs):
    (tmp_path / "env.token").write_text("env-token-from-file\n")
    (tmp_path / "arg.token").write_text("arg-token\r\n")
    (tmp_path / "cfg.token").write_text("cfg-token \n")
    home = tmp_path / "home"
    (home / ".config" / "baton").mkdir(parents=True)
    return {"dir": tmp_path, "home": home, "ca": str(tls_dirs["trusted"] / "ca.crt"),
            "other_ca": str(tls_dirs["other"] / "ca.crt")}


def write_home_config(files, text):
    (files["home"] / ".config" / "baton" / "ctl.yaml").write_text(text)


def test_defaults_without_anything():
    s = resolve(env={})
    assert s.addresses == ["127.0.0.1:7001"]
    assert s.token is None and s.ca_file is None and s.config_path is None


def test_environment_like_ctl(files):
    env = {"BATON_ADDR": "127.0.0.1:7002", "BATON_TOKEN_FILE": str(files["dir"] / "env.token"),
           "BATON_CA_FILE": files["ca"], "HOME": str(files["home"])}
    s = resolve(env=env)
    assert s.addresses == ["127.0.0.1:7002"]
    assert s.token == "env-token-from-file"  # the trailing newline is not part of it
    assert s.ca_file == files["ca"]
    # BATON_TOKEN beats BATON_TOKEN_FILE, as in ctl.
    assert resolve(env=dict(env, BATON_TOKEN="direct")).token == "direct"


def test_home_config_file_is_read(files):
    write_home_config(files, f"""# ctl's own file
addr: 10.1.2.3:7001
token_file: {files['dir'] / 'cfg.token'}
ca_file: '{files['ca']}'
output: table
insecure: false
""")
    s = resolve(env={"HOME": str(files["home"])})
    assert s.addresses == ["10.1.2.3:7001"]
    assert s.token == "cfg-token"
    assert s.ca_file == files["ca"]
    assert s.config_path == str(files["home"] / ".config" / "baton" / "ctl.yaml")


def test_environment_beats_file_and_arguments_beat_both(files):
    write_home_config(files, f"addr: 10.1.2.3:7001\ntoken: cfg\nca_file: {files['other_ca']}\n")
    env = {"HOME": str(files["home"]), "BATON_ADDR": "127.0.0.1:7009", "BATON_TOKEN": "env",
           "BATON_CA_FILE": files["ca"]}
    s = resolve(env=env)
    assert (s.addresses, s.token, s.ca_file) == (["127.0.0.1:7009"], "env", files["ca"])
    s = resolve(["127.0.0.1:1", "[::1]:2"], token_file=str(files["dir"] / "arg.token"),
                ca_file=files["other_ca"], env=env)
    assert (s.addresses, s.token, s.ca_file) == (["127.0.0.1:1", "[::1]:2"], "arg-token", files["other_ca"])
    assert resolve(token="t", token_file=str(files["dir"] / "arg.token"), env=env).token == "t"


def test_baton_config_names_the_file(files):
    other = files["dir"] / "other.yaml"
    other.write_text("addr: 192.0.2.1:7001\n")
    write_home_config(files, "addr: 10.1.2.3:7001\n")
    env = {"HOME": str(files["home"]), "BATON_CONFIG": str(other)}
    assert resolve(env=env).addresses == ["192.0.2.1:7001"]
    assert resolve(config=str(other), env={"HOME": str(files["home"])}).addresses == ["192.0.2.1:7001"]
    with pytest.raises(ConfigError, match="cannot read config file"):
        resolve(env={"BATON_CONFIG": str(files["dir"] / "missing.yaml")})


def test_several_addresses(files):
    assert resolve("127.0.0.1:1, 127.0.0.1:2", env={}).addresses == ["127.0.0.1:1", "127.0.0.1:2"]
    assert resolve(env={"BATON_ADDR": "a:1,b:2"}).addresses == ["a:1", "b:2"]
    with pytest.raises(ConfigError, match="not HOST:PORT"):
        resolve("127.0.0.1", env={})


def test_refusals(files):
    with pytest.raises(ConfigError, match="unknown key 'adress'"):
        parse_config_text("adress: 1.2.3.4:7001\n", "f.yaml")
    with pytest.raises(ConfigError, match="cannot read token file"):
        resolve(env={"BATON_TOKEN_FILE": str(files["dir"] / "none.token")})
    # Plaintext is ctl's --insecure; this client verifies TLS always.
    with pytest.raises(ConfigError, match="HTTPS only"):
        resolve(env={"BATON_INSECURE": "1"})
    write_home_config(files, "insecure: true\n")
    with pytest.raises(ConfigError, match="HTTPS only"):
        resolve(env={"HOME": str(files["home"])})
    # ... unless the caller names a CA itself.
    assert resolve(ca_file=files["ca"], env={"HOME": str(files["home"])}).ca_file == files["ca"]
    with pytest.raises(ConfigError, match="cannot read CA file"):
        resolve(ca_file=str(files["dir"] / "no-ca.crt"), env={})


def test_quoting_and_comments():
    got = parse_config_text("addr: \"127.0.0.1:7001\"  # the first node\ntoken: 'it''s#not a comment'\n"
                            "token_file:\n---\n", "f")
    assert got == {"addr": "127.0.0.1:7001", "token": "it's#not a comment"}


def test_client_uses_the_settings(files):
    c = Client(env={"BATON_ADDR": "127.0.0.1:7005,127.0.0.1:7006", "BATON_TOKEN": "tok",
                    "BATON_CA_FILE": files["ca"]})
    assert c.addresses == ["127.0.0.1:7005", "127.0.0.1:7006"]
    assert c.transport.token == "tok"
