package deploy

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// deploySection is docs/operations.md's "Deploy, from nothing to serving",
// up to its first subsection.
func deploySection(t *testing.T) string {
	t.Helper()
	_, section, ok := strings.Cut(readOperations(t), "\n## Deploy, from nothing to serving\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Deploy, from nothing to serving"`)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	return section
}

// createCommand is the runbook's stack-creating command, its continuation
// lines joined: the `aws cloudformation deploy` that passes ReleaseVersion.
func createCommand(t *testing.T, section string) string {
	t.Helper()
	for _, cmd := range regexp.MustCompile(`(?m)^\s*aws cloudformation deploy (?:.*\\\n)*.*$`).FindAllString(section, -1) {
		cmd = regexp.MustCompile(`\\\n\s*`).ReplaceAllString(cmd, "")
		if strings.Contains(cmd, "ReleaseVersion=") {
			return cmd
		}
	}
	t.Fatal("the Deploy section has no `aws cloudformation deploy ... ReleaseVersion=...` command")
	return ""
}

// TestRunbookCreateCommandPassesTheTemplatesRules: the stack the runbook
// creates is one the template accepts. Every parameter it passes exists and
// takes that value, every parameter without a default is given, and the
// subnets obey InstancesOnlyWhereTheLoadBalancerIs: every zone of
// PrivateSubnets has one of PublicSubnets, in two zones or more (the
// example names a subnet's zone by its last letter, subnet-pubA and
// subnet-privA sharing zone A). It also registers a resort before the
// smoke test's first ride, which a new stack's empty resort table would
// refuse.
func TestRunbookCreateCommandPassesTheTemplatesRules(t *testing.T) {
	section := deploySection(t)
	cmd := createCommand(t, section)
	_, overrides, ok := strings.Cut(cmd, "--parameter-overrides ")
	if !ok {
		t.Fatalf("the create command passes no parameters: %s", cmd)
	}
	params, _ := loadTemplate(t)["Parameters"].(map[string]any)
	given := map[string]string{}
	for _, kv := range strings.Fields(overrides) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Errorf("%q in the create command is not NAME=VALUE", kv)
			continue
		}
		given[k] = v
		p, ok := params[k].(map[string]any)
		if !ok {
			t.Errorf("the create command passes %s, which is not a parameter of the template", k)
			continue
		}
		if allowed := list(p["AllowedValues"]); len(allowed) > 0 && !strings.HasPrefix(v, "$") && !slices.ContainsFunc(allowed, func(a any) bool { return str(a) == v }) {
			t.Errorf("the create command passes %s=%s; the template allows %v", k, v, allowed)
		}
	}
	for name, p := range params {
		if _, hasDefault := p.(map[string]any)["Default"]; !hasDefault && given[name] == "" {
			t.Errorf("the create command does not pass %s, which has no default", name)
		}
	}
	zone := func(subnet string) string { return subnet[len(subnet)-1:] }
	public := map[string]bool{}
	for _, s := range strings.Split(given["PublicSubnets"], ",") {
		public[zone(s)] = true
	}
	private := map[string]bool{}
	for _, s := range strings.Split(given["PrivateSubnets"], ",") {
		private[zone(s)] = true
		if !public[zone(s)] {
			t.Errorf("private subnet %s is in zone %s, which has no public subnet: InstancesOnlyWhereTheLoadBalancerIs refuses it", s, zone(s))
		}
	}
	if len(private) < 2 || len(public) < 2 {
		t.Errorf("the create command's subnets span %d private and %d public zones; want two or more of each", len(private), len(public))
	}
	if rts := strings.Split(given["PrivateRouteTables"], ","); len(rts) != len(strings.Split(given["PrivateSubnets"], ",")) {
		t.Errorf("PrivateRouteTables %v does not match PrivateSubnets %v", rts, given["PrivateSubnets"])
	}

	put := strings.Index(section, "skiapi resorts put ")
	ride := strings.Index(section, "-XPOST $URL/skiers/")
	season := strings.Index(section, "-XPOST $URL/resorts/")
	if put < 0 || ride < 0 || season < 0 || put > season || season > ride {
		t.Errorf("the smoke test registers the resort at %d, its season at %d, posts the first ride at %d; want the resort, then the season, then the ride", put, season, ride)
	}
}
