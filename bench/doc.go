// Package bench holds the system-level benchmarks of briefd: the agent's
// publish latency per turn, and Latest + Splice on the next turn. They run
// against an embedded NATS server and a redis-server started for the run;
// README.md gives the commands and the figures measured.
package bench
