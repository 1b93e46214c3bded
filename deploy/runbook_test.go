package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"mvdan.cc/sh/v3/syntax"

	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/sqstest"
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

// ---- the first day, on a local stack ---------------------------------------

// runbookCommand is one command of a runbook block: its text as the shell
// reads it, its trailing comment (what the runbook says it prints), and its
// signature: the command and its subcommands or file, the flags it passes
// (not their values), and the URL it asks for, which is what the runbook
// and the test that follows it must agree on.
type runbookCommand struct {
	text, comment, signature string
}

// firstDayCommands are the commands of Deploy's steps 5 and 6 in
// docs/operations.md, in order: from checking the tables and queues to
// reading the first ride back.
func firstDayCommands(t *testing.T) []runbookCommand {
	t.Helper()
	section := deploySection(t)
	start := strings.Index(section, "\n5. **Check the tables")
	if start < 0 {
		t.Fatal(`the Deploy section has no step "5. **Check the tables"`)
	}
	var out []runbookCommand
	for _, block := range regexp.MustCompile("(?s)\n *```sh\n(.*?)\n *```").FindAllStringSubmatch(section[start:], -1) {
		f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(block[1]), "docs/operations.md")
		if err != nil {
			t.Fatalf("a first-day block of docs/operations.md is not shell: %v\n%s", err, block[1])
		}
		for _, st := range f.Stmts {
			c := runbookCommand{signature: signature(t, st.Cmd)}
			for _, cm := range st.Comments {
				if cm.Hash.Line() == st.End().Line() && cm.Hash.After(st.End()) {
					c.comment = strings.TrimSpace(cm.Text)
				}
			}
			bare := *st
			bare.Comments = nil
			c.text = printShell(t, &bare)
			out = append(out, c)
		}
	}
	return out
}

func printShell(t *testing.T, n syntax.Node) string {
	t.Helper()
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// signature is a command's name and what it is asked: for `NAME=$(cmd)`,
// NAME and cmd's signature; else the words up to the first flag, then
// each flag (--flag of --flag=value) and each URL ($URL/..., http://...),
// values left out.
func signature(t *testing.T, cmd syntax.Command) string {
	t.Helper()
	call, ok := cmd.(*syntax.CallExpr)
	if !ok {
		t.Fatalf("runbook command %q is not a simple command", printShell(t, cmd))
	}
	var words []string
	for _, a := range call.Assigns {
		inner := "?"
		if a.Value != nil && len(a.Value.Parts) == 1 {
			if cs, ok := a.Value.Parts[0].(*syntax.CmdSubst); ok && len(cs.Stmts) == 1 {
				inner = signature(t, cs.Stmts[0].Cmd)
			}
		}
		words = append(words, a.Name.Value+"=$("+inner+")")
	}
	flags := false
	for _, w := range call.Args {
		word := printShell(t, w)
		switch {
		case strings.HasPrefix(word, "-"):
			flags = true
			word, _, _ = strings.Cut(word, "=")
			words = append(words, word)
		case !flags, strings.Contains(word, "$URL"), strings.Contains(word, "://"):
			words = append(words, word)
		}
	}
	return strings.Join(words, " ")
}

// firstDayStep is what the first-day test does with one runbook command.
// The runbook's commands run as written, in bash, against the local stack;
// what differs from AWS is the environment they run in (firstDayEnv).
type firstDayStep struct {
	signature string
	// set names the variable the command sets from the stack's outputs:
	// the local stack's value is given instead (TablePrefix, the API's
	// URL).
	set string
	// skip says why the command is not run: what only the load balancer
	// answers.
	skip string
	// check says what is wrong with the command's output, given its
	// runbook comment and the local stack, or "" if nothing; with poll it
	// is run again until right or the deadline.
	check func(out, comment string, s *localStack) string
	poll  bool
}

// firstDaySteps are Deploy's steps 5 and 6, command by command, as the
// first-day test runs them; TestRunbookFirstDayIsWhatTheFirstDayTestRuns
// holds them to the runbook's.
var firstDaySteps = []firstDayStep{
	{signature: "PREFIX=$(aws cloudformation describe-stacks --stack-name --query --output)", set: "PREFIX"},
	{signature: "skiapi tables describe --profile --dynamo-table-prefix", check: func(out, _ string, s *localStack) string {
		if !strings.Contains(out, s.prefix) || !strings.Contains(out, "ACTIVE") {
			return "want the tables of prefix " + s.prefix + ", active"
		}
		return ""
	}},
	{signature: "skiapi queues create --profile --sqs-queue", check: func(out, comment string, s *localStack) string {
		if comment != "each queue: exists (<url>) as configured" {
			return fmt.Sprintf("the runbook's comment is %q; the test checks 'each queue: exists (<url>) as configured'", comment)
		}
		for _, q := range []string{s.stack + "-rides-dlq", s.stack + "-rides"} {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(q) + ` exists \(\S+\) as configured$`).MatchString(out) {
				return "want " + q + " exists (<url>) as configured: the stack's queue as the service would set it"
			}
		}
		return ""
	}},
	{signature: "skiapi resorts put --profile --dynamo-table-prefix --id --name", check: wantPrefix("1 added, 0 renamed, 0 unchanged")},
	{signature: "skiapi resorts import resorts.csv --profile --dynamo-table-prefix", check: wantPrefix("1 added, 0 renamed, 0 unchanged; the store holds 2 resorts")},
	{signature: "skiapi resorts list --profile --dynamo-table-prefix", check: func(out, _ string, s *localStack) string {
		if !strings.HasPrefix(out, "id,name,seasons\n1,Mont Example,\n"+firstDayOtherResort) {
			return "want the header, resort 1 with no season yet, and the imported resort"
		}
		return ""
	}},
	{signature: "URL=$(aws cloudformation describe-stacks --stack-name --query --output)", set: "URL"},
	{signature: "curl -s -o -w $URL/metrics", skip: "the load balancer's 404: an instance serves /metrics"},
	{signature: "curl -s -o -w http://${URL#https://}/resorts", skip: "the load balancer's redirect from HTTP"},
	{signature: "curl -s $URL/resorts", poll: true, check: func(out, _ string, s *localStack) string {
		if !strings.Contains(out, `"Mont Example"`) {
			return "want the resort just registered"
		}
		return ""
	}},
	{signature: "curl -s -o -w -XPOST $URL/resorts/1/seasons -d", check: wantComment},
	{signature: "curl -s -o -w -XPOST $URL/skiers/1/seasons/2026/days/12/skiers/42 -d", check: wantComment},
	{signature: "curl -s $URL/skiers/1/seasons/2026/days/12/skiers/42", check: wantComment, poll: true},
}

// firstDayOtherResort is the resort the test's resorts.csv adds ("the
// others, if any"), as `resorts list` prints it.
const firstDayOtherResort = "2,Mont Autre,\n"

func wantPrefix(want string) func(out, _ string, _ *localStack) string {
	return func(out, _ string, _ *localStack) string {
		if !strings.HasPrefix(out, want) {
			return "want " + want
		}
		return ""
	}
}

// wantComment: the command prints what its runbook comment begins with
// (an HTTP status, the vertical read back).
func wantComment(out, comment string, _ *localStack) string {
	want, _, _ := strings.Cut(comment, " ")
	if strings.TrimSpace(out) != want {
		return "want " + want + ", as the runbook's comment says"
	}
	return ""
}

// TestRunbookFirstDayIsWhatTheFirstDayTestRuns: the first day's commands
// in docs/operations.md (Deploy, steps 5 and 6) are, one by one, the
// commands TestRunbookFirstDayOnALocalStack runs or accounts for (the same
// command, subcommands, flags and URL): a command added, removed or
// changed in the runbook fails here until the test follows it.
func TestRunbookFirstDayIsWhatTheFirstDayTestRuns(t *testing.T) {
	var doc, test []string
	for _, c := range firstDayCommands(t) {
		doc = append(doc, c.signature)
	}
	for _, s := range firstDaySteps {
		test = append(test, s.signature)
	}
	if !slices.Equal(doc, test) {
		i := 0
		for i < min(len(doc), len(test)) && doc[i] == test[i] {
			i++
		}
		t.Errorf("command %d differs: docs/operations.md's first day runs\n  %s\nand the first-day test\n  %s", i+1, strings.Join(doc[i:], "\n  "), strings.Join(test[i:], "\n  "))
	}
}

// localStack is the stack of docs/operations.md on this machine: its
// tables in dynalite and its queues in fauxqs (behind the strict proxy)
// as the stack makes them, and an API and a consumer process run as the
// instances run them, each reaching SQS through a recording proxy of its
// own (its IAM role's calls).
type localStack struct {
	dir    string   // the operator's working directory
	stack  string   // $STACK
	prefix string   // the stack's TablePrefix output
	env    []string // the operator's environment (awsStandIns, PATH, $STACK)
	api    *service
	// consumer is the consumer instance's process.
	consumer *service
	calls    map[string]*sqsRecorder // by role
}

// awsStandIns is the environment that points the SDK and skiapi at the
// stand-ins instead of AWS: the only difference between a command run
// here and on AWS. The region is the one the SQS stand-in's strict proxy
// finds queues in (dynalite takes any); the credentials are test ones, for
// the operator's or the instance role's; the endpoints are --dynamo-endpoint
// and --sqs-endpoint; and the metadata service is not asked (off EC2).
func awsStandIns(t *testing.T, sqsEndpoint string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKI_") && !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_REGION="+sqstest.Region, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true",
		"SKI_DYNAMO_ENDPOINT="+dynamotest.Endpoint(t), "SKI_SQS_ENDPOINT="+sqsEndpoint,
	)
}

// startLocalStack makes what the stack would (the tables with `skiapi
// tables create`, the queues from the template's own properties) and
// starts the two instances.
func startLocalStack(t *testing.T) *localStack {
	t.Helper()
	tpl := loadTemplate(t)
	bin := buildSkiapi(t)
	tablePrefix := dynamotest.Prefix(t)
	store := str(asMap(asMap(tpl["Parameters"])["Store"])["Default"])
	s := &localStack{
		dir:    t.TempDir(),
		stack:  fmt.Sprintf("skidata-%d-%d", time.Now().UnixNano()%1e9, os.Getpid()),
		prefix: tablePrefix + modelTablePrefix(t, tpl, strings.TrimPrefix(store, "dynamo-")),
		calls:  map[string]*sqsRecorder{},
	}
	s.env = append(awsStandIns(t, sqstest.EndpointOrStart(t)), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "STACK="+s.stack)
	sqstest.DeleteQueuesAtEnd(t, sqstest.EndpointOrStart(t), s.stack+"-rides", s.stack+"-rides-dlq")

	tables := exec.Command(bin, "tables", "create", "--profile", "ec2", "--dynamo-table-prefix", s.prefix)
	tables.Env = s.env
	if out, err := tables.CombinedOutput(); err != nil {
		t.Fatalf("skiapi tables create (the stack's tables): %v\n%s", err, out)
	}
	createStackQueues(t, tpl, s.stack)

	values := map[string]string{"TablePrefix": tablePrefix, "RideQueue.QueueName": s.stack + "-rides"}
	for _, role := range []string{roleAPI, roleConsumer} {
		rec, endpoint := newSQSRecorder(t)
		s.calls[role] = rec
		args, unitEnv := systemdUnit(t, role)
		env := append(append(awsStandIns(t, endpoint), instanceEnvFile(t, tpl, role, values)...), unitEnv...)
		// The port: 8080 on an instance; here one the kernel picks.
		svc := startService(t, role, bin, args, append(env, "SKI_LISTEN=127.0.0.1:0"))
		// The user-data waits for /readyz before it signals the instance
		// ready, as the test waits here.
		poll.Until(t, time.Minute, role+" ready", func() string {
			resp, err := http.Get(svc.base + "/readyz")
			if err != nil {
				return err.Error()
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return resp.Status
			}
			return ""
		})
		if role == roleAPI {
			s.api = svc
		} else {
			s.consumer = svc
		}
	}
	return s
}

// createStackQueues makes the two SQS queues as the template declares
// them, as CloudFormation would: each property is the queue attribute of
// the same name, the ride queue's redrive naming the dead-letter queue's
// ARN. The stack-only properties are left out (the name is CreateQueue's
// argument; fauxqs does not model a redrive-allow policy).
func createStackQueues(t *testing.T, tpl map[string]any, stack string) {
	t.Helper()
	c := sqssim.Client(sqstest.EndpointOrStart(t))
	queues := resourceEntries(t, tpl, "AWS::SQS::Queue")
	arns := map[string]string{}
	for _, res := range []string{"RideDeadLetterQueue", "RideQueue"} {
		props := asMap(queues[res]["Properties"])
		name := strings.ReplaceAll(str(asMap(props["QueueName"])["Fn::Sub"]), "${AWS::StackName}", stack)
		attrs := map[string]string{}
		for k, v := range props {
			if slices.Contains(stackOnlyQueueProperties, k) {
				continue
			}
			switch x := v.(type) {
			case map[string]any:
				if ga := list(asMap(x["deadLetterTargetArn"])["Fn::GetAtt"]); len(ga) == 2 && arns[str(ga[0])] != "" {
					x = maps.Clone(x)
					x["deadLetterTargetArn"] = arns[str(ga[0])]
				}
				b, _ := json.Marshal(x)
				attrs[k] = string(b)
			default:
				attrs[k] = fmt.Sprint(x)
			}
		}
		out, err := c.CreateQueue(sqstest.Context(t), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatalf("create %s (%s) as the template declares it, %v: %v", res, name, attrs, err)
		}
		a, err := c.GetQueueAttributes(sqstest.Context(t), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		arns[res] = a.Attributes[string(types.QueueAttributeNameQueueArn)]
	}
}

// instanceEnvFile is /etc/skidata/skiapi.env as a role's launch template
// writes it with the template's defaults (Queue=sqs), values giving what
// the stack would (its table prefix, its ride queue's name): KEY=VALUE
// lines. A ${...} the test does not know fails it.
func instanceEnvFile(t *testing.T, tpl map[string]any, role string, values map[string]string) []string {
	t.Helper()
	lt := resources(t, tpl, "AWS::EC2::LaunchTemplate")[map[string]string{roleAPI: "ApiLaunchTemplate", roleConsumer: "ConsumerLaunchTemplate"}[role]]
	script, vars := userData(lt)
	_, body, ok := strings.Cut(script, "cat > /etc/skidata/skiapi.env <<ENV\n")
	body, _, ok2 := strings.Cut(body, "\nENV\n")
	if !ok || !ok2 {
		t.Fatalf("the %s launch template's user-data writes no /etc/skidata/skiapi.env heredoc", role)
	}
	given := values
	values = map[string]string{}
	for name, p := range asMap(tpl["Parameters"]) {
		if d, ok := asMap(p)["Default"]; ok {
			values[name] = fmt.Sprint(d)
		}
	}
	maps.Copy(values, given) // the stack's, over the parameters' defaults
	values["ModelTablePrefix"] = modelTablePrefix(t, tpl, strings.TrimPrefix(values["Store"], "dynamo-"))
	values["QueueSettings"], _ = queueSettings(t, vars)
	expand := regexp.MustCompile(`\$\{([^}]+)\}`)
	for range 2 { // QueueSettings holds a ${...} of its own
		body = expand.ReplaceAllStringFunc(body, func(ref string) string {
			v, ok := values[ref[2:len(ref)-1]]
			if !ok {
				t.Errorf("the env file names %s, which the first-day test does not give", ref)
			}
			return v
		})
	}
	var env []string
	for _, line := range strings.Split(body, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			env = append(env, line)
		}
	}
	return env
}

// systemdUnit is what deploy/systemd/skiapi-<role>.service runs: the
// arguments of its ExecStart after the binary, and its Environment=
// settings.
func systemdUnit(t *testing.T, role string) (args, env []string) {
	t.Helper()
	raw, err := os.ReadFile("systemd/skiapi-" + role + ".service")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, v)
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			args = strings.Fields(v)[1:]
		}
	}
	if len(args) == 0 {
		t.Fatalf("skiapi-%s.service has no ExecStart", role)
	}
	return args, env
}

// skiapiBuild is cmd/skiapi, compiled once for the test binary.
var skiapiBuild struct {
	once sync.Once
	bin  string
	err  error
}

// buildSkiapi returns the path of a skiapi binary (named skiapi, as the
// runbook calls it), built on first use into a directory TestMain removes.
func buildSkiapi(t *testing.T) string {
	t.Helper()
	b := &skiapiBuild
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "skidata-deploy-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, "skiapi")
		if out, err := exec.Command("go", "build", "-o", b.bin, "github.com/skidata/skidata/cmd/skiapi").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build skiapi: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// service is one running skiapi process of the local stack.
type service struct {
	name string
	cmd  *exec.Cmd
	base string     // http://127.0.0.1:port
	done chan error // cmd.Wait's result
	mu   sync.Mutex
	logs strings.Builder
}

func (s *service) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// startService runs bin with args and env (JSON logs: the ec2 profile's)
// and learns its address from the "skidata serving" line. It is killed
// when the test ends if still running.
func startService(t *testing.T, name, bin string, args, env []string) *service {
	t.Helper()
	s := &service{name: name, cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	s.cmd.Env = env
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			s.mu.Lock()
			s.logs.WriteString(lines.Text() + "\n")
			s.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "skidata serving" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
		s.done <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", name, s.log())
		}
	})
	select {
	case a := <-addr:
		s.base = "http://" + a
	case err := <-s.done:
		s.done <- err
		t.Fatalf("%s exited before serving (%v):\n%s", name, err, s.log())
	case <-time.After(time.Minute):
		t.Fatalf("%s did not log its address within a minute:\n%s", name, s.log())
	}
	return s
}

// stop sends SIGTERM, as systemd does, and wants exit status 0.
func (s *service) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", s.name, err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("%s after SIGTERM: %v; want exit status 0", s.name, err)
		}
	case <-time.After(45 * time.Second): // the units' TimeoutStopSec
		t.Errorf("%s did not exit within 45 s of SIGTERM", s.name)
	}
}

// TestRunbookFirstDayOnALocalStack follows the first day of
// docs/operations.md (Deploy, steps 5 and 6) on a local stack: the stack's
// tables (dynalite) and queues (fauxqs behind the strict proxy, made from
// the template's properties), an API and a consumer process run as the
// instances' units run them (the launch templates' env file with the
// template's defaults, the units' role and command). Each command of the
// runbook runs as written, in bash, with the stand-ins' environment
// (awsStandIns: region, test credentials, --dynamo-endpoint and
// --sqs-endpoint through SKI_ variables) and $STACK, $PREFIX and $URL
// given by the local stack in place of the stack's outputs (the API's
// address, plain HTTP: no load balancer, so its two commands are not
// run): the queues are found as configured, a resort is registered with
// put and import and listed, its season is added, a ride is posted and
// read back through the API once the consumer stored it. Then each
// process's SQS calls are ones its role's IAM policy allows, and both stop
// on SIGTERM with status 0.
func TestRunbookFirstDayOnALocalStack(t *testing.T) {
	s := startLocalStack(t)
	cmds := firstDayCommands(t)
	if len(cmds) != len(firstDaySteps) {
		t.Fatalf("the runbook's first day has %d commands and the test %d steps (TestRunbookFirstDayIsWhatTheFirstDayTestRuns says which)", len(cmds), len(firstDaySteps))
	}
	if err := os.WriteFile(filepath.Join(s.dir, "resorts.csv"), []byte("id,name\n"+strings.TrimSuffix(firstDayOtherResort, ",\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"PREFIX": s.prefix, "URL": s.api.base}
	env := slices.Clone(s.env)
	for i, step := range firstDaySteps {
		c := cmds[i]
		switch {
		case c.signature != step.signature:
			t.Fatalf("runbook command %d is %q; the test's step is %q", i+1, c.signature, step.signature)
		case step.set != "":
			env = append(env, step.set+"="+outputs[step.set])
			t.Logf("%s: %s=%s (the stack's output, here the local stack's)", c.text, step.set, outputs[step.set])
		case step.skip != "":
			t.Logf("not run: %s: %s", c.text, step.skip)
		default:
			check := func() string {
				cmd := exec.Command("bash", "-c", c.text)
				cmd.Dir, cmd.Env = s.dir, env
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					return fmt.Sprintf("%v; stdout %q, stderr %q", err, out, stderr.String())
				}
				if why := step.check(string(out), c.comment, s); why != "" {
					return fmt.Sprintf("output %q: %s", out, why)
				}
				return ""
			}
			if step.poll {
				poll.Until(t, 30*time.Second, c.text, check)
			} else if why := check(); why != "" {
				t.Fatalf("%s: %s", c.text, why)
			}
			t.Logf("ran: %s", c.text)
		}
	}

	tpl := loadTemplate(t)
	roles := resources(t, tpl, "AWS::IAM::Role")
	rides := map[string]bool{s.stack + "-rides": true}
	for role, rec := range s.calls {
		called := rec.byResource(t, rides)
		granted := sqsGrants(t, roles[iamRoleOf[role]], queueConditions("sqs"))
		t.Logf("the %s process called %v", role, called)
		for res, actions := range called {
			for _, a := range actions {
				if !slices.Contains(granted[res], a) {
					t.Errorf("the %s process called %s on %s, which %s does not allow", role, a, res, iamRoleOf[role])
				}
			}
		}
	}
	for _, svc := range []*service{s.api, s.consumer} {
		svc.stop(t)
	}
}
