"""SCRAM against the published test vector (RFC 7677), PLAIN's message shape."""

import pytest

from airflow_provider_kgroups.client.errors import AuthenticationError
from airflow_provider_kgroups.client.transport.sasl import PlainMechanism, ScramMechanism

SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"


def rfc7677_client():
    return ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")


def test_scram_sha_256_matches_rfc7677():
    scram = rfc7677_client()
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.step(SERVER_FIRST) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert scram.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_rejects_a_server_that_cannot_prove_the_password():
    scram = rfc7677_client()
    scram.step(SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="server signature does not match"):
        scram.step(b"v=AAAA")


def test_scram_rejects_a_nonce_the_client_did_not_start():
    with pytest.raises(AuthenticationError, match="nonce"):
        rfc7677_client().step(b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_plain_message():
    assert PlainMechanism("u", "p").first() == b"\0u\0p"


@pytest.mark.parametrize("iterations", [1, 4095, 16385, 1_000_000_000])
def test_scram_refuses_an_iteration_count_outside_java_and_kip554_before_any_work(iterations, monkeypatch):
    """Java's ScramSaslClient refuses fewer than 4096 iterations; a Kafka broker stores at most
    16384 (KIP-554). The count is named and PBKDF2 never starts."""
    from airflow_provider_kgroups.client.transport import sasl

    monkeypatch.setattr(sasl.hashlib, "pbkdf2_hmac", lambda *a: pytest.fail("PBKDF2 ran"))
    server_first = SERVER_FIRST.replace(b"i=4096", f"i={iterations}".encode())
    with pytest.raises(AuthenticationError, match=f"asked for {iterations} iterations.*4096 to 16384"):
        rfc7677_client().step(server_first)


@pytest.mark.parametrize(
    "server_first, fragment",
    [
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==", "lacks i"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=lots", "'lots' is not a whole number"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=!!!,i=4096", "salt is not base64"),
        (b"e=unknown-user", "SCRAM server error: unknown-user"),
    ],
)
def test_scram_names_a_malformed_server_first_message(server_first, fragment):
    with pytest.raises(AuthenticationError, match=fragment):
        rfc7677_client().step(server_first)


def test_scram_accepts_the_most_a_broker_stores():
    server_first = SERVER_FIRST.replace(b"i=4096", b"i=16384")
    assert rfc7677_client().step(server_first).startswith(b"c=biws,r=rOprNGfwEbeRWgbNEkqO")
