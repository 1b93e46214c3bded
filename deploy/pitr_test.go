package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skidata/skidata/test/needs"
)

// deploy/aws/pitr-restore.sh runs against fakeAWS: this test binary, called
// as "aws" (a link on PATH), answering the AWS CLI calls the script makes
// from a state file (FAKE_AWS_STATE) that each call reads and writes back.
// It models what the script must get right with real DynamoDB: a restore,
// a backup, a deletion or a table update (UpdateTable is asynchronous)
// takes some polls to finish (as many as the scenario says: a large
// table's restore takes hours, longer than the AWS CLI's waiters), a table
// cannot be backed up, updated or deleted while not ACTIVE,
// nor deleted while protected, and a restore may fail. What the script
// should never do (delete a table with no available backup of it and of
// its restored copy) the fake records as a violation.

type fakeTable struct {
	Status     string // CREATING, ACTIVE, DELETING
	Polls      int    // describe-table calls left until the status changes
	Items      int
	Protected  bool
	PITR       bool
	RestoredAt string // the time a point-in-time restore was asked for
}

type fakeBackup struct {
	Table  string
	Items  int
	Status string
	Polls  int
}

type fakeState struct {
	Tables  map[string]*fakeTable
	Backups map[string]*fakeBackup
	Group   struct {
		Min, Desired, Instances int
		Suspended               bool
	}
	// The scenario.
	RestorePolls, BackupPolls int
	RestoreFails              bool
	ItemsAt                   map[string]int // table -> items at the restore time
	// What happened.
	Calls      []string
	Violations []string
}

func (s *fakeState) table(name string) *fakeTable {
	return s.Tables[name]
}

// fakeAWS is the test binary's main when it is called as "aws".
func fakeAWS(args []string) int {
	path := os.Getenv("FAKE_AWS_STATE")
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake aws:", err)
		return 255
	}
	var st fakeState
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintln(os.Stderr, "fake aws:", err)
		return 255
	}
	st.Calls = append(st.Calls, strings.Join(args, " "))
	out, err := st.call(args)
	if raw, jerr := json.Marshal(&st); jerr == nil {
		_ = os.WriteFile(path, raw, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "An error occurred "+err.Error())
		return 254
	}
	if out != "" {
		fmt.Println(out)
	}
	return 0
}

// flagsOf reads "--name value" pairs; a flag with no value is "true".
func flagsOf(args []string) map[string]string {
	f := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			f[name] = args[i+1]
			i++
		} else {
			f[name] = "true"
		}
	}
	return f
}

func (s *fakeState) call(args []string) (string, error) {
	if len(args) < 2 {
		return "", errors.New("(Usage)")
	}
	f := flagsOf(args[2:])
	notFound := func(name string) error {
		return fmt.Errorf("(ResourceNotFoundException) when calling the operation: Requested resource not found: Table: %s not found", name)
	}
	switch args[0] + " " + args[1] {
	case "dynamodb list-tables":
		prefix, _, _ := strings.Cut(strings.TrimPrefix(f["query"], "TableNames[?starts_with(@, '"), "'")
		var names []string
		for name := range s.Tables {
			if strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return strings.Join(names, "\t"), nil
	case "dynamodb describe-table":
		t := s.table(f["table-name"])
		if t == nil {
			return "", notFound(f["table-name"])
		}
		if f["query"] == "Table.DeletionProtectionEnabled" {
			return map[bool]string{true: "True", false: "False"}[t.Protected], nil
		}
		status := t.Status
		if t.Polls > 0 {
			t.Polls--
		} else if t.Status == "CREATING" || t.Status == "UPDATING" {
			t.Status = "ACTIVE"
		} else if t.Status == "DELETING" {
			delete(s.Tables, f["table-name"])
		}
		return status, nil
	case "dynamodb restore-table-to-point-in-time":
		src := s.table(f["source-table-name"])
		if src == nil || !src.PITR {
			return "", fmt.Errorf("(PointInTimeRecoveryUnavailableException) for %s", f["source-table-name"])
		}
		if s.RestoreFails {
			return "", errors.New("(InvalidRestoreTimeException) when calling the RestoreTableToPointInTime operation")
		}
		if s.Tables[f["target-table-name"]] != nil {
			return "", errors.New("(TableAlreadyExistsException)")
		}
		s.Tables[f["target-table-name"]] = &fakeTable{Status: "CREATING", Polls: s.RestorePolls, Items: s.ItemsAt[f["source-table-name"]], RestoredAt: f["restore-date-time"]}
		return "{}", nil
	case "dynamodb scan":
		t := s.table(f["table-name"])
		if t == nil || t.Status != "ACTIVE" {
			return "", errors.New("(ResourceNotFoundException) scan of a table that is not ACTIVE")
		}
		return fmt.Sprint(t.Items), nil
	case "dynamodb create-backup":
		t := s.table(f["table-name"])
		if t == nil || t.Status != "ACTIVE" {
			return "", errors.New("(TableInUseException) the table is not ACTIVE")
		}
		arn := fmt.Sprintf("arn:aws:dynamodb:us-west-2:123456789012:table/%s/backup/%s", f["table-name"], f["backup-name"])
		s.Backups[arn] = &fakeBackup{Table: f["table-name"], Items: t.Items, Status: "CREATING", Polls: s.BackupPolls}
		return arn, nil
	case "dynamodb describe-backup":
		b := s.Backups[f["backup-arn"]]
		if b == nil {
			return "", errors.New("(BackupNotFoundException)")
		}
		if b.Polls > 0 {
			b.Polls--
		} else {
			b.Status = "AVAILABLE"
		}
		return b.Status, nil
	case "dynamodb update-table":
		t := s.table(f["table-name"])
		if t == nil {
			return "", notFound(f["table-name"])
		}
		// UpdateTable is asynchronous: the table is UPDATING for a while.
		if t.Status != "ACTIVE" {
			return "", errors.New("(ResourceInUseException) the table is not ACTIVE")
		}
		t.Protected = f["deletion-protection-enabled"] == "true"
		t.Status, t.Polls = "UPDATING", 1
		return "{}", nil
	case "dynamodb delete-table":
		name := f["table-name"]
		t := s.table(name)
		if t == nil {
			return "", notFound(name)
		}
		if t.Protected {
			return "", errors.New("(ValidationException) deletion protection is enabled")
		}
		if t.Status != "ACTIVE" {
			return "", errors.New("(ResourceInUseException) the table is " + t.Status)
		}
		if !strings.HasSuffix(name, "-restored") {
			var liveSaved, copySaved bool
			for _, b := range s.Backups {
				liveSaved = liveSaved || (b.Table == name && b.Status == "AVAILABLE")
				copySaved = copySaved || (b.Table == name+"-restored" && b.Status == "AVAILABLE")
			}
			if !liveSaved || !copySaved {
				s.Violations = append(s.Violations, fmt.Sprintf("%s deleted with an available backup of it %v, of its restored copy %v", name, liveSaved, copySaved))
			}
		}
		t.Status, t.Polls = "DELETING", 2
		return "{}", nil
	case "dynamodb restore-table-from-backup":
		b := s.Backups[f["backup-arn"]]
		if b == nil || b.Status != "AVAILABLE" {
			s.Violations = append(s.Violations, "restore from a backup not AVAILABLE: "+f["backup-arn"])
			return "", errors.New("(BackupInUseException)")
		}
		if s.Tables[f["target-table-name"]] != nil {
			return "", errors.New("(TableAlreadyExistsException)")
		}
		s.Tables[f["target-table-name"]] = &fakeTable{Status: "CREATING", Polls: s.RestorePolls, Items: b.Items}
		return "{}", nil
	case "dynamodb update-continuous-backups":
		t := s.table(f["table-name"])
		if t == nil {
			return "", notFound(f["table-name"])
		}
		t.PITR = strings.Contains(f["point-in-time-recovery-specification"], "PointInTimeRecoveryEnabled=true")
		return "{}", nil
	case "autoscaling describe-auto-scaling-groups":
		switch f["query"] {
		case "AutoScalingGroups[0].[MinSize,DesiredCapacity]":
			return fmt.Sprintf("%d\t%d", s.Group.Min, s.Group.Desired), nil
		case "length(AutoScalingGroups[0].Instances)":
			n := s.Group.Instances
			if s.Group.Instances > s.Group.Desired {
				s.Group.Instances-- // one terminates between polls
			}
			return fmt.Sprint(n), nil
		}
	case "autoscaling update-auto-scaling-group":
		fmt.Sscan(f["min-size"], &s.Group.Min)
		fmt.Sscan(f["desired-capacity"], &s.Group.Desired)
		return "", nil
	case "autoscaling suspend-processes":
		s.Group.Suspended = true
		return "", nil
	case "autoscaling resume-processes":
		s.Group.Suspended = false
		return "", nil
	}
	return "", fmt.Errorf("(fake) no answer for %q", strings.Join(args, " "))
}

// runPITR runs the script against a fresh fake with the sharded model's
// three tables (each protected, with PITR, and items at the restore time
// fewer than now), the consumer group at 2, and the scenario's changes;
// it returns the script's error, its output and the fake's state after.
func runPITR(t *testing.T, scenario func(*fakeState), stdin string, extra ...string) (error, string, *fakeState) {
	t.Helper()
	needs.Program(t, "bash", "bash")
	st := &fakeState{Tables: map[string]*fakeTable{}, Backups: map[string]*fakeBackup{}, ItemsAt: map[string]int{}, RestorePolls: 3, BackupPolls: 1}
	for name, items := range map[string]int{"skidata-sharded-skierTable": 900, "skidata-sharded-skierDayMarkerTable": 300, "skidata-sharded-resortTable": 10} {
		st.Tables[name] = &fakeTable{Status: "ACTIVE", Items: items, Protected: true, PITR: true}
		st.ItemsAt[name] = items - items/10
	}
	// Another model's table, which the prefix must leave alone.
	st.Tables["skidata-counters-skierTable"] = &fakeTable{Status: "ACTIVE", Items: 5, Protected: true, PITR: true}
	st.Group.Min, st.Group.Desired, st.Group.Instances = 2, 2, 2
	if scenario != nil {
		scenario(st)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	raw, _ := json.Marshal(st)
	if err := os.WriteFile(state, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "aws")); err != nil {
		t.Fatal(err)
	}
	// Polls need not wait here.
	if err := os.WriteFile(filepath.Join(bin, "sleep"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"aws/pitr-restore.sh", "--time", "2026-11-23T08:00:00Z", "--table-prefix", "skidata-sharded-", "--consumer-group", "skidata-ConsumerGroup-1"}, extra...)
	cmd := exec.Command("bash", args...)
	// Every aws call is this test binary; built with -race, it would sleep
	// a second at each exit (the race detector's atexit_sleep_ms).
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_AWS_STATE="+state, "GORACE=atexit_sleep_ms=0")
	cmd.Stdin = strings.NewReader(stdin)
	out, runErr := cmd.CombinedOutput()
	raw, err = os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	after := &fakeState{}
	if err := json.Unmarshal(raw, after); err != nil {
		t.Fatal(err)
	}
	return runErr, string(out), after
}

func deletedLive(st *fakeState) []string {
	var out []string
	for _, c := range st.Calls {
		if name, ok := strings.CutPrefix(c, "dynamodb delete-table --table-name "); ok && !strings.HasSuffix(name, "-restored") {
			out = append(out, name)
		}
	}
	return out
}

// TestPITRRestoreReplacesEveryTableOnlyOnceItsCopyIsSafe: a restore that
// takes many polls (far longer than the AWS CLI's waiters, which give up
// after about eight minutes) is waited for; backups are waited for until
// AVAILABLE before the live table is deleted; each table of the prefix,
// and no other, ends up with its content at the restore time, PITR and
// deletion protection on, its copy gone; the consumer group is stopped
// during the restore and given back its size and processes.
func TestPITRRestoreReplacesEveryTableOnlyOnceItsCopyIsSafe(t *testing.T) {
	err, out, st := runPITR(t, func(s *fakeState) { s.RestorePolls, s.BackupPolls = 30, 4 }, "", "--yes")
	if err != nil {
		t.Fatalf("the script failed: %v\n%s", err, out)
	}
	if len(st.Violations) > 0 {
		t.Errorf("the script did what it must not: %v\n%s", st.Violations, out)
	}
	for _, name := range []string{"skidata-sharded-skierTable", "skidata-sharded-skierDayMarkerTable", "skidata-sharded-resortTable"} {
		tbl := st.Tables[name]
		want := map[string]int{"skidata-sharded-skierTable": 810, "skidata-sharded-skierDayMarkerTable": 270, "skidata-sharded-resortTable": 9}[name]
		if tbl == nil || tbl.Status != "ACTIVE" || tbl.Items != want || !tbl.PITR || !tbl.Protected {
			t.Errorf("%s after the restore: %+v; want ACTIVE with %d items (its content at the restore time), PITR and deletion protection on", name, tbl, want)
		}
		if st.Tables[name+"-restored"] != nil && st.Tables[name+"-restored"].Status != "DELETING" {
			t.Errorf("%s-restored is left behind", name)
		}
	}
	if c := st.Tables["skidata-counters-skierTable"]; c.Items != 5 || slices.Contains(deletedLive(st), "skidata-counters-skierTable") {
		t.Errorf("a table of another model was touched: %+v", c)
	}
	if st.Group.Min != 2 || st.Group.Desired != 2 || st.Group.Suspended {
		t.Errorf("the consumer group after the restore: %+v; want its size 2 back and its processes resumed", st.Group)
	}
	var stopped, restoring int
	for i, c := range st.Calls {
		if strings.Contains(c, "update-auto-scaling-group") && strings.Contains(c, "--desired-capacity 0") && stopped == 0 {
			stopped = i + 1
		}
		if strings.HasPrefix(c, "dynamodb restore-table-to-point-in-time") && restoring == 0 {
			restoring = i + 1
		}
	}
	if stopped == 0 || restoring == 0 || stopped > restoring {
		t.Errorf("the consumers were stopped at call %d, the first restore made at call %d; want them stopped first", stopped, restoring)
	}
}

// TestPITRRestoreStopsBeforeDeletingAnything: a restore that fails, a copy
// that comes back empty, and an operator who does not answer "yes" each
// stop the script with an error before any live table is deleted, saying
// what state the consumers were left in.
func TestPITRRestoreStopsBeforeDeletingAnything(t *testing.T) {
	for name, c := range map[string]struct {
		scenario func(*fakeState)
		stdin    string
		extra    []string
		want     string
	}{
		"restore fails":    {func(s *fakeState) { s.RestoreFails = true }, "", []string{"--yes"}, "stopped while: restoring the tables"},
		"empty copy":       {func(s *fakeState) { s.ItemsAt["skidata-sharded-skierTable"] = 0 }, "", []string{"--yes"}, "the copy of skidata-sharded-skierTable at 2026-11-23T08:00:00Z is empty"},
		"not confirmed":    {nil, "no\n", nil, "not replaced"},
		"leftover copy":    {func(s *fakeState) { s.Tables["skidata-sharded-resortTable-restored"] = &fakeTable{Status: "ACTIVE"} }, "", []string{"--yes"}, "is left from an earlier run"},
		"wrong prefix":     {func(s *fakeState) { s.Tables = map[string]*fakeTable{} }, "", []string{"--yes"}, "no table starts with skidata-sharded-"},
		"group unreadable": {func(s *fakeState) { s.Group.Min = -1 }, "", []string{"--yes"}, "could not read the size"},
	} {
		t.Run(name, func(t *testing.T) {
			err, out, st := runPITR(t, c.scenario, c.stdin, c.extra...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("exit %v; want a failure saying %q:\n%s", err, c.want, out)
			}
			if d := deletedLive(st); len(d) > 0 {
				t.Errorf("live tables deleted: %v\n%s", d, out)
			}
			for name, tbl := range st.Tables {
				if !strings.HasSuffix(name, "-restored") && tbl.Status != "ACTIVE" {
					t.Errorf("%s is %s; want it untouched", name, tbl.Status)
				}
			}
		})
	}
}

// TestScriptsPassShellcheck: the PITR script and both launch templates'
// user-data (as CloudFormation renders it) pass shellcheck, which catches
// what bash -n does not: unquoted expansions, a failure hidden in a
// condition, a variable never set.
func TestScriptsPassShellcheck(t *testing.T) {
	bin := needs.Program(t, "shellcheck", "shellcheck")
	scripts := map[string]string{}
	raw, err := os.ReadFile("aws/pitr-restore.sh")
	if err != nil {
		t.Fatal(err)
	}
	scripts["aws/pitr-restore.sh"] = string(raw)
	for name, lt := range resources(t, loadTemplate(t), "AWS::EC2::LaunchTemplate") {
		ud, _ := userData(lt)
		scripts[name+" user-data"] = cfnSubbed(ud, map[string]string{"QueueSettings": "SKI_QUEUE=sqs"})
	}
	for name, script := range scripts {
		cmd := exec.Command(bin, "--shell=bash", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", name, err, out)
		}
	}
}
