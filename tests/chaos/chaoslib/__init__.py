"""The chaos suite's library (scripts/chaos is the entry point and its
docstring the suite's documentation). Modules:

  procs        process helpers: the subreaper, /proc readers, killpg
  backends     backend URLs, the scripts/with-* wrapper of each topology, and
               ServerControl (pause, resume, kill -9 + restart a member)
  scenarios    the Scenario interface and the client-side scenarios
               (none, kill9-clients, pause-client)
  server_faults  the server-side scenarios (server-pause, server-restart,
               server-restart-persist)
  cell         one backend x scenario cell: register, clients, fault loop,
               result
  acceptance   the checks every row (a cell's, each mode's) makes of its
               register's counters
  report       the table and the per-cell details
  main         argument parsing, the inner (inside a wrapper) and outer runs
"""
