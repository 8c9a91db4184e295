"""Changing committed offsets: what a reset asks for (:mod:`.spec`), Kafka's reset-plan CSV
(:mod:`.csvfile`) and the plan itself (:mod:`.plan`: the new offset of every partition and why,
or why a group is not reset). Read-only and without Airflow; the safety path that carries a
plan out (re-check, backup, commit, audit) is :mod:`..cleanup`'s.
"""
