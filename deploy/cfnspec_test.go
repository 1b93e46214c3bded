package deploy

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/skidata/skidata/test/needs"
)

// The template is checked against CloudFormation's resource specification
// as the CDK ships it in the npm package @aws-cdk/aws-service-spec (pinned
// in deploy/cfnspec/package-lock.json, installed by scripts/services.sh):
// db.json.gz, built from the resource provider schemas of CloudFormation's
// registry, which the CDK keeps current. cfn-lint would do more, but it is
// Python and this machine has no PyPI; this checks what a template must get right:
// every resource type and property exists, required properties are present,
// values have the specified shape, and every Ref, GetAtt, Sub variable,
// FindInMap, Condition and DependsOn resolves.
const (
	specDir  = "cfnspec/node_modules/@aws-cdk/aws-service-spec"
	specPath = specDir + "/db.json.gz"
)

// cfnSpec is what the validator needs of the specification, in the shape of
// CloudFormation's classic resource specification: resource types with their
// properties and GetAtt attributes, and property types named
// "AWS::Service::Resource.Type" (or "Tag", shared by all).
type cfnSpec struct {
	ResourceSpecificationVersion string
	ResourceTypes                map[string]struct {
		Attributes map[string]json.RawMessage
		Properties map[string]propSpec
	}
	PropertyTypes map[string]struct {
		Properties map[string]propSpec
		// A property type that is a plain value (rare) has no Properties.
		PrimitiveType string
	}
}

type propSpec struct {
	Required          bool
	PrimitiveType     string
	Type              string // List, Map or a property type name
	ItemType          string
	PrimitiveItemType string
	// Union types: any of these. The validator checks only the references
	// in a union's value, and so in a list of lists or a map of lists too,
	// which are described here as a union of one.
	PrimitiveTypes []string
	Types          []string
	ItemTypes      []string
}

// serviceSpecDB is the part of db.json.gz that holds resources: entities
// linked by "$id". A resource's property types are typeDefinition entities,
// named per resource, that the usesType relation links to the resource; a
// property refers to one by its "$id".
type serviceSpecDB struct {
	Schema struct {
		Resource struct {
			Entities []struct {
				ID                 string `json:"$id"`
				CloudFormationType string `json:"cloudFormationType"`
				Properties         map[string]serviceSpecProp
				Attributes         map[string]json.RawMessage
			}
		}
		TypeDefinition struct {
			Entities []struct {
				ID         string `json:"$id"`
				Name       string
				Properties map[string]serviceSpecProp
			}
		}
		UsesType struct {
			Forward map[string][]struct {
				ID string `json:"$id"`
			}
		}
	}
}

type serviceSpecProp struct {
	Type     serviceSpecType
	Required bool
}

// serviceSpecType is a property's type: "string", "integer", "number",
// "boolean", "date-time", "json", "tag", "null", "ref" (a typeDefinition),
// "array" and "map" (of element) or "union" (of types).
type serviceSpecType struct {
	Type      string
	Reference struct {
		Ref string `json:"$ref"`
	}
	Element *serviceSpecType
	Types   []serviceSpecType
}

var servicePrimitives = map[string]string{
	"string": "String", "integer": "Integer", "number": "Double",
	"boolean": "Boolean", "date-time": "Timestamp", "json": "Json",
}

func loadSpec(t *testing.T) *cfnSpec {
	t.Helper()
	needs.NPM(t, "@aws-cdk/aws-service-spec", "deploy/cfnspec")
	specOnce.Do(func() { loadedSpec, specErr = readServiceSpec() })
	if specErr != nil {
		t.Fatal(specErr)
	}
	return loadedSpec
}

var (
	specOnce   sync.Once
	loadedSpec *cfnSpec
	specErr    error
)

func readServiceSpec() (*cfnSpec, error) {
	f, err := os.Open(specPath)
	if err != nil {
		return nil, fmt.Errorf("the CloudFormation resource specification (npm @aws-cdk/aws-service-spec) is not installed (%v): run `npm ci --prefix deploy/cfnspec` (scripts/services.sh does it under make test)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", specPath, err)
	}
	var db serviceSpecDB
	if err := json.NewDecoder(zr).Decode(&db); err != nil {
		return nil, fmt.Errorf("%s: %v", specPath, err)
	}
	var pkg struct{ Version string }
	if raw, err := os.ReadFile(specDir + "/package.json"); err == nil {
		_ = json.Unmarshal(raw, &pkg)
	}

	// Each typeDefinition belongs to the one resource whose usesType lists
	// it; it is named after that resource as in the classic specification.
	resourceOf := map[string]string{}
	for _, r := range db.Schema.Resource.Entities {
		for _, d := range db.Schema.UsesType.Forward[r.ID] {
			resourceOf[d.ID] = r.CloudFormationType
		}
	}
	typeName := map[string]string{}
	for _, d := range db.Schema.TypeDefinition.Entities {
		typeName[d.ID] = d.Name
	}
	s := &cfnSpec{ResourceSpecificationVersion: "@aws-cdk/aws-service-spec " + pkg.Version}
	s.ResourceTypes = make(map[string]struct {
		Attributes map[string]json.RawMessage
		Properties map[string]propSpec
	})
	s.PropertyTypes = make(map[string]struct {
		Properties    map[string]propSpec
		PrimitiveType string
	})
	props := func(in map[string]serviceSpecProp) map[string]propSpec {
		out := make(map[string]propSpec, len(in))
		for name, p := range in {
			ps := servicePropSpec(p.Type, typeName)
			ps.Required = p.Required
			out[name] = ps
		}
		return out
	}
	for _, r := range db.Schema.Resource.Entities {
		rt := s.ResourceTypes[r.CloudFormationType]
		rt.Attributes = r.Attributes
		rt.Properties = props(r.Properties)
		s.ResourceTypes[r.CloudFormationType] = rt
	}
	for _, d := range db.Schema.TypeDefinition.Entities {
		pt := s.PropertyTypes[resourceOf[d.ID]+"."+d.Name]
		pt.Properties = props(d.Properties)
		s.PropertyTypes[resourceOf[d.ID]+"."+d.Name] = pt
	}
	tag := s.PropertyTypes["Tag"]
	tag.Properties = map[string]propSpec{
		"Key":   {Required: true, PrimitiveType: "String"},
		"Value": {Required: true, PrimitiveType: "String"},
	}
	s.PropertyTypes["Tag"] = tag
	if len(s.ResourceTypes) == 0 {
		return nil, fmt.Errorf("%s: no resource types", specPath)
	}
	return s, nil
}

// servicePropSpec describes a db.json.gz type as the classic specification
// does; the property type names it uses resolve in the owning resource.
func servicePropSpec(t serviceSpecType, typeName map[string]string) propSpec {
	if p, ok := servicePrimitives[t.Type]; ok {
		return propSpec{PrimitiveType: p}
	}
	switch t.Type {
	case "ref":
		return propSpec{Type: typeName[t.Reference.Ref]}
	case "tag":
		return propSpec{Type: "Tag"}
	case "array", "map":
		coll := map[string]string{"array": "List", "map": "Map"}[t.Type]
		if t.Element == nil {
			break
		}
		switch el := servicePropSpec(*t.Element, typeName); {
		case el.PrimitiveType != "":
			return propSpec{Type: coll, PrimitiveItemType: el.PrimitiveType}
		case el.Type != "" && el.Type != "List" && el.Type != "Map":
			return propSpec{Type: coll, ItemType: el.Type}
		}
	case "union":
		var u propSpec
		for _, alt := range t.Types {
			u.Types = append(u.Types, serviceTypeString(alt, typeName))
		}
		return u
	}
	return propSpec{Types: []string{serviceTypeString(t, typeName)}}
}

// serviceTypeString names a type, e.g. List<List<String>>.
func serviceTypeString(t serviceSpecType, typeName map[string]string) string {
	switch {
	case servicePrimitives[t.Type] != "":
		return servicePrimitives[t.Type]
	case t.Type == "ref":
		return typeName[t.Reference.Ref]
	case t.Type == "tag":
		return "Tag"
	case (t.Type == "array" || t.Type == "map") && t.Element != nil:
		return map[string]string{"array": "List", "map": "Map"}[t.Type] + "<" + serviceTypeString(*t.Element, typeName) + ">"
	case t.Type == "union":
		var alts []string
		for _, alt := range t.Types {
			alts = append(alts, serviceTypeString(alt, typeName))
		}
		return strings.Join(alts, "|")
	}
	return t.Type
}

var pseudoParameters = []string{
	"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
	"AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix",
}

var parameterTypes = regexp.MustCompile(`^(String|Number|List<Number>|CommaDelimitedList|AWS::[A-Za-z0-9:]+|List<AWS::[A-Za-z0-9:]+>|AWS::SSM::Parameter::Value<.+>)$`)

// validator collects every problem of one template, each with its path.
type validator struct {
	spec       *cfnSpec
	tpl        map[string]any
	params     map[string]any
	resources  map[string]any
	conditions map[string]any
	mappings   map[string]any
	errs       []string
	// held are the conditions known to be true where the walk is: the
	// resource's or output's own Condition, and the Fn::If conditions of
	// the "then" branches it is in, with what each implies (Fn::And).
	held map[string]bool
}

// customResourceType is the specification of the custom resource types
// (Custom::Name): a ServiceToken, and any other property the function takes.
const customResourceType = "AWS::CloudFormation::CustomResource"

func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
}

func validateTemplate(spec *cfnSpec, tpl map[string]any) []string {
	v := &validator{spec: spec, tpl: tpl}
	v.params, _ = tpl["Parameters"].(map[string]any)
	v.resources, _ = tpl["Resources"].(map[string]any)
	v.conditions, _ = tpl["Conditions"].(map[string]any)
	v.mappings, _ = tpl["Mappings"].(map[string]any)
	for k := range tpl {
		if !slices.Contains([]string{"AWSTemplateFormatVersion", "Description", "Metadata", "Parameters", "Rules", "Mappings", "Conditions", "Transform", "Resources", "Outputs"}, k) {
			v.errorf(k, "not a template section")
		}
	}
	if len(v.resources) == 0 {
		v.errorf("Resources", "none")
	}
	for name, p := range v.params {
		pm, _ := p.(map[string]any)
		if typ := str(pm["Type"]); !parameterTypes.MatchString(typ) {
			v.errorf("Parameters."+name, "type %q is not a CloudFormation parameter type", typ)
		}
		if d, ok := pm["Default"]; ok {
			if allowed := list(pm["AllowedValues"]); len(allowed) > 0 && !slices.Contains(allowed, d) {
				v.errorf("Parameters."+name, "default %v is not among AllowedValues %v", d, allowed)
			}
		}
	}
	for name, c := range v.conditions {
		v.value("Conditions."+name, c)
	}
	for _, name := range sortedKeys(v.resources) {
		v.resource(name, v.resources[name])
	}
	for name, o := range asMap(tpl["Outputs"]) {
		om := asMap(o)
		if _, ok := om["Value"]; !ok {
			v.errorf("Outputs."+name, "no Value")
		}
		v.checkCondition("Outputs."+name, om["Condition"])
		v.held = v.implied(om["Condition"], nil)
		v.value("Outputs."+name+".Value", om["Value"])
	}
	sort.Strings(v.errs)
	return v.errs
}

func (v *validator) resource(name string, r any) {
	path := "Resources." + name
	rm := asMap(r)
	for k := range rm {
		if !slices.Contains([]string{"Type", "Properties", "DependsOn", "Condition", "DeletionPolicy", "UpdateReplacePolicy", "UpdatePolicy", "CreationPolicy", "Metadata"}, k) {
			v.errorf(path, "unknown resource attribute %q", k)
		}
	}
	typ := str(rm["Type"])
	specType := typ
	if strings.HasPrefix(typ, "Custom::") {
		specType = customResourceType
	}
	rs, ok := v.spec.ResourceTypes[specType]
	if !ok {
		v.errorf(path, "resource type %q is not in the CloudFormation specification", typ)
		return
	}
	v.checkCondition(path+".Condition", rm["Condition"])
	v.held = v.implied(rm["Condition"], nil)
	for _, d := range anyList(rm["DependsOn"]) {
		if d != nil && v.resources[str(d)] == nil {
			v.errorf(path+".DependsOn", "%v is not a resource", d)
		} else if d != nil {
			v.checkExists(path+".DependsOn", str(d))
		}
	}
	if specType == customResourceType {
		props := asMap(rm["Properties"])
		if _, ok := props["ServiceToken"]; !ok {
			v.errorf(path+".Properties", "required property ServiceToken missing")
		}
		v.value(path+".Properties", props)
		return
	}
	for _, policy := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
		if p, ok := rm[policy]; ok && !slices.Contains([]any{"Delete", "Retain", "Snapshot", "RetainExceptOnCreate"}, p) {
			v.errorf(path+"."+policy, "%v is not a deletion policy", p)
		}
	}
	v.properties(path+".Properties", typ, rs.Properties, rm["Properties"])
	v.value(path+".UpdatePolicy", rm["UpdatePolicy"])
}

// properties checks an object against the property specs of its type.
func (v *validator) properties(path, owner string, specs map[string]propSpec, val any) {
	if v.intrinsic(path, val) {
		return
	}
	m, ok := val.(map[string]any)
	if val == nil {
		m, ok = map[string]any{}, true
	}
	if !ok {
		v.errorf(path, "want an object, have %T", val)
		return
	}
	for _, name := range sortedKeys(specs) {
		if _, present := m[name]; specs[name].Required && !present {
			v.errorf(path, "required property %s missing", name)
		}
	}
	for _, name := range sortedKeys(m) {
		ps, ok := specs[name]
		if !ok {
			v.errorf(path, "%s has no property %s", owner, name)
			continue
		}
		v.property(path+"."+name, owner, ps, m[name])
	}
}

func (v *validator) property(path, owner string, ps propSpec, val any) {
	if v.intrinsic(path, val) {
		return
	}
	resourceType, _, _ := strings.Cut(owner, ".")
	switch {
	case len(ps.PrimitiveTypes)+len(ps.Types)+len(ps.ItemTypes) > 0:
		v.value(path, val) // a union: only the references are checked
	case ps.PrimitiveType != "":
		v.primitive(path, ps.PrimitiveType, val)
	case ps.Type == "List":
		items, ok := val.([]any)
		if !ok {
			v.errorf(path, "want a list, have %T", val)
			return
		}
		for i, it := range items {
			v.item(fmt.Sprintf("%s[%d]", path, i), resourceType, ps.ItemType, ps.PrimitiveItemType, it)
		}
	case ps.Type == "Map":
		m, ok := val.(map[string]any)
		if !ok {
			v.errorf(path, "want a map, have %T", val)
			return
		}
		for k, it := range m {
			v.item(path+"."+k, resourceType, ps.ItemType, ps.PrimitiveItemType, it)
		}
	case ps.Type != "":
		v.item(path, resourceType, ps.Type, "", val)
	default:
		v.value(path, val)
	}
}

// item checks a value of a named property type or a primitive.
func (v *validator) item(path, resourceType, typ, primitive string, val any) {
	if v.intrinsic(path, val) {
		return
	}
	if primitive != "" {
		v.primitive(path, primitive, val)
		return
	}
	name := resourceType + "." + typ
	pt, ok := v.spec.PropertyTypes[name]
	if !ok {
		name = typ // shared types such as Tag
		pt, ok = v.spec.PropertyTypes[typ]
	}
	if !ok {
		v.errorf(path, "property type %s is not in the specification", typ)
		return
	}
	if pt.PrimitiveType != "" {
		v.primitive(path, pt.PrimitiveType, val)
		return
	}
	v.properties(path, name, pt.Properties, val)
}

func (v *validator) primitive(path, typ string, val any) {
	if v.intrinsic(path, val) {
		return
	}
	bad := false
	switch typ {
	case "String", "Timestamp":
		switch val.(type) {
		case string, int, float64, bool: // CloudFormation turns scalars into strings
		default:
			bad = true
		}
	case "Integer", "Long", "Double":
		switch x := val.(type) {
		case int, float64:
		case string:
			_, err := strconv.ParseFloat(x, 64)
			bad = err != nil || (typ != "Double" && strings.Contains(x, "."))
		default:
			bad = true
		}
	case "Boolean":
		switch x := val.(type) {
		case bool:
		case string:
			bad = x != "true" && x != "false"
		default:
			bad = true
		}
	case "Json":
		switch val.(type) {
		case map[string]any, string:
			v.value(path, val)
		default:
			bad = true
		}
	}
	if bad {
		v.errorf(path, "%v (%T) is not a %s", val, val, typ)
	}
}

// intrinsic checks val if it is an intrinsic function call ({"Ref": x},
// {"Fn::...": ...}) and reports whether it was one: its result's type is
// known only at deploy time.
func (v *validator) intrinsic(path string, val any) bool {
	m, ok := val.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for k := range m {
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			v.value(path, val)
			return true
		}
	}
	return false
}

// value walks any value, checking every intrinsic function in it.
func (v *validator) value(path string, val any) {
	switch x := val.(type) {
	case []any:
		for i, it := range x {
			v.value(fmt.Sprintf("%s[%d]", path, i), it)
		}
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if v.function(path, k, arg) {
					return
				}
			}
		}
		for k, it := range x {
			v.value(path+"."+k, it)
		}
	}
}

// listArg is the arguments of function fn, a list with one element per
// name in form; nil, once reported, when arg is not such a list.
func (v *validator) listArg(path, fn string, arg any, form ...string) []any {
	parts := list(arg)
	if len(parts) != len(form) {
		v.errorf(path, "%s wants [%s], has %v", fn, strings.Join(form, ", "), arg)
		return nil
	}
	return parts
}

// function checks one intrinsic function; false if k is not one.
func (v *validator) function(path, k string, arg any) bool {
	switch k {
	case "Ref":
		v.checkRef(path, str(arg))
	case "Condition":
		v.checkCondition(path, arg)
	case "Fn::GetAtt":
		parts := v.listArg(path, k, arg, "resource", "attribute")
		if parts == nil {
			return true
		}
		v.checkGetAtt(path, str(parts[0]), str(parts[1]))
	case "Fn::Sub":
		v.checkSub(path, arg)
	case "Fn::If":
		parts := v.listArg(path, k, arg, "condition", "then", "else")
		if parts == nil {
			return true
		}
		v.checkCondition(path, parts[0])
		outer := v.held
		v.held = v.implied(parts[0], outer)
		v.value(path+"(then)", parts[1])
		v.held = outer
		v.value(path+"(else)", parts[2])
	case "Fn::FindInMap":
		parts := v.listArg(path, k, arg, "map", "key", "key")
		if parts == nil {
			return true
		}
		m, ok := v.mappings[str(parts[0])].(map[string]any)
		if !ok {
			v.errorf(path, "Fn::FindInMap: no mapping %v", parts[0])
		}
		v.value(path, parts[1])
		v.value(path, parts[2])
		// With a literal top-level key the entry must exist; with !Ref of a
		// parameter, every allowed value must have one.
		var keys []any
		if ref, ok := parts[1].(map[string]any); ok && ref["Ref"] != nil {
			keys = list(asMap(v.params[str(ref["Ref"])])["AllowedValues"])
		} else if s, ok := parts[1].(string); ok {
			keys = []any{s}
		}
		for _, key := range keys {
			entry, ok := m[str(key)].(map[string]any)
			if !ok {
				v.errorf(path, "Fn::FindInMap: mapping %v has no key %v", parts[0], key)
				continue
			}
			if s, ok := parts[2].(string); ok && entry[s] == nil {
				v.errorf(path, "Fn::FindInMap: mapping %v.%v has no %s", parts[0], key, s)
			}
		}
	case "Fn::Equals", "Fn::And", "Fn::Or", "Fn::Not", "Fn::Select", "Fn::Join", "Fn::Split",
		"Fn::Base64", "Fn::GetAZs", "Fn::Cidr", "Fn::ImportValue", "Fn::Length", "Fn::ToJsonString":
		v.value(path, arg)
	default:
		if strings.HasPrefix(k, "Fn::") {
			v.errorf(path, "%s is not an intrinsic function", k)
			return true
		}
		return false
	}
	return true
}

func (v *validator) checkRef(path, name string) {
	if v.resources[name] != nil {
		v.checkExists(path, name)
		return
	}
	if slices.Contains(pseudoParameters, name) || v.params[name] != nil {
		return
	}
	v.errorf(path, "Ref %s is not a parameter, resource or pseudo parameter", name)
}

// implied is held with cond added, and every condition cond implies
// through Fn::And, transitively.
func (v *validator) implied(cond any, held map[string]bool) map[string]bool {
	out := maps.Clone(held)
	if out == nil {
		out = map[string]bool{}
	}
	var add func(c string)
	add = func(c string) {
		if c == "" || out[c] {
			return
		}
		out[c] = true
		for _, part := range list(asMap(v.conditions[c])["Fn::And"]) {
			if inner, ok := asMap(part)["Condition"]; ok {
				add(str(inner))
			}
		}
	}
	if cond != nil {
		add(str(cond))
	}
	return out
}

// checkExists: a resource with a Condition exists only when it holds, so
// it may be referred to (Ref, GetAtt, Sub, DependsOn) only where that
// condition is held: from a resource or output with that condition (or
// one implying it), or in the "then" branch of an Fn::If on it.
// CloudFormation refuses a reference to a resource it does not create.
func (v *validator) checkExists(path, name string) {
	cond := str(asMap(v.resources[name])["Condition"])
	if cond != "" && !v.held[cond] {
		v.errorf(path, "%s exists only when %s holds, which is not known here (put the reference under !If [%s, ...] or give this the condition)", name, cond, cond)
	}
}

func (v *validator) checkCondition(path string, c any) {
	if c == nil {
		return
	}
	if _, ok := v.conditions[str(c)]; !ok {
		v.errorf(path, "condition %v is not defined", c)
	}
}

func (v *validator) checkGetAtt(path, resource, attr string) {
	r, ok := v.resources[resource].(map[string]any)
	if !ok {
		v.errorf(path, "GetAtt %s.%s: no resource %s", resource, attr, resource)
		return
	}
	v.checkExists(path, resource)
	if strings.HasPrefix(str(r["Type"]), "Custom::") {
		return // a custom resource returns what its function says
	}
	rs, ok := v.spec.ResourceTypes[str(r["Type"])]
	if !ok {
		return // reported with the resource
	}
	if _, ok := rs.Attributes[attr]; !ok {
		var have []string
		for a := range rs.Attributes {
			have = append(have, a)
		}
		sort.Strings(have)
		v.errorf(path, "GetAtt %s.%s: %s has no attribute %s (it has %v)", resource, attr, r["Type"], attr, have)
	}
}

// subVar is a ${...} of Fn::Sub; ${!...} is a literal and not matched.
var subVar = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

func (v *validator) checkSub(path string, arg any) {
	var tmpl string
	vars := map[string]any{}
	switch x := arg.(type) {
	case string:
		tmpl = x
	case []any:
		if len(x) != 2 {
			v.errorf(path, "Fn::Sub wants a string or [string, variables]")
			return
		}
		tmpl = str(x[0])
		vars = asMap(x[1])
		v.value(path+"(variables)", x[1])
	default:
		v.errorf(path, "Fn::Sub wants a string or [string, variables], has %T", arg)
		return
	}
	for _, m := range subVar.FindAllStringSubmatch(tmpl, -1) {
		name := strings.TrimSpace(m[1])
		if _, ok := vars[name]; ok {
			continue
		}
		if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
			v.checkGetAtt(path+" ${"+name+"}", res, attr)
			continue
		}
		v.checkRef(path+" ${"+name+"}", name)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestTemplateConformsToTheCloudFormationSpecification(t *testing.T) {
	spec := loadSpec(t)
	tpl := loadTemplate(t)
	t.Logf("CloudFormation resource specification %s", spec.ResourceSpecificationVersion)
	for _, e := range validateTemplate(spec, tpl) {
		t.Error(e)
	}
}

// The validator itself: a template with one mistake of each kind it looks
// for must be refused with each named, so a green run above means
// something.
func TestSpecValidatorFindsEachKindOfMistake(t *testing.T) {
	spec := loadSpec(t)
	const broken = `
Parameters:
  Name: { Type: String, Default: b, AllowedValues: [a, c] }
  Odd: { Type: Strnig }
Conditions:
  IsA: !Equals [!Ref Name, a]
Mappings:
  M: { a: { K: v } }
Resources:
  Topic:
    Type: AWS::SNS::Topicc
  Queue:
    Type: AWS::SQS::Queue
    Condition: Missing
    DependsOn: Nowhere
    Properties:
      QueueName: !Sub "${Name}-${Nope}-${Queue.Arnn}-${!Literal}"
      DelaySecondz: 3
      MessageRetentionPeriod: lots
      FifoQueue: !If [IsB, true, false]
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema:
        - { AttributeName: id, KeyType: HASH }
      BillingMode: !FindInMap [M, !Ref Name, X]
      GlobalSecondaryIndexes:
        - IndexName: byName
          KeySchema:
            - { AttributeName: name }
          Projection: { ProjectionType: ALL }
          WarmThroughput: { ReadUnitsPerSecond: many }
      WarmThroughput: { WriteUnitsPerSecnd: 4000 }
      Tags:
        - { Key: team }
  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      ComparisonOperator: GreaterThanThreshold
      EvaluationPeriods: 1
      AlarmActions: [!GetAtt Queue.Nothing, !Ref Ghost]
  Maybe:
    Type: AWS::SNS::Topic
    Condition: IsA
  UsesMaybe:
    Type: AWS::SQS::Queue
    DependsOn: Maybe
    Properties:
      QueueName: !GetAtt Maybe.TopicName
      KmsMasterKeyId: !If [IsA, !Ref Maybe, none]
  Custom:
    Type: Custom::Thing
    Properties:
      Anything: !Ref Ghost2
`
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(broken), &doc); err != nil {
		t.Fatal(err)
	}
	val, err := cfnValue(&doc)
	if err != nil {
		t.Fatal(err)
	}
	errs := strings.Join(validateTemplate(spec, val.(map[string]any)), "\n")
	for _, want := range []string{
		`Parameters.Name: default b is not among AllowedValues`,
		`Parameters.Odd: type "Strnig"`,
		`Resources.Topic: resource type "AWS::SNS::Topicc" is not in`,
		`Resources.Queue.Condition: condition Missing is not defined`,
		`Resources.Queue.DependsOn: Nowhere is not a resource`,
		`${Nope}: Ref Nope is not`,
		`${Queue.Arnn}: GetAtt Queue.Arnn: AWS::SQS::Queue has no attribute Arnn`,
		`AWS::SQS::Queue has no property DelaySecondz`,
		`MessageRetentionPeriod: lots (string) is not a Integer`,
		`FifoQueue: condition IsB is not defined`,
		`GlobalSecondaryIndexes[0].KeySchema[0]: required property KeyType missing`,
		`GlobalSecondaryIndexes[0].WarmThroughput.ReadUnitsPerSecond: many (string) is not a Integer`,
		`AWS::DynamoDB::Table.WarmThroughput has no property WriteUnitsPerSecnd`,
		`Tags[0]: required property Value missing`,
		`Fn::FindInMap: mapping M has no key c`,
		`Fn::FindInMap: mapping M.a has no X`,
		`GetAtt Queue.Nothing`,
		`Ref Ghost is not a parameter`,
		`Resources.UsesMaybe.DependsOn: Maybe exists only when IsA holds`,
		`Resources.UsesMaybe.Properties.QueueName: Maybe exists only when IsA holds`,
		`Resources.Custom.Properties: required property ServiceToken missing`,
		`Ref Ghost2 is not a parameter`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("the validator did not report %q; it reported:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "KmsMasterKeyId") {
		t.Errorf("a reference to a conditional resource under !If on its condition is valid; reported:\n%s", errs)
	}
	if strings.Contains(errs, "Custom::Thing") {
		t.Errorf("a Custom:: type is a custom resource, not an unknown type; reported:\n%s", errs)
	}
	if strings.Contains(errs, "Literal") {
		t.Errorf("${!Literal} is a literal in Fn::Sub, not a reference; reported:\n%s", errs)
	}
}
