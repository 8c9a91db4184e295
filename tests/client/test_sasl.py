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
    assert scram.step(SERVER_FIRST) == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
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
