"""Kafka message schemas that kafka-python 3.0 lacks, as the fake serves them.

Transcribed from the Apache Kafka message specification (Apache License 2.0),
clients/src/main/resources/common/message/. Loaded by :mod:`..codec`.
"""
