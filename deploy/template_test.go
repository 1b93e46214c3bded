package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"gopkg.in/yaml.v3"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/needs"
	"github.com/skidata/skidata/test/sqstest"
	"github.com/skidata/skidata/test/storetest"
)

// The recording runs and the runbook's first day need a DynamoDB and an
// SQS to answer: dynalite, as for the adapter's own tests, and fauxqs,
// started by the first test that asks for it (sqs_test.go,
// runbook_test.go), with the test credentials the SDK's chain finds; the
// first day also builds skiapi once (buildSkiapi). Called as "aws", the
// test binary is the stand-in for the AWS CLI that
// deploy/aws/pitr-restore.sh runs against (pitr_test.go).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "aws" {
		os.Exit(fakeAWS(os.Args[1:]))
	}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	code := dynamotest.Main(m)
	sqstest.StopStarted()
	if skiapiBuild.bin != "" {
		_ = os.RemoveAll(filepath.Dir(skiapiBuild.bin))
	}
	os.Exit(code)
}

const templatePath = "aws/skidata.yaml"

// ---- reading CloudFormation YAML ------------------------------------------

// loadTemplate parses the template into maps, slices and scalars, turning
// the short-form tags (!Ref X, !GetAtt A.B, !Sub s, !Select [...]) into
// their long forms ({"Ref": X}, {"Fn::GetAtt": [A, B]}, {"Fn::Sub": s}...),
// which plain yaml.Unmarshal would reject or lose.
func loadTemplate(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s is not YAML: %v", templatePath, err)
	}
	v, err := cfnValue(&doc)
	if err != nil {
		t.Fatalf("%s: %v", templatePath, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: top level is %T, not a mapping", templatePath, v)
	}
	return m
}

func cfnValue(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return cfnValue(n.Content[0])
	case yaml.AliasNode:
		return cfnValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := cfnValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := cfnValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		if isIntrinsic(n.Tag) {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
	}
	if !isIntrinsic(n.Tag) {
		return v, nil
	}
	name := strings.TrimPrefix(n.Tag, "!")
	if name == "Ref" || name == "Condition" {
		return map[string]any{name: v}, nil
	}
	if s, ok := v.(string); ok && name == "GetAtt" {
		resource, attr, _ := strings.Cut(s, ".")
		v = []any{resource, attr}
	}
	return map[string]any{"Fn::" + name: v}, nil
}

// isIntrinsic: a local tag (!Ref), not a YAML core one (!!str).
func isIntrinsic(tag string) bool {
	return strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!")
}

// single is the template's one resource of type typ, its name and its
// properties; the test stops unless there is exactly one.
func single(t *testing.T, tpl map[string]any, typ string) (string, map[string]any) {
	t.Helper()
	rs := resources(t, tpl, typ)
	if len(rs) != 1 {
		t.Fatalf("%d resources of type %s; want 1", len(rs), typ)
	}
	for name, props := range rs {
		return name, props
	}
	panic("unreachable")
}

// wantValues checks keys of one of the template's maps (a resource, its
// properties, a policy) against fixed values; what names the map.
func wantValues(t *testing.T, what string, m, want map[string]any) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if m[k] != want[k] {
			t.Errorf("%s: %s is %v; want %v", what, k, m[k], want[k])
		}
	}
}

// wantConditions checks conditions of the template against their
// definitions, written as fmt.Sprint prints the parsed template.
func wantConditions(t *testing.T, tpl map[string]any, want map[string]string) {
	t.Helper()
	conds, _ := tpl["Conditions"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if got := fmt.Sprint(conds[name]); got != want[name] {
			t.Errorf("condition %s is %s; want %s", name, got, want[name])
		}
	}
}

func resources(t *testing.T, tpl map[string]any, typ string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, r := range tpl["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			props, _ := res["Properties"].(map[string]any)
			out[name] = props
		}
	}
	return out
}

func list(v any) []any {
	s, _ := v.([]any)
	return s
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// ---- tables ----------------------------------------------------------------

func keyList(v any) []string {
	var out []string
	for _, k := range list(v) {
		m := k.(map[string]any)
		out = append(out, str(m["AttributeName"])+" "+str(m["KeyType"]))
	}
	return out
}

// describeTemplateTable writes a table resource in the same words as
// describeDefinition writes an adapter definition, so the two compare as
// strings and a difference shows as a readable diff.
func describeTemplateTable(p map[string]any) string {
	var attrs []string
	for _, a := range list(p["AttributeDefinitions"]) {
		m := a.(map[string]any)
		attrs = append(attrs, str(m["AttributeName"])+" "+str(m["AttributeType"]))
	}
	sort.Strings(attrs)
	var b strings.Builder
	fmt.Fprintf(&b, "billing %s\nattributes %s\nkeys %s\n", str(p["BillingMode"]), strings.Join(attrs, ", "), strings.Join(keyList(p["KeySchema"]), ", "))
	var gsis []string
	for _, g := range list(p["GlobalSecondaryIndexes"]) {
		m := g.(map[string]any)
		proj, _ := m["Projection"].(map[string]any)
		var nonKey []string
		for _, a := range list(proj["NonKeyAttributes"]) {
			nonKey = append(nonKey, str(a))
		}
		gsis = append(gsis, fmt.Sprintf("gsi %s keys %s projection %s %v", str(m["IndexName"]), strings.Join(keyList(m["KeySchema"]), ", "), str(proj["ProjectionType"]), nonKey))
	}
	sort.Strings(gsis)
	for _, g := range gsis {
		b.WriteString(g + "\n")
	}
	if len(list(p["LocalSecondaryIndexes"])) > 0 {
		b.WriteString("has local secondary indexes\n")
	}
	return b.String()
}

func describeDefinition(d *dynamodb.CreateTableInput) string {
	var attrs []string
	for _, a := range d.AttributeDefinitions {
		attrs = append(attrs, aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	sort.Strings(attrs)
	keys := func(ks []types.KeySchemaElement) []string {
		var out []string
		for _, k := range ks {
			out = append(out, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		return out
	}
	var b strings.Builder
	fmt.Fprintf(&b, "billing %s\nattributes %s\nkeys %s\n", d.BillingMode, strings.Join(attrs, ", "), strings.Join(keys(d.KeySchema), ", "))
	var gsis []string
	for _, g := range d.GlobalSecondaryIndexes {
		var nonKey []string
		proj := ""
		if g.Projection != nil {
			proj = string(g.Projection.ProjectionType)
			nonKey = g.Projection.NonKeyAttributes
		}
		gsis = append(gsis, fmt.Sprintf("gsi %s keys %s projection %s %v", aws.ToString(g.IndexName), strings.Join(keys(g.KeySchema), ", "), proj, nonKey))
	}
	sort.Strings(gsis)
	for _, g := range gsis {
		b.WriteString(g + "\n")
	}
	if len(d.LocalSecondaryIndexes) > 0 {
		b.WriteString("has local secondary indexes\n")
	}
	return b.String()
}

// deployedModels are the data models the template may be deployed with:
// the allowed values of its Store parameter, without "dynamo-".
func deployedModels(t *testing.T, tpl map[string]any) []string {
	t.Helper()
	param, _ := tpl["Parameters"].(map[string]any)["Store"].(map[string]any)
	var models []string
	for _, v := range list(param["AllowedValues"]) {
		models = append(models, strings.TrimPrefix(str(v), "dynamo-"))
	}
	if len(models) == 0 {
		t.Fatal("the template has no Store parameter with AllowedValues naming the DynamoDB model(s) it deploys")
	}
	return models
}

// modelTablePrefix is what the StoreModels mapping puts after TablePrefix
// for a model: "${TablePrefix}" + it is the --dynamo-table-prefix of the
// instances running that model.
func modelTablePrefix(t *testing.T, tpl map[string]any, model string) string {
	t.Helper()
	m, _ := tpl["Mappings"].(map[string]any)["StoreModels"].(map[string]any)
	entry, _ := m["dynamo-"+model].(map[string]any)
	p := str(entry["TablePrefix"])
	if p == "" {
		t.Fatalf("Mappings.StoreModels has no TablePrefix for dynamo-%s", model)
	}
	return p
}

// modelCondition is the condition that holds when Store names the model:
// StoreAdopted for adopted.
func modelCondition(model string) string {
	return "Store" + strings.ToUpper(model[:1]) + model[1:]
}

// Every model adapters/dynamo offers can be deployed: a new model fails
// here until the template has its tables (see the StoreModels mapping).
func TestTemplateDeploysEveryDynamoModel(t *testing.T) {
	deployed := deployedModels(t, loadTemplate(t))
	for _, m := range dynamo.Models {
		if !slices.Contains(deployed, m) {
			t.Errorf("adapters/dynamo has model %q but the template cannot deploy it: add dynamo-%s to Store.AllowedValues, "+
				"a StoreModels entry, a %s condition, its tables (\"${TablePrefix}%s-<table>\") and a StoreThrottles alarm", m, m, modelCondition(m), m)
		}
	}
}

// The template's tables are named "${TablePrefix}<model prefix><table>", so
// the adapter's definitions with that prefix name them exactly. Each model
// has tables of its own: no table serves two models, and every table
// belongs to one.
func TestTemplateTablesMatchTheAdapterDefinitions(t *testing.T) {
	tpl := loadTemplate(t)
	tables := resources(t, tpl, "AWS::DynamoDB::Table")
	byName := map[string]map[string]any{}
	for res, p := range tables {
		name, _ := p["TableName"].(map[string]any)["Fn::Sub"].(string)
		if name == "" {
			t.Errorf("table %s: TableName must be !Sub \"${TablePrefix}<model>-<table>\"", res)
			continue
		}
		byName[name] = p
	}
	owner := map[string]string{}
	conditions, _ := tpl["Conditions"].(map[string]any)
	for _, model := range deployedModels(t, tpl) {
		if conditions[modelCondition(model)] == nil {
			t.Errorf("model %s: no condition %s (Store equals dynamo-%s)", model, modelCondition(model), model)
		}
		prefix := "${TablePrefix}" + modelTablePrefix(t, tpl, model)
		defs, err := dynamo.TableDefinitions(prefix, model)
		if err != nil {
			t.Fatalf("model %q of the Store parameter: %v", model, err)
		}
		for _, d := range defs {
			name := aws.ToString(d.TableName)
			if other, ok := owner[name]; ok {
				t.Errorf("table %s serves both %s and %s: each model needs tables of its own", name, other, model)
			}
			owner[name] = model
			p, ok := byName[name]
			if !ok {
				t.Errorf("model %s: table %s missing from the template", model, name)
				continue
			}
			if got, want := describeTemplateTable(p), describeDefinition(d); got != want {
				t.Errorf("model %s, table %s differs from adapters/dynamo TableDefinitions:\ntemplate:\n%s\nadapter:\n%s", model, name, got, want)
			}
			pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any)
			if pitr["PointInTimeRecoveryEnabled"] != true {
				t.Errorf("table %s: point-in-time recovery must be on", name)
			}
			checkContributorInsights(t, name, p["ContributorInsightsSpecification"], model)
			for _, g := range list(p["GlobalSecondaryIndexes"]) {
				gsi := g.(map[string]any)
				checkContributorInsights(t, name+" index "+str(gsi["IndexName"]), gsi["ContributorInsightsSpecification"], model)
			}
		}
	}
	for name := range byName {
		if _, ok := owner[name]; !ok {
			t.Errorf("table %s belongs to no model of the Store parameter", name)
		}
	}
}

// checkContributorInsights: on exactly when the table's model is in use
// (!If [Store<Model>, true, false]), so the hottest keys of the live tables
// are always on record and idle tables cost nothing.
func checkContributorInsights(t *testing.T, what string, spec any, model string) {
	t.Helper()
	m, _ := spec.(map[string]any)
	want := []any{modelCondition(model), true, false}
	got, _ := m["Enabled"].(map[string]any)
	if !slices.Equal(list(got["Fn::If"]), want) {
		t.Errorf("%s: ContributorInsightsSpecification.Enabled is %v; want !If %v", what, m["Enabled"], want)
	}
}

// Each model has a throttle alarm, present when the model is in use, over
// every table (and index) of the model.
func TestTemplateAlarmsOnEveryTableThrottle(t *testing.T) {
	tpl := loadTemplate(t)
	alarms := resources(t, tpl, "AWS::CloudWatch::Alarm")
	all := tpl["Resources"].(map[string]any)
	tables := resources(t, tpl, "AWS::DynamoDB::Table")
	for _, model := range deployedModels(t, tpl) {
		var found bool
		for name, a := range alarms {
			if all[name].(map[string]any)["Condition"] != modelCondition(model) {
				continue
			}
			found = true
			watched := map[string]map[string]bool{} // table name -> metric names
			for _, q := range list(a["Metrics"]) {
				ms, _ := q.(map[string]any)["MetricStat"].(map[string]any)
				metric, _ := ms["Metric"].(map[string]any)
				if metric["Namespace"] != "AWS/DynamoDB" {
					continue
				}
				for _, d := range list(metric["Dimensions"]) {
					dm := d.(map[string]any)
					if dm["Name"] == "TableName" {
						sub, _ := dm["Value"].(map[string]any)
						tbl := str(sub["Fn::Sub"])
						if watched[tbl] == nil {
							watched[tbl] = map[string]bool{}
						}
						watched[tbl][str(metric["MetricName"])] = true
					}
				}
			}
			prefix := "${TablePrefix}" + modelTablePrefix(t, tpl, model)
			for res, p := range tables {
				if !strings.HasPrefix(tableName(p), prefix) {
					continue
				}
				for _, m := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
					if !watched[tableName(p)][m] {
						t.Errorf("alarm %s (model %s) does not watch %s of table %s", name, model, m, res)
					}
				}
			}
		}
		if !found {
			t.Errorf("model %s: no alarm with Condition %s watching its tables' throttles", model, modelCondition(model))
		}
	}
}

// resourceEntries are the whole resources of a type (Type, Properties,
// DeletionPolicy, CreationPolicy, UpdatePolicy...), by logical id: what
// resources() leaves out.
func resourceEntries(t *testing.T, tpl map[string]any, typ string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, r := range tpl["Resources"].(map[string]any) {
		if res, _ := r.(map[string]any); res["Type"] == typ {
			out[name] = res
		}
	}
	return out
}

// Every table outlives a stack deletion and a replacement; only a failed
// first create removes it (RetainExceptOnCreate), so that creating the
// stack again does not fail with "already exists". That rollback must get
// past deletion protection, so protection comes from a parameter that is
// off by default (the first create) and turned on by an update; and a
// stack created again over kept tables (CreateTables=false) must not refer
// to them as resources, which the specification test checks (a reference
// to a resource that is not created is refused).
func TestTemplateFirstCreateCanRollBackAndTablesOutliveTheStack(t *testing.T) {
	tpl := loadTemplate(t)
	params, _ := tpl["Parameters"].(map[string]any)
	for param, want := range map[string]string{"TableDeletionProtection": "false", "CreateTables": "true"} {
		p, _ := params[param].(map[string]any)
		if str(p["Default"]) != want || fmt.Sprint(list(p["AllowedValues"])) != "[true false]" {
			t.Errorf("parameter %s is %v; want AllowedValues [true false], default %s", param, p, want)
		}
	}
	wantConditions(t, tpl, map[string]string{
		"ProtectTables": "map[Fn::Equals:[map[Ref:TableDeletionProtection] true]]",
		"MakeTables":    "map[Fn::Equals:[map[Ref:CreateTables] true]]",
	})
	tables := resourceEntries(t, tpl, "AWS::DynamoDB::Table")
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	for name, r := range tables {
		// A replacement keeps the old table.
		wantValues(t, "table "+name, r, map[string]any{"DeletionPolicy": "RetainExceptOnCreate", "UpdateReplacePolicy": "Retain", "Condition": "MakeTables"})
		props, _ := r["Properties"].(map[string]any)
		if got := fmt.Sprint(props["DeletionProtectionEnabled"]); got != "map[Fn::If:[ProtectTables true false]]" {
			t.Errorf("table %s: DeletionProtectionEnabled is %s; want !If [ProtectTables, true, false]", name, got)
		}
	}
	doc := readOperations(t)
	if !strings.Contains(doc, "TableDeletionProtection=true") {
		t.Error("docs/operations.md never turns TableDeletionProtection on after the first create")
	}
}

// readOperations is docs/operations.md.
func readOperations(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// ---- IAM -------------------------------------------------------------------

// recorder writes down every DynamoDB operation the adapter's client
// makes under the instance role that made it (roleOf its context). It
// hooks the SDK's middleware stack, so an operation the adapter starts
// using is recorded without a change here.
type recorder struct {
	mu  sync.Mutex
	ops map[string]map[string]bool // role -> "dynamodb:Action"
}

// client is c with every operation recorded.
func (r *recorder) client(c *dynamodb.Client) *dynamodb.Client {
	return dynamodb.New(c.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("recordOperation",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					r.note(ctx, awsmiddleware.GetOperationName(ctx))
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	})
}

func (r *recorder) note(ctx context.Context, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	roles, _ := ctx.Value(roleKey{}).([]string)
	if len(roles) == 0 {
		roles = []string{unattributed}
	}
	for _, role := range roles {
		if r.ops[role] == nil {
			r.ops[role] = map[string]bool{}
		}
		r.ops[role]["dynamodb:"+op] = true
	}
}

// ---- which role calls what ------------------------------------------------

// The instance roles, named as --role names them, and the IAM role
// resource of each.
const (
	roleAPI      = "api"
	roleConsumer = "consumer"
	unattributed = "(no role)"
)

var iamRoleOf = map[string]string{roleAPI: "ApiRole", roleConsumer: "ConsumerRole"}

type roleKey struct{}

// asRoles marks ctx as a call made by these instance roles.
func asRoles(ctx context.Context, roles ...string) context.Context {
	return context.WithValue(ctx, roleKey{}, roles)
}

// roleRides tells the recorder which role calls each RideStore method:
// AddRides only the persister (consumer), the queries only app.Query (api).
// A method added to ports.RideStore reaches the store unmarked, is recorded
// as unattributed and fails the test until it is sorted here.
type roleRides struct{ ports.RideStore }

func (s roleRides) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	return s.RideStore.AddRides(asRoles(ctx, roleConsumer), rides)
}
func (s roleRides) UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	return s.RideStore.UniqueSkiers(asRoles(ctx, roleAPI), resortID, season, day)
}
func (s roleRides) SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	return s.RideStore.SkierDayVertical(asRoles(ctx, roleAPI), resortID, season, day, skierID)
}
func (s roleRides) SkierSeasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	return s.RideStore.SkierSeasonVerticals(asRoles(ctx, roleAPI), skierID, resortIDs)
}
func (s roleRides) SkierDays(ctx context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error) {
	return s.RideStore.SkierDays(asRoles(ctx, roleAPI), skierID, season)
}
func (s roleRides) SkierDayRides(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error) {
	return s.RideStore.SkierDayRides(asRoles(ctx, roleAPI), skierID, season, day)
}

// roleResorts: both roles build app.Catalog at start-up, which lists the
// resorts and, on an empty table, seeds the demo ones (PutResort), so
// whichever role starts first may write them; only the API adds seasons
// (POST /resorts/{id}/seasons).
type roleResorts struct{ ports.ResortStore }

func (s roleResorts) Resorts(ctx context.Context) ([]domain.Resort, error) {
	return s.ResortStore.Resorts(asRoles(ctx, roleAPI, roleConsumer))
}
func (s roleResorts) PutResort(ctx context.Context, r domain.Resort) error {
	return s.ResortStore.PutResort(asRoles(ctx, roleAPI, roleConsumer), r)
}
func (s roleResorts) AddSeason(ctx context.Context, resortID domain.ResortID, season domain.Season) error {
	return s.ResortStore.AddSeason(asRoles(ctx, roleAPI), resortID, season)
}

// runtimeActions runs what a serving instance does through a recorder, each
// call marked with the role that makes it: the start-up table check and the
// readiness ping (both roles), the ride store contract for every deployed
// model and the resort store contract. Creating the tables is not in it
// (done by the stack, or an operator's `skiapi tables create`), so it goes
// through an unrecorded client. The result maps each role to its sorted
// actions.
func runtimeActions(t *testing.T, models []string) map[string][]string {
	t.Helper()
	rec := &recorder{ops: map[string]map[string]bool{}}
	recorded := rec.client(dynamotest.Client(t))
	both := func(t *testing.T) context.Context { return asRoles(dynamotest.Context(t), roleAPI, roleConsumer) }
	newTables := func(t *testing.T, model string) dynamo.Config {
		cfg := dynamo.Config{TablePrefix: dynamotest.Prefix(t), Model: model}
		if err := dynamo.CreateTables(dynamotest.Context(t), dynamotest.Client(t), cfg.TablePrefix, model); err != nil {
			t.Fatalf("CreateTables: %v", err)
		}
		if err := dynamo.CheckTables(both(t), recorded, cfg.TablePrefix, model); err != nil {
			t.Fatalf("CheckTables: %v", err)
		}
		return cfg
	}
	for _, model := range models {
		t.Run("rides "+model, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) ports.RideStore {
				s, err := dynamo.NewRideStore(recorded, newTables(t, model))
				if err != nil {
					t.Fatal(err)
				}
				return roleRides{s}
			}, storetest.Options{Rides: 50})
		})
		t.Run("resorts "+model, func(t *testing.T) {
			storetest.RunResorts(t, func(t *testing.T) ports.ResortStore {
				s := dynamo.NewResortStore(recorded, newTables(t, model))
				if err := s.Ping(both(t)); err != nil {
					t.Fatalf("Ping: %v", err)
				}
				return roleResorts{s}
			})
		})
	}
	if t.Failed() {
		t.Fatal("the recording run failed; the recorded actions would be incomplete")
	}
	out := map[string][]string{}
	for role, ops := range rec.ops {
		for op := range ops {
			out[role] = append(out[role], op)
		}
		sort.Strings(out[role])
	}
	return out
}

// statements returns every policy statement of an IAM role resource; a
// policy under !If [condition, policy, !Ref AWS::NoValue] counts (resolve
// the role with resolveIf first to see one configuration).
func statements(role map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range list(role["Policies"]) {
		pm, _ := p.(map[string]any)
		if branches := list(pm["Fn::If"]); len(branches) == 3 {
			pm, _ = branches[1].(map[string]any)
		}
		doc, _ := pm["PolicyDocument"].(map[string]any)
		for _, s := range list(doc["Statement"]) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

// queueConditions are the template's conditions on the Queue parameter
// when it names queue (sqs or rabbitmq).
func queueConditions(queue string) map[string]bool {
	return map[string]bool{"UseSQS": queue == "sqs", "UseAmazonMQ": queue == "rabbitmq"}
}

// tableName is a table resource's TableName, "${TablePrefix}<model>-<table>".
func tableName(p map[string]any) string {
	name, _ := p["TableName"].(map[string]any)["Fn::Sub"].(string)
	return name
}

// tableARN is how the template names a table's ARN (the tables may be kept
// from an earlier stack, so nothing refers to them as resources).
const tableARN = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/"

func anyList(v any) []any {
	if s, ok := v.([]any); ok {
		return s
	}
	return []any{v}
}

// Each instance role's IAM role allows exactly the DynamoDB actions the
// adapters call in that role: nothing missing (the role would fail in
// production) and nothing more (least privilege). No other IAM role may
// touch DynamoDB.
func TestTemplateIAMAllowsEachRoleExactlyTheDynamoDBActionsItCalls(t *testing.T) {
	tpl := loadTemplate(t)
	called := runtimeActions(t, deployedModels(t, tpl))
	if ops := called[unattributed]; len(ops) > 0 {
		t.Errorf("DynamoDB calls %v came from no known role: mark the new store method in roleRides/roleResorts", ops)
	}
	roles := resources(t, tpl, "AWS::IAM::Role")

	granted := map[string][]string{} // IAM role resource -> DynamoDB actions
	for roleName, role := range roles {
		for _, arn := range list(role["ManagedPolicyArns"]) {
			if strings.Contains(strings.ToLower(fmt.Sprint(arn)), "dynamodb") {
				t.Errorf("role %s: managed policy %v may grant DynamoDB actions beyond the adapters'", roleName, arn)
			}
		}
		for _, st := range statements(role) {
			if st["Effect"] != "Allow" {
				continue
			}
			if st["NotAction"] != nil || st["NotResource"] != nil {
				t.Errorf("role %s, statement %v: NotAction/NotResource grant more than they name", roleName, st["Sid"])
			}
			var dynamoActions []string
			for _, a := range anyList(st["Action"]) {
				action := str(a)
				if strings.Contains(action, "*") {
					t.Errorf("role %s, statement %v: wildcard action %q", roleName, st["Sid"], action)
				}
				if strings.HasPrefix(strings.ToLower(action), "dynamodb:") {
					dynamoActions = append(dynamoActions, action)
				}
			}
			if len(dynamoActions) == 0 {
				continue
			}
			granted[roleName] = append(granted[roleName], dynamoActions...)
		}
	}
	for roleName := range granted {
		if !slices.Contains([]string{iamRoleOf[roleAPI], iamRoleOf[roleConsumer]}, roleName) {
			t.Errorf("role %s grants DynamoDB actions %v; only %v may", roleName, granted[roleName], iamRoleOf)
		}
	}
	for _, instanceRole := range []string{roleAPI, roleConsumer} {
		iamRole := iamRoleOf[instanceRole]
		if roles[iamRole] == nil {
			t.Errorf("no IAM role %s for the %s instances", iamRole, instanceRole)
			continue
		}
		g := slices.Clone(granted[iamRole])
		sort.Strings(g)
		g = slices.Compact(g)
		t.Logf("%s calls %v", instanceRole, called[instanceRole])
		for _, a := range called[instanceRole] {
			if !slices.Contains(g, a) {
				t.Errorf("the %s role calls %s but %s does not allow it", instanceRole, a, iamRole)
			}
		}
		for _, a := range g {
			if !slices.Contains(called[instanceRole], a) {
				t.Errorf("%s allows %s, which the %s role never calls", iamRole, a, instanceRole)
			}
		}
	}
}

// Each launch template runs its instances under its own role's profile.
func TestTemplateEachInstanceRoleHasItsOwnIAMRole(t *testing.T) {
	tpl := loadTemplate(t)
	profiles := resources(t, tpl, "AWS::IAM::InstanceProfile")
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	for lt, role := range map[string]string{"ApiLaunchTemplate": roleAPI, "ConsumerLaunchTemplate": roleConsumer} {
		data, _ := lts[lt]["LaunchTemplateData"].(map[string]any)
		prof, _ := data["IamInstanceProfile"].(map[string]any)
		arn, _ := prof["Arn"].(map[string]any)
		ga := list(arn["Fn::GetAtt"])
		if len(ga) != 2 {
			t.Errorf("%s: IamInstanceProfile.Arn is %v; want !GetAtt <profile>.Arn", lt, prof["Arn"])
			continue
		}
		p := profiles[str(ga[0])]
		var names []string
		for _, r := range list(p["Roles"]) {
			ref, _ := r.(map[string]any)
			names = append(names, str(ref["Ref"]))
		}
		if !slices.Equal(names, []string{iamRoleOf[role]}) {
			t.Errorf("%s runs with profile %v of roles %v; want only %s", lt, ga[0], names, iamRoleOf[role])
		}
	}
}

// storeConditions are the template's Store<Model> conditions when Store
// names model.
func storeConditions(t *testing.T, tpl map[string]any, model string) map[string]bool {
	out := map[string]bool{}
	for _, m := range deployedModels(t, tpl) {
		out[modelCondition(m)] = m == model
	}
	return out
}

// resolveIf evaluates every Fn::If in v under the given conditions, as
// CloudFormation does at deploy time; an unknown condition is left as it is.
func resolveIf(v any, conds map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		if args := list(x["Fn::If"]); len(x) == 1 && len(args) == 3 {
			if holds, ok := conds[str(args[0])]; ok {
				if holds {
					return resolveIf(args[1], conds)
				}
				return resolveIf(args[2], conds)
			}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = resolveIf(e, conds)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = resolveIf(e, conds)
		}
		return out
	}
	return v
}

// modelTables are the table resources of one model: those whose TableName
// starts with ${TablePrefix} and the model's prefix.
func modelTables(t *testing.T, tpl map[string]any, tables map[string]map[string]any, model string) map[string]map[string]any {
	t.Helper()
	prefix := "${TablePrefix}" + modelTablePrefix(t, tpl, model)
	out := map[string]map[string]any{}
	for res, p := range tables {
		if strings.HasPrefix(tableName(p), prefix) {
			out[res] = p
		}
	}
	if len(out) == 0 {
		t.Fatalf("no table of model %s (TableName %s...)", model, prefix)
	}
	return out
}

// checkTableResources: a DynamoDB statement names only the tables given
// (!Sub "<tableARN><name>") and their indexes ("<tableARN><name>/index/*"),
// and every one of them.
func checkTableResources(t *testing.T, role string, st map[string]any, tables map[string]map[string]any) {
	t.Helper()
	byName := map[string]string{}
	for res, p := range tables {
		byName[tableName(p)] = res
	}
	seen := map[string]bool{}
	for _, r := range anyList(st["Resource"]) {
		m, _ := r.(map[string]any)
		name, isTable := strings.CutPrefix(str(m["Fn::Sub"]), tableARN)
		if index, ok := strings.CutSuffix(name, "/index/*"); isTable && ok && byName[index] != "" {
			continue
		}
		if res := byName[name]; isTable && res != "" {
			seen[res] = true
			continue
		}
		t.Errorf("role %s, statement %v: resource %v is not one of the model's tables or their indexes", role, st["Sid"], r)
	}
	for name := range tables {
		if !seen[name] {
			t.Errorf("role %s, statement %v: table %s is not among the resources", role, st["Sid"], name)
		}
	}
}

// ---- instances -------------------------------------------------------------

func TestTemplateLoadBalancerChecksReadyz(t *testing.T) {
	tgs := resources(t, loadTemplate(t), "AWS::ElasticLoadBalancingV2::TargetGroup")
	if len(tgs) == 0 {
		t.Fatal("no target group")
	}
	for name, tg := range tgs {
		if tg["HealthCheckPath"] != "/readyz" {
			t.Errorf("target group %s checks %v; want /readyz", name, tg["HealthCheckPath"])
		}
	}
}

// Each launch template installs and starts the unit of its role, and that
// unit exists in deploy/systemd with the role set.
func TestTemplateLaunchTemplatesStartTheSystemdUnitOfTheirRole(t *testing.T) {
	lts := resources(t, loadTemplate(t), "AWS::EC2::LaunchTemplate")
	for res, role := range map[string]string{"ApiLaunchTemplate": "api", "ConsumerLaunchTemplate": "consumer"} {
		lt, ok := lts[res]
		if !ok {
			t.Errorf("launch template %s missing", res)
			continue
		}
		ud, vars := userData(lt)
		for _, want := range []string{"ROLE=" + role + "\n", "systemctl enable --now skiapi-$ROLE.service", "SKI_PROFILE=ec2",
			// the model's own tables, the queue
			"SKI_DYNAMO_TABLE_PREFIX=${TablePrefix}${ModelTablePrefix}\n", "SKI_STORE=${Store}\n", "\n${QueueSettings}\n"} {
			if !strings.Contains(ud, want) {
				t.Errorf("%s user-data lacks %q", res, want)
			}
		}
		// The queue's lines: SQS by name; or quorum queues on the broker,
		// over TLS, as the application user.
		sqs, mq := queueSettings(t, vars)
		for queue, wants := range map[string][]string{
			sqs: {"SKI_QUEUE=sqs\n", "SKI_SQS_QUEUE=${RideQueue.QueueName}"},
			mq:  {"SKI_QUEUE=rabbitmq\n", "SKI_AMQP_QUEUE_TYPE=quorum\n", "AMQP_URL=amqps://${User}@${Host}/\n", "SKI_AMQP_SHARDS=${AmqpShards}\n"},
		} {
			for _, want := range wants {
				if !strings.Contains(queue, want) {
					t.Errorf("%s: QueueSettings %q lacks %q", res, queue, want)
				}
			}
		}
		fim, _ := vars["ModelTablePrefix"].(map[string]any)
		if fmt.Sprint(fim["Fn::FindInMap"]) != fmt.Sprint([]any{"StoreModels", map[string]any{"Ref": "Store"}, "TablePrefix"}) {
			t.Errorf("%s: ModelTablePrefix is %v; want !FindInMap [StoreModels, !Ref Store, TablePrefix]", res, vars["ModelTablePrefix"])
		}
		unit, err := os.ReadFile("systemd/skiapi-" + role + ".service")
		if err != nil {
			t.Errorf("unit for role %s: %v", role, err)
			continue
		}
		for _, want := range []string{"Environment=SKI_ROLE=" + role + "\n", "EnvironmentFile=/etc/skidata/skiapi.env\n", "ExecStart=/usr/local/bin/skiapi serve\n"} {
			if !strings.Contains(string(unit), want) {
				t.Errorf("skiapi-%s.service lacks %q", role, want)
			}
		}
	}
}

// Both groups wait for their instances to be ready, at creation and at each
// rolling update, and the API group does not terminate instances whose
// /readyz fails: during a queue or DynamoDB outage the load balancer stops
// routing to them, and replacements would fail the same check. A rolling
// update never has fewer instances in service than the group's size (the
// new one is launched before an old one stops: no release stops the
// consumers, nor fires NoConsumerAlarm), nor does a replacement the group
// makes itself; there are two consumers by default, one a zone. The
// user-data signals failure from its first command on (the trap comes
// before any install), through the AWS CLI the image has.
func TestTemplateGroupsWaitForReadyInstancesAndSurviveDependencyOutages(t *testing.T) {
	tpl := loadTemplate(t)
	groups := resourceEntries(t, tpl, "AWS::AutoScaling::AutoScalingGroup")
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	params, _ := tpl["Parameters"].(map[string]any)
	for name, size := range map[string]string{"ApiGroup": "ApiInstances", "ConsumerGroup": "ConsumerInstances"} {
		p, _ := params[size].(map[string]any)
		if def, _ := p["Default"].(int); def < 2 {
			t.Errorf("%s defaults to %v; want two or more, one in each of two zones", size, p["Default"])
		}
		minInService := map[string]any{"Ref": size}
		g, ok := groups[name]
		if !ok {
			t.Errorf("auto scaling group %s missing", name)
			continue
		}
		props, _ := g["Properties"].(map[string]any)
		if props["HealthCheckType"] != "EC2" {
			t.Errorf("%s: HealthCheckType %v; want EC2, so a failing /readyz only stops routing and never terminates instances", name, props["HealthCheckType"])
		}

		cp, _ := g["CreationPolicy"].(map[string]any)
		rs, _ := cp["ResourceSignal"].(map[string]any)
		if fmt.Sprint(rs["Count"]) != fmt.Sprint(props["DesiredCapacity"]) || rs["Count"] == nil {
			t.Errorf("%s: CreationPolicy.ResourceSignal.Count is %v; want the desired capacity %v", name, rs["Count"], props["DesiredCapacity"])
		}
		if rs["Timeout"] != "PT15M" {
			t.Errorf("%s: CreationPolicy.ResourceSignal.Timeout is %v; want PT15M", name, rs["Timeout"])
		}

		up, _ := g["UpdatePolicy"].(map[string]any)
		ru, _ := up["AutoScalingRollingUpdate"].(map[string]any)
		// One instance out at a time, each waited for until it signals.
		wantValues(t, name+" rolling update", ru, map[string]any{"WaitOnResourceSignals": true, "PauseTime": "PT15M", "MaxBatchSize": 1})
		if fmt.Sprint(ru["MinInstancesInService"]) != fmt.Sprint(minInService) || fmt.Sprint(props["MinSize"]) != fmt.Sprint(minInService) {
			t.Errorf("%s: MinInstancesInService %v, MinSize %v; want both %v, so a new instance is launched before an old one stops", name, ru["MinInstancesInService"], props["MinSize"], minInService)
		}
		if got := fmt.Sprint(props["InstanceMaintenancePolicy"]); got != "map[MaxHealthyPercentage:200 MinHealthyPercentage:100]" {
			t.Errorf("%s: InstanceMaintenancePolicy %s; want MinHealthyPercentage 100, MaxHealthyPercentage 200 (launch before terminate)", name, got)
		}

		ltRef, _ := props["LaunchTemplate"].(map[string]any)
		id, _ := ltRef["LaunchTemplateId"].(map[string]any)
		lt, ok := lts[str(id["Ref"])]
		if !ok {
			t.Errorf("%s: launch template %v not found", name, ltRef["LaunchTemplateId"])
			continue
		}
		ud, _ := userData(lt)
		if strings.Contains(ud, "cfn-signal") || strings.Contains(ud, "aws-cfn-bootstrap") {
			t.Errorf("%s: user-data installs cfn-signal; the AWS CLI of the image signals, with nothing to install before the trap", name)
		}
		steps := []string{
			"set -euo pipefail\n",
			"--logical-resource-id " + name + " --unique-id \"$id\" --status \"$1\"\n",
			"trap 'signal FAILURE' ERR\n",
			"aws s3 cp",
			"dnf install -y",
			"systemctl enable --now skiapi-$ROLE.service\n",
			"timeout 600 bash -c 'until curl -fsS -o /dev/null --max-time 5 http://127.0.0.1:8080/readyz; do sleep 5; done'\n",
			"signal SUCCESS\n",
		}
		// Nothing that can fail runs before the trap: only the shell's
		// settings and ROLE, then the signal function's definition.
		beforeSignal, _, _ := strings.Cut(ud, "signal() {\n")
		for _, line := range strings.Split(beforeSignal, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l != "set -euo pipefail" && !strings.HasPrefix(l, "ROLE=") {
				t.Errorf("%s: %q runs before the trap: a failure there would not be signalled", name, l)
			}
		}
		if fn, _, _ := strings.Cut(ud[len(beforeSignal):], "trap 'signal FAILURE' ERR\n"); strings.Count(fn, "\n}\n") != 1 || !strings.HasSuffix(fn, "}\n") {
			t.Errorf("%s: between the signal function and the trap there is more than the function:\n%s", name, fn)
		}
		at := 0
		for _, step := range steps {
			i := strings.Index(ud[at:], step)
			if i < 0 {
				t.Errorf("%s: user-data lacks %q after what precedes it (in this order: %q)", name, step, steps)
				break
			}
			at += i + len(step)
		}
	}
}

// queueSettings is what a launch template's QueueSettings variable writes
// into the env file with Queue=sqs and with Queue=rabbitmq: the string of
// each branch's !Sub.
func queueSettings(t *testing.T, vars map[string]any) (sqs, mq string) {
	t.Helper()
	subOf := func(v any) string {
		switch x := asMap(v)["Fn::Sub"].(type) {
		case string:
			return x
		case []any:
			return str(x[0])
		}
		return ""
	}
	sqs = subOf(resolveIf(vars["QueueSettings"], queueConditions("sqs")))
	mq = subOf(resolveIf(vars["QueueSettings"], queueConditions("rabbitmq")))
	if sqs == "" || mq == "" {
		t.Fatalf("QueueSettings is %v; want !If [UseSQS, !Sub ..., !If [UseAmazonMQ, !Sub ..., ...]]", vars["QueueSettings"])
	}
	return sqs, mq
}

// userData is a launch template's user-data script and the variables of its
// !Sub (none for the one-argument form).
func userData(lt map[string]any) (string, map[string]any) {
	data, _ := lt["LaunchTemplateData"].(map[string]any)
	ud, _ := data["UserData"].(map[string]any)
	b64, _ := ud["Fn::Base64"].(map[string]any)
	switch sub := b64["Fn::Sub"].(type) {
	case string:
		return sub, nil
	case []any:
		if len(sub) == 2 {
			vars, _ := sub[1].(map[string]any)
			return str(sub[0]), vars
		}
	}
	return "", nil
}

// The instances' image is an AMI id the operator passes (no default, not an
// SSM parameter, which is resolved again on every stack update and would
// replace every instance when Amazon publishes a new image), and the
// default instance type is not a burstable one.
func TestTemplatePinsTheImageAndDefaultsToANonBurstableType(t *testing.T) {
	params, _ := loadTemplate(t)["Parameters"].(map[string]any)
	ami, _ := params["AppAmi"].(map[string]any)
	if ami["Type"] != "AWS::EC2::Image::Id" {
		t.Errorf("AppAmi is of type %v; want AWS::EC2::Image::Id", ami["Type"])
	}
	if d, ok := ami["Default"]; ok {
		t.Errorf("AppAmi has default %v; want none, so each stack names its image", d)
	}
	it, _ := params["InstanceType"].(map[string]any)
	if d := str(it["Default"]); d != "c7g.large" {
		t.Errorf("InstanceType defaults to %q; want c7g.large (arm64, as Arch, and not burstable)", d)
	}
	arch, _ := params["Arch"].(map[string]any)
	if arch["Default"] != "arm64" {
		t.Errorf("Arch defaults to %v; the default InstanceType c7g.large is arm64", arch["Default"])
	}
}

// IMDSv2 only on every instance the stack starts: launch templates require
// session tokens, and no bare EC2 instance (which could not say so in
// older stacks) is left.
func TestTemplateEveryInstanceRequiresIMDSv2(t *testing.T) {
	tpl := loadTemplate(t)
	if inst := resources(t, tpl, "AWS::EC2::Instance"); len(inst) > 0 {
		t.Errorf("bare EC2 instances %v: start instances from a launch template with MetadataOptions.HttpTokens required", slices.Collect(maps.Keys(inst)))
	}
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	if len(lts) == 0 {
		t.Fatal("no launch template")
	}
	for name, lt := range lts {
		data, _ := lt["LaunchTemplateData"].(map[string]any)
		md, _ := data["MetadataOptions"].(map[string]any)
		if md["HttpTokens"] != "required" {
			t.Errorf("%s: MetadataOptions.HttpTokens is %v; want required (IMDSv2 only)", name, md["HttpTokens"])
		}
		if hops, _ := md["HttpPutResponseHopLimit"].(int); hops != 1 {
			t.Errorf("%s: HttpPutResponseHopLimit is %v; want 1", name, md["HttpPutResponseHopLimit"])
		}
	}
	for name, g := range resources(t, tpl, "AWS::AutoScaling::AutoScalingGroup") {
		if g["LaunchTemplate"] == nil {
			t.Errorf("auto scaling group %s does not start from a launch template", name)
		}
	}
}

// The broker is Amazon MQ for RabbitMQ, a three-zone cluster unless the
// stack asks for a single instance, and reachable only over AMQPS.
func TestTemplateBrokerIsAmazonMQClusterByDefault(t *testing.T) {
	tpl := loadTemplate(t)
	name, b := single(t, tpl, "AWS::AmazonMQ::Broker")
	wantValues(t, name, b, map[string]any{"EngineType": "RABBITMQ", "PubliclyAccessible": false})
	ref, _ := b["DeploymentMode"].(map[string]any)
	param, _ := tpl["Parameters"].(map[string]any)[str(ref["Ref"])].(map[string]any)
	if param["Default"] != "CLUSTER_MULTI_AZ" {
		t.Errorf("%s: DeploymentMode defaults to %v; want CLUSTER_MULTI_AZ", name, param["Default"])
	}
	for name, sg := range resources(t, tpl, "AWS::EC2::SecurityGroupEgress") {
		if to, _ := sg["DestinationSecurityGroupId"].(map[string]any); str(to["Ref"]) == "BrokerSG" && sg["FromPort"] != 5671 {
			t.Errorf("%s opens port %v to the broker; want 5671 (AMQPS) only", name, sg["FromPort"])
		}
	}
}

// The broker is patched in a weekly window the stack chooses (parameters,
// in UTC), not at a time Amazon MQ picks.
func TestTemplateBrokerHasAMaintenanceWindow(t *testing.T) {
	tpl := loadTemplate(t)
	params, _ := tpl["Parameters"].(map[string]any)
	for name, b := range resources(t, tpl, "AWS::AmazonMQ::Broker") {
		mw, _ := b["MaintenanceWindowStartTime"].(map[string]any)
		if mw == nil {
			t.Errorf("%s: no MaintenanceWindowStartTime", name)
			continue
		}
		if mw["TimeZone"] != "UTC" {
			t.Errorf("%s: maintenance window TimeZone %v; want UTC", name, mw["TimeZone"])
		}
		for field, want := range map[string]string{"DayOfWeek": "TUESDAY", "TimeOfDay": "03:00"} {
			ref, _ := mw[field].(map[string]any)
			p, _ := params[str(ref["Ref"])].(map[string]any)
			if p == nil || str(p["Default"]) != want {
				t.Errorf("%s: maintenance window %s is %v; want !Ref of a parameter defaulting to %s", name, field, mw[field], want)
			}
		}
	}
}

// The DynamoDB and S3 gateway endpoints are created only when the
// CreateGatewayEndpoints parameter says so (default true): in a VPC whose
// route tables already have them, adding them again fails the create.
func TestTemplateGatewayEndpointsAreOptional(t *testing.T) {
	tpl := loadTemplate(t)
	params, _ := tpl["Parameters"].(map[string]any)
	p, _ := params["CreateGatewayEndpoints"].(map[string]any)
	if str(p["Default"]) != "true" || fmt.Sprint(list(p["AllowedValues"])) != "[true false]" {
		t.Errorf("parameter CreateGatewayEndpoints is %v; want AllowedValues [true, false], default true", p)
	}
	cond := ""
	for name, c := range asMap(tpl["Conditions"]) {
		if fmt.Sprint(c) == fmt.Sprint(map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "CreateGatewayEndpoints"}, "true"}}) {
			cond = name
		}
	}
	if cond == "" {
		t.Fatal("no condition !Equals [!Ref CreateGatewayEndpoints, \"true\"]")
	}
	endpoints := resourceEntries(t, tpl, "AWS::EC2::VPCEndpoint")
	var services []string
	for name, e := range endpoints {
		props, _ := e["Properties"].(map[string]any)
		if props["VpcEndpointType"] != "Gateway" {
			continue
		}
		sub, _ := props["ServiceName"].(map[string]any)
		services = append(services, str(sub["Fn::Sub"]))
		if e["Condition"] != cond {
			t.Errorf("gateway endpoint %s: Condition %v; want %s", name, e["Condition"], cond)
		}
	}
	sort.Strings(services)
	if want := []string{"com.amazonaws.${AWS::Region}.dynamodb", "com.amazonaws.${AWS::Region}.s3"}; !slices.Equal(services, want) {
		t.Errorf("gateway endpoints for %v; want %v", services, want)
	}
}

// ---- load balancer ---------------------------------------------------------

// pathMatches is the ALB's path-pattern match: * any run of characters, ?
// one character, case-sensitive, whole path.
func pathMatches(pattern, path string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(path)
}

// forwardedPaths are the path patterns HTTPS requests are forwarded to the
// API on; the listener's default must not forward.
func forwardedPaths(t *testing.T, tpl map[string]any) []string {
	t.Helper()
	listeners := resources(t, tpl, "AWS::ElasticLoadBalancingV2::Listener")
	var https string
	for name, l := range listeners {
		if l["Protocol"] == "HTTPS" {
			https = name
			for _, a := range list(l["DefaultActions"]) {
				if a.(map[string]any)["Type"] == "forward" {
					t.Errorf("HTTPS listener %s forwards by default: every path, /metrics too, would reach the API", name)
				}
			}
		}
	}
	if https == "" {
		t.Fatal("no HTTPS listener")
	}
	var patterns []string
	for name, r := range resources(t, tpl, "AWS::ElasticLoadBalancingV2::ListenerRule") {
		if ref, _ := r["ListenerArn"].(map[string]any); str(ref["Ref"]) != https {
			continue
		}
		forwards := false
		for _, a := range list(r["Actions"]) {
			forwards = forwards || a.(map[string]any)["Type"] == "forward"
		}
		if !forwards {
			continue
		}
		for _, c := range list(r["Conditions"]) {
			cm := c.(map[string]any)
			if cm["Field"] != "path-pattern" {
				t.Errorf("rule %s forwards on %v, not only on the path", name, cm["Field"])
			}
			ppc, _ := cm["PathPatternConfig"].(map[string]any)
			for _, v := range list(ppc["Values"]) {
				patterns = append(patterns, str(v))
			}
		}
	}
	return patterns
}

// Through the load balancer: every API path of openapi.yaml reaches the
// service, and /metrics, /statistics, the probes and pprof do not.
func TestTemplateLoadBalancerForwardsOnlyTheAPIPaths(t *testing.T) {
	tpl := loadTemplate(t)
	patterns := forwardedPaths(t, tpl)
	spec, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	internal := []string{"/metrics", "/statistics", "/healthz", "/readyz", "/debug/pprof/", "/debug/pprof/profile"}
	for path := range doc.Paths {
		// An example path: each {param} as a value.
		example := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "1")
		matched := slices.ContainsFunc(patterns, func(p string) bool { return pathMatches(p, example) })
		if slices.Contains(internal, path) {
			continue
		}
		if !matched {
			t.Errorf("API path %s (%s) is not forwarded by the HTTPS listener (patterns %v)", path, example, patterns)
		}
	}
	for _, path := range internal {
		for _, p := range patterns {
			if pathMatches(p, path) {
				t.Errorf("%s reaches the API through the load balancer (pattern %s)", path, p)
			}
		}
	}
}

// The load balancer writes its access logs to an encrypted, private bucket
// of the stack that expires them, under a prefix the log delivery service
// may write to, and is created only after that permission exists.
func TestTemplateLoadBalancerWritesAccessLogs(t *testing.T) {
	tpl := loadTemplate(t)
	lbs := resourceEntries(t, tpl, "AWS::ElasticLoadBalancingV2::LoadBalancer")
	buckets := resources(t, tpl, "AWS::S3::Bucket")
	policies := resources(t, tpl, "AWS::S3::BucketPolicy")
	if len(lbs) == 0 {
		t.Fatal("no load balancer")
	}
	for name, lb := range lbs {
		props, _ := lb["Properties"].(map[string]any)
		attrs := map[string]any{}
		for _, a := range list(props["LoadBalancerAttributes"]) {
			am, _ := a.(map[string]any)
			attrs[str(am["Key"])] = am["Value"]
		}
		if attrs["access_logs.s3.enabled"] != "true" {
			t.Errorf("%s: access_logs.s3.enabled is %v; want \"true\"", name, attrs["access_logs.s3.enabled"])
		}
		ref, _ := attrs["access_logs.s3.bucket"].(map[string]any)
		bucketName := str(ref["Ref"])
		bucket, ok := buckets[bucketName]
		if !ok {
			t.Errorf("%s: access_logs.s3.bucket is %v; want !Ref of a bucket of the stack", name, attrs["access_logs.s3.bucket"])
			continue
		}
		prefix := str(attrs["access_logs.s3.prefix"])
		if prefix == "" {
			t.Errorf("%s: no access_logs.s3.prefix", name)
		}
		// The load balancer writes a test file into the bucket when logging
		// is turned on, and CloudFormation cannot delete a bucket that is not
		// empty: deleted on a failed first create's rollback
		// (RetainExceptOnCreate) or with the stack, it would leave the stack
		// ROLLBACK_FAILED or DELETE_FAILED. Kept, its name generated, so a
		// stack created again makes its own.
		entry := resourceEntries(t, tpl, "AWS::S3::Bucket")[bucketName]
		if entry["DeletionPolicy"] != "Retain" || bucket["BucketName"] != nil {
			t.Errorf("bucket %s: DeletionPolicy %v, BucketName %v; want Retain (never deleted by CloudFormation: it is never empty) and a generated name", bucketName, entry["DeletionPolicy"], bucket["BucketName"])
		}

		enc, _ := bucket["BucketEncryption"].(map[string]any)
		var sse []string
		for _, r := range list(enc["ServerSideEncryptionConfiguration"]) {
			d, _ := r.(map[string]any)["ServerSideEncryptionByDefault"].(map[string]any)
			sse = append(sse, str(d["SSEAlgorithm"]))
		}
		if !slices.Equal(sse, []string{"AES256"}) {
			t.Errorf("bucket %s: encryption %v; want SSE-S3 (AES256), the only one the load balancer writes with", bucketName, sse)
		}
		pab, _ := bucket["PublicAccessBlockConfiguration"].(map[string]any)
		for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
			if pab[k] != true {
				t.Errorf("bucket %s: PublicAccessBlockConfiguration.%s is %v; want true", bucketName, k, pab[k])
			}
		}
		lc, _ := bucket["LifecycleConfiguration"].(map[string]any)
		expires := false
		for _, r := range list(lc["Rules"]) {
			rm, _ := r.(map[string]any)
			days, _ := rm["ExpirationInDays"].(int)
			expires = expires || (rm["Status"] == "Enabled" && days > 0)
		}
		if !expires {
			t.Errorf("bucket %s: no enabled lifecycle rule expires the logs", bucketName)
		}

		var policy string
		for pname, p := range policies {
			if b, _ := p["Bucket"].(map[string]any); str(b["Ref"]) != bucketName {
				continue
			}
			policy = pname
			doc, _ := p["PolicyDocument"].(map[string]any)
			want := "arn:${AWS::Partition}:s3:::${" + bucketName + "}/" + prefix + "/AWSLogs/${AWS::AccountId}/*"
			// The writer: the Region's Elastic Load Balancing account where
			// AWS documents one, else the log delivery service principal.
			wantPrincipal := "map[Fn::If:[ElbAccountRegion " +
				"map[AWS:map[Fn::Sub:[arn:${AWS::Partition}:iam::${ElbAccount}:root map[ElbAccount:map[Fn::FindInMap:[ElbLogDelivery map[Ref:AWS::Region] Account]]]]]] " +
				"map[Service:logdelivery.elasticloadbalancing.amazonaws.com]]]"
			granted := false
			for _, st := range list(doc["Statement"]) {
				sm, _ := st.(map[string]any)
				res, _ := sm["Resource"].(map[string]any)
				granted = granted || (sm["Effect"] == "Allow" &&
					fmt.Sprint(sm["Principal"]) == wantPrincipal &&
					slices.Equal(anyList(sm["Action"]), []any{"s3:PutObject"}) &&
					str(res["Fn::Sub"]) == want)
			}
			if !granted {
				t.Errorf("bucket policy %s: no statement allowing %s s3:PutObject on %s", pname, wantPrincipal, want)
			}
		}
		if policy == "" {
			t.Errorf("bucket %s has no bucket policy", bucketName)
		} else if !slices.Contains(anyList(lb["DependsOn"]), any(policy)) {
			t.Errorf("%s: DependsOn %v; want %s (the load balancer checks its write access when logging is turned on)", name, lb["DependsOn"], policy)
		}
	}
}

// Port 80 answers only with a redirect to HTTPS.
func TestTemplateHTTPRedirectsToHTTPS(t *testing.T) {
	tpl := loadTemplate(t)
	var found bool
	for name, l := range resources(t, tpl, "AWS::ElasticLoadBalancingV2::Listener") {
		switch l["Protocol"] {
		case "HTTP":
			found = true
			acts := list(l["DefaultActions"])
			if len(acts) != 1 {
				t.Errorf("HTTP listener %s: want exactly one action, a redirect", name)
				continue
			}
			a := acts[0].(map[string]any)
			rc, _ := a["RedirectConfig"].(map[string]any)
			if a["Type"] != "redirect" || rc["Protocol"] != "HTTPS" || rc["Port"] != "443" {
				t.Errorf("HTTP listener %s: %v; want a redirect to HTTPS on 443", name, a)
			}
		case "HTTPS":
			certs := list(l["Certificates"])
			if len(certs) != 1 {
				t.Errorf("HTTPS listener %s: want one certificate (the CertificateArn parameter)", name)
			}
		}
	}
	if !found {
		t.Error("no HTTP listener: clients on http:// would get a connection refused rather than a redirect")
	}
	for name, r := range resources(t, tpl, "AWS::ElasticLoadBalancingV2::ListenerRule") {
		if ref, _ := r["ListenerArn"].(map[string]any); ref["Ref"] == "HttpListener" {
			t.Errorf("rule %s on the HTTP listener: port 80 must only redirect", name)
		}
	}
}

// alarmMetrics are the metrics an alarm watches (its own, or each
// MetricStat of its Metrics) and its metric math expressions, with the
// template's Fn::Ifs resolved under conds.
func alarmMetrics(a map[string]any, conds map[string]bool) (metrics []map[string]any, exprs []string) {
	a = resolveIf(a, conds).(map[string]any)
	if a["MetricName"] != nil {
		metrics = append(metrics, map[string]any{"Namespace": a["Namespace"], "MetricName": a["MetricName"], "Dimensions": a["Dimensions"]})
	}
	for _, q := range list(a["Metrics"]) {
		qm, _ := q.(map[string]any)
		if ms, _ := qm["MetricStat"].(map[string]any); ms != nil {
			m, _ := ms["Metric"].(map[string]any)
			metrics = append(metrics, m)
		}
		if e := str(qm["Expression"]); e != "" {
			exprs = append(exprs, e)
		}
	}
	return metrics, exprs
}

// TestTemplateQueueAlarmsWatchTheRideQueuesNotTheDeadLetters: the lag and
// depth alarms watch the ride queue(s) only: with SQS the ride queue's own
// metrics, with Amazon MQ the broker's ready messages less the dead-letter
// queue's, so parked dead letters (which wait for an operator, and have an
// alarm of their own) do not keep them firing. Their thresholds are in the
// unit the metric counts: the oldest ride's age in seconds (SQS), messages
// (Amazon MQ, whose messages carry up to --publish-batch rides each).
// The dead-letter alarm watches the dead-letter queue with either queue.
func TestTemplateQueueAlarmsWatchTheRideQueuesNotTheDeadLetters(t *testing.T) {
	tpl := loadTemplate(t)
	params := tpl["Parameters"].(map[string]any)
	alarms := resources(t, tpl, "AWS::CloudWatch::Alarm")
	dims := func(m map[string]any) string { return fmt.Sprint(m["Dimensions"]) }
	for _, queue := range []string{"sqs", "rabbitmq"} {
		conds := queueConditions(queue)
		for _, name := range []string{"QueueDepthRisingAlarm", "ConsumerLagAlarm", "DeadLetterAlarm"} {
			a, ok := alarms[name]
			if !ok {
				t.Fatalf("no alarm %s", name)
			}
			metrics, exprs := alarmMetrics(a, conds)
			var rides, dead int
			for _, m := range metrics {
				switch d := dims(m); {
				case queue == "sqs" && strings.Contains(d, "RideDeadLetterQueue"), queue == "rabbitmq" && strings.Contains(d, "Name:Queue Value:skidata.dlq"):
					dead++
				case queue == "sqs" && m["Namespace"] == "AWS/SQS" && strings.Contains(d, "GetAtt:[RideQueue QueueName]"):
					rides++
				case queue == "rabbitmq" && m["Namespace"] == "AWS/AmazonMQ" && !strings.Contains(d, "Name:Queue"):
					rides++ // the broker's total: the dead letters are taken out below
				default:
					t.Errorf("%s with Queue=%s watches %v, not the %s queues", name, queue, m, queue)
				}
			}
			if name == "DeadLetterAlarm" {
				if dead != 1 || rides != 0 {
					t.Errorf("DeadLetterAlarm with Queue=%s watches %v; want the dead-letter queue alone", queue, metrics)
				}
				continue
			}
			if rides != 1 {
				t.Errorf("%s with Queue=%s watches %v; want the ride queue(s)", name, queue, metrics)
			}
			if queue == "rabbitmq" && (dead != 1 || !strings.Contains(strings.Join(exprs, " "), "- FILL(dlq, 0)")) {
				t.Errorf("%s with Queue=rabbitmq: expressions %v over %v; want the dead-letter queue's ready messages taken out of the broker's", name, exprs, metrics)
			}
			if queue == "sqs" && dead != 0 {
				t.Errorf("%s with Queue=sqs watches the dead-letter queue: %v", name, metrics)
			}
			th := str(resolveIf(a["Threshold"], conds))
			if th == "0" {
				continue
			}
			unit := map[string]string{"sqs": "Seconds", "rabbitmq": "Messages"}[queue]
			ref := strings.TrimSuffix(strings.TrimPrefix(th, "map[Ref:"), "]")
			p, ok := params[ref].(map[string]any)
			if !ok || !strings.HasSuffix(ref, unit) || !strings.Contains(str(p["Description"]), strings.ToLower(unit)) {
				t.Errorf("%s with Queue=%s: threshold %s; want a parameter named and described in %s", name, queue, th, strings.ToLower(unit))
			}
		}
	}
}

// TestTemplateQueueAlarmsAreLabelledInTheirUnits: what a queue alarm
// shows (its returned series' label, in the alarm's graph and its
// notification) names the unit it reads: messages for the message counts
// (neither SQS nor Amazon MQ sees the rides inside a message, so a label
// saying rides would read the threshold wrong by up to --publish-batch
// times), seconds for the oldest message's age.
func TestTemplateQueueAlarmsAreLabelledInTheirUnits(t *testing.T) {
	alarms := resources(t, loadTemplate(t), "AWS::CloudWatch::Alarm")
	for _, queue := range []string{"sqs", "rabbitmq"} {
		for _, name := range []string{"QueueDepthRisingAlarm", "ConsumerLagAlarm", "DeadLetterAlarm"} {
			a := resolveIf(alarms[name], queueConditions(queue)).(map[string]any)
			metrics, _ := alarmMetrics(a, queueConditions(queue))
			unit := "messages"
			for _, m := range metrics {
				if m["MetricName"] == "ApproximateAgeOfOldestMessage" {
					unit = "seconds"
				}
			}
			var labels []string
			for _, q := range list(a["Metrics"]) {
				if qm := asMap(q); qm["ReturnData"] == true {
					labels = append(labels, str(qm["Label"]))
				}
			}
			if len(labels) != 1 {
				t.Errorf("%s with Queue=%s returns %d series %q; want one, labelled", name, queue, len(labels), labels)
				continue
			}
			label := labels[0]
			if !strings.Contains(label, unit) || unit == "messages" && regexp.MustCompile(`\brides\b`).MatchString(label) {
				t.Errorf("%s with Queue=%s is labelled %q; it reads %s, so want a label in %s (not rides)", name, queue, label, unit, unit)
			}
		}
	}
}

// TestTemplateWAFRateLimitsEachClientAddress: one client cannot get every
// other client refused: a WAF rule blocks any one IP over its rate at the
// load balancer, and each instance limits each client (SKI_CLIENT_RATE,
// the address from X-Forwarded-For under the ec2 profile).
func TestTemplateWAFRateLimitsEachClientAddress(t *testing.T) {
	tpl := loadTemplate(t)
	aclName, acl := single(t, tpl, "AWS::WAFv2::WebACL")
	if acl["Scope"] != "REGIONAL" {
		t.Errorf("%s scope %v; want REGIONAL (a load balancer's)", aclName, acl["Scope"])
	}
	limited := false
	for _, r := range list(acl["Rules"]) {
		rule := r.(map[string]any)
		st, _ := rule["Statement"].(map[string]any)
		rb, _ := st["RateBasedStatement"].(map[string]any)
		action, _ := rule["Action"].(map[string]any)
		if rb == nil || rb["AggregateKeyType"] != "IP" || action["Block"] == nil {
			continue
		}
		limited = true
		// 429 with Retry-After (a 403 many devices treat as final, and
		// drop the ride), a JSON body as the API's, over a 60 s window.
		cr := asMap(asMap(action["Block"])["CustomResponse"])
		body := asMap(asMap(acl["CustomResponseBodies"])[str(cr["CustomResponseBodyKey"])])
		if cr["ResponseCode"] != 429 || fmt.Sprint(cr["ResponseHeaders"]) != "[map[Name:Retry-After Value:60]]" || body["ContentType"] != "APPLICATION_JSON" || !json.Valid([]byte(str(body["Content"]))) {
			t.Errorf("%s: rule %v blocks with %v (body %v); want 429, Retry-After: 60 and a JSON body", aclName, rule["Name"], cr, body)
		}
		if rb["EvaluationWindowSec"] != 60 || fmt.Sprint(rb["Limit"]) != "map[Ref:WafRequestsPerMinute]" {
			t.Errorf("%s: rule %v counts %v over %v s; want WafRequestsPerMinute over 60 s", aclName, rule["Name"], rb["Limit"], rb["EvaluationWindowSec"])
		}
		// An alarm on what it turns away, on the metric of that rule.
		alarm := resources(t, tpl, "AWS::CloudWatch::Alarm")["WafBlocksAlarm"]
		want := fmt.Sprint([]any{
			map[string]any{"Name": "WebACL", "Value": acl["Name"]},
			map[string]any{"Name": "Region", "Value": map[string]any{"Ref": "AWS::Region"}},
			map[string]any{"Name": "Rule", "Value": asMap(rule["VisibilityConfig"])["MetricName"]},
		})
		if alarm["Namespace"] != "AWS/WAFV2" || alarm["MetricName"] != "BlockedRequests" || fmt.Sprint(alarm["Dimensions"]) != want {
			t.Errorf("WafBlocksAlarm watches %v %v %v; want AWS/WAFV2 BlockedRequests %s", alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"], want)
		}
	}
	if !limited {
		t.Errorf("%s has no rule blocking one IP over a rate", aclName)
	}
	assoc := resources(t, tpl, "AWS::WAFv2::WebACLAssociation")
	found := false
	for _, a := range assoc {
		if strings.Contains(str(a["ResourceArn"]), "LoadBalancer") && strings.Contains(str(a["WebACLArn"]), aclName) {
			found = true
		}
	}
	if !found {
		t.Errorf("no association of %s with the load balancer: %v", aclName, assoc)
	}
	templates := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	for name, lt := range templates {
		if strings.Contains(name, "Api") && !strings.Contains(fmt.Sprint(lt), "SKI_CLIENT_RATE=${ClientRate}") {
			t.Errorf("%s does not set the per-client rate of each instance", name)
		}
	}
}

// TestTemplateAlarmsOnTheBrokersResourcesAndTheLoadBalancer: the first
// alert must come before RabbitMQ's memory or disk alarm blocks every
// publisher, when instances fail /readyz, and when the p99 climbs.
func TestTemplateAlarmsOnTheBrokersResourcesAndTheLoadBalancer(t *testing.T) {
	watched := map[string]bool{}
	for _, a := range resources(t, loadTemplate(t), "AWS::CloudWatch::Alarm") {
		watched[str(a["MetricName"])] = true
		for _, q := range list(a["Metrics"]) {
			ms, _ := q.(map[string]any)["MetricStat"].(map[string]any)
			metric, _ := ms["Metric"].(map[string]any)
			watched[str(metric["MetricName"])] = true
		}
	}
	for _, m := range []string{"RabbitMQMemUsed", "RabbitMQMemLimit", "RabbitMQDiskFree", "RabbitMQDiskFreeLimit", "SystemCpuUtilization", "UnHealthyHostCount", "TargetResponseTime"} {
		if !watched[m] {
			t.Errorf("no alarm watches %s", m)
		}
	}
}

// TestTemplateInstancesBootWithoutTheNATGateway: what an instance needs to
// start, be managed and queue rides (the queue or the broker password, the
// readiness signal, Session Manager, the agent's logs and metrics) is
// reachable through interface endpoints in its own subnets, so a NAT
// gateway's zone failing stops no instance from booting; with
// CreateInterfaceEndpoints=queue only the queue's endpoint is made (taking
// rides never depends on the NAT gateway), with false none.
func TestTemplateInstancesBootWithoutTheNATGateway(t *testing.T) {
	tpl := loadTemplate(t)
	all := tpl["Resources"].(map[string]any)
	services := map[string]bool{}
	for name, ep := range resources(t, tpl, "AWS::EC2::VPCEndpoint") {
		if ep["VpcEndpointType"] != "Interface" {
			continue
		}
		if cond := str(all[name].(map[string]any)["Condition"]); !conditionImplies(tpl, cond, "WantQueueEndpoint") {
			t.Errorf("%s has Condition %q; want one implying WantQueueEndpoint (CreateInterfaceEndpoints not false): a VPC that has one already would fail the create", name, cond)
		} else if sub := str(ep["ServiceName"]); !strings.Contains(sub, ".sqs") && !strings.Contains(sub, ".secretsmanager") && !conditionImplies(tpl, cond, "WantInterfaceEndpoints") {
			t.Errorf("%s has Condition %q; want one implying WantInterfaceEndpoints: only the queue's endpoint comes with CreateInterfaceEndpoints=queue", name, cond)
		}
		if ep["PrivateDnsEnabled"] != true || !strings.Contains(str(ep["SubnetIds"]), "PrivateSubnets") {
			t.Errorf("%s: private DNS %v, subnets %v; want the service's own name resolving to the endpoint in PrivateSubnets", name, ep["PrivateDnsEnabled"], ep["SubnetIds"])
		}
		sub := str(ep["ServiceName"])
		services[strings.TrimRight(sub[strings.LastIndex(sub, ".")+1:], "]")] = true
	}
	for _, s := range []string{"sqs", "secretsmanager", "cloudformation", "ssm", "ssmmessages", "ec2messages", "logs", "monitoring"} {
		if !services[s] {
			t.Errorf("no interface endpoint for %s", s)
		}
	}
	sg := resources(t, tpl, "AWS::EC2::SecurityGroup")["EndpointSG"]
	for _, from := range []string{"ApiSG", "ConsumerSG"} {
		if !strings.Contains(fmt.Sprint(sg["SecurityGroupIngress"]), from) {
			t.Errorf("EndpointSG does not let %s in", from)
		}
	}
}

// TestTemplateRefusesInstanceZonesTheLoadBalancerDoesNotServe: the load
// balancer sends traffic only to zones it has a subnet in, so the stack
// refuses private subnets in a zone without a public one.
func TestTemplateRefusesInstanceZonesTheLoadBalancerDoesNotServe(t *testing.T) {
	rules, _ := loadTemplate(t)["Rules"].(map[string]any)
	found := false
	for _, r := range rules {
		for _, a := range list(r.(map[string]any)["Assertions"]) {
			got := fmt.Sprint(a.(map[string]any)["Assert"])
			if strings.Contains(got, "Fn::EachMemberIn") && strings.Contains(got, "[PrivateSubnets AvailabilityZone]") && strings.Contains(got, "[PublicSubnets AvailabilityZone]") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no rule asserting every zone of PrivateSubnets is one of PublicSubnets: %v", rules)
	}
}

// TestTemplateCanNameTheAPIAndCertifyIt: with DomainName and HostedZoneId
// the stack requests the certificate (validated in DNS), points the name
// at the load balancer and serves HTTPS with that certificate, so the
// documented checks need no -k; a rule refuses a stack with neither a
// certificate nor a domain.
func TestTemplateCanNameTheAPIAndCertifyIt(t *testing.T) {
	tpl := loadTemplate(t)
	certs := resources(t, tpl, "AWS::CertificateManager::Certificate")
	if c := certs["Certificate"]; c == nil || c["ValidationMethod"] != "DNS" || !strings.Contains(fmt.Sprint(c["DomainValidationOptions"]), "HostedZoneId") {
		t.Errorf("certificate %v; want one validated in DNS through HostedZoneId", c)
	}
	rec := resources(t, tpl, "AWS::Route53::RecordSet")["ApiDnsRecord"]
	if rec == nil || !strings.Contains(fmt.Sprint(rec["AliasTarget"]), "LoadBalancer") {
		t.Errorf("DNS record %v; want an alias of DomainName to the load balancer", rec)
	}
	for name, l := range resources(t, tpl, "AWS::ElasticLoadBalancingV2::Listener") {
		if l["Protocol"] == "HTTPS" && !strings.Contains(fmt.Sprint(l["Certificates"]), "Fn::If:[HasDomain map[Ref:Certificate] map[Ref:CertificateArn]]") {
			t.Errorf("HTTPS listener %s certificates %v; want the stack's certificate with a domain, else CertificateArn", name, l["Certificates"])
		}
	}
	rules := fmt.Sprint(tpl["Rules"])
	if !strings.Contains(rules, "CertificateArn") || !strings.Contains(rules, "DomainName") {
		t.Errorf("no rule requiring a certificate or a domain: %s", rules)
	}
}

// TestTemplateWarmsTheTablesOfTheModelInUse: every table and index carries
// WarmThroughput from the WarmReadUnitsPerSecond and WarmWriteUnitsPerSecond
// parameters, present only when its model is in use and a parameter is not
// 0 (each raise is billed; 0 leaves AWS's values of a new table), each
// unit left to AWS when its parameter is 0. The defaults are 0 or above
// what a new on-demand table takes anyway, so a default never asks for
// a raise that does nothing.
func TestTemplateWarmsTheTablesOfTheModelInUse(t *testing.T) {
	tpl := loadTemplate(t)
	params, _ := tpl["Parameters"].(map[string]any)
	for name, newTable := range map[string]float64{"WarmWriteUnitsPerSecond": 4000, "WarmReadUnitsPerSecond": 12000} {
		p, _ := params[name].(map[string]any)
		var def float64
		if _, err := fmt.Sscan(str(p["Default"]), &def); p == nil || p["Type"] != "Number" || err != nil {
			t.Errorf("parameter %s: %v; want a Number with a default", name, p)
			continue
		}
		if def != 0 && def <= newTable {
			t.Errorf("parameter %s defaults to %v: a new on-demand table already takes %v; want 0 or more than %v", name, def, newTable, newTable)
		}
	}
	wantCond := map[string]string{
		"WarmWrites":         "map[Fn::Not:[map[Fn::Equals:[map[Ref:WarmWriteUnitsPerSecond] 0]]]]",
		"WarmReads":          "map[Fn::Not:[map[Fn::Equals:[map[Ref:WarmReadUnitsPerSecond] 0]]]]",
		"WantWarmThroughput": "map[Fn::Or:[map[Condition:WarmWrites] map[Condition:WarmReads]]]",
	}
	modelOf := map[string]string{}
	for _, model := range deployedModels(t, tpl) {
		cond := "Warm" + strings.TrimPrefix(modelCondition(model), "Store")
		wantCond[cond] = fmt.Sprintf("map[Fn::And:[map[Condition:%s] map[Condition:WantWarmThroughput]]]", modelCondition(model))
		modelOf["${TablePrefix}"+modelTablePrefix(t, tpl, model)] = cond
	}
	wantConditions(t, tpl, wantCond)
	check := func(what, cond string, warm any) {
		t.Helper()
		want := "map[Fn::If:[" + cond + " map[" +
			"ReadUnitsPerSecond:map[Fn::If:[WarmReads map[Ref:WarmReadUnitsPerSecond] map[Ref:AWS::NoValue]]] " +
			"WriteUnitsPerSecond:map[Fn::If:[WarmWrites map[Ref:WarmWriteUnitsPerSecond] map[Ref:AWS::NoValue]]]" +
			"] map[Ref:AWS::NoValue]]]"
		if got := fmt.Sprint(warm); got != want {
			t.Errorf("%s: WarmThroughput is %s; want %s", what, got, want)
		}
	}
	tables := resources(t, tpl, "AWS::DynamoDB::Table")
	if len(tables) == 0 {
		t.Fatal("no AWS::DynamoDB::Table in the template")
	}
	for res, p := range tables {
		name, _ := p["TableName"].(map[string]any)["Fn::Sub"].(string)
		cond := ""
		for prefix, c := range modelOf {
			if strings.HasPrefix(name, prefix) {
				cond = c
			}
		}
		if cond == "" {
			t.Errorf("table %s (%s) belongs to no model of the Store parameter", res, name)
			continue
		}
		check("table "+res, cond, p["WarmThroughput"])
		for _, g := range list(p["GlobalSecondaryIndexes"]) {
			gsi := g.(map[string]any)
			check("table "+res+" index "+str(gsi["IndexName"]), cond, gsi["WarmThroughput"])
		}
	}
}

// TestTemplateBrokerPasswordIsReadFromTheSecretNotWritten: the instances
// never fetch the broker password at boot or write it to their
// environment file; the file names the application user's secret, whose
// value skiapi reads itself (--amqp-password-secret), and each instance
// role may read that one secret and no other (not the administrator's).
func TestTemplateBrokerPasswordIsReadFromTheSecretNotWritten(t *testing.T) {
	tpl := loadTemplate(t)
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	for _, name := range []string{"ApiLaunchTemplate", "ConsumerLaunchTemplate"} {
		ud, vars := userData(lts[name])
		_, mq := queueSettings(t, vars)
		for _, banned := range []string{"get-secret-value", "$PASS", "${PASS}", "skidata:$", "skidata-app:$"} {
			if strings.Contains(ud+mq, banned) {
				t.Errorf("%s user-data holds %q: the password is fetched at boot or written to disk", name, banned)
			}
		}
		for _, want := range []string{"SKI_AMQP_PASSWORD_SECRET=${BrokerAppSecret}", "AMQP_URL=amqps://${User}@"} {
			if !strings.Contains(mq, want) {
				t.Errorf("%s: QueueSettings with Queue=rabbitmq lacks %q", name, want)
			}
		}
		user := resolveIf(vars["QueueSettings"], queueConditions("rabbitmq"))
		if got := fmt.Sprint(list(asMap(user)["Fn::Sub"])[1]); !strings.Contains(got, "User:map[Fn::GetAtt:[BrokerAppUser Username]]") {
			t.Errorf("%s: the AMQP user is %s; want the application user BrokerAppUser made", name, got)
		}
	}
	roles := resources(t, tpl, "AWS::IAM::Role")
	for _, role := range []string{"ApiRole", "ConsumerRole"} {
		var reads []any
		for _, st := range statements(roles[role]) {
			for _, a := range anyList(st["Action"]) {
				if strings.HasPrefix(strings.ToLower(str(a)), "secretsmanager:") {
					if str(a) != "secretsmanager:GetSecretValue" {
						t.Errorf("%s allows %s; skiapi calls GetSecretValue only", role, str(a))
					}
					reads = append(reads, anyList(st["Resource"])...)
				}
			}
		}
		if fmt.Sprint(reads) != fmt.Sprint([]any{map[string]any{"Ref": "BrokerAppSecret"}}) {
			t.Errorf("%s may read secrets %v; want exactly the application user's (!Ref BrokerAppSecret)", role, reads)
		}
		for _, arn := range list(roles[role]["ManagedPolicyArns"]) {
			if strings.Contains(strings.ToLower(fmt.Sprint(arn)), "secretsmanager") {
				t.Errorf("%s: managed policy %v grants Secrets Manager beyond the broker's secret", role, arn)
			}
		}
	}
}

// cfnSubbed is a !Sub string as CloudFormation renders it: ${!x} becomes
// ${x}, and each ${Name} a placeholder (or the given value).
func cfnSubbed(s string, values map[string]string) string {
	return regexp.MustCompile(`\$\{(!?)([A-Za-z0-9:.]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
		name := strings.TrimSuffix(strings.TrimPrefix(m, "${"), "}")
		if literal, ok := strings.CutPrefix(name, "!"); ok {
			return "${" + literal + "}"
		}
		if v, ok := values[name]; ok {
			return v
		}
		return "cfn-" + strings.NewReplacer(":", "-", ".", "-").Replace(name)
	})
}

// heredoc is the body of the here-document `<<TAG` (or `<<'TAG'`) of a
// script.
func heredoc(t *testing.T, script, tag string) string {
	t.Helper()
	re := regexp.MustCompile(`(?ms)<<'?` + tag + `'?\n(.*?)^` + tag + `$`)
	m := re.FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("no here-document %s", tag)
	}
	return m[1]
}

// TestTemplateShipsTheServiceLogsAndMemoryAndDiskMetrics: every instance
// installs the CloudWatch agent and gives it the service's journal as a
// file (journald is not a file the agent reads), rotated; the agent's
// configuration is valid JSON shipping that file to the stack's log group,
// kept LogRetentionDays, and mem_used_percent and disk_used_percent of the
// root disk; the user-data is valid bash.
func TestTemplateShipsTheServiceLogsAndMemoryAndDiskMetrics(t *testing.T) {
	tpl := loadTemplate(t)
	groups := resources(t, tpl, "AWS::Logs::LogGroup")
	lg, ok := groups["LogGroup"]
	if !ok {
		t.Fatal("no log group LogGroup")
	}
	if fmt.Sprint(lg["RetentionInDays"]) != fmt.Sprint(map[string]any{"Ref": "LogRetentionDays"}) {
		t.Errorf("LogGroup keeps logs %v; want !Ref LogRetentionDays", lg["RetentionInDays"])
	}
	params, _ := tpl["Parameters"].(map[string]any)
	if p, _ := params["LogRetentionDays"].(map[string]any); p == nil || p["Default"] == nil || !slices.Contains(anyList(p["AllowedValues"]), p["Default"]) {
		t.Errorf("parameter LogRetentionDays is %v; want a default among its AllowedValues", p)
	}
	bash := needs.Program(t, "bash", "bash")
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	for name, role := range map[string]string{"ApiLaunchTemplate": "api", "ConsumerLaunchTemplate": "consumer"} {
		ud, _ := userData(lts[name])
		script := cfnSubbed(ud, map[string]string{"LogGroup": "/skidata/stack"})
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s user-data is not valid bash: %v: %s", name, err, out)
		}
		for _, want := range []string{"dnf install -y amazon-cloudwatch-agent",
			"amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s",
			"systemctl enable --now skidata-journal-export.service\n"} {
			if !strings.Contains(script, want) {
				t.Errorf("%s user-data lacks %q", name, want)
			}
		}
		unit := strings.ReplaceAll(heredoc(t, script, "UNIT"), "$ROLE", role)
		for _, want := range []string{"ExecStart=/usr/bin/journalctl --follow --output=cat --unit=skiapi-" + role + ".service ",
			"StandardOutput=append:/var/log/skidata/skiapi.log\n", "Restart=always\n"} {
			if !strings.Contains(unit, want) {
				t.Errorf("%s: the journal export unit lacks %q:\n%s", name, want, unit)
			}
		}
		if rot := heredoc(t, script, "ROTATE"); !strings.Contains(rot, "/var/log/skidata/skiapi.log {") || !strings.Contains(rot, "copytruncate") {
			t.Errorf("%s: the log file is not rotated in place (copytruncate, as the export keeps it open):\n%s", name, rot)
		}
		// The here-document is unquoted: the shell expands $ROLE and \$.
		agentJSON := strings.NewReplacer("$ROLE", role, `\$`, "$").Replace(heredoc(t, script, "AGENT"))
		var agent struct {
			Logs struct {
				MetricsCollected struct {
					Prometheus struct {
						LogGroupName         string `json:"log_group_name"`
						PrometheusConfigPath string `json:"prometheus_config_path"`
						EMF                  struct {
							Namespace    string `json:"metric_namespace"`
							Declarations []struct {
								SourceLabels    []string   `json:"source_labels"`
								LabelMatcher    string     `json:"label_matcher"`
								Dimensions      [][]string `json:"dimensions"`
								MetricSelectors []string   `json:"metric_selectors"`
							} `json:"metric_declaration"`
						} `json:"emf_processor"`
					} `json:"prometheus"`
				} `json:"metrics_collected"`
				LogsCollected struct {
					Files struct {
						CollectList []struct {
							FilePath      string `json:"file_path"`
							LogGroupName  string `json:"log_group_name"`
							LogStreamName string `json:"log_stream_name"`
						} `json:"collect_list"`
					} `json:"files"`
				} `json:"logs_collected"`
			} `json:"logs"`
			Metrics struct {
				Namespace        string            `json:"namespace"`
				AppendDimensions map[string]string `json:"append_dimensions"`
				MetricsCollected struct {
					Mem  struct{ Measurement []string } `json:"mem"`
					Disk struct {
						Measurement []string
						Resources   []string
					} `json:"disk"`
				} `json:"metrics_collected"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(agentJSON), &agent); err != nil {
			t.Errorf("%s: the agent's configuration is not JSON: %v\n%s", name, err, agentJSON)
			continue
		}
		files := agent.Logs.LogsCollected.Files.CollectList
		if len(files) != 1 || files[0].FilePath != "/var/log/skidata/skiapi.log" || files[0].LogGroupName != "/skidata/stack" || !strings.Contains(files[0].LogStreamName, role) {
			t.Errorf("%s: the agent ships %+v; want /var/log/skidata/skiapi.log to ${LogGroup}, a stream per instance and role", name, files)
		}
		m := agent.Metrics
		if m.Namespace != "skidata" || !slices.Equal(m.MetricsCollected.Mem.Measurement, []string{"mem_used_percent"}) ||
			!slices.Equal(m.MetricsCollected.Disk.Measurement, []string{"used_percent"}) || !slices.Equal(m.MetricsCollected.Disk.Resources, []string{"/"}) {
			t.Errorf("%s: agent metrics %+v; want mem_used_percent and disk used_percent of / in namespace skidata", name, m)
		}
		if m.AppendDimensions["AutoScalingGroupName"] != "${aws:AutoScalingGroupName}" {
			t.Errorf("%s: AutoScalingGroupName dimension %q; want the agent's ${aws:AutoScalingGroupName}", name, m.AppendDimensions["AutoScalingGroupName"])
		}
		checkScrapedCounters(t, name, script, agent.Logs.MetricsCollected.Prometheus.LogGroupName, agent.Logs.MetricsCollected.Prometheus.PrometheusConfigPath,
			agent.Logs.MetricsCollected.Prometheus.EMF.Namespace, agent.Logs.MetricsCollected.Prometheus.EMF.Declarations)
	}
}

// checkScrapedCounters: the agent scrapes the service's /metrics with a
// scrape configuration promtool accepts, labelled with the stack, and
// turns exactly the counters the CloudWatch alarms watch (rides dropped,
// persists failed: metrics the service serves) into CloudWatch metrics of
// namespace skidata with the dimension Stack, written to MetricsLogGroup;
// RidesDroppedAlarm and PersistFailingAlarm watch those metrics. So they
// alarm with no Prometheus server (the scraper group is empty by default).
func checkScrapedCounters(t *testing.T, lt, script, logGroup, configPath, namespace string, decls []struct {
	SourceLabels    []string   `json:"source_labels"`
	LabelMatcher    string     `json:"label_matcher"`
	Dimensions      [][]string `json:"dimensions"`
	MetricSelectors []string   `json:"metric_selectors"`
}) {
	t.Helper()
	if logGroup != "cfn-MetricsLogGroup" || namespace != "skidata" {
		t.Errorf("%s: the agent writes scraped metrics to %q in namespace %q; want ${MetricsLogGroup}, skidata", lt, logGroup, namespace)
	}
	if !strings.Contains(script, "cat > "+configPath+" <<'SCRAPE'\n") {
		t.Errorf("%s: the agent's prometheus_config_path %q is not the file the user-data writes", lt, configPath)
	}
	scrape := heredoc(t, script, "SCRAPE")
	cfg := filepath.Join(t.TempDir(), "prometheus.yaml")
	if err := os.WriteFile(cfg, []byte(scrape), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "config", cfg).CombinedOutput(); err != nil {
		t.Errorf("%s: promtool check config of the agent's scrape configuration: %v\n%s\n%s", lt, err, out, scrape)
	}
	if !strings.Contains(scrape, `targets: ["127.0.0.1:8080"]`) || !strings.Contains(scrape, "job_name: skidata") || !strings.Contains(scrape, `Stack: "cfn-AWS--StackName"`) {
		t.Errorf("%s: the scrape configuration does not scrape 127.0.0.1:8080 as job skidata labelled with the stack:\n%s", lt, scrape)
	}
	served := servedMetrics(t)
	var selected []string
	for _, d := range decls {
		if fmt.Sprint(d.SourceLabels) != "[job]" || d.LabelMatcher != "^skidata$" || fmt.Sprint(d.Dimensions) != "[[Stack]]" {
			t.Errorf("%s: metric declaration %+v; want job skidata, dimensions [[Stack]]", lt, d)
		}
		for _, sel := range d.MetricSelectors {
			metric := strings.TrimSuffix(strings.TrimPrefix(sel, "^"), "$")
			if !served[metric] {
				t.Errorf("%s: the agent selects %s, which the service does not serve", lt, metric)
			}
			selected = append(selected, metric)
		}
	}
	alarms := resources(t, loadTemplate(t), "AWS::CloudWatch::Alarm")
	var watched []string
	for _, name := range []string{"RidesDroppedAlarm", "PersistFailingAlarm"} {
		a := alarms[name]
		if a["Namespace"] != "skidata" || fmt.Sprint(a["Dimensions"]) != "[map[Name:Stack Value:map[Ref:AWS::StackName]]]" || a["Statistic"] != "Sum" {
			t.Errorf("%s watches %v %v %v; want namespace skidata, dimension Stack of this stack, the sum of the scraped increases", name, a["Namespace"], a["Dimensions"], a["Statistic"])
		}
		watched = append(watched, str(a["MetricName"]))
	}
	sort.Strings(selected)
	sort.Strings(watched)
	if !slices.Equal(selected, watched) {
		t.Errorf("%s: the agent sends %v; the alarms watch %v", lt, selected, watched)
	}
}

// TestTemplateCloudWatchAgentMayWriteOnlyItsOwnLogsAndMetrics: each
// instance role lets the agent write log streams of the stack's log group
// only, and metrics in its namespace only; no broad managed policy.
func TestTemplateCloudWatchAgentMayWriteOnlyItsOwnLogsAndMetrics(t *testing.T) {
	roles := resources(t, loadTemplate(t), "AWS::IAM::Role")
	for _, role := range []string{"ApiRole", "ConsumerRole"} {
		for _, arn := range list(roles[role]["ManagedPolicyArns"]) {
			if strings.Contains(fmt.Sprint(arn), "CloudWatch") {
				t.Errorf("%s: managed policy %v; want statements scoped to the stack's log group and namespace", role, arn)
			}
		}
		var putLogs, putMetrics bool
		for _, st := range statements(roles[role]) {
			for _, a := range anyList(st["Action"]) {
				action := str(a)
				switch {
				case strings.HasPrefix(action, "logs:"):
					if fmt.Sprint(st["Resource"]) != "[map[Fn::GetAtt:[LogGroup Arn]] map[Fn::GetAtt:[MetricsLogGroup Arn]]]" {
						t.Errorf("%s allows %s on %v; want the stack's two log groups only (!GetAtt LogGroup.Arn, !GetAtt MetricsLogGroup.Arn)", role, action, st["Resource"])
					}
					putLogs = putLogs || action == "logs:PutLogEvents"
				case strings.HasPrefix(action, "cloudwatch:"):
					cond := fmt.Sprint(st["Condition"])
					if action != "cloudwatch:PutMetricData" || !strings.Contains(cond, "cloudwatch:namespace:skidata") {
						t.Errorf("%s allows %s with condition %v; want PutMetricData in namespace skidata only", role, action, cond)
					}
					putMetrics = true
				}
			}
		}
		if !putLogs || !putMetrics {
			t.Errorf("%s: logs:PutLogEvents allowed %v, cloudwatch:PutMetricData allowed %v; the agent needs both", role, putLogs, putMetrics)
		}
	}
}

// TestTemplateIAMNamesOnlyTheTablesOfTheActiveModel: with each value of
// Store, every DynamoDB statement of each role resolves to that model's
// tables (and their indexes) and none of another model's: the API cannot
// scan, nor the consumer write, tables the running model never uses.
func TestTemplateIAMNamesOnlyTheTablesOfTheActiveModel(t *testing.T) {
	tpl := loadTemplate(t)
	tables := resources(t, tpl, "AWS::DynamoDB::Table")
	roles := resources(t, tpl, "AWS::IAM::Role")
	for _, model := range deployedModels(t, tpl) {
		t.Run(model, func(t *testing.T) {
			want := modelTables(t, tpl, tables, model)
			for _, roleName := range []string{iamRoleOf[roleAPI], iamRoleOf[roleConsumer]} {
				n := 0
				for _, st := range statements(roles[roleName]) {
					if !strings.HasPrefix(strings.ToLower(fmt.Sprint(st["Action"])), "[dynamodb:") && !strings.HasPrefix(strings.ToLower(fmt.Sprint(st["Action"])), "dynamodb:") {
						continue
					}
					n++
					resolved := maps.Clone(st)
					resolved["Resource"] = resolveIf(st["Resource"], storeConditions(t, tpl, model))
					checkTableResources(t, roleName+" with Store dynamo-"+model, resolved, want)
				}
				if n == 0 {
					t.Errorf("%s has no DynamoDB statement", roleName)
				}
			}
		})
	}
}

// TestTemplateBrokerDefaultsToTheVersionAndTypeAmazonMQRecommends: the
// broker defaults to RabbitMQ 4.2 on mq.m7g.large, what the Amazon MQ
// Developer Guide recommends (docs/operations.md cites the pages); 3.13
// stays allowed for existing stacks, and a rule refuses 4.2 on the host
// types that cannot run it.
func TestTemplateBrokerDefaultsToTheVersionAndTypeAmazonMQRecommends(t *testing.T) {
	tpl := loadTemplate(t)
	params, _ := tpl["Parameters"].(map[string]any)
	ev, _ := params["BrokerEngineVersion"].(map[string]any)
	if ev["Default"] != "4.2" || !slices.Equal(anyList(ev["AllowedValues"]), []any{"4.2", "3.13"}) {
		t.Errorf("BrokerEngineVersion default %v, allowed %v; want 4.2, of [4.2 3.13]", ev["Default"], ev["AllowedValues"])
	}
	it, _ := params["BrokerInstanceType"].(map[string]any)
	if it["Default"] != "mq.m7g.large" {
		t.Errorf("BrokerInstanceType defaults to %v; want mq.m7g.large", it["Default"])
	}
	pattern := regexp.MustCompile("^(?:" + str(it["AllowedPattern"]) + ")$")
	for typ, ok := range map[string]bool{"mq.m7g.large": true, "mq.m7g.4xlarge": true, "mq.m5.large": true, "mq.t3.micro": true, "m7g.large": false, "mq.m4.large": false} {
		if pattern.MatchString(typ) != ok {
			t.Errorf("BrokerInstanceType pattern %q: %s allowed %v; want %v", pattern, typ, !ok, ok)
		}
	}
	rules, _ := tpl["Rules"].(map[string]any)
	rule := fmt.Sprint(rules["RabbitMQ4NeedsM7g"])
	for _, want := range []string{"BrokerEngineVersion", "3.13", "mq.m5.large", "mq.t3.micro"} {
		if !strings.Contains(rule, want) {
			t.Errorf("rule RabbitMQ4NeedsM7g lacks %q: %s", want, rule)
		}
	}
}

// TestTemplateLoadBalancerPinsXForwardedFor: the load balancer appends the
// client's address to X-Forwarded-For, the last entry the service trusts
// for --client-rate; pinned, not left to a default that could change.
func TestTemplateLoadBalancerPinsXForwardedFor(t *testing.T) {
	_, lb := single(t, loadTemplate(t), "AWS::ElasticLoadBalancingV2::LoadBalancer")
	for _, a := range list(lb["LoadBalancerAttributes"]) {
		if am := asMap(a); am["Key"] == "routing.http.xff_header_processing.mode" {
			if am["Value"] != "append" {
				t.Errorf("routing.http.xff_header_processing.mode is %v; want append", am["Value"])
			}
			return
		}
	}
	t.Error("the load balancer does not set routing.http.xff_header_processing.mode")
}

// TestTemplateBrokerCPUIsComparedPerNode: a cluster's SystemCpuUtilization
// is its three nodes' added together, so the alarm divides by the nodes
// before comparing with 80 %.
func TestTemplateBrokerCPUIsComparedPerNode(t *testing.T) {
	tpl := loadTemplate(t)
	a := resources(t, tpl, "AWS::CloudWatch::Alarm")["BrokerCpuAlarm"]
	if a["Threshold"] != 80 {
		t.Errorf("BrokerCpuAlarm threshold %v; want 80 (a node's percent)", a["Threshold"])
	}
	for mode, want := range map[string]string{"CLUSTER_MULTI_AZ": "cpu / 3", "SINGLE_INSTANCE": "cpu / 1"} {
		_, exprs := alarmMetrics(a, map[string]bool{"ClusterBroker": mode == "CLUSTER_MULTI_AZ"})
		if !slices.Equal(exprs, []string{want}) {
			t.Errorf("BrokerCpuAlarm with BrokerDeploymentMode=%s computes %v; want %q", mode, exprs, want)
		}
	}
	if got := fmt.Sprint(asMap(tpl["Conditions"])["ClusterBroker"]); !strings.Contains(got, "CLUSTER_MULTI_AZ") {
		t.Errorf("condition ClusterBroker is %s; want BrokerDeploymentMode CLUSTER_MULTI_AZ", got)
	}
}

// TestTemplateAccessLogWriterIsRightInEveryRegion: in the Regions opened
// before August 2022 the access-log bucket must let in the Region's Elastic
// Load Balancing account, which AWS lists (Elastic Load Balancing User
// Guide, "Enable access logs for your Application Load Balancer"); the
// service principal elsewhere. The mapping holds exactly AWS's list, and
// the later Regions with "" (the service principal).
func TestTemplateAccessLogWriterIsRightInEveryRegion(t *testing.T) {
	tpl := loadTemplate(t)
	documented := map[string]string{
		"us-east-1": "127311923021", "us-east-2": "033677994240", "us-west-1": "027434742980", "us-west-2": "797873946194",
		"af-south-1": "098369216593", "ap-east-1": "754344448648", "ap-southeast-3": "589379963580", "ap-south-1": "718504428378",
		"ap-northeast-3": "383597477331", "ap-northeast-2": "600734575887", "ap-southeast-1": "114774131450", "ap-southeast-2": "783225319266",
		"ap-northeast-1": "582318560864", "ca-central-1": "985666609251", "eu-central-1": "054676820928", "eu-west-1": "156460612806",
		"eu-west-2": "652711504416", "eu-south-1": "635631232127", "eu-west-3": "009996457667", "eu-north-1": "897822967062",
		"me-south-1": "076674570225", "sa-east-1": "507241528517",
	}
	mapping := asMap(asMap(tpl["Mappings"])["ElbLogDelivery"])
	for region, account := range documented {
		if got := str(asMap(mapping[region])["Account"]); got != account {
			t.Errorf("ElbLogDelivery %s is %q; want %s", region, got, account)
		}
	}
	for region, entry := range mapping {
		if _, ok := documented[region]; !ok && str(asMap(entry)["Account"]) != "" {
			t.Errorf("ElbLogDelivery %s is %v; AWS documents no account for it, so want \"\" (the service principal)", region, entry)
		}
	}
	wantConditions(t, tpl, map[string]string{"ElbAccountRegion": "map[Fn::Not:[map[Fn::Equals:[map[Fn::FindInMap:[ElbLogDelivery map[Ref:AWS::Region] Account]] ]]]]"})
}

// TestTemplateCopiesTheTablesToAnotherRegion: with BackupCopyVaultArn,
// the tables of the model in use are backed up every day and each backup
// copied to that vault in another Region, kept BackupCopyRetentionDays;
// without it, no backup resource exists.
func TestTemplateCopiesTheTablesToAnotherRegion(t *testing.T) {
	tpl := loadTemplate(t)
	all := tpl["Resources"].(map[string]any)
	wantConditions(t, tpl, map[string]string{"CopyBackups": "map[Fn::Not:[map[Fn::Equals:[map[Ref:BackupCopyVaultArn] ]]]]"})
	if p := asMap(asMap(tpl["Parameters"])["BackupCopyVaultArn"]); p["Default"] != "" {
		t.Errorf("BackupCopyVaultArn defaults to %v; want empty (a copy is a choice)", p["Default"])
	}
	n := 0
	for name, r := range all {
		if strings.HasPrefix(str(asMap(r)["Type"]), "AWS::Backup::") || name == "BackupRole" {
			n++
			if asMap(r)["Condition"] != "CopyBackups" {
				t.Errorf("%s: Condition %v; want CopyBackups", name, asMap(r)["Condition"])
			}
		}
	}
	if n != 4 {
		t.Errorf("%d backup resources; want the vault, the plan, its role and the selection", n)
	}
	rules := list(asMap(asMap(asMap(all["BackupPlan"])["Properties"])["BackupPlan"])["BackupPlanRule"])
	if len(rules) != 1 {
		t.Fatalf("backup plan rules %v; want one", rules)
	}
	rule := asMap(rules[0])
	copies := list(rule["CopyActions"])
	if !strings.HasPrefix(str(rule["ScheduleExpression"]), "cron(") || len(copies) != 1 ||
		fmt.Sprint(asMap(copies[0])["DestinationBackupVaultArn"]) != "map[Ref:BackupCopyVaultArn]" ||
		fmt.Sprint(asMap(copies[0])["Lifecycle"]) != "map[DeleteAfterDays:map[Ref:BackupCopyRetentionDays]]" {
		t.Errorf("backup rule %v; want a daily schedule copying to BackupCopyVaultArn, kept BackupCopyRetentionDays", rule)
	}
	sel := asMap(asMap(asMap(all["BackupSelection"])["Properties"])["BackupSelection"])
	want := "[map[Fn::Sub:[" + tableARN + "${TablePrefix}${ModelTablePrefix}* map[ModelTablePrefix:map[Fn::FindInMap:[StoreModels map[Ref:Store] TablePrefix]]]]]]"
	if got := fmt.Sprint(sel["Resources"]); got != want {
		t.Errorf("the backups select %s; want the tables of the model in use, %s", got, want)
	}
}

// TestTemplateLogGroupDoesNotBlockCreatingTheStackAgain: the log group is
// kept when the stack is deleted, so its name carries the stack's own id:
// a stack of the same name created again gets a log group of its own
// instead of failing on the kept one.
func TestTemplateLogGroupDoesNotBlockCreatingTheStackAgain(t *testing.T) {
	for name, g := range resources(t, loadTemplate(t), "AWS::Logs::LogGroup") {
		got := fmt.Sprint(g["LogGroupName"])
		if !strings.Contains(got, "${AWS::StackName}/${StackUuid}") || !strings.Contains(got, "StackUuid:map[Fn::Select:[2 map[Fn::Split:[/ map[Ref:AWS::StackId]]]]]") {
			t.Errorf("log group %s is named %s; want /skidata/${AWS::StackName}/<the stack id's uuid>...", name, got)
		}
	}
}
