package briefd_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// No Docker engine runs in CI, so docker-compose.yml is checked by reading:
// it parses, has the services the README promises, each with a health
// check, the worker can scale, and no secret is written in the file.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       any               `yaml:"build"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Volumes     []string          `yaml:"volumes"`
			Container   string            `yaml:"container_name"`
			Healthcheck *struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			DependsOn map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Profiles []string `yaml:"profiles"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	for _, name := range []string{"nats-1", "nats-2", "nats-3", "redis", "worker"} {
		svc, ok := doc.Services[name]
		if !ok {
			t.Fatalf("service %s missing", name)
		}
		if svc.Healthcheck == nil || len(svc.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no healthcheck", name)
		}
	}
	// A 3-node cluster: every node runs JetStream and routes to the two others.
	for _, name := range []string{"nats-1", "nats-2", "nats-3"} {
		cmd := strings.Join(doc.Services[name].Command, " ")
		if !strings.Contains(cmd, "--js") || !strings.Contains(cmd, "--cluster_name briefd") {
			t.Errorf("%s: not a JetStream cluster node: %s", name, cmd)
		}
		for _, peer := range []string{"nats-1", "nats-2", "nats-3"} {
			if peer != name && !strings.Contains(cmd, "nats://"+peer+":6222") {
				t.Errorf("%s does not route to %s", name, peer)
			}
		}
		if _, ok := doc.Volumes[name]; !ok {
			t.Errorf("%s: no named volume for its JetStream store", name)
		}
	}
	w := doc.Services["worker"]
	if w.Container != "" || len(w.Ports) > 0 {
		t.Errorf("worker must scale with --scale: no container_name and no fixed host port (got %q, %v)", w.Container, w.Ports)
	}
	for _, dep := range []string{"nats-1", "nats-2", "nats-3", "redis"} {
		if w.DependsOn[dep].Condition != "service_healthy" {
			t.Errorf("worker should wait for %s to be healthy", dep)
		}
	}
	for _, k := range []string{"BRIEFD_REPLICAS", "BRIEFD_DEAD_REPLICAS", "BRIEFD_AUDIT_REPLICAS"} {
		if w.Environment[k] != "3" {
			t.Errorf("streams should be replicated on the 3-node cluster, %s=%q", k, w.Environment[k])
		}
	}
	// Durability: every node fsyncs before it acks, Redis before it replies.
	conf, err := os.ReadFile("deploy/nats.conf")
	if err != nil || !strings.Contains(string(conf), "sync_interval: always") {
		t.Errorf("deploy/nats.conf should set sync_interval: always (%v)", err)
	}
	for _, name := range []string{"nats-1", "nats-2", "nats-3"} {
		if !strings.Contains(strings.Join(doc.Services[name].Command, " "), "-c /etc/nats/briefd.conf") {
			t.Errorf("%s does not load deploy/nats.conf", name)
		}
	}
	if redis := strings.Join(doc.Services["redis"].Command, " "); !strings.Contains(redis, "--appendfsync always") {
		t.Errorf("redis should fsync its append-only file on every write: %s", redis)
	}
	checkRedisACL(t, doc.Services["redis"].Command, doc.Services["redis"].Volumes, doc.Services["redis"].Environment,
		map[string]map[string]string{"worker": w.Environment, "publisher": doc.Services["publisher"].Environment})
	// Secrets come from the environment or a .env file, never the file itself.
	ref := regexp.MustCompile(`^\$\{[A-Z0-9_]+(:-|:\?[^}]*)?\}$`)
	for name, svc := range doc.Services {
		for k, v := range svc.Environment {
			if regexp.MustCompile(`KEY|PASSWORD|TOKEN|SECRET`).MatchString(k) && v != "" && !ref.MatchString(v) {
				t.Errorf("%s: %s holds a literal secret", name, k)
			}
			if strings.Contains(v, "@") && strings.Contains(v, "://") {
				t.Errorf("%s: %s has credentials in a URL", name, k)
			}
		}
	}
}

// checkRedisACL checks that the redis service loads deploy/redis/users.acl
// as rendered by deploy/redis/acl.sh, with every password it names in the
// service's environment, and that each client service logs in as a user
// of the file with that user's password: the workers' user owns the
// briefd keys, a tenant's user reads only its own.
func checkRedisACL(t *testing.T, command, volumes []string, env map[string]string, clients map[string]map[string]string) {
	t.Helper()
	mounts := map[string]string{} // container folder -> host folder
	for _, v := range volumes {
		if parts := strings.Split(v, ":"); len(parts) >= 2 && strings.HasPrefix(parts[0], "./") {
			mounts[parts[1]] = strings.TrimPrefix(parts[0], "./")
		}
	}
	cmd := strings.Join(command, " ")
	m := regexp.MustCompile(`sh (\S+/acl\.sh) (\S+/users\.acl) (\S+) .*redis-server --aclfile (\S+) `).FindStringSubmatch(cmd)
	if m == nil || m[3] != m[4] {
		t.Fatalf("redis does not start with the users of acl.sh's rendering of users.acl: %s", cmd)
	}
	for _, f := range m[1:3] {
		dir, name := f[:strings.LastIndex(f, "/")], f[strings.LastIndex(f, "/")+1:]
		if mounts[dir] != "deploy/redis" || name == "" {
			t.Fatalf("redis: %s is not in the mounted deploy/redis (mounts %v)", f, mounts)
		}
	}
	acl, err := os.ReadFile("deploy/redis/users.acl")
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]string{}     // user -> its rules
	passwords := map[string]string{} // user -> the variable of its password
	for _, line := range strings.Split(string(acl), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "user" {
			continue
		}
		users[f[1]] = strings.Join(f[2:], " ")
		if pw := regexp.MustCompile(`>\$\{([A-Z0-9_]+)\}`).FindStringSubmatch(line); pw != nil {
			passwords[f[1]] = pw[1]
			if !regexp.MustCompile(`^\$\{` + pw[1] + `:\?`).MatchString(env[pw[1]]) {
				t.Errorf("redis: users.acl needs %s, the service's environment sets it to %q", pw[1], env[pw[1]])
			}
		}
	}
	if users["default"] != "on nopass resetchannels -@all +ping" {
		t.Errorf("users.acl: a client without a user may do more than PING: %q", users["default"])
	}
	for name, cenv := range clients {
		user := cenv["BRIEFD_REDIS_USER"]
		if passwords[user] == "" || cenv["BRIEFD_REDIS_PASSWORD"] != "${"+passwords[user]+":?set it in .env}" {
			t.Errorf("%s logs in to Redis as %q with %q; users.acl has %v", name, user, cenv["BRIEFD_REDIS_PASSWORD"], passwords)
		}
	}
	if r := users["worker"]; !strings.Contains(r, " ~briefd:* &briefd:* ") || !strings.Contains(r, "-@dangerous") {
		t.Errorf("users.acl: the workers' user should own the briefd keys and channels, nothing dangerous: %q", r)
	}
	tenant := clients["publisher"]["BRIEFD_TENANT"]
	want := "resetchannels %R~briefd:{" + tenant + ":* &briefd:{" + tenant + ":* -@all "
	if r := users[clients["publisher"]["BRIEFD_REDIS_USER"]]; !strings.Contains(r, want) || strings.Contains(r, "+@") {
		t.Errorf("users.acl: tenant %s's user should read only its keys and channels (%q), with no command category: %q", tenant, want, r)
	}
}
