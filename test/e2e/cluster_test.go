package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/needs"
)

// The cluster fault test: the durable path (--role api and --role consumer
// over RabbitMQ quorum queues, PostgreSQL) under load while the RabbitMQ
// node leading the ride queues is stopped. It runs its own three-node
// cluster (scripts/rabbitmq-cluster.sh) on loopback ports, never the
// machine's broker. `make test-cluster` runs it alone.

const clusterScript = "../../scripts/rabbitmq-cluster.sh"

// cluster is a three-node RabbitMQ cluster of this test's own.
type cluster struct {
	dir   string
	ports []int
	urls  []string
}

// freeClusterPorts finds n AMQP ports whose AMQPS (+1) and distribution
// ports (+10000), the script's rules, are free too.
func freeClusterPorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	free := func(p int) bool {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	for i := 0; i < n; {
		p := 20000 + rand.IntN(20000)
		taken := slices.ContainsFunc(ports[:i], func(q int) bool { return p >= q-1 && p <= q+1 })
		if !taken && free(p) && free(p+1) && free(p+10000) {
			ports[i] = p
			i++
		}
	}
	return ports
}

func (c *cluster) run(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, clusterScript, append([]string{args[0], c.dir}, args[1:]...)...).CombinedOutput()
	return string(out), err
}

// startClusterOf starts n nodes (1 to 3) and joins them; they are stopped
// when the test ends, whatever its outcome (the stop is registered before
// the start, so a half-started cluster is stopped too).
//
// A cluster that does not come up is stopped and started once more, on
// other ports and under other node names, before the test fails: what
// the tests check begins once the cluster is up, and on a busy two-core
// machine, with other clusters and compiles starting beside it, a node
// now and then does not (once, in .ci/run, a node stopped while starting;
// a port taken between its choice and the node's bind would do the
// same). The first attempt's error and node logs are logged.
func startClusterOf(t *testing.T, n int) *cluster {
	t.Helper()
	needs.Server(t, "RabbitMQ nodes of its own (the rabbitmq-server package)")
	if _, err := os.Stat("/usr/lib/rabbitmq/bin/rabbitmq-server"); err != nil {
		t.Fatalf("the cluster test needs the machine's RabbitMQ packages (apt-get install rabbitmq-server): %v", err)
	}
	const attempts = 2
	for attempt := 1; ; attempt++ {
		c, err := tryStartCluster(t, n)
		if err == nil {
			return c
		}
		if attempt == attempts {
			t.Fatalf("start a %d-node RabbitMQ cluster, attempt %d of %d: %v", n, attempt, attempts, err)
		}
		t.Logf("start a %d-node RabbitMQ cluster, attempt %d of %d: %v\nstopping it and starting another", n, attempt, attempts, err)
		if out, err := c.run(t, 2*time.Minute, "stop"); err != nil {
			t.Logf("stop the cluster that did not start (%s): %v\n%s", c.dir, err, out)
		}
	}
}

// tryStartCluster starts n nodes in a directory and on ports of their own
// and joins them; the error holds the script's output and the nodes' logs.
func tryStartCluster(t *testing.T, n int) (*cluster, error) {
	t.Helper()
	c := &cluster{dir: filepath.Join(t.TempDir(), fmt.Sprintf("c%d", time.Now().UnixNano()%1e9))}
	t.Cleanup(func() {
		if out, err := c.run(t, 2*time.Minute, "stop"); err != nil {
			t.Errorf("stop the test cluster in %s: %v\n%s", c.dir, err, out)
		}
	})
	c.ports = freeClusterPorts(t, n)
	args := []string{"start"}
	for _, p := range c.ports {
		args = append(args, fmt.Sprint(p))
		c.urls = append(c.urls, fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", p))
	}
	if out, err := c.run(t, 4*time.Minute, args...); err != nil {
		return c, fmt.Errorf("%w\n%s\n%s", err, out, c.nodeLogs())
	}
	return c, nil
}

// nodeLogs is the tail of each node's log and of what its launcher
// printed (a crash at boot is only there), for a failure message.
func (c *cluster) nodeLogs() string {
	var b strings.Builder
	for _, pattern := range []string{"*@localhost.log", "stdout.log"} {
		logs, _ := filepath.Glob(filepath.Join(c.dir, "node*", "log", pattern))
		for _, l := range logs {
			raw, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", l, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	}
	return b.String()
}

// leaders maps each quorum queue whose name starts with prefix to the
// number (1..3) of the node leading it, asking node ask.
func (c *cluster) leaders(t *testing.T, ask int, prefix string) map[string]int {
	t.Helper()
	out, err := c.run(t, time.Minute, "ctl", fmt.Sprint(ask), "list_queues", "--quiet", "--no-table-headers", "name", "leader")
	if err != nil {
		t.Fatalf("list the queue leaders: %v\n%s", err, out)
	}
	got := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		for n := 1; n <= 3; n++ {
			if strings.HasPrefix(f[1], fmt.Sprintf("skicluster%d-", n)) {
				got[f[0]] = n
			}
		}
	}
	return got
}

// clusterOutcome is what one POST got.
type clusterOutcome struct {
	ride       rolesRide
	status     int
	retryAfter string
	err        error
	// afterStop: sent once the leader's node was down.
	afterStop bool
}

func postRideFull(client *http.Client, base string, r rolesRide) clusterOutcome {
	url := fmt.Sprintf("%s/skiers/1/seasons/2025/days/20/skiers/%d", base, r.skier)
	resp, err := client.Post(url, "application/json", strings.NewReader(fmt.Sprintf(`{"time":%d,"liftID":%d}`, r.time, r.lift)))
	if err != nil {
		return clusterOutcome{ride: r, err: err}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return clusterOutcome{ride: r, status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
}

// TestClusterLeaderNodeLossLosesNoRide: rides posted while the RabbitMQ
// node leading the ride queues stops (cleanly, rabbitmqctl stop) or
// crashes (SIGKILL) are each answered 201 or 503 with
// Retry-After; every 201 ride is stored exactly once, no ride is stored
// twice or stored without having been posted, and the service takes rides
// again (201) after the failover.
//
// In stop-node and kill-node each process is given one node's URL: the
// API and the consumer connect to the two nodes that stay up, and the ride
// queues are declared through the third (RabbitMQ places a quorum queue's
// leader on the declaring client's node), which is the one lost. In
// kill-connected-node both processes are given every node's URL and the
// node they are connected to is killed (SIGKILL, by its PID): they must
// move to another node of the list (docs/operations.md).
func TestClusterLeaderNodeLossLosesNoRide(t *testing.T) {
	t.Parallel()
	// Each case runs a cluster of its own on ports of its own, so the
	// three run at once: most of a case's time is its nodes booting.
	for _, how := range []string{"stop-node", "kill-node"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			leaderNodeLoss(t, how)
		})
	}
	t.Run("kill-connected-node", func(t *testing.T) {
		t.Parallel()
		connectedNodeLoss(t)
	})
}

// clusterFlags are the flags both processes take, but for --role and
// --amqp-url: quorum queues of a fresh prefix on two shards, PostgreSQL.
func clusterFlags(t *testing.T) (flags []string, prefix string) {
	t.Helper()
	cfg, _ := postgresConfig(t)
	prefix = fmt.Sprintf("skicluster.%d", time.Now().UnixNano())
	return []string{
		"--queue", "rabbitmq", "--amqp-prefix", prefix, "--amqp-queue-type", "quorum", "--amqp-shards", "2",
		"--store", "postgres", "--database-url", cfg.Postgres.URL, "--db-schema", cfg.Postgres.Schema,
		"--shutdown-timeout", "30s",
	}, prefix
}

func leaderNodeLoss(t *testing.T, how string) {
	c := startClusterOf(t, 3)
	bin := buildSkiapi(t)
	flags, prefix := clusterFlags(t)
	withURL := func(role string, node int) []string {
		return append([]string{"--role", role, "--amqp-url", c.urls[node-1]}, flags...)
	}

	const leaderNode = 3
	declarer := startSkiapi(t, "declarer", bin, withURL("api", leaderNode)...)
	declarer.terminate(t)
	leaders := c.leaders(t, 1, prefix+".rides.")
	if len(leaders) != 2 {
		t.Fatalf("want the 2 ride queues %s.rides.* on the cluster, found %v", prefix, leaders)
	}
	for q, n := range leaders {
		if n != leaderNode {
			t.Fatalf("queue %s is led by node %d, not node %d that declared it; the test needs the leader on a node neither process uses", q, n, leaderNode)
		}
	}
	api := startSkiapi(t, "api", bin, withURL("api", 1)...)
	consumer := startSkiapi(t, "consumer", bin, withURL("consumer", 2)...)
	_ = consumer
	loadThroughNodeLoss(t, c, api, how, leaderNode, prefix)
}

// connectedNodes is the nodes (1..3, the position in the --amqp-url list)
// p's connections of role reached, in order, from its "rabbitmq connected"
// log lines.
func connectedNodes(p *proc, role string) []int {
	var nodes []int
	for line := range strings.SplitSeq(p.log(), "\n") {
		var rec struct {
			Msg, Role string
			Node      int
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "rabbitmq connected" && rec.Role == role {
			nodes = append(nodes, rec.Node)
		}
	}
	return nodes
}

// connectedNodeLoss gives the API and the consumer every node's URL, kills
// the node both are connected to under load, and checks, besides what
// loadThroughNodeLoss checks, that every connection moved to a node that
// is up.
func connectedNodeLoss(t *testing.T) {
	c := startClusterOf(t, 3)
	bin := buildSkiapi(t)
	flags, prefix := clusterFlags(t)
	all := strings.Join(c.urls, ",")
	api := startSkiapi(t, "api", bin, append([]string{"--role", "api", "--amqp-url", all}, flags...)...)
	consumer := startSkiapi(t, "consumer", bin, append([]string{"--role", "consumer", "--amqp-url", all}, flags...)...)

	type conn struct {
		p    *proc
		role string
	}
	conns := []conn{{api, "publish"}, {consumer, "publish"}, {consumer, "consume"}}
	node := 0
	for _, cn := range conns {
		// The consumer subscribes once it serves; wait for its line.
		apitest.Eventually(t, fmt.Sprintf("%s logs its %s connection", cn.p.name, cn.role), func() string {
			if len(connectedNodes(cn.p, cn.role)) == 0 {
				return "no \"rabbitmq connected\" line yet"
			}
			return ""
		})
		got := connectedNodes(cn.p, cn.role)
		if len(got) != 1 {
			t.Fatalf("%s: %s connections logged to nodes %v; want one\n%s", cn.p.name, cn.role, got, cn.p.log())
		}
		if node == 0 {
			node = got[0]
		}
		if got[0] != node {
			t.Fatalf("%s: %s connection on node %d, another on node %d; with the same list all start on its first node", cn.p.name, cn.role, got[0], node)
		}
	}
	if strings.Contains(api.log()+consumer.log(), "guest:guest") {
		t.Errorf("a log shows the password of an AMQP URL")
	}
	t.Logf("API and consumer connected to node %d; ride queue leaders %v", node, c.leaders(t, 1+node%3, prefix+".rides."))

	loadThroughNodeLoss(t, c, api, "kill-node", node, prefix)

	for _, cn := range conns {
		got := connectedNodes(cn.p, cn.role)
		if len(got) < 2 || got[len(got)-1] == node {
			t.Errorf("%s: %s connections went to nodes %v; want a reconnect to a node other than %d", cn.p.name, cn.role, got, node)
		}
	}
}

// loadThroughNodeLoss posts rides to api while node is lost (how: the
// script's stop-node or kill-node) and checks that each got 201 or 503
// with Retry-After, rides were taken again after the loss, and every ride
// answered 201 is stored exactly once.
func loadThroughNodeLoss(t *testing.T, c *cluster, api *proc, how string, node int, prefix string) {
	t.Helper()
	// Bounded load: four clients post distinct rides of 50 skiers. The
	// node is lost once a third of the first 1500 rides are in;
	// the load goes on until 1500 rides are posted and at least 200 of
	// them were accepted (201) after the node was down, or three minutes
	// have passed: a process connected to the lost node answers 503 until
	// it has moved to another, which the load must outlast. A client
	// answered 503 waits 100 ms, as one honouring Retry-After would,
	// rather than spinning through rides while the service recovers.
	const (
		clients   = 4
		firstPart = 500
		minRides  = 1500
		minAfter  = 200
	)
	client := &http.Client{Timeout: 30 * time.Second}
	var (
		next      atomic.Int64
		stopped   atomic.Bool
		sentAfter atomic.Int64
		okAfter   atomic.Int64
		mu        sync.Mutex
		outcomes  []clusterOutcome
	)
	deadline := time.Now().Add(3 * time.Minute)
	stopDone := make(chan error, 1)
	var once sync.Once
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := int(next.Add(1) - 1)
				if i >= minRides && stopped.Load() && okAfter.Load() >= minAfter {
					return
				}
				if i == firstPart {
					once.Do(func() {
						go func() {
							out, err := c.run(t, 2*time.Minute, how, fmt.Sprint(node))
							if err != nil {
								err = fmt.Errorf("%w: %s", err, out)
							}
							stopped.Store(true)
							stopDone <- err
						}()
					})
				}
				after := stopped.Load()
				o := postRideFull(client, api.base, rolesRide{skier: 7300 + i%50, time: (i / 50) % 1440, lift: 1 + i%40})
				o.afterStop = after
				if after {
					sentAfter.Add(1)
					if o.status == http.StatusCreated {
						okAfter.Add(1)
					}
				}
				if o.status == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-stopDone:
		if err != nil {
			t.Fatalf("%s %d: %v", how, node, err)
		}
	default:
		t.Fatalf("node %d was not stopped before the load ended (%d rides posted)", node, len(outcomes))
	}

	var accepted []rolesRide
	counts := map[string]int{}
	var createdAfter int
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("POST %+v: %v; want an answer (201, or 503 with Retry-After)", o.ride, o.err)
			counts["error"]++
		case o.status == http.StatusCreated:
			accepted = append(accepted, o.ride)
			counts["201"]++
			if o.afterStop {
				createdAfter++
			}
		case o.status == http.StatusServiceUnavailable:
			counts["503"]++
			if o.retryAfter == "" {
				t.Errorf("POST %+v: 503 without Retry-After", o.ride)
			}
		default:
			counts[fmt.Sprint(o.status)]++
			t.Errorf("POST %+v: status %d; want 201, or 503 with Retry-After", o.ride, o.status)
		}
	}
	t.Logf("%d rides posted: %v; %d posted after node %d stopped, %d of them 201", len(outcomes), counts, sentAfter.Load(), node, createdAfter)
	if createdAfter == 0 {
		t.Errorf("no ride was accepted (201) after node %d stopped: the service did not recover from the failover", node)
	}
	newLeaders := c.leaders(t, 1+node%3, prefix+".rides.")
	t.Logf("ride queue leaders after the stop: %v", newLeaders)

	// Every accepted ride stored exactly once; nothing stored twice, and
	// nothing stored that was never posted (a 503 ride may be stored once:
	// its publish may have been confirmed after the API gave up on it).
	posted := map[rolesRide]bool{}
	for _, o := range outcomes {
		posted[o.ride] = true
	}
	skiers := make([]int, 50)
	for i := range skiers {
		skiers[i] = 7300 + i
	}
	var stored []rolesRide
	apitest.Eventually(t, fmt.Sprintf("all %d accepted rides stored", len(accepted)), func() string {
		got, err := storedRides(t, api.base, skiers)
		if err != nil {
			return err.Error()
		}
		stored = got
		have := map[rolesRide]bool{}
		for _, r := range got {
			have[r] = true
		}
		missing := 0
		for _, r := range accepted {
			if !have[r] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Sprintf("%d of %d accepted rides not stored yet", missing, len(accepted))
		}
		return ""
	})
	seen := map[rolesRide]int{}
	for _, r := range stored {
		seen[r]++
	}
	for r, n := range seen {
		if n > 1 {
			t.Errorf("ride %+v stored %d times", r, n)
		}
		if !posted[r] {
			t.Errorf("ride %+v stored but never posted", r)
		}
	}
	t.Logf("%d rides stored (%d accepted with 201)", len(stored), len(accepted))
}
