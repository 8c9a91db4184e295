"""One module per Kafka API: build requests for one broker's keys, read responses into outcomes."""
