package deploy

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/skidata/skidata/adapters/prom"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/needs"
)

// pendingMetrics are names the alert rules and the dashboard use that the
// service is being given alongside them (agreed names, other branches):
// allowed here before they exist in adapters/prom. Once one exists, it is
// checked like the others; the test logs which are still missing.
var pendingMetrics = []string{}

// servedMetrics returns every metric name the service's /metrics can show:
// adapters/prom's registry after every ports.Metrics method has been called
// once (a labelled vector shows nothing until it has a child), so a method
// added to the port is covered without this list knowing it. Histograms
// contribute name_bucket, name_sum and name_count.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m := prom.New()
	port := reflect.TypeOf((*ports.Metrics)(nil)).Elem()
	v := reflect.ValueOf(m)
	for i := range port.NumMethod() {
		meth := v.MethodByName(port.Method(i).Name)
		var args []reflect.Value
		for j := range meth.Type().NumIn() {
			in := meth.Type().In(j)
			a := reflect.New(in).Elem()
			switch in.Kind() {
			case reflect.String:
				a.SetString("x")
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				a.SetInt(1)
			case reflect.Float32, reflect.Float64:
				a.SetFloat(1)
			case reflect.Bool:
				a.SetBool(true)
			}
			args = append(args, a)
		}
		meth.Call(args)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	names := map[string]bool{"up": true} // Prometheus's own, per target
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[2]+s] = true
				}
			}
		}
	}
	if !names["skidata_queue_depth"] {
		t.Fatalf("adapters/prom served no skidata_queue_depth; the scrape found %d names", len(names))
	}
	return names
}

// metricRef finds metric names in a PromQL expression: identifiers of the
// service's families (skidata_, go_, process_) and up.
var metricRef = regexp.MustCompile(`\b(skidata_[a-z0-9_]+|go_[a-z0-9_]+|process_[a-z0-9_]+|up)\b`)

// checkExprs fails for every name an expression uses that the service does
// not serve and that is not pending, and returns the names used.
func checkExprs(t *testing.T, where string, exprs map[string]string, served map[string]bool) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for what, expr := range exprs {
		refs := metricRef.FindAllString(expr, -1)
		if len(refs) == 0 {
			t.Errorf("%s %s: expression uses no metric of the service: %s", where, what, expr)
		}
		for _, name := range refs {
			used[name] = true
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if served[name] || slices.Contains(pendingMetrics, name) || slices.Contains(pendingMetrics, base) {
				continue
			}
			t.Errorf("%s %s uses %s, which adapters/prom does not serve (and is not in pendingMetrics)", where, what, name)
		}
	}
	return used
}

type ruleFile struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert       string
			Expr        string
			Labels      map[string]string
			Annotations map[string]string
		}
	}
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("prometheus/alerts.yml: %v", err)
	}
	return rf
}

func promtool(t *testing.T) string {
	t.Helper()
	return needs.Program(t, "promtool", "prometheus")
}

// The scrape config and the rules pass promtool's checks, and the rules'
// unit tests (prometheus/alerts_test.yml) pass.
func TestPrometheusConfigRulesAndRuleTests(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert is about a signal the service exports (or is being given),
// has a severity, and points at its section of docs/operations.md; the
// issue's signals each have an alert.
func TestPrometheusAlertsUseServedMetricsAndHaveARunbook(t *testing.T) {
	served := servedMetrics(t)
	rf := loadRules(t)
	anchors := docAnchors(t)
	exprs := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr
			if r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical" {
				t.Errorf("alert %s: severity %q; want warning or critical", r.Alert, r.Labels["severity"])
			}
			checkRunbook(t, "alert "+r.Alert, r.Annotations["runbook"], anchors)
		}
	}
	used := checkExprs(t, "alert", exprs, served)
	for signal, metric := range map[string]string{
		"queue depth":     "skidata_queue_depth",
		"503/429 rate":    "skidata_http_requests_total",
		"store throttles": "skidata_store_throttled_total",
		"dead letters":    "skidata_rides_dead_lettered_total",
		"consumer lag":    "skidata_persist_batch_rides_sum",
	} {
		if !used[metric] {
			t.Errorf("no alert on %s (%s)", signal, metric)
		}
	}
	var missing []string
	for _, p := range pendingMetrics {
		if !served[p] {
			missing = append(missing, p)
		}
	}
	t.Logf("metrics the rules use that adapters/prom does not serve yet: %v", missing)
}

// The dashboard is Grafana JSON whose every query uses metrics the service
// serves (or is being given).
func TestGrafanaDashboardQueriesServedMetrics(t *testing.T) {
	raw, err := os.ReadFile("grafana/skidata.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		UID    string
		Panels []struct {
			Title   string
			Targets []struct {
				RefID string
				Expr  string
			}
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana/skidata.json is not JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("grafana/skidata.json: want a title, a uid and panels; have %q %q and %d panels", dash.Title, dash.UID, len(dash.Panels))
	}
	exprs := map[string]string{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs[p.Title+"/"+tg.RefID] = tg.Expr
		}
	}
	served := servedMetrics(t)
	used := checkExprs(t, "panel", exprs, served)
	// Every skidata_ family the service serves is on the dashboard.
	var absent []string
	for name := range served {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if strings.HasPrefix(name, "skidata_") && !used[name] && !used[base+"_bucket"] && !used[base+"_sum"] && !used[base] {
			absent = append(absent, name)
		}
	}
	sort.Strings(absent)
	if len(absent) > 0 {
		t.Errorf("metrics the service serves but the dashboard does not show: %v", absent)
	}
}

// ---- docs/operations.md anchors --------------------------------------------

// docAnchors are the GitHub anchors of docs/operations.md's headings.
func docAnchors(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")
		anchors[h] = true
	}
	return anchors
}

func checkRunbook(t *testing.T, what, ref string, anchors map[string]bool) {
	t.Helper()
	anchor, ok := strings.CutPrefix(ref, "docs/operations.md#")
	if !ok {
		t.Errorf("%s: runbook %q; want docs/operations.md#<section>", what, ref)
		return
	}
	if !anchors[anchor] {
		t.Errorf("%s: docs/operations.md has no section #%s", what, anchor)
	}
}

// Each CloudWatch alarm names its section of docs/operations.md in its
// description, and the section exists.
func TestCloudWatchAlarmsHaveARunbook(t *testing.T) {
	anchors := docAnchors(t)
	ref := regexp.MustCompile(`docs/operations\.md#[a-z0-9_-]+`)
	alarms := resources(t, loadTemplate(t), "AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no CloudWatch alarms in the template")
	}
	for name, a := range alarms {
		m := ref.FindString(str(a["AlarmDescription"]))
		checkRunbook(t, "alarm "+name, m, anchors)
		if len(list(a["AlarmActions"])) == 0 {
			t.Errorf("alarm %s notifies no one (AlarmActions empty)", name)
		}
	}
}
