"""Per-principal ACLs, as Kafka's StandardAuthorizer decides them (simplified to ALLOW rules).

Off until the first rule is added (a cluster without an authorizer allows everything); once
on, anything not allowed is denied (``allow.everyone.if.no.acl.found=false``, Kafka's
default). A rule names a principal (``"*"``: anyone), a resource type (``"topic"``,
``"group"``, ``"cluster"``), a literal resource name (``"*"``: every name) and operations
(``"Describe"``, ``"Read"``, ``"Write"``, ``"Delete"``, ``"Alter"``, ``"DescribeConfigs"``,
``"All"``).
``StandardAuthorizerData.IMPLIES_DESCRIBE``: an ALLOW for Read, Write, Delete or Alter also
allows Describe.

The principal of a request is the SASL user it authenticated as, else the cluster's
``default_principal`` (Kafka: ``User:ANONYMOUS`` on a PLAINTEXT listener, or what a
principal builder maps a TLS certificate to). Names here leave out the ``User:`` prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Acls", "ANONYMOUS", "RESOURCE_TYPES", "OPERATIONS"]

ANONYMOUS = "ANONYMOUS"
RESOURCE_TYPES = ("topic", "group", "cluster")
OPERATIONS = ("Describe", "Read", "Write", "Delete", "Alter", "DescribeConfigs", "All")
IMPLIES_DESCRIBE = frozenset({"Describe", "Read", "Write", "Delete", "Alter", "All"})
CLUSTER_NAME = "kafka-cluster"


@dataclass
class Acls:
    rules: set[tuple[str, str, str, str]] = field(default_factory=set)  # (principal, type, name, operation)

    @property
    def enabled(self) -> bool:
        return bool(self.rules)

    def allow(self, principal: str, resource_type: str, name: str, operations: tuple[str, ...]) -> None:
        if resource_type not in RESOURCE_TYPES:
            raise ValueError(f"resource type {resource_type!r} is not one of {RESOURCE_TYPES}")
        unknown = set(operations) - set(OPERATIONS)
        if unknown or not operations:
            raise ValueError(f"operations {sorted(unknown) or operations!r} are not among {OPERATIONS}")
        for operation in operations:
            self.rules.add((principal, resource_type, name, operation))

    def authorized(self, principal: str, resource_type: str, name: str, operation: str) -> bool:
        if not self.rules:
            return True
        granting = IMPLIES_DESCRIBE if operation == "Describe" else {operation, "All"}
        return any(
            (p, resource_type, n, op) in self.rules
            for p in (principal, "*")
            for n in (name, "*")
            for op in granting
        )
