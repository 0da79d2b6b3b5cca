package briefd_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/briefd/briefd/internal/worker"
)

// composeService is the part of a compose service the operator checks read.
type composeService struct {
	Image       string            `yaml:"image"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Command []string `yaml:"command"`
}

func readCompose(t *testing.T) map[string]composeService {
	t.Helper()
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Services
}

// workerMetrics returns the worker's metric names with their label names,
// as internal/worker registers them.
func workerMetrics(t *testing.T) map[string][]string {
	t.Helper()
	rec := &recordingRegisterer{}
	worker.NewMetrics(rec, func(context.Context) (uint64, error) { return 0, nil }, func() bool { return true })
	descRe := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRe.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read %s", d)
			}
			var labels []string
			for _, l := range strings.Split(m[2], ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, l)
				}
			}
			out[m[1]] = labels
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d worker metrics found: %v", len(out), out)
	}
	return out
}

// checkExpr checks that every briefd metric a PromQL expression names is
// one the worker exports (histograms with their _bucket, _sum and _count
// series), and that the labels it groups by exist on them.
func checkExpr(t *testing.T, where, expr string, metrics map[string][]string) []string {
	t.Helper()
	var names []string
	for _, m := range regexp.MustCompile(`briefd_[a-z_]+`).FindAllString(expr, -1) {
		base := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suf); ok {
				if _, known := metrics[b]; known {
					base = b
				}
			}
		}
		labels, ok := metrics[base]
		if !ok {
			t.Errorf("%s: %s is not a worker metric (expr %s)", where, m, expr)
			continue
		}
		names = append(names, base)
		for _, sel := range regexp.MustCompile(base+`[a-z_]*\{([^}]*)\}`).FindAllStringSubmatch(expr, -1) {
			for _, kv := range strings.Split(sel[1], ",") {
				if k, _, _ := strings.Cut(kv, "="); k != "" && !slices.Contains(labels, strings.TrimSpace(k)) {
					t.Errorf("%s: %s has no label %q", where, base, k)
				}
			}
		}
	}
	for _, by := range regexp.MustCompile(`by \(([^)]*)\)`).FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(by[1], ",") {
			l = strings.TrimSpace(l)
			if l == "le" || l == "" {
				continue
			}
			found := false
			for _, n := range names {
				found = found || slices.Contains(metrics[n], l)
			}
			if !found {
				t.Errorf("%s: grouped by %q, which none of %v has", where, l, names)
			}
		}
	}
	return names
}

// The operator view of docker-compose.yml: Prometheus scrapes the workers
// and loads the alert rules, Grafana has the datasource and the dashboard
// provisioned, every metric they name is one internal/worker/metrics.go
// exports, host ports do not clash with local services, and the build
// context leaves out what the image does not need.
func TestComposeOperatorView(t *testing.T) {
	svcs := readCompose(t)
	metrics := workerMetrics(t)

	// Host ports: loopback only, and not the services' default ports.
	defaults := []string{"4222", "8222", "6222", "6379", "9090", "3000"}
	for name, svc := range svcs {
		for _, p := range svc.Ports {
			parts := strings.Split(p, ":")
			if len(parts) != 3 || parts[0] != "127.0.0.1" || slices.Contains(defaults, parts[1]) {
				t.Errorf("%s publishes %q: want 127.0.0.1:<non-default port>:<container port>", name, p)
			}
		}
	}

	// Mounted files exist.
	for name, svc := range svcs {
		for _, v := range svc.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			}
		}
	}

	prom, ok := svcs["prometheus"]
	if !ok || prom.Healthcheck == nil || len(prom.Ports) == 0 {
		t.Fatalf("prometheus service missing, without health check or not reachable from the host: %+v", prom)
	}
	var promCfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	mustYAML(t, "deploy/prometheus/prometheus.yml", &promCfg)
	scraped := false
	for _, sc := range promCfg.ScrapeConfigs {
		for _, d := range sc.DNSSDConfigs {
			// Every container of the scaled worker service, on the port
			// the worker serves /metrics on.
			if slices.Contains(d.Names, "worker") && d.Port == 9090 && sc.JobName == "briefd-worker" &&
				svcs["worker"].Environment["BRIEFD_HTTP_ADDR"] == ":9090" {
				scraped = true
			}
		}
	}
	if !scraped {
		t.Error("prometheus does not scrape every worker (job briefd-worker, DNS names [worker], port 9090)")
	}
	mounted := map[string]string{} // container path -> host path
	for _, v := range prom.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			mounted[parts[1]] = parts[0]
		}
	}
	if len(promCfg.RuleFiles) != 1 || mounted[promCfg.RuleFiles[0]] != "./deploy/prometheus/alerts.yml" {
		t.Fatalf("prometheus loads rules %v, mounted %v", promCfg.RuleFiles, mounted)
	}

	// Alert rules: each names its severity and says what to do; each
	// expression names worker metrics only.
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	mustYAML(t, "deploy/prometheus/alerts.yml", &rules)
	alerted := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.For == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %q lacks a name, expression, for, summary or description", r.Alert)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q", r.Alert, s)
			}
			for _, n := range checkExpr(t, "alert "+r.Alert, r.Expr, metrics) {
				alerted[n] = true
			}
		}
	}
	for _, m := range []string{"briefd_worker_ready", "briefd_consumer_pending", "briefd_dead_letters_total", "briefd_publish_to_briefing_seconds", "briefd_llm_fallbacks_total"} {
		if !alerted[m] {
			t.Errorf("no alert watches %s", m)
		}
	}

	// Grafana: the datasource the dashboard's panels name is provisioned,
	// and so is the dashboard.
	graf, ok := svcs["grafana"]
	if !ok || graf.Healthcheck == nil || len(graf.Ports) == 0 || graf.DependsOn["prometheus"].Condition != "service_healthy" {
		t.Fatalf("grafana service missing, without health check, not reachable from the host or not after prometheus: %+v", graf)
	}
	var ds struct {
		Datasources []struct {
			UID, Type, URL string
		} `yaml:"datasources"`
	}
	mustYAML(t, "deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("datasources %+v", ds.Datasources)
	}
	uid := ds.Datasources[0].UID
	var prov struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	mustYAML(t, "deploy/grafana/provisioning/dashboards/briefd.yml", &prov)
	gmounted := map[string]string{}
	for _, v := range graf.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			gmounted[parts[1]] = parts[0]
		}
	}
	if len(prov.Providers) != 1 || gmounted[prov.Providers[0].Options.Path] != "./deploy/grafana/dashboards" ||
		gmounted["/etc/grafana/provisioning"] != "./deploy/grafana/provisioning" {
		t.Fatalf("dashboard provider %+v, grafana mounts %v", prov.Providers, gmounted)
	}
	data, err := os.ReadFile("deploy/grafana/dashboards/briefd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			Type, Title string
			Datasource  *struct{ UID string } `json:"datasource"`
			Targets     []struct {
				Expr       string                `json:"expr"`
				Datasource *struct{ UID string } `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Fatal("the dashboard has no uid or title")
	}
	shown := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != uid || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v (want uid %s), %d queries", p.Title, p.Datasource, uid, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != uid {
				t.Errorf("panel %q: a query without the provisioned datasource", p.Title)
			}
			for _, n := range checkExpr(t, "panel "+p.Title, tg.Expr, metrics) {
				shown[n] = true
			}
		}
	}
	// What the operator view is for.
	for _, m := range []string{"briefd_compactions_total", "briefd_llm_fallbacks_total", "briefd_llm_gate_rejections_total",
		"briefd_consumer_pending", "briefd_dead_letters_total", "briefd_publish_to_briefing_seconds", "briefd_worker_ready"} {
		if !shown[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
	if !strings.Contains(string(data), `sum by (tier) (rate(briefd_compactions_total`) || !strings.Contains(string(data), `sum by (rule) (rate(briefd_llm_gate_rejections_total`) {
		t.Error("the dashboard lacks compactions by tier or gate rejections by rule")
	}
}

// The image serves /metrics and /readyz on every interface: the binary's
// default is loopback, which a container's scraper could not reach.
func TestDockerfileHTTPAddr(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ENV BRIEFD_HTTP_ADDR=:9090$`).Match(data) || !strings.Contains(string(data), "EXPOSE 9090") {
		t.Error("the image should set BRIEFD_HTTP_ADDR=:9090 and expose 9090")
	}
}

// .dockerignore keeps secrets and bulk out of the build context, and
// nothing the image's two binaries compile or embed.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, l)
		}
	}
	ignored := func(rel string) bool {
		for _, p := range pats {
			for dir := rel; dir != "." && dir != "/"; dir = filepath.Dir(dir) {
				if ok, _ := filepath.Match(p, dir); ok {
					return true
				}
				if rest, found := strings.CutPrefix(p, "**/"); found {
					if ok, _ := filepath.Match(rest, filepath.Base(dir)); ok {
						return true
					}
				}
			}
		}
		return false
	}
	for _, must := range []string{".git", ".env", ".briefd-data"} {
		if !ignored(must) {
			t.Errorf(".dockerignore lets %s into the build context", must)
		}
	}
	for _, need := range []string{"go.mod", "go.sum"} {
		if ignored(need) {
			t.Errorf(".dockerignore leaves out %s", need)
		}
	}
	if testing.Short() {
		return
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.Dir}}|{{join .GoFiles ","}}|{{join .EmbedFiles ","}}{{end}}`,
		"./cmd/worker", "./cmd/publisher").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := os.Getwd()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 3 || !strings.HasPrefix(parts[0], root) {
			continue // a module dependency, from the module cache
		}
		dir, _ := filepath.Rel(root, parts[0])
		for _, f := range append(strings.Split(parts[1], ","), strings.Split(parts[2], ",")...) {
			if f == "" {
				continue
			}
			if rel := filepath.Join(dir, f); ignored(rel) {
				t.Errorf("the image needs %s, which .dockerignore leaves out", rel)
			}
		}
	}
}

func mustYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
}

// recordingRegisterer keeps the collectors registered on it.
type recordingRegisterer struct{ collectors []prometheus.Collector }

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recordingRegisterer) Unregister(prometheus.Collector) bool { return false }
