package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// rabbitCluster is RabbitMQ nodes of the run's own (one, or three joined
// in a cluster), run by scripts/rabbitmq-cluster.sh in a temporary
// directory and on ports of their own; the machine's broker is never
// touched.
type rabbitCluster struct {
	script, dir string
	ports       []int
}

// rabbitNode is one node of the cluster, a server of the run.
type rabbitNode struct {
	c *rabbitCluster
	n int // 1..3, the script's numbering
}

func startRabbit(ctx context.Context, script string, nodes int) (*rabbitCluster, []server, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, nil, fmt.Errorf("the RabbitMQ modes start nodes of their own with %s (--rabbitmq-script): %w", script, err)
	}
	var c *rabbitCluster
	var err error
	// A node now and then does not come up on a busy machine (a port taken
	// between its choice and the node's bind): the cluster is stopped and
	// started once more, on other ports, before the run gives up.
	for attempt := 1; attempt <= 2; attempt++ {
		if c, err = tryStartRabbit(ctx, script, nodes); err == nil {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	servers := make([]server, nodes)
	for i := range servers {
		servers[i] = rabbitNode{c: c, n: i + 1}
	}
	return c, servers, nil
}

func tryStartRabbit(ctx context.Context, script string, nodes int) (*rabbitCluster, error) {
	dir, err := os.MkdirTemp("", "nemesis-rmq-")
	if err != nil {
		return nil, err
	}
	c := &rabbitCluster{script: script, dir: dir}
	for range nodes {
		// The script puts a node's AMQPS port at its AMQP port + 1 and its
		// distribution port at + 10000.
		p, err := freePort(10000)
		if err != nil {
			return nil, err
		}
		c.ports = append(c.ports, p)
	}
	args := []string{"start"}
	for _, p := range c.ports {
		args = append(args, fmt.Sprint(p))
	}
	if out, err := c.run(ctx, 4*time.Minute, args...); err != nil {
		_ = c.stop("")
		return nil, fmt.Errorf("start %d RabbitMQ nodes: %w\n%s", nodes, err, out)
	}
	return c, nil
}

// run runs the script's command (args[0]) on the cluster's directory.
func (c *rabbitCluster) run(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.script, append([]string{args[0], c.dir}, args[1:]...)...).CombinedOutput()
	return string(out), err
}

// stop stops every node still up, keeps the nodes' logs in logDir (when
// given) and removes the rest.
func (c *rabbitCluster) stop(logDir string) error {
	out, err := c.run(context.Background(), 2*time.Minute, "stop")
	if err != nil {
		err = fmt.Errorf("stop the run's RabbitMQ nodes: %w\n%s", err, out)
	}
	if logDir != "" {
		logs, _ := filepath.Glob(filepath.Join(c.dir, "node*", "log", "*.log"))
		for _, l := range logs {
			node := filepath.Base(filepath.Dir(filepath.Dir(l)))
			if b, rerr := os.ReadFile(l); rerr == nil {
				_ = os.WriteFile(filepath.Join(logDir, "rabbitmq-"+node+"-"+filepath.Base(l)), b, 0o644)
			}
		}
	}
	if rerr := os.RemoveAll(c.dir); err == nil {
		err = rerr
	}
	return err
}

// url is an AMQP URL for addr (a node's own, or a link's).
func amqpURL(addr string) string { return "amqp://guest:guest@" + addr + "/" }

func (n rabbitNode) name() string        { return fmt.Sprintf("rabbit%d", n.n) }
func (n rabbitNode) addr() string        { return fmt.Sprintf("127.0.0.1:%d", n.c.ports[n.n-1]) }
func (n rabbitNode) restartKind() string { return BrokerRestart }

// restart stops the node cleanly (rabbitmqctl stop) or kills it (SIGKILL,
// a crash), waits down and starts it again; a node of a cluster rejoins
// it.
func (n rabbitNode) restart(ctx context.Context, down time.Duration, rng *rand.Rand) (string, error) {
	how := []string{"stop-node", "kill-node"}[rng.IntN(2)]
	if out, err := n.c.run(ctx, 2*time.Minute, how, fmt.Sprint(n.n)); err != nil {
		return how, fmt.Errorf("%s %d: %w\n%s", how, n.n, err, out)
	}
	sleep(ctx, down)
	if out, err := n.c.run(context.WithoutCancel(ctx), 4*time.Minute, "start-node", fmt.Sprint(n.n), fmt.Sprint(n.c.ports[n.n-1])); err != nil {
		return how, fmt.Errorf("start-node %d: %w\n%s", n.n, err, strings.TrimSpace(out))
	}
	return how, nil
}
