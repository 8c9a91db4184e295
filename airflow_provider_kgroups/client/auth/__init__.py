"""SASL/OAUTHBEARER tokens (KIP-255, KIP-768): where they come from, how long they are kept.

Kept apart from the transport, which only asks for "the current token" when it (re-)authenticates:

- :mod:`.config` - :class:`OAuthBearerConfig`, validated before any network call;
- :mod:`.jaas` - ``sasl.jaas.config`` and the Java / librdkafka properties that set it;
- :mod:`.token` - a token as a value, its light client-side checks (Kafka's
  ``LoginAccessTokenValidator``) and when to refresh it (``ExpiringCredentialRefreshingLogin``);
- :mod:`.oidc` - the client-credentials grant (``HttpAccessTokenRetriever``), over ``requests``;
- :mod:`.providers` - AWS MSK IAM, a callback by dotted path, unsecured JWS; the per-process cache.

Nothing here is imported by the client until a configuration asks for OAUTHBEARER.
"""
