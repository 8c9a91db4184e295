"""The lag and group-health engine: pure logic over client results, no Airflow import."""
