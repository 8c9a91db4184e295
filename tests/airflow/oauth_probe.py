"""A token callback for the allow-list test: importing it is observable (``sys.modules``), and it
records the ``sasl.oauthbearer.config`` it is called with."""

import base64
import json
import time

calls: list[str] = []


def token(config_str: str):
    calls.append(config_str)
    now = time.time()
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    return f"{enc({'alg': 'none'})}.{enc({'sub': config_str, 'iat': now, 'exp': now + 600})}.", now + 600
