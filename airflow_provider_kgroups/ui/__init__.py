"""The "Consumer groups" page in Airflow's UI: an Airflow plugin shipped by the provider.

    plugin     the AirflowPlugin (registered in get_provider_info under ``plugins``): a nav
               entry (an external view) and the FastAPI app mounted at ``/kgroups``
    app        the app: the page, its static files and its JSON API, behind Airflow's auth
    security   the auth manager checks (only users who may read DAGs and assets)
    settings   the ``[kgroups]`` options it reads, and the checks on request parameters
    data       the history rollups as numpy columns of a window, and the derived-data cache
    overview   the groups overview        group   one group's page
    judging    verdicts and dead-group evidence from the history, by the engine's rules
    series     lag in seconds from the history, and server-side downsampling
    gates      the DAGs that gate on a group (serialized DAGs), with their thresholds
    trail      the cleanup trail: audit records, backups, restore commands
    live       "refresh now": one live snapshot with a deadline

Nothing here is imported when a DAG file is parsed: Airflow imports ``plugin`` only when it
loads plugins, and ``plugin`` imports nothing heavier than Airflow's plugin base class until
the api-server first serves the page.
"""
