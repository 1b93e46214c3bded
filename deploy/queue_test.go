package deploy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/skidata/skidata/test/needs"
)

// The queue between the API and the consumers is a parameter: Amazon SQS
// by default, Amazon MQ for RabbitMQ when chosen. These tests read the
// template under each choice (resolveIf over UseSQS/UseAmazonMQ).

// conditionImplies reports whether the template's condition cond holds
// only when want holds: it is want, or an Fn::And with want among its
// parts (transitively).
func conditionImplies(tpl map[string]any, cond, want string) bool {
	if cond == want {
		return true
	}
	for _, part := range list(asMap(asMap(tpl["Conditions"])[cond])["Fn::And"]) {
		if inner := str(asMap(part)["Condition"]); inner != "" && conditionImplies(tpl, inner, want) {
			return true
		}
	}
	return false
}

// TestTemplateQueueIsAChoiceWithSQSByDefault: Queue defaults to sqs; with
// it the stack has the ride queue and its dead-letter queue (named
// <stack>-rides and <stack>-rides-dlq, as --sqs-queue finds the second from
// the first; their attributes are those `skiapi queues create` sets,
// TestTemplateQueuesAreSetAsQueuesCreateSetsThem), the dead-letter queue
// taking messages from the ride queue only, and an SQS interface
// endpoint; the queues outlive the stack like the tables. Every Amazon MQ
// resource (the broker, its secrets, security group and rules, the user
// function, the broker alarms) exists only with Queue=rabbitmq.
func TestTemplateQueueIsAChoiceWithSQSByDefault(t *testing.T) {
	tpl := loadTemplate(t)
	params, _ := tpl["Parameters"].(map[string]any)
	q, _ := params["Queue"].(map[string]any)
	if q["Default"] != "sqs" || fmt.Sprint(list(q["AllowedValues"])) != "[sqs rabbitmq]" {
		t.Errorf("parameter Queue is %v; want AllowedValues [sqs rabbitmq], default sqs", q)
	}
	wantConditions(t, tpl, map[string]string{
		"UseSQS":      "map[Fn::Equals:[map[Ref:Queue] sqs]]",
		"UseAmazonMQ": "map[Fn::Equals:[map[Ref:Queue] rabbitmq]]",
	})

	queues := resourceEntries(t, tpl, "AWS::SQS::Queue")
	ride, dlq := queues["RideQueue"], queues["RideDeadLetterQueue"]
	if ride == nil || dlq == nil || len(queues) != 2 {
		t.Fatalf("SQS queues %v; want RideQueue and RideDeadLetterQueue", slices.Sorted(maps.Keys(queues)))
	}
	rp, dp := asMap(ride["Properties"]), asMap(dlq["Properties"])
	if got, want := str(asMap(rp["QueueName"])["Fn::Sub"]), "${AWS::StackName}-rides"; got != want {
		t.Errorf("RideQueue is named %q; want %q", got, want)
	}
	if got, want := str(asMap(dp["QueueName"])["Fn::Sub"]), "${AWS::StackName}-rides-dlq"; got != want {
		t.Errorf("RideDeadLetterQueue is named %q; want %q (the ride queue's name and -dlq)", got, want)
	}
	for name, r := range queues {
		wantValues(t, name, r, map[string]any{"Condition": "UseSQS", "DeletionPolicy": "RetainExceptOnCreate", "UpdateReplacePolicy": "Retain"})
	}
	allow := asMap(dp["RedriveAllowPolicy"])
	if allow["redrivePermission"] != "byQueue" || !strings.Contains(fmt.Sprint(allow["sourceQueueArns"]), "${AWS::StackName}-rides]") {
		t.Errorf("RideDeadLetterQueue's RedriveAllowPolicy is %v; want the ride queue alone", allow)
	}
	if ep := resourceEntries(t, tpl, "AWS::EC2::VPCEndpoint")["SqsEndpoint"]; ep == nil || !conditionImplies(tpl, str(ep["Condition"]), "UseSQS") {
		t.Errorf("SqsEndpoint is %v; want an SQS interface endpoint present with Queue=sqs", ep)
	}

	// Amazon MQ only when chosen.
	mqTypes := []string{"AWS::AmazonMQ::Broker", "AWS::SecretsManager::Secret", "AWS::Lambda::Function", "Custom::RabbitMQUser"}
	found := 0
	for name, r := range tpl["Resources"].(map[string]any) {
		rm := asMap(r)
		raw, _ := json.Marshal(rm)
		mq := slices.Contains(mqTypes, str(rm["Type"])) || strings.HasPrefix(name, "Broker") ||
			strings.Contains(string(raw), `"BrokerSG"`) || strings.Contains(string(raw), "AWS/AmazonMQ") && rm["Type"] == "AWS::CloudWatch::Alarm" && !strings.Contains(string(raw), "UseSQS")
		if !mq || strings.HasPrefix(name, "Backup") {
			continue
		}
		found++
		if !conditionImplies(tpl, str(rm["Condition"]), "UseAmazonMQ") {
			t.Errorf("%s (%s) is Amazon MQ's but has Condition %v; want it only with Queue=rabbitmq", name, rm["Type"], rm["Condition"])
		}
	}
	if found < 10 {
		t.Errorf("found %d Amazon MQ resources; the test is not looking at the broker's", found)
	}
}

// sqsGrants are the SQS actions each instance role's statements allow, by
// queue resource (RideQueue, RideDeadLetterQueue), under conds.
func sqsGrants(t *testing.T, role map[string]any, conds map[string]bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	resolved, _ := resolveIf(role, conds).(map[string]any)
	for _, st := range statements(resolved) {
		var actions []string
		for _, a := range anyList(st["Action"]) {
			if strings.HasPrefix(str(a), "sqs:") {
				actions = append(actions, str(a))
			}
		}
		if len(actions) == 0 {
			continue
		}
		for _, r := range anyList(st["Resource"]) {
			ga := list(asMap(r)["Fn::GetAtt"])
			if len(ga) != 2 || ga[1] != "Arn" {
				t.Errorf("SQS statement %v names %v; want !GetAtt <queue>.Arn", st["Sid"], r)
				continue
			}
			out[str(ga[0])] = append(out[str(ga[0])], actions...)
		}
	}
	for q := range out {
		sort.Strings(out[q])
	}
	return out
}

// TestTemplateAmazonMQIsAdministeredAndUsedAsAnOrdinaryUser: with Amazon
// MQ the broker's administrator (made by Amazon MQ from the stack) has a
// secret no instance can read; the application connects as a user that
// BrokerAppUser makes through the management API, whose password the
// stack sets again when BrokerAppPasswordVersion changes (the rotation);
// the management API (443) is reachable from that function and from the
// API instances (a Session Manager port forward), AMQPS (5671) from both
// instance groups. The broker's name carries BrokerGeneration, and a
// replaced broker is kept (with its queued rides) rather than deleted.
func TestTemplateAmazonMQIsAdministeredAndUsedAsAnOrdinaryUser(t *testing.T) {
	tpl := loadTemplate(t)
	all := tpl["Resources"].(map[string]any)
	broker := asMap(all["Broker"])
	bp := asMap(broker["Properties"])
	if broker["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("Broker: UpdateReplacePolicy %v; want Retain (a replaced broker keeps the rides queued in it until drained)", broker["UpdateReplacePolicy"])
	}
	if got := str(asMap(bp["BrokerName"])["Fn::Sub"]); !strings.Contains(got, "${BrokerGeneration}") {
		t.Errorf("BrokerName is %q; want it to carry ${BrokerGeneration}, so a replacement can be created beside the old broker", got)
	}
	users := list(bp["Users"])
	if len(users) != 1 || asMap(users[0])["Username"] != "skidata-admin" || !strings.Contains(str(asMap(users[0])["Password"]), "${BrokerAdminSecret}") {
		t.Errorf("Broker users %v; want the administrator skidata-admin, its password from BrokerAdminSecret", users)
	}
	for secret, user := range map[string]string{"BrokerAdminSecret": "skidata-admin", "BrokerAppSecret": "skidata-app"} {
		gen := asMap(asMap(asMap(all[secret])["Properties"])["GenerateSecretString"])
		if !strings.Contains(str(gen["SecretStringTemplate"]), `"username":"`+user+`"`) {
			t.Errorf("%s generates %v; want the user %s", secret, gen, user)
		}
	}
	au := asMap(asMap(all["BrokerAppUser"])["Properties"])
	for k, want := range map[string]string{
		"AdminSecret":     "map[Ref:BrokerAdminSecret]",
		"AppSecret":       "map[Ref:BrokerAppSecret]",
		"ConsoleUrl":      "map[Fn::Select:[0 map[Fn::GetAtt:[Broker ConsoleURLs]]]]",
		"PasswordVersion": "map[Ref:BrokerAppPasswordVersion]",
		"Vhost":           "/",
		"Configure":       `^skidata\.`,
		"Read":            `^skidata\.`,
		"Write":           `^(skidata\..*|amq\.default)$`,
	} {
		if got := fmt.Sprint(au[k]); got != want {
			t.Errorf("BrokerAppUser %s is %s; want %s", k, got, want)
		}
	}
	sg := asMap(asMap(all["BrokerSG"])["Properties"])
	var ingress []string
	for _, r := range list(sg["SecurityGroupIngress"]) {
		rm := asMap(r)
		ingress = append(ingress, fmt.Sprintf("%v from %v", rm["FromPort"], asMap(rm["SourceSecurityGroupId"])["Ref"]))
	}
	sort.Strings(ingress)
	if want := []string{"443 from ApiSG", "443 from BrokerUserFunctionSG", "5671 from ApiSG", "5671 from ConsumerSG"}; !slices.Equal(ingress, want) {
		t.Errorf("BrokerSG lets in %v; want %v", ingress, want)
	}
	fnRole := asMap(asMap(all["BrokerUserFunctionRole"])["Properties"])
	var reads []string
	for _, st := range statements(fnRole) {
		for _, r := range anyList(st["Resource"]) {
			reads = append(reads, fmt.Sprint(r))
		}
	}
	if fmt.Sprint(reads) != "[map[Ref:BrokerAdminSecret] map[Ref:BrokerAppSecret]]" {
		t.Errorf("BrokerUserFunctionRole reads %v; want the two broker secrets only", reads)
	}
}

// brokerUserFunction is the inline source of the function behind
// BrokerAppUser.
func brokerUserFunction(t *testing.T) string {
	t.Helper()
	fn := asMap(asMap(loadTemplate(t)["Resources"].(map[string]any)["BrokerUserFunction"])["Properties"])
	code := str(asMap(fn["Code"])["ZipFile"])
	if code == "" || fn["Handler"] != "index.handler" {
		t.Fatalf("BrokerUserFunction: Handler %v, ZipFile %d bytes; want index.handler and inline code", fn["Handler"], len(code))
	}
	// CloudFormation takes at most 4096 characters of inline code.
	if len(code) > 4096 {
		t.Errorf("BrokerUserFunction's ZipFile is %d characters; CloudFormation takes 4096", len(code))
	}
	return code
}

// managementAPI stands in for RabbitMQ's management API: it records each
// request with its Basic credentials and answers status for every one.
type managementAPI struct {
	mu       sync.Mutex
	requests []string // "METHOD path user:password body"
	status   int
}

func (m *managementAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	user, pass, _ := r.BasicAuth()
	m.mu.Lock()
	m.requests = append(m.requests, fmt.Sprintf("%s %s %s:%s %s", r.Method, r.URL.EscapedPath(), user, pass, strings.TrimSpace(string(body))))
	m.mu.Unlock()
	w.WriteHeader(m.status)
}

// runBrokerUserFunction runs the function's handler with python3 for one
// CloudFormation request against the stand-in API, with stand-ins for what
// the Lambda runtime gives it (boto3's Secrets Manager client, the
// cfnresponse module), and returns what it replied to CloudFormation.
func runBrokerUserFunction(t *testing.T, requestType, consoleURL string) map[string]any {
	t.Helper()
	python := needs.Program(t, "python3", "python3")
	dir := t.TempDir()
	files := map[string]string{
		"index.py": brokerUserFunction(t),
		"boto3.py": `import json
SECRETS = {
    "arn:admin": {"username": "skidata-admin", "password": "admin-pass"},
    "arn:app": {"username": "skidata-app", "password": "app-pass"},
}
class _SecretsManager:
    def get_secret_value(self, SecretId):
        return {"SecretString": json.dumps(SECRETS[SecretId])}
def client(name):
    assert name == "secretsmanager", name
    return _SecretsManager()
`,
		"cfnresponse.py": `import json
SUCCESS, FAILED = "SUCCESS", "FAILED"
def send(event, context, responseStatus, responseData, physicalResourceId=None, noEcho=False, reason=None):
    with open("reply.json", "w") as f:
        json.dump({"Status": responseStatus, "Data": responseData, "PhysicalResourceId": physicalResourceId, "Reason": reason}, f)
`,
		"run.py": `import json, sys, index
index.handler(json.loads(sys.argv[1]), None)
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	event, _ := json.Marshal(map[string]any{
		"RequestType":        requestType,
		"PhysicalResourceId": "earlier-id",
		"ResourceProperties": map[string]any{
			"ConsoleUrl": consoleURL, "AdminSecret": "arn:admin", "AppSecret": "arn:app", "Vhost": "/",
			"Configure": `^skidata\.`, "Write": `^(skidata\..*|amq\.default)$`, "Read": `^skidata\.`, "PasswordVersion": "1",
		},
	})
	cmd := exec.Command(python, "run.py", string(event))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the handler failed outside its own error handling: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "reply.json"))
	if err != nil {
		t.Fatalf("the handler sent CloudFormation no reply: %v", err)
	}
	var reply map[string]any
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

// TestBrokerUserFunctionMakesAnOrdinaryUser runs BrokerAppUser's function
// (the template's inline Python) against a stand-in for RabbitMQ's
// management API: on Create and Update it logs in as the administrator,
// puts the application user with its secret's password and no tags (not
// an administrator), gives it the stack's permissions on the vhost, and
// replies SUCCESS with the user's name; on Delete it calls nothing (the
// broker goes with the stack, or is kept, replaced, for draining); when the
// API refuses, it replies FAILED with the reason, never the passwords.
// What the real Amazon MQ API does with it has not been seen here.
func TestBrokerUserFunctionMakesAnOrdinaryUser(t *testing.T) {
	for _, requestType := range []string{"Create", "Update"} {
		t.Run(requestType, func(t *testing.T) {
			api := &managementAPI{status: http.StatusNoContent}
			srv := httptest.NewServer(api)
			defer srv.Close()
			reply := runBrokerUserFunction(t, requestType, srv.URL+"/")
			want := []string{
				`PUT /api/users/skidata-app skidata-admin:admin-pass {"password": "app-pass", "tags": ""}`,
				`PUT /api/permissions/%2F/skidata-app skidata-admin:admin-pass {"configure": "^skidata\\.", "write": "^(skidata\\..*|amq\\.default)$", "read": "^skidata\\."}`,
			}
			if !slices.Equal(api.requests, want) {
				t.Errorf("the management API got\n%s\nwant\n%s", strings.Join(api.requests, "\n"), strings.Join(want, "\n"))
			}
			if reply["Status"] != "SUCCESS" || fmt.Sprint(reply["Data"]) != "map[Username:skidata-app]" {
				t.Errorf("reply %v; want SUCCESS with Username skidata-app", reply)
			}
		})
	}
	t.Run("Delete", func(t *testing.T) {
		api := &managementAPI{status: http.StatusNoContent}
		srv := httptest.NewServer(api)
		defer srv.Close()
		reply := runBrokerUserFunction(t, "Delete", srv.URL)
		if len(api.requests) != 0 || reply["Status"] != "SUCCESS" || reply["PhysicalResourceId"] != "earlier-id" {
			t.Errorf("Delete: requests %v, reply %v; want none, SUCCESS for the same resource id", api.requests, reply)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		api := &managementAPI{status: http.StatusUnauthorized}
		srv := httptest.NewServer(api)
		defer srv.Close()
		reply := runBrokerUserFunction(t, "Create", srv.URL)
		reason := str(reply["Reason"])
		if reply["Status"] != "FAILED" || !strings.Contains(reason, "401") {
			t.Errorf("reply %v; want FAILED naming the 401", reply)
		}
		raw, _ := json.Marshal(reply)
		if strings.Contains(string(raw), "admin-pass") || strings.Contains(string(raw), "app-pass") || strings.Contains(string(raw), base64.StdEncoding.EncodeToString([]byte("skidata-admin:admin-pass"))) {
			t.Errorf("the reply to CloudFormation holds a password: %s", raw)
		}
	})
}

// TestTemplateBrokerUserFunctionReachesSecretsManager: the function behind
// BrokerAppUser runs in PrivateSubnets and reads the broker's two secrets.
// Whenever the Secrets Manager interface endpoint exists (Queue=rabbitmq,
// CreateInterfaceEndpoints true or queue), its private DNS sends every
// caller in the VPC to the endpoint, so the endpoint's security group must
// let the function in on 443: refused, the function's call would hang until
// the function times out without a reply, and the create would wait for the
// custom resource. Its own group lets it out on 443.
func TestTemplateBrokerUserFunctionReachesSecretsManager(t *testing.T) {
	tpl := loadTemplate(t)
	all := tpl["Resources"].(map[string]any)
	conds := queueConditions("rabbitmq")
	ep := asMap(all["SecretsManagerEndpoint"])
	epProps := asMap(ep["Properties"])
	if !conditionImplies(tpl, str(ep["Condition"]), "UseAmazonMQ") || epProps["PrivateDnsEnabled"] != true {
		t.Fatalf("SecretsManagerEndpoint: Condition %v, PrivateDnsEnabled %v; the test expects the Amazon MQ stack's endpoint with private DNS", ep["Condition"], epProps["PrivateDnsEnabled"])
	}
	fn := asMap(asMap(all["BrokerUserFunction"])["Properties"])
	var fnGroups []string
	for _, g := range list(asMap(fn["VpcConfig"])["SecurityGroupIds"]) {
		fnGroups = append(fnGroups, str(asMap(g)["Ref"]))
	}
	if len(fnGroups) == 0 {
		t.Fatalf("BrokerUserFunction's VpcConfig names no security group: %v", fn["VpcConfig"])
	}
	https := func(rule map[string]any) bool {
		from, _ := rule["FromPort"].(int)
		to, _ := rule["ToPort"].(int)
		return rule["IpProtocol"] == "tcp" && from <= 443 && 443 <= to
	}
	for _, g := range fnGroups {
		out := false
		for _, r := range list(resolveIf(asMap(asMap(all[g])["Properties"])["SecurityGroupEgress"], conds)) {
			out = out || https(asMap(r)) && asMap(r)["CidrIp"] == "0.0.0.0/0"
		}
		if !out {
			t.Errorf("%s (the function's group) does not let it out on 443", g)
		}
	}
	for _, g := range list(epProps["SecurityGroupIds"]) {
		name := str(asMap(g)["Ref"])
		in := false
		for _, r := range list(resolveIf(asMap(asMap(all[name])["Properties"])["SecurityGroupIngress"], conds)) {
			rm := asMap(r)
			in = in || https(rm) && slices.Contains(fnGroups, str(asMap(rm["SourceSecurityGroupId"])["Ref"]))
		}
		if !in {
			t.Errorf("%s (the Secrets Manager endpoint's group) does not let the broker user function (%v) in on 443 with Queue=rabbitmq", name, fnGroups)
		}
	}
}
