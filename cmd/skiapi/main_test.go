package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpListsEveryFlagWithItsEnvironmentVariable(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"--help"}, &out, &errs); code != 0 {
		t.Fatalf("--help exit code %d", code)
	}
	for _, want := range []string{"--listen", "SKI_LISTEN", "--store", "SKI_STORE", "--queue", "--batch-size", "SKI_BATCH_SIZE", "--batch-linger", "--queue-capacity", "--role"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("help does not mention %s:\n%s", want, errs.String())
		}
	}
}

func TestBadUsageExitsTwoWithReason(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"--store", "floppy"}, &out, &errs); code != 2 {
		t.Errorf("exit code %d; want 2", code)
	}
	if !strings.Contains(errs.String(), `--store "floppy" is not one of`) {
		t.Errorf("stderr %q does not say why", errs.String())
	}
	errs.Reset()
	if code := run([]string{"frobnicate"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errs.String())
	}
}

func TestVersion(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"version"}, &out, &errs); code != 0 || !strings.HasPrefix(out.String(), "skiapi ") {
		t.Errorf("version: exit %d, out %q", code, out.String())
	}
}
