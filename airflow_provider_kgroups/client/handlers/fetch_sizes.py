"""The Fetch handlers' default sizes, apart from the handlers: the client's verbs take them as
default arguments, and the handlers (with the Fetch codec and the record batch reader) load only
when a verb that fetches runs."""

#: bytes asked per partition when reading a record's timestamp (:mod:`.fetch`)
DEFAULT_PARTITION_BYTES = 64 * 1024
#: bytes of records asked per page (:mod:`.fetch_records`)
DEFAULT_RECORD_PAGE_BYTES = 1024 * 1024
