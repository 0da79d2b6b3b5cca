package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters, each a Server owned by the test:
// the hash slots are split evenly between them, without replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster runs n redis-server processes in cluster mode on free
// loopback ports (each with its cluster bus on another free port), assigns
// the 16,384 slots in n even ranges and introduces the nodes to each
// other, as redis-cli --cluster create does, then waits until every node
// reports the cluster ok. The processes are killed when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := binary(t)
	c := &Cluster{}
	buses := make([]int, n)
	for i := range n {
		node := startServer(t, bin, func(int) ([]string, error) {
			bus, err := freePort()
			if err != nil {
				return nil, err
			}
			buses[i] = bus
			return []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
				"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}, nil
		})
		c.Nodes = append(c.Nodes, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, n)
	for i, node := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: node.Addr()})
		defer clients[i].Close()
	}
	for i, rc := range clients {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if err := rc.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("redistest: cluster: node %d: add slots %d-%d: %v", i, lo, hi, err)
		}
	}
	for i := 1; i < n; i++ {
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.Nodes[i].port, buses[i]).Err(); err != nil {
			t.Fatalf("redistest: cluster: meet node %d: %v", i, err)
		}
	}
	for i, rc := range clients {
		for {
			info, err := rc.ClusterInfo(ctx).Result()
			if err == nil && clusterReady(info, n) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("redistest: cluster: node %d not ready after 30s: %v\n%s", i, err, info)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return c
}

// clusterReady reports whether CLUSTER INFO says the cluster is ok and
// knows n nodes.
func clusterReady(info string, n int) bool {
	ok, known := false, false
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		ok = ok || line == "cluster_state:ok"
		known = known || line == fmt.Sprintf("cluster_known_nodes:%d", n)
	}
	return ok && known
}

// Addrs returns every node's host:port.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a cluster client on the nodes, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
