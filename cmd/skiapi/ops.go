package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// errUsage marks an error in how a one-shot command was asked for (a flag
// that does not fit it), as opposed to a failure while doing it; skiapi
// exits 2 for the first and 1 for the second.
var errUsage = errors.New("usage")

// usageErr marks err as a usage error without changing its message.
func usageErr(err error) error { return usageError{err} }

type usageError struct{ err error }

func (u usageError) Error() string   { return u.err.Error() }
func (u usageError) Unwrap() []error { return []error{errUsage, u.err} }

// tablesOf is the table commands of the store cfg names (`skiapi
// tables`): only a store with tables to manage has them.
func tablesOf(cfg compose.Config) (*compose.TableCommands, error) {
	if err := cfg.Validate(); err != nil {
		return nil, usageErr(err)
	}
	t := compose.StoreOf(cfg).Tables
	if t == nil {
		return nil, usageErr(fmt.Errorf("--store %s has no DynamoDB tables; use one of --store %s", cfg.Store, strings.Join(compose.StoreNamesWhere(func(d compose.StoreDriver) bool { return d.Tables != nil }), "|")))
	}
	return t, nil
}

// createTables creates the tables and the index the configured store
// needs (`skiapi tables create`) and returns once they are active. Tables
// that exist are left as they are, so running it again is harmless.
func createTables(ctx context.Context, cfg compose.Config) error {
	t, err := tablesOf(cfg)
	if err != nil {
		return err
	}
	return t.Create(ctx, cfg)
}

// describeTables returns what the store's service reports about its
// tables (`skiapi tables describe`): for DynamoDB status, keys, indexes,
// billing and its (approximate, six-hourly) item counts.
func describeTables(ctx context.Context, cfg compose.Config) (string, error) {
	t, err := tablesOf(cfg)
	if err != nil {
		return "", err
	}
	return t.Describe(ctx, cfg)
}

// migrateStore applies the pending migrations to the store cfg names and
// returns the schema version reached (`skiapi migrate`).
func migrateStore(ctx context.Context, cfg compose.Config) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	migrate := compose.StoreOf(cfg).Migrate
	if migrate == nil {
		return 0, fmt.Errorf("--store %s has nothing to migrate; use --store %s", cfg.Store, strings.Join(compose.StoreNamesWhere(func(d compose.StoreDriver) bool { return d.Migrate != nil }), "|"))
	}
	return migrate(ctx, cfg)
}

// seedStore loads the demo resorts into the store cfg names (`skiapi
// seed`): a PostgreSQL database or a DynamoDB model's resort table, whose
// tables must exist (`skiapi tables create`). Resorts already there keep
// their seasons. It says what the store gained, compared with what it held
// before, so a second run says it loaded nothing new.
func seedStore(ctx context.Context, cfg compose.Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if err := requireDurableStore(cfg, "seed"); err != nil {
		return "", err
	}
	st, closeStore, err := compose.OpenStore(ctx, compose.Deps{Config: cfg})
	if err != nil {
		return "", err
	}
	defer closeStore()
	before, err := st.Resorts.Resorts(ctx)
	if err != nil {
		return "", fmt.Errorf("list resorts before seeding: %w", err)
	}
	if err := app.SeedDemoResorts(ctx, st.Resorts); err != nil {
		return "", err
	}
	after, err := st.Resorts.Resorts(ctx)
	if err != nil {
		return "", fmt.Errorf("list resorts after seeding: %w", err)
	}
	names := make(map[domain.ResortID]string, len(before))
	seasonsBefore := 0
	for _, r := range before {
		names[r.ID], seasonsBefore = r.Name, seasonsBefore+len(r.Seasons)
	}
	resorts, seasons, renamed := 0, -seasonsBefore, 0
	for _, r := range after {
		seasons += len(r.Seasons)
		if name, ok := names[r.ID]; !ok {
			resorts++
		} else if name != r.Name {
			renamed++
		}
	}
	if resorts == 0 && seasons == 0 && renamed == 0 {
		return fmt.Sprintf("demo resorts already loaded, nothing changed; the store holds %d resorts", len(after)), nil
	}
	msg := fmt.Sprintf("demo resorts loaded: %d resorts and %d seasons added", resorts, seasons)
	if renamed > 0 {
		msg += fmt.Sprintf(", %d resorts given back their demo name", renamed)
	}
	return fmt.Sprintf("%s; the store holds %d resorts", msg, len(after)), nil
}

// requireDurableStore refuses a store that keeps nothing once the command
// ends (what would be written there is lost at once); what names the
// command's work. Durability is the registry's store entry's to say.
func requireDurableStore(cfg compose.Config, what string) error {
	if !compose.StoreOf(cfg).Durable {
		return usageErr(fmt.Errorf("--store %s keeps nothing after the command; %s a store that lasts: --store %s", cfg.Store, what, strings.Join(compose.StoreNamesWhere(func(d compose.StoreDriver) bool { return d.Durable }), "|")))
	}
	return nil
}

// createQueues makes the queues the configured queue needs (`skiapi queues
// create`): only a queue that needs them made beforehand has them.
func createQueues(ctx context.Context, cfg compose.Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", usageErr(err)
	}
	create := compose.QueueOf(cfg).CreateQueues
	if create == nil {
		return "", usageErr(fmt.Errorf("--queue %s has no queues to create; use --queue %s", cfg.Queue, queueCreators()))
	}
	return create(ctx, cfg)
}

// listDeadLetters returns up to limit rides from the dead-letter queue
// without removing them.
func listDeadLetters(ctx context.Context, cfg compose.Config, limit int) ([]ports.DeadLetter, error) {
	var out []ports.DeadLetter
	err := withDeadLetters(ctx, cfg, func(q compose.DeadLetterQueue) error {
		var err error
		out, err = q.DLQList(ctx, limit)
		return err
	})
	return out, err
}

// replayDeadLetters moves every readable dead letter back to its ride queue
// and returns how many it moved; unreadable ones stay.
func replayDeadLetters(ctx context.Context, cfg compose.Config) (int, error) {
	var n int
	err := withDeadLetters(ctx, cfg, func(q compose.DeadLetterQueue) error {
		var err error
		n, err = q.DLQReplay(ctx)
		return err
	})
	return n, err
}

// withDeadLetters connects to the dead-letter queue for a one-shot dlq
// command: only a queue that keeps dead letters has one.
func withDeadLetters(ctx context.Context, cfg compose.Config, do func(compose.DeadLetterQueue) error) error {
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	open := compose.QueueOf(cfg).DeadLetters
	if open == nil {
		return usageErr(fmt.Errorf("--queue %s has no dead-letter queue; use --queue %s with the service's flags for it", cfg.Queue, deadLetterQueues()))
	}
	q, closeQueue, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeQueue()
	return do(q)
}
