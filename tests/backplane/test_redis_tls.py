"""The fleet's Redis over TLS (``rediss://``) with ACL credentials, on a real ``redis-server``
started with a certificate made here: the backplane connects, and the wrong CA, the wrong
password or a plain connection are refused (issue 28: TLS and credentials configurable)."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.backplane.redis_client import connect
from kit.fleet import find_program
from kit.processes import STARTUP_TIMEOUT, accepts_connections, free_port, stop_process

pytestmark = pytest.mark.anyio

PASSWORD = "tls-test-password"


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (it is its own CA); its PEM and key files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / f"{name}.pem", directory / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@contextlib.contextmanager
def tls_redis(directory: Path) -> Iterator[tuple[int, int, Path]]:
    """redis-server with a TLS port (and a plain one, to show it needs the password too); user
    ``fleet`` with a password, the default user off. Yields (tls port, plain port, CA file)."""
    cert, key = _certificate(directory, "redis")
    tls_port, plain_port = free_port(), free_port()
    log = directory / "redis.log"
    argv = [
        find_program("redis-server"),
        "--port", str(plain_port), "--tls-port", str(tls_port), "--bind", "127.0.0.1",
        "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
        "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", str(directory),
        "--logfile", str(log), "--user", "default", "off",
        "--user", "fleet", "on", f">{PASSWORD}", "~*", "&*", "+@all",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < end and proc.poll() is None and not accepts_connections(tls_port):
            time.sleep(0.02)
        if proc.poll() is not None or not accepts_connections(tls_port):
            text = log.read_text(errors="replace") if log.exists() else ""
            if "tls" in text.lower() and "not" in text.lower():
                pytest.skip(f"this redis-server has no TLS: {text[-300:]}")
            pytest.fail(f"redis-server with TLS did not start: {text[-2000:]}")
        yield tls_port, plain_port, cert
    finally:
        stop_process(proc, grace=2.0)


async def test_the_backplane_runs_on_redis_over_tls_with_acl_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tls_redis(tmp_path) as (tls_port, plain_port, ca):
        monkeypatch.setenv("ELICITKIT_REDIS_CA_FILE", str(ca))
        monkeypatch.setenv("ELICITKIT_REDIS_USERNAME", "fleet")
        monkeypatch.setenv("ELICITKIT_REDIS_PASSWORD", PASSWORD)
        url = f"rediss://127.0.0.1:{tls_port}/0"
        made = []
        for name in ("a", "b"):
            backplane = RedisBackplane.from_url(url, key="tls-key", instance_id=name, prefix="tls:")
            received: list[dict[str, object]] = []

            class Inbox:
                async def receive(self, message: dict[str, object], into: list[dict[str, object]] = received) -> None:
                    into.append(message)

                async def deliver(self, session_id: str, message: object) -> bool:
                    return False

                def lost_contact(self) -> None: ...

                def regained_contact(self) -> None: ...

                def owners_gone(self, owners: object) -> None: ...

            backplane.attach(Inbox())  # type: ignore[arg-type]
            await backplane.start()
            made.append((backplane, received))
        try:
            (a, _), (b, at_b) = made
            await a.claim("s1")
            assert await b.owner("s1") == "a"
            assert await a.send("b", {"k": "hello"})
            with anyio.fail_after(5):
                while not at_b:  # noqa: ASYNC110 - a poll with a deadline
                    await anyio.sleep(0.02)
            assert at_b[0]["k"] == "hello"
        finally:
            for backplane, _ in made:
                await backplane.stop()

        # refused: a wrong password, a CA that did not sign the server's certificate, no TLS at all
        other_ca, _ = _certificate(tmp_path, "other")
        refusals = [
            connect(url, password="wrong"),
            connect(url, ssl_ca_certs=str(other_ca)),
            connect(f"redis://127.0.0.1:{tls_port}/0", retry=None, retry_on_error=[]),
        ]
        for client in refusals:
            with pytest.raises(Exception) as info:
                with anyio.fail_after(10):
                    await client.ping()
            assert (
                "Connection" in type(info.value).__name__
                or "Auth" in type(info.value).__name__
                or "WRONGPASS" in str(info.value)
            ), info.value
            await client.aclose()
        plain = connect(f"redis://127.0.0.1:{plain_port}/0")  # the env's username and password apply
        assert await plain.ping()
        await plain.aclose()
