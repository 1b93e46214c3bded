package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/skidata/skidata/adapters/dynamo"
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
// the allowed values of its Store parameter.
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

// The template's tables are named "${TablePrefix}<table>", so the adapter's
// definitions with the prefix "${TablePrefix}" name them exactly.
func TestTemplateTablesMatchTheAdapterDefinitions(t *testing.T) {
	tpl := loadTemplate(t)
	tables := resources(t, tpl, "AWS::DynamoDB::Table")
	byName := map[string]map[string]any{}
	for res, p := range tables {
		name, _ := p["TableName"].(map[string]any)["Fn::Sub"].(string)
		if name == "" {
			t.Errorf("table %s: TableName must be !Sub \"${TablePrefix}<table>\"", res)
			continue
		}
		byName[name] = p
	}
	for _, model := range deployedModels(t, tpl) {
		defs, err := dynamo.TableDefinitions("${TablePrefix}", model)
		if err != nil {
			t.Fatalf("model %q of the Store parameter: %v", model, err)
		}
		if len(defs) != len(tables) {
			t.Errorf("model %s needs %d tables; the template has %d", model, len(defs), len(tables))
		}
		for _, d := range defs {
			name := aws.ToString(d.TableName)
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
		}
	}
}

// ---- IAM -------------------------------------------------------------------

// recorder is the adapter's DynamoDB client with every call's operation
// name written down. It implements both client interfaces of the adapter,
// so a new method there fails to compile here until it is recorded too.
type recorder struct {
	c   *dynamodb.Client
	mu  sync.Mutex
	ops map[string]bool
}

var (
	_ dynamo.API      = (*recorder)(nil)
	_ dynamo.TableAPI = (*recorder)(nil)
)

func (r *recorder) note(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops["dynamodb:"+op] = true
}

func (r *recorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	r.note("BatchWriteItem")
	return r.c.BatchWriteItem(ctx, in, o...)
}
func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note("UpdateItem")
	return r.c.UpdateItem(ctx, in, o...)
}
func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note("GetItem")
	return r.c.GetItem(ctx, in, o...)
}
func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.note("Query")
	return r.c.Query(ctx, in, o...)
}
func (r *recorder) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	r.note("Scan")
	return r.c.Scan(ctx, in, o...)
}
func (r *recorder) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.note("CreateTable")
	return r.c.CreateTable(ctx, in, o...)
}
func (r *recorder) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	r.note("DescribeTable")
	return r.c.DescribeTable(ctx, in, o...)
}

// runtimeActions runs what a serving instance does through a recorder: the
// start-up table check, the ride store contract for every deployed model,
// the resort store contract and the readiness ping. Creating the tables is
// not in it (done by the stack, or an operator's `skiapi tables create`),
// so it goes through an unrecorded client.
func runtimeActions(t *testing.T, models []string) []string {
	t.Helper()
	rec := &recorder{c: dynamotest.Client(t), ops: map[string]bool{}}
	newTables := func(t *testing.T, model string) dynamo.Config {
		cfg := dynamo.Config{TablePrefix: dynamotest.Prefix(t), Model: model}
		if err := dynamo.CreateTables(dynamotest.Context(t), dynamotest.Client(t), cfg.TablePrefix, model); err != nil {
			t.Fatalf("CreateTables: %v", err)
		}
		if err := dynamo.CheckTables(dynamotest.Context(t), rec, cfg.TablePrefix, model); err != nil {
			t.Fatalf("CheckTables: %v", err)
		}
		return cfg
	}
	for _, model := range models {
		t.Run("rides "+model, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) ports.RideStore {
				s, err := dynamo.NewRideStore(rec, newTables(t, model))
				if err != nil {
					t.Fatal(err)
				}
				return s
			}, storetest.Options{Rides: 50})
		})
		t.Run("resorts "+model, func(t *testing.T) {
			storetest.RunResorts(t, func(t *testing.T) ports.ResortStore {
				s := dynamo.NewResortStore(rec, newTables(t, model))
				if err := s.Ping(dynamotest.Context(t)); err != nil {
					t.Fatalf("Ping: %v", err)
				}
				return s
			})
		})
	}
	if t.Failed() {
		t.Fatal("the recording run failed; the recorded actions would be incomplete")
	}
	var ops []string
	for op := range rec.ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
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

func TestTemplateIAMAllowsExactlyTheDynamoDBActionsTheAdaptersCall(t *testing.T) {
	tpl := loadTemplate(t)
	called := runtimeActions(t, deployedModels(t, tpl))
	t.Logf("the adapters call: %v", called)
	tables := resources(t, tpl, "AWS::DynamoDB::Table")

	var granted []string
	for roleName, role := range resources(t, tpl, "AWS::IAM::Role") {
		if len(list(role["ManagedPolicyArns"])) > 0 {
			for _, arn := range list(role["ManagedPolicyArns"]) {
				if strings.Contains(strings.ToLower(fmt.Sprint(arn)), "dynamodb") {
					t.Errorf("role %s: managed policy %v may grant DynamoDB actions beyond the adapters'", roleName, arn)
				}
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
				if action == "*" || strings.Contains(action, "*") {
					t.Errorf("role %s, statement %v: wildcard action %q", roleName, st["Sid"], action)
				}
				if strings.HasPrefix(strings.ToLower(action), "dynamodb:") {
					dynamoActions = append(dynamoActions, action)
				}
			}
			if len(dynamoActions) == 0 {
				continue
			}
			if roleName != "InstanceRole" {
				t.Errorf("role %s grants DynamoDB actions %v; only the instances' InstanceRole may", roleName, dynamoActions)
			}
			granted = append(granted, dynamoActions...)
			checkTableResources(t, roleName, st, tables)
		}
	}
	sort.Strings(granted)
	granted = slices.Compact(granted)
	for _, a := range called {
		if !slices.Contains(granted, a) {
			t.Errorf("the adapters call %s but InstanceRole does not allow it", a)
		}
	}
	for _, a := range granted {
		if !slices.Contains(called, a) {
			t.Errorf("InstanceRole allows %s, which the adapters never call at run time", a)
		}
	}
}

// checkTableResources: a DynamoDB statement names only the stack's tables
// (!GetAtt T.Arn) and their indexes (!Sub "${T.Arn}/index/*"), and every
// table.
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
		t.Errorf("role %s, statement %v: resource %v is not one of the stack's tables or their indexes", role, st["Sid"], r)
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
		ud := str(lt["LaunchTemplateData"].(map[string]any)["UserData"].(map[string]any)["Fn::Base64"].(map[string]any)["Fn::Sub"])
		for _, want := range []string{"ROLE=" + role + "\n", "systemctl enable --now skiapi-$ROLE.service", "SKI_PROFILE=ec2"} {
			if !strings.Contains(ud, want) {
				t.Errorf("%s user-data lacks %q", res, want)
			}
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
