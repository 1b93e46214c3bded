// Package nemesis is `skiload nemesis` (`make soak`): Jepsen-style runs
// of the service under random faults, and the checker that accounts for
// every ride afterwards.
//
// For each mode (a queue, a store, one process or an API and a consumer:
// the Modes table) a run starts private servers of its own (a PostgreSQL
// instance in a temporary directory, RabbitMQ nodes through
// scripts/rabbitmq-cluster.sh), never the machine's shared ones; puts an
// in-process toxiproxy proxy on every link from a skiapi process to a
// server, so that each process reaches each dependency only through a
// proxy of its own; runs skiapi as supervised processes, started again
// after they exit as systemd would; sends an open-loop load of POSTs,
// each ride unique and numbered, with GETs of the same skiers between
// them; and injects faults chosen at random from those the mode has, one
// or two at a time (faults.go). The history of every request and fault
// is kept; after the load, the faults healed and the queue drained, the
// checker (check.go) compares it with the rows the store holds and the
// totals the API answers.
//
// Why a skiload subcommand and not a command of its own: the load is
// skiload's open loop (loadgen.OpenLoop: fixed intended start times,
// latency from them, no coordinated omission) and its charts' axes, which
// live in skiload's internal loadgen package; a separate command would
// have to copy them.
package nemesis
