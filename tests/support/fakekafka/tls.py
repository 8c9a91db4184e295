"""Self-signed certificates for TLS tests (``cryptography`` if installed, else the openssl CLI)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import subprocess
from dataclasses import dataclass

__all__ = ["CertFiles", "make_self_signed_cert", "server_ssl_context", "client_ssl_context"]


@dataclass(frozen=True)
class CertFiles:
    cert: str  # PEM certificate path (also the CA file clients trust)
    key: str  # PEM private key path


def make_self_signed_cert(tmpdir: str | os.PathLike, common_name: str = "localhost") -> CertFiles:
    """Write a self-signed certificate for localhost / 127.0.0.1 into ``tmpdir``."""
    cert_path = os.path.join(os.fspath(tmpdir), "fakekafka-cert.pem")
    key_path = os.path.join(os.fspath(tmpdir), "fakekafka-key.pem")
    try:
        _with_cryptography(cert_path, key_path, common_name)
    except ImportError:
        _with_openssl_cli(cert_path, key_path, common_name)
    return CertFiles(cert_path, key_path)


def _with_cryptography(cert_path: str, key_path: str, common_name: str) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))


def _with_openssl_cli(cert_path: str, key_path: str, common_name: str) -> None:
    if shutil.which("openssl") is None:
        raise RuntimeError("neither the cryptography package nor the openssl CLI is available")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            key_path,
            "-out",
            cert_path,
            "-days",
            "2",
            "-subj",
            f"/CN={common_name}",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )


def server_ssl_context(files: CertFiles) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(files.cert, files.key)
    return ctx


def client_ssl_context(files: CertFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=files.cert)
    return ctx
