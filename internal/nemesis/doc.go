// Package nemesis runs briefd as an operator would, as processes of its
// own, and injects faults while agents publish, then checks the delivery
// guarantees: the command `publisher nemesis` and the tests TestNemesis and
// TestNemesisCluster are built on [Run].
//
// A run starts nats-server (one node, or a 3-node cluster with R3 streams),
// redis-server (append-only, fsync always) or the JetStream key-value
// store, a fake OpenAI-compatible endpoint (internal/openaitest) and
// `worker run` processes; agents play histories turn by turn through the Go
// client, spread over tenants; a [Schedule] kills workers (SIGKILL), pauses
// them (SIGSTOP past the ack wait), restarts or kills the servers and takes
// the model endpoint down and up; one more tenant may flood the queue with
// invalid snapshots. Then every fault is healed, the consumer drains, and
// the checker reads the snapshot stream, the audit stream, the dead letters
// and the store, and holds each conversation to the guarantees; a watch of
// the store during the run catches a latest briefing that went backwards.
// The [Report] gives the figures and every violation found.
//
// The package runs real processes and is Linux-first: children are killed
// with the harness (Pdeathsig). It is a harness, not a library for agents.
package nemesis
