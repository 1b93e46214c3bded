package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
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
	"github.com/skidata/skidata/test/storetest"
)

// The recording run needs a DynamoDB to answer; dynalite, as for the
// adapter's own tests.
func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

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
			watched := map[string]map[string]bool{} // table resource -> metric names
			for _, q := range list(a["Metrics"]) {
				ms, _ := q.(map[string]any)["MetricStat"].(map[string]any)
				metric, _ := ms["Metric"].(map[string]any)
				if metric["Namespace"] != "AWS/DynamoDB" {
					continue
				}
				for _, d := range list(metric["Dimensions"]) {
					dm := d.(map[string]any)
					if dm["Name"] == "TableName" {
						ref, _ := dm["Value"].(map[string]any)
						tbl := str(ref["Ref"])
						if watched[tbl] == nil {
							watched[tbl] = map[string]bool{}
						}
						watched[tbl][str(metric["MetricName"])] = true
					}
				}
			}
			prefix := "${TablePrefix}" + modelTablePrefix(t, tpl, model)
			for res, p := range tables {
				if !strings.HasPrefix(str(p["TableName"].(map[string]any)["Fn::Sub"]), prefix) {
					continue
				}
				for _, m := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
					if !watched[res][m] {
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

// Every table outlives a stack deletion and a replacement, and DynamoDB
// refuses to delete it while deletion protection is on; only a failed first
// create removes it (RetainExceptOnCreate), so that creating the stack
// again does not fail with "already exists".
func TestTemplateTablesSurviveDeletionButNotAFailedFirstCreate(t *testing.T) {
	tables := resourceEntries(t, loadTemplate(t), "AWS::DynamoDB::Table")
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	for name, r := range tables {
		// A replacement keeps the old table.
		wantValues(t, "table "+name, r, map[string]any{"DeletionPolicy": "RetainExceptOnCreate", "UpdateReplacePolicy": "Retain"})
		props, _ := r["Properties"].(map[string]any)
		if props["DeletionProtectionEnabled"] != true {
			t.Errorf("table %s: DeletionProtectionEnabled is %v; want true", name, props["DeletionProtectionEnabled"])
		}
	}
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

// statements returns every policy statement of an IAM role resource.
func statements(role map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range list(role["Policies"]) {
		doc := p.(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range list(doc["Statement"]) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

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
		name, _ := p["TableName"].(map[string]any)["Fn::Sub"].(string)
		if strings.HasPrefix(name, prefix) {
			out[res] = p
		}
	}
	if len(out) == 0 {
		t.Fatalf("no table of model %s (TableName %s...)", model, prefix)
	}
	return out
}

// checkTableResources: a DynamoDB statement names only the tables given
// (!GetAtt T.Arn) and their indexes (!Sub "${T.Arn}/index/*"), and every
// one of them.
func checkTableResources(t *testing.T, role string, st map[string]any, tables map[string]map[string]any) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range anyList(st["Resource"]) {
		m, _ := r.(map[string]any)
		switch {
		case m["Fn::GetAtt"] != nil:
			ga := list(m["Fn::GetAtt"])
			if len(ga) == 2 && ga[1] == "Arn" && tables[str(ga[0])] != nil {
				seen[str(ga[0])] = true
				continue
			}
		case m["Fn::Sub"] != nil:
			s := str(m["Fn::Sub"])
			name, ok := strings.CutSuffix(strings.TrimPrefix(s, "${"), ".Arn}/index/*")
			if ok && tables[name] != nil {
				continue
			}
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
			// the model's own tables, quorum queues, TLS to the broker
			"SKI_DYNAMO_TABLE_PREFIX=${TablePrefix}${ModelTablePrefix}\n", "SKI_STORE=${Store}\n",
			"SKI_AMQP_QUEUE_TYPE=quorum\n", "AMQP_URL=amqps://"} {
			if !strings.Contains(ud, want) {
				t.Errorf("%s user-data lacks %q", res, want)
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
// /readyz fails: during a broker or DynamoDB outage the load balancer stops
// routing to them, and replacements would fail the same check.
func TestTemplateGroupsWaitForReadyInstancesAndSurviveDependencyOutages(t *testing.T) {
	tpl := loadTemplate(t)
	groups := resourceEntries(t, tpl, "AWS::AutoScaling::AutoScalingGroup")
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	for name, minInService := range map[string]int{"ApiGroup": 1, "ConsumerGroup": 0} {
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
		wantValues(t, name+" rolling update", ru, map[string]any{"WaitOnResourceSignals": true, "PauseTime": "PT15M", "MaxBatchSize": 1, "MinInstancesInService": minInService})

		ltRef, _ := props["LaunchTemplate"].(map[string]any)
		id, _ := ltRef["LaunchTemplateId"].(map[string]any)
		lt, ok := lts[str(id["Ref"])]
		if !ok {
			t.Errorf("%s: launch template %v not found", name, ltRef["LaunchTemplateId"])
			continue
		}
		ud, _ := userData(lt)
		signal := "/opt/aws/bin/cfn-signal -e %d --stack ${AWS::StackName} --resource " + name + " --region ${AWS::Region}"
		steps := []string{
			"set -euo pipefail\n",
			"dnf install -y aws-cfn-bootstrap\n",
			"trap '" + fmt.Sprintf(signal, 1) + "' ERR\n",
			"aws s3 cp",
			"systemctl enable --now skiapi-$ROLE.service\n",
			"timeout 600 bash -c 'until curl -fsS -o /dev/null --max-time 5 http://127.0.0.1:8080/readyz; do sleep 5; done'\n",
			fmt.Sprintf(signal, 0) + "\n",
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
			granted := false
			for _, st := range list(doc["Statement"]) {
				sm, _ := st.(map[string]any)
				principal, _ := sm["Principal"].(map[string]any)
				res, _ := sm["Resource"].(map[string]any)
				granted = granted || (sm["Effect"] == "Allow" &&
					principal["Service"] == "logdelivery.elasticloadbalancing.amazonaws.com" &&
					slices.Equal(anyList(sm["Action"]), []any{"s3:PutObject"}) &&
					str(res["Fn::Sub"]) == want)
			}
			if !granted {
				t.Errorf("bucket policy %s: no statement allowing logdelivery.elasticloadbalancing.amazonaws.com s3:PutObject on %s", pname, want)
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

// TestTemplateQueueAlarmsCountMessagesNotRides: Amazon MQ's queue metrics
// count messages, and a message carries up to --publish-batch rides,
// so a threshold stated in rides would under-report lag up to 256 times
// exactly under load. Every alarm on a message count takes its threshold
// from a parameter that says it counts messages, or a literal 0.
func TestTemplateQueueAlarmsCountMessagesNotRides(t *testing.T) {
	tpl := loadTemplate(t)
	params := tpl["Parameters"].(map[string]any)
	checked := 0
	for name, a := range resources(t, tpl, "AWS::CloudWatch::Alarm") {
		if a["Namespace"] != "AWS/AmazonMQ" || !strings.HasPrefix(str(a["MetricName"]), "Message") {
			continue
		}
		checked++
		th := str(a["Threshold"])
		if th == "0" {
			continue
		}
		ref := strings.TrimSuffix(strings.TrimPrefix(th, "map[Ref:"), "]")
		p, ok := params[ref].(map[string]any)
		if !ok || !strings.HasSuffix(ref, "Messages") || !strings.Contains(str(p["Description"]), "messages") {
			t.Errorf("%s: %s threshold %s; want a parameter named and described in messages", name, a["MetricName"], th)
		}
	}
	if checked < 2 {
		t.Errorf("%d alarms on Amazon MQ message counts; want the lag and dead-letter alarms", checked)
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
		if rb != nil && rb["AggregateKeyType"] == "IP" && action["Block"] != nil {
			limited = true
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
// start and be managed (the broker password, cfn-signal, Session Manager)
// is reachable through interface endpoints in its own subnets, so a NAT
// gateway's zone failing stops no instance from booting.
func TestTemplateInstancesBootWithoutTheNATGateway(t *testing.T) {
	tpl := loadTemplate(t)
	all := tpl["Resources"].(map[string]any)
	services := map[string]bool{}
	for name, ep := range resources(t, tpl, "AWS::EC2::VPCEndpoint") {
		if ep["VpcEndpointType"] != "Interface" {
			continue
		}
		if all[name].(map[string]any)["Condition"] != "WantInterfaceEndpoints" {
			t.Errorf("%s is not optional (Condition WantInterfaceEndpoints): a VPC that has one already would fail the create", name)
		}
		if ep["PrivateDnsEnabled"] != true || !strings.Contains(str(ep["SubnetIds"]), "PrivateSubnets") {
			t.Errorf("%s: private DNS %v, subnets %v; want the service's own name resolving to the endpoint in PrivateSubnets", name, ep["PrivateDnsEnabled"], ep["SubnetIds"])
		}
		sub := str(ep["ServiceName"])
		services[strings.TrimRight(sub[strings.LastIndex(sub, ".")+1:], "]")] = true
	}
	for _, s := range []string{"secretsmanager", "cloudformation", "ssm", "ssmmessages", "ec2messages", "logs", "monitoring"} {
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
	conditions, _ := tpl["Conditions"].(map[string]any)
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
	for name, want := range wantCond {
		if got := fmt.Sprint(conditions[name]); got != want {
			t.Errorf("condition %s is %s; want %s", name, got, want)
		}
	}
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
// environment file; the file names the secret, whose value skiapi reads
// itself (--amqp-password-secret), and each instance role may read that
// one secret and no other.
func TestTemplateBrokerPasswordIsReadFromTheSecretNotWritten(t *testing.T) {
	tpl := loadTemplate(t)
	lts := resources(t, tpl, "AWS::EC2::LaunchTemplate")
	for _, name := range []string{"ApiLaunchTemplate", "ConsumerLaunchTemplate"} {
		ud, _ := userData(lts[name])
		for _, banned := range []string{"get-secret-value", "$PASS", "${PASS}", "skidata:$"} {
			if strings.Contains(ud, banned) {
				t.Errorf("%s user-data holds %q: the password is fetched at boot or written to disk", name, banned)
			}
		}
		for _, want := range []string{"SKI_AMQP_PASSWORD_SECRET=${BrokerSecret}\n", "AMQP_URL=amqps://skidata@"} {
			if !strings.Contains(ud, want) {
				t.Errorf("%s user-data lacks %q", name, want)
			}
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
		if fmt.Sprint(reads) != fmt.Sprint([]any{map[string]any{"Ref": "BrokerSecret"}}) {
			t.Errorf("%s may read secrets %v; want exactly the broker's (!Ref BrokerSecret)", role, reads)
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
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to check the user-data's syntax")
	}
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
					if fmt.Sprint(st["Resource"]) != fmt.Sprint(map[string]any{"Fn::GetAtt": []any{"LogGroup", "Arn"}}) {
						t.Errorf("%s allows %s on %v; want the stack's log group only (!GetAtt LogGroup.Arn)", role, action, st["Resource"])
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
